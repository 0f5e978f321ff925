#include "live_mesh.hpp"

namespace cafmesh::mainjob::net_mesh_detail {

namespace {

/// Process ids of the running node processes: the teardown watchdog kills them before it
/// ends the demo, so that no node outlives a demo that gave up.
std::mutex children_mtx;
std::set<pid_t> children;

} // namespace

void add_child(pid_t pid) {
  std::lock_guard<std::mutex> guard{children_mtx};
  children.insert(pid);
}

void remove_child(pid_t pid) {
  std::lock_guard<std::mutex> guard{children_mtx};
  children.erase(pid);
}

void kill_children() {
  std::lock_guard<std::mutex> guard{children_mtx};
  for (auto pid : children)
    ::kill(pid, SIGKILL);
}

/// The run loop shared by both live meshes: waits until every silo is Active, paces the
/// driver in wall-clock time, feeds it the mesh's events, reports and tears down.
std::optional<report> run_live(const scenario& s, const run_settings& rs, caf::scoped_actor& self,
                               live_mesh& mesh, bool ok, const std::string& mode) {
  std::optional<report> out;
  demo_driver driver{s, mesh, mode};
  driver.write_ledger_events_to(rs.ledger_out);
  auto t0 = clock_type::now();
  auto now_ms = [&] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - t0)
      .count();
  };
  // Wait until every silo is Active before the traffic starts (bounded).
  size_t up = 0;
  bool failed_start = !ok;
  auto start_deadline = clock_type::now() + std::chrono::seconds(30);
  while (ok && up < s.silos.size()) {
    bool got = false;
    self->receive(
      [&](dm_up_atom, const std::string& name, uint64_t gen, bool started) {
        got = true;
        if (!started) {
          std::cerr << "cafmesh-demo: silo " << name
                    << " failed to start; its error is in its own log (with --processes: its "
                       "node's log), e.g. its membership table not reached within "
                       "membership.max_join_time_ms\n";
          failed_start = true;
          return;
        }
        ++up;
        mesh.silo_up(name);
        driver.on_silo(silo_event{name, gen, roll_phase::active, std::nullopt, std::nullopt},
                       0);
      },
      [&](dp_hello_atom, const std::string& name, uint64_t gen, caf::actor& agent,
          caf::actor& routing, caf::actor& link) {
        got = true;
        mesh.on_hello(name, gen, std::move(agent), std::move(routing), std::move(link));
      },
      [&](mp_stage_atom, const std::string&, uint64_t, bool, int32_t) { got = true; },
      [&](routing::ep_event_atom, const std::string&, const std::string&, uint8_t,
          const std::string&) { got = true; },
      caf::after(std::chrono::milliseconds(100)) >> [] {});
    bool died = false;
    mesh.poll_stops(died);
    if (died)
      std::cerr << "cafmesh-demo: a silo process exited before every silo was Active\n";
    else if (!failed_start && clock_type::now() >= start_deadline)
      std::cerr << "cafmesh-demo: " << up << " of " << s.silos.size()
                << " silos Active within 30 s\n";
    if (died || clock_type::now() >= start_deadline)
      failed_start = true;
    if (failed_start)
      break;
    (void) got;
  }
  if (failed_start) {
    std::cerr << "cafmesh-demo: the mesh did not start (the lines above say which silo and "
                 "why); no traffic was sent\n";
    mesh.abandon(self);
    return std::nullopt;
  }
  // Let the pod-hub claims and the client's first snapshot settle (bounded, 1 s).
  for (auto until = clock_type::now() + std::chrono::seconds(1); clock_type::now() < until;)
    self->receive([](caf::message&) {}, caf::after(std::chrono::milliseconds(50)) >> [] {});
  t0 = clock_type::now();
  std::map<std::string, int64_t> stop_started;  // silo -> when its stop began
  std::map<std::string, int64_t> active_stopped; // silo -> when stage Active's stop ended
  auto on_down = [&](const std::string& name, uint64_t gen) {
    auto t = now_ms();
    std::optional<int64_t> hold;
    auto a = stop_started.find(name);
    auto b = active_stopped.find(name);
    if (a != stop_started.end() && b != active_stopped.end() && b->second >= a->second)
      hold = b->second - a->second;
    mesh.silo_down(name);
    driver.on_silo(silo_event{name, gen, roll_phase::stopped, std::nullopt, hold}, t);
  };
  auto receive_one = [&](std::chrono::milliseconds wait) {
    bool got = false;
    self->receive(
        hub_event_handler(
          driver,
          [&](const std::string& id) { return driver.ledger().answer_suppressed(id); },
          now_ms, got),
        [&](mp_stage_atom, const std::string& name, uint64_t gen, bool starting, int32_t st) {
          got = true;
          auto t = now_ms();
          if (!starting)
            mesh.stop_stage_seen(name);
          if (!starting && st == lifecycle::stages::become_active) {
            active_stopped[name] = t;
            mesh.active_stopped(name);
          }
          driver.on_silo(silo_event{name, gen,
                                    starting ? roll_phase::starting : roll_phase::stopping, st,
                                    std::nullopt},
                         t);
        },
        [&](dp_hello_atom, const std::string& name, uint64_t gen, caf::actor& agent,
            caf::actor& routing, caf::actor& link) {
          got = true;
          mesh.on_hello(name, gen, std::move(agent), std::move(routing), std::move(link));
        },
        [&](dm_up_atom, const std::string& name, uint64_t gen, bool started) {
          got = true;
          if (!started) {
            std::cerr << "cafmesh-demo: silo " << name << " (generation " << gen
                      << ") failed to start\n";
            return;
          }
          mesh.silo_up(name);
          driver.on_silo(silo_event{name, gen, roll_phase::active, std::nullopt, std::nullopt},
                         now_ms());
        },
        [&](dm_down_atom, const std::string& name, uint64_t gen) {
          got = true;
          on_down(name, gen);
        },
        caf::after(wait) >> [] {});
    return got;
  };
  auto handle_events = [&](std::chrono::milliseconds wait) {
    receive_batch(wait, receive_one);
    bool died = false;
    for (auto& [name, gen] : mesh.poll_stops(died))
      on_down(name, gen);
  };
  pace_settings ps;
  ps.progress = rs.progress;
  ps.is_tty = rs.is_tty;
  ps.width_cols = rs.width_cols;
  ps.out = rs.out;
  ps.progress_interval_ms = rs.progress_interval_ms;
  ps.drain_timeout_ms = rs.drain_timeout_ms;
  size_t stops_seen = 0;
  pace_driver(driver, ps, "cafmesh-demo", now_ms, handle_events, [&](int64_t now) {
    if (driver.stops().size() > stops_seen) {
      stops_seen = driver.stops().size();
      stop_started[driver.stops().back().name] = now;
    }
  });
  driver.set_entries(mesh.entries(self));
  out = driver.finish();
  if (auto exits = mesh.node_exits()) {
    auto in = out->input;
    in.node_exits = exits->first;
    in.node_exits_unclean = exits->second;
    out = make_report(std::move(in));
  }
  if (rs.on_report)
    rs.on_report(*out);
  // Teardown, bounded: a watchdog ends the process with the report's exit code if the
  // actor systems do not come down within `teardown_timeout_ms` (a safety net: it also
  // covers `run_in_process` destroying the systems after this returns; a normal run ends
  // long before it fires).
  arm_teardown_watchdog("cafmesh-demo", out->exit_code, rs.teardown_timeout_ms, kill_children);
  mesh.teardown(self);
  return out;
}

} // namespace cafmesh::mainjob::net_mesh_detail
