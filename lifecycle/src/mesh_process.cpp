#include "cafmesh/lifecycle/mesh_process.hpp"

#include <chrono>
#include <set>

#include <caf/all.hpp>
#include <caf/io/middleman.hpp>
#include <caf/io/middleman_actor.hpp>

#include "cafmesh/actors/atoms.hpp"
#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/log.hpp"
#include "cafmesh/actors/membership.hpp"
#include "hosting_steps.hpp"
#include "mesh_process_state.hpp"

namespace cafmesh::lifecycle {

mesh_process::mesh_process(std::unique_ptr<state> st) : st_(std::move(st)) {
  // nop
}

mesh_process::mesh_process(mesh_process&&) noexcept = default;

mesh_process& mesh_process::operator=(mesh_process&&) noexcept = default;

mesh_process::~mesh_process() {
  if (!st_)
    return;
  // Never blocks (test coordinators run on this thread): a process not stopped is killed.
  st_->signals.reset();
  st_->admin.reset(); // its handlers talk to the process's actors
  release_actors(*st_, false);
}

void release_actors(mesh_process::state& st, bool await) {
  if (st.released)
    return;
  st.released = true;
  std::set<caf::actor_addr> seen;
  std::vector<caf::actor> actors;
  for (auto& a : st.owned)
    if (a && seen.insert(a.address()).second)
      actors.push_back(a);
  if (!await) {
    for (auto& a : actors)
      caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    return;
  }
  caf::scoped_actor self{*st.sys};
  std::set<caf::actor_addr> alive;
  for (auto& a : actors) {
    alive.insert(a.address());
    self->monitor(a);
    self->send_exit(a, caf::exit_reason::user_shutdown);
  }
  bool late = false;
  self->receive_while([&] {
    return !alive.empty() && !late;
  })([&](caf::down_msg& dm) { alive.erase(dm.source); },
     caf::after(std::chrono::seconds(10)) >> [&] { late = true; });
  if (late) {
    // The actor system's end waits for them (bounded in cafmesh-node: system_end_bound).
    std::string names;
    for (auto& a : actors) {
      if (alive.count(a.address()) == 0)
        continue;
      auto* local = dynamic_cast<caf::local_actor*>(caf::actor_cast<caf::abstract_actor*>(a));
      names += (names.empty() ? "" : ", ") + std::string{local ? local->name() : "?"};
    }
    log::get("host").warning(std::to_string(alive.size())
                             + " actor(s) not ended within 10 s of their exit: " + names);
  }
  if (st.endpoint.link && st.sys->has_middleman())
    drain_middleman(self, *st.sys, st.endpoint.gate);
}

void drain_middleman(caf::scoped_actor& self, caf::actor_system& sys, const caf::actor_addr& gate) {
  // The link connects through its gate, which exits after the link, once it has handed the
  // BASP broker every connect the link asked for: wait for it first.
  if (auto g = caf::actor_cast<caf::actor>(gate)) {
    self->monitor(g);
    bool down = false;
    bool late = false;
    self->receive_while(
      [&] { return !down && !late; })([&](caf::down_msg& dm) { down = dm.source == gate; },
                                      caf::after(std::chrono::seconds(2)) >> [&] { late = true; });
  }
  // The middleman actor answers `get_atom` by delegating it to its BASP broker, after every
  // request the broker received before: once the answer is here, every connect the gate
  // handed it is the broker's, not a message in flight.
  auto mm = sys.middleman().actor_handle();
  self->request(mm, std::chrono::seconds(2), caf::get_atom::value, caf::node_id{})
    .receive([](const caf::node_id&, const std::string&, uint16_t) {}, [](caf::error&) {});
}

void mesh_process::start() {
  if (st_->started)
    return;
  st_->started = true;
  caf::anon_send(st_->host, host_start_atom::value);
}

caf::error mesh_process::when_active() {
  start();
  caf::scoped_actor self{*st_->sys};
  caf::error out;
  self->request(st_->host, caf::infinite, host_active_atom::value)
    .receive([](caf::ok_atom) {}, [&](caf::error& e) { out = std::move(e); });
  if (out || !st_->client_components.agent)
    return out;
  // A pure client's join: its membership table answers a read within
  // `membership.max_join_time_ms` (docs/behaviour/membership.md#a-join-that-cannot-reach-the-table;
  // the agent bounds it). Then, with `await_gateway`, it is active once its membership shows
  // a gateway silo to send through; never once its host began to stop (a client whose
  // primary never answered, stopped).
  auto agent = st_->client_components.agent;
  auto waiting = caf::actor_cast<caf::actor>(self);
  bool await_gateway = st_->await_gateway;
  auto watcher
    = st_->sys->spawn([agent, waiting, await_gateway](caf::event_based_actor* w) -> caf::behavior {
        w->request(agent, caf::infinite, mb_reach_atom::value)
          .then(
            [=](uint64_t) {
              if (!await_gateway) {
                w->send(waiting, caf::ok_atom::value);
                w->quit();
                return;
              }
              w->send(agent, mb_subscribe_atom::value, caf::actor_cast<caf::actor>(w));
            },
            [=](caf::error& e) {
              w->send(waiting, mb_reach_atom::value, std::move(e));
              w->quit();
            });
        return {
          [=](mb_snapshot_atom, const membership_snapshot& s) {
            if (s.gateways().empty())
              return;
            w->send(waiting, caf::ok_atom::value);
            w->quit();
          },
        };
      });
  for (bool done = false; !done;) {
    self->receive([&](caf::ok_atom) { done = true; },
                  [&](mb_reach_atom, caf::error& e) {
                    out = std::move(e);
                    done = true;
                  },
                  caf::after(std::chrono::milliseconds(200)) >>
                    [&] {
                      auto phase = host_phase::running;
                      self->request(st_->host, std::chrono::seconds(5), host_state_atom::value)
                        .receive([&](host_phase p) { phase = p; },
                                 [&](caf::error&) { phase = host_phase::torn_down; });
                      if (phase == host_phase::running)
                        return;
                      out = to_error(fault{mesh_errc::lifecycle_cancelled,
                                           "the client stopped before its membership showed a "
                                           "gateway silo: no silo of its cluster was Active; "
                                           "start a silo_host first"});
                      done = true;
                    });
  }
  caf::anon_send_exit(watcher, caf::exit_reason::user_shutdown);
  return out;
}

caf::error mesh_process::stop(bool graceful) {
  if (st_->torn_down)
    return caf::error{};
  caf::scoped_actor self{*st_->sys};
  caf::error out;
  self->request(st_->host, caf::infinite, host_halt_atom::value, graceful)
    .receive([](caf::ok_atom) {}, [&](caf::error& e) { out = std::move(e); });
  st_->torn_down = true;
  st_->signals.reset();
  release_actors(*st_, true);
  return out;
}

void mesh_process::wait() {
  if (st_->torn_down)
    return;
  caf::scoped_actor self{*st_->sys};
  self->request(st_->host, caf::infinite, host_await_atom::value)
    .receive([](caf::ok_atom) {}, [](caf::error&) {});
  st_->torn_down = true;
  st_->signals.reset();
  release_actors(*st_, true);
}

void mesh_process::stop_on_signals() {
  if (!st_->signals)
    st_->signals = std::make_unique<signal_stop_guard>(install_signal_stop(*st_->sys, st_->host));
}

caf::error mesh_process::register_hub(const std::string& pattern, routing::hub_handler handler) {
  return register_hub(pattern, routing::as_async(std::move(handler)));
}

caf::error mesh_process::register_hub(const std::string& pattern,
                                      routing::async_hub_handler handler) {
  // A silo publishes its node hub patterns with its membership row when it joins: a node
  // pattern registered after `start()` would be missing from the row the other silos judge
  // by (docs/behaviour/routing.md#unserved-addresses). The hub table refuses it too.
  if (st_->started && st_->role == "silo_host" && pattern.compare(0, 5, "node/") == 0)
    return to_error(fault{mesh_errc::config_invalid,
                          "hub pattern '" + pattern
                            + "' comes after this silo published its hub patterns with its "
                              "membership row; register node hubs before the silo starts"});
  return hosting::add_hubs(st_->hub_table, {{pattern, std::move(handler)}});
}

const routing::correlating_entry_actor& mesh_process::entry() const {
  return st_->entry;
}

const host_actor& mesh_process::host() const {
  return st_->host;
}

const silo_address& mesh_process::address() const {
  return st_->addr;
}

const caf::actor& mesh_process::routing_service() const {
  return st_->routing;
}

const std::string& mesh_process::role() const {
  return st_->role;
}

admin_address mesh_process::admin() const {
  return st_->admin ? st_->admin->address() : admin_address{};
}

} // namespace cafmesh::lifecycle
