// The main job's rolling restart in simulation (SPEC §12.1, S12.58, S12.62): `demo_driver`
// drives a `mesh_port` built over the test world of whole silos (tests/routing/
// silo_world.hpp) on the virtual-time fixture. The topology is the one of the in-process
// network mesh (examples/mainjob/src/net_mesh.cpp): the pure clients host their portal hubs
// (local routes of their routing services, reached through client-hosted pod hubs); the
// co-hosted portal hubs are local routes of their home silo's routing service and claim
// their pod hubs there; node hubs `node/Org/N{i}` and owner hubs `node/Owner/O{i}` are hub
// endpoints handed to the node-hub grains by every silo's hub factory. Owners send their
// frames through the co-hosted entry of a home silo; when it stops they hold their frames
// until its stage Active has stopped (probe at BecomeActive) and then move. The router
// core's failure observer reports failures of answer-suppressed deliveries.
//
// The S12.58 scenario below puts the portal hubs in the two pure clients (`senders:
// pure_client`); the co-hosted hubs are the owners and the node hubs. The mesh port also
// hosts co-hosted portals (`silo:` origins, held while their silo is down), but a roll
// with them does not pass yet: see the report of branch `simroll`.
//
// The S13 scenarios at the end run the topology users run (`sim_topology`): every silo
// incarnation has its own application, an echo hub factory that creates the answering hub
// of a node hub key inside that silo on its first activation there; those hubs send their
// responses through their silo and end when its host stop has answered, so a node hub
// re-activates on another silo with a hub of that silo's application. Every silo is rolled;
// the membership oracle is the world's (outside every silo, as a membership table would be).
//
// Diagnostics: SIMROLL_LEDGER_DUMP, SIMROLL_LOG_DUMP, SIMROLL_NET_DUMP and SIMROLL_DIR_DUMP
// name files that receive a run's ledger lines, captured log, network trace and final
// directory entries.

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "cafmesh/actors/ids.hpp"
#include "cafmesh/actors/sim_network.hpp"
#include "cafmesh/actors/lifecycle_atoms.hpp"
#include "cafmesh/lifecycle/host.hpp"
#include "cafmesh/lifecycle/hub_homing.hpp"
#include "cafmesh/actors/observer.hpp"
#include "cafmesh/actors/stage.hpp"
#include "cafmesh/mainjob/driver.hpp"
#include "cafmesh/mainjob/mesh_parts.hpp"
#include "cafmesh/mainjob/scenario.hpp"
#include "cafmesh/mainjob/traffic.hpp"
#include "cafmesh/routing/classify.hpp"
#include "cafmesh/routing/entry_atoms.hpp"
#include "cafmesh/routing/hub_endpoint.hpp"
#include "cafmesh/routing/hub_grains.hpp"
#include "cafmesh/testing/fixture.hpp"
#include "cafmesh/testing/silo_world.hpp"

using namespace cafmesh;
using namespace cafmesh::mainjob;

namespace {

using testing::fixture;

/// `(sr_up_atom, std::string silo, uint64_t generation, bool ok)`: host start answered.
using sr_up_atom = caf::atom_constant<caf::atom("srup")>;
/// `(sr_down_atom, std::string silo, uint64_t generation)`: host stop answered.
using sr_down_atom = caf::atom_constant<caf::atom("srdown")>;

/// One event the recorder collected, stamped with the virtual ms it arrived at.
struct sim_event {
  enum class what { ep, stage, up, down } kind = what::ep;
  int64_t t_ms = 0;
  std::string a; ///< ep: event kind; others: silo name
  std::string id;
  uint8_t verdict = 0;
  std::string text;
  uint64_t generation = 0;
  bool flag = false; ///< stage: starting; up: ok
  int32_t stage = 0;
};

struct recorder_state {
  fixture* fx = nullptr;
  std::vector<sim_event> events;
  static inline const char* name = "test.sim_roll.recorder";
};

/// Collects every hub-endpoint event, failure-observer report, probe report and host answer;
/// the test loop drains them into the driver.
caf::behavior recorder(caf::stateful_actor<recorder_state>* self, fixture* fx) {
  self->state.fx = fx;
  auto now = [=] { return self->state.fx->now_ms(); };
  return {
    [=](routing::ep_event_atom, const std::string& kind, const std::string& id, uint8_t v,
        const std::string& text) {
      sim_event e;
      e.kind = sim_event::what::ep;
      e.t_ms = now();
      e.a = kind;
      e.id = id;
      e.verdict = v;
      e.text = text;
      self->state.events.push_back(std::move(e));
    },
    [=](mp_stage_atom, const std::string& silo, uint64_t gen, bool starting, int32_t st) {
      sim_event e;
      e.kind = sim_event::what::stage;
      e.t_ms = now();
      e.a = silo;
      e.generation = gen;
      e.flag = starting;
      e.stage = st;
      self->state.events.push_back(std::move(e));
    },
    [=](sr_up_atom, const std::string& silo, uint64_t gen, bool ok) {
      sim_event e;
      e.kind = sim_event::what::up;
      e.t_ms = now();
      e.a = silo;
      e.generation = gen;
      e.flag = ok;
      self->state.events.push_back(std::move(e));
    },
    [=](sr_down_atom, const std::string& silo, uint64_t gen) {
      sim_event e;
      e.kind = sim_event::what::down;
      e.t_ms = now();
      e.a = silo;
      e.generation = gen;
      self->state.events.push_back(std::move(e));
    },
  };
}

/// Asks `host` one thing and tells the recorder `answer(ok)`; then quits.
template <class Atom, class... Ts>
void ask_host(fixture& fx, lifecycle::host_actor host, caf::actor rec,
              std::function<caf::message(bool)> answer, Atom a, Ts... xs) {
  fx.track(fx.sys.spawn([=](caf::event_based_actor* self) {
    self->request(host, caf::infinite, a, xs...)
      .then(
        [=](caf::ok_atom) {
          self->send(rec, answer(true));
          self->quit();
        },
        [=](caf::error&) {
          self->send(rec, answer(false));
          self->quit();
        });
  }));
}

const std::vector<lifecycle::stage> probe_stages{
  lifecycle::stages::active,           lifecycle::stages::become_active,
  lifecycle::stages::grain_deactivation, lifecycle::stages::application_services,
  lifecycle::stages::runtime_services, lifecycle::stages::runtime_initialize_plus_1,
  lifecycle::stages::runtime_initialize};

bool ends_with(const std::string& x, const std::string& suffix) {
  return x.size() >= suffix.size()
         && x.compare(x.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// Where the application's answering node hubs live in a simulated run.
struct sim_topology {
  /// False: one hub endpoint per node hub, shared by every silo's hub factory and moved to
  /// another silo's routing service when its home stops (the S12.58 topology). True: the
  /// users' topology: every silo incarnation has its own application (an echo hub factory
  /// that creates the answering hub of a key on its first activation there, sending
  /// through that silo), and those hubs end with their silo's process (host stop answered).
  bool answering_hubs_in_silos = false;
};

/// Applies the scenario's `config` section (every section but `mesh`, `simulation` and
/// `network`) to a process configuration of the world; none when the section is empty.
std::function<void(config::mesh_config&)> scenario_configure(const scenario& s) {
  if (s.config_json == "{}")
    return nullptr;
  auto loaded = process_config(s, config::process_role::silo_host, "sim");
  REQUIRE_MESSAGE(loaded.ok, loaded.message());
  auto over = loaded.value;
  return [over](config::mesh_config& c) {
    auto keep_mesh = c.mesh;
    auto keep_sim = c.simulation;
    auto keep_net = c.network;
    c = over;
    c.mesh = keep_mesh;
    c.simulation = keep_sim;
    c.network = keep_net;
  };
}

/// The simulated mesh: `mesh_port` over a `silo_world` (see the file comment).
class sim_mesh : public mesh_port {
public:
  sim_mesh(fixture& fx, test::silo_world& w, const scenario& s, caf::actor rec,
           sim_topology topo = {})
    : fx_(fx), w_(w), s_(s), rec_(std::move(rec)), topo_(topo),
      configure_(scenario_configure(s)),
      homing_(s.silos, {[this](const std::string& name) { return routing_of(name); },
                        [this](const std::string& name, const routing::address& a) {
                          caf::anon_send(w_.at(current_.at(name)).claimer,
                                         routing::pc_claim_atom::value, a);
                        }}) {
    // nop
  }

  /// Builds and starts every silo (answers arrive at the recorder as `sr_up`).
  void start_silos() {
    for (auto& name : s_.silos)
      build_silo(name);
  }

  /// Adds the pure clients: client k (from 1) homed on silo (k - 1) % silos.
  void add_clients() {
    for (int64_t k = 1; k <= s_.pure_clients; ++k) {
      auto gw = current_.at(s_.silos[static_cast<size_t>(k - 1) % s_.silos.size()]);
      clients_.push_back(
        w_.add_client("client" + std::to_string(k), gw, configure_, rec_).routing);
    }
  }

  /// Builds the application hubs (after the silos are Active and the clients exist).
  void build_hubs() {
    auto n = static_cast<int64_t>(s_.silos.size());
    auto& t = s_.traffic;
    for (int64_t i = 0; i < t.node_hubs && !topo_.answering_hubs_in_silos; ++i) {
      auto a = routing::address::from(node_hub_address(i));
      auto home = s_.silos[static_cast<size_t>(i % n)];
      auto ep = fx_.track(
        routing::spawn_hub_endpoint(fx_.sys, a, routing_of(home), w_.cfg.routing, true, rec_));
      homing_.add(lifecycle::hub_home_kind::answering, a, ep, home);
      (*hubs_)[node_hub_address(i).substr(5)] = ep;
    }
    for (int64_t i = 0; i < t.owner_hubs; ++i) {
      auto text = owner_hub_address(i);
      auto a = routing::address::from(text);
      auto home = s_.silos[static_cast<size_t>(i % n)];
      auto ep = fx_.track(routing::spawn_hub_endpoint(fx_.sys, a, routing_of(home),
                                                      w_.cfg.routing, false, rec_));
      (*hubs_)[text.substr(5)] = ep;
      homing_.add(lifecycle::hub_home_kind::owner, a, ep, home);
    }
    for (int64_t i = 0; i < t.portal_hubs; ++i) {
      auto a = routing::address::from(portal_hub_address(i));
      auto origin = portal_origin(s_, i);
      if (origin.rfind("silo:", 0) == 0) {
        auto home = origin.substr(5);
        auto ep = fx_.track(routing::spawn_hub_endpoint(fx_.sys, a, routing_of(home),
                                                        w_.cfg.routing, false, rec_));
        homing_.add(lifecycle::hub_home_kind::portal, a, ep, home);
      } else {
        auto k = std::stoul(origin.substr(7)); // client:{k}
        auto r = clients_.at(k - 1);
        auto ep = fx_.track(
          routing::spawn_hub_endpoint(fx_.sys, a, r, w_.cfg.routing, false, rec_));
        homing_.add(lifecycle::hub_home_kind::client, a, ep, {}, r);
      }
    }
  }

  // -- mesh_port ----------------------------------------------------------------------

  void submit(const planned_delivery& d) override {
    if (d.answer_suppressed)
      suppressed_.insert(d.id);
    int64_t deadline = d.kind == delivery_kind::request ? s_.traffic.request_deadline_ms : -1;
    REQUIRE(homing_.submit(d.sender, to_envelope(d, routing::address::from(d.sender)),
                           deadline));
  }

  void stop_silo(const std::string& name) override {
    auto addr = current_.at(name);
    // Node hubs answer through another silo from now on; owners wait (file comment).
    homing_.stopping(name);
    stopped_.push_back(addr);
    auto gen = addr.generation;
    w_.entry(addr).gone = true;
    ask_host(
      fx_, w_.at(addr).host, rec_,
      [name, gen](bool) { return caf::make_message(sr_down_atom::value, name, gen); },
      lifecycle::host_halt_atom::value, true);
  }

  void restart_silo(const std::string& name) override {
    build_silo(name);
  }

  void stall_silo(const std::string&, bool) override {
    FAIL("the S12.58 scenario has no stall");
  }

  void unstall_silo(const std::string&) override {
    FAIL("the S12.58 scenario has no stall");
  }

  // -- events ---------------------------------------------------------------------------

  /// The Active stage of `name` stopped: its legs ended; owners move.
  void active_stopped(const std::string& name) { homing_.active_stopped(name); }

  /// The host stop of `name` answered: its runtime services are torn down, so the hubs
  /// co-hosted in its process (the portals) cannot send until it runs again. An application
  /// whose process restarts sends what it had to send once it is back: their deliveries
  /// are held until the new incarnation is Active.
  void silo_down(const std::string& name) {
    // The application of the stopped process ends with it (users' topology).
    if (auto i = apps_.find(current_.at(name)); i != apps_.end()) {
      caf::anon_send_exit(i->second, caf::exit_reason::kill);
      apps_.erase(i);
    }
    homing_.down(name);
  }

  /// Silo `name` is Active.
  void silo_up(const std::string& name) { homing_.up(name); }

  bool is_suppressed(const std::string& id) const { return suppressed_.count(id) > 0; }

  /// Every incarnation that was stopped, in order.
  const std::vector<silo_address>& stopped() const { return stopped_; }

private:
  void build_silo(const std::string& name) {
    test::silo_world_options o;
    o.start = false;
    o.failure_observer = rec_;
    o.configure = configure_;
    lifecycle::silo_components* s = nullptr;
    auto i = current_.find(name);
    if (i == current_.end())
      s = &w_.add_silo(name, o);
    else
      s = &w_.restart(i->second, o);
    current_[name] = s->addr;
    caf::actor factory;
    if (topo_.answering_hubs_in_silos) {
      factory = fx_.track(spawn_echo_hub_factory(fx_.sys, w_.cfg.routing, hubs_, rec_));
      caf::anon_send(factory, mp_routing_atom::value, s->routing);
      apps_[s->addr] = factory;
    } else {
      factory = fx_.track(caf::actor_cast<caf::actor>(spawn_hub_map_factory(fx_.sys, hubs_)));
    }
    s->slots->hubs = caf::actor_cast<routing::hub_factory_actor>(factory);
    auto gen = s->addr.generation;
    auto probe = fx_.track(caf::actor_cast<caf::actor>(spawn_stage_probe(fx_.sys, rec_, name, gen)));
    for (auto st : probe_stages)
      caf::anon_send(s->subject, lifecycle::subscribe_atom::value, st,
                     std::string{"test-probe"},
                     caf::actor_cast<lifecycle::lifecycle_observer_actor>(probe));
    ask_host(
      fx_, s->host, rec_,
      [name, gen](bool ok) { return caf::make_message(sr_up_atom::value, name, gen, ok); },
      lifecycle::host_start_atom::value);
  }

  caf::actor routing_of(const std::string& name) {
    return w_.at(current_.at(name)).routing;
  }

  fixture& fx_;
  test::silo_world& w_;
  scenario s_;
  caf::actor rec_;
  sim_topology topo_;
  std::function<void(config::mesh_config&)> configure_;
  /// Users' topology: the application (echo hub factory) of every running incarnation.
  std::map<silo_address, caf::actor> apps_;
  std::map<std::string, silo_address> current_;
  std::vector<caf::actor> clients_;
  std::shared_ptr<std::map<std::string, caf::actor>> hubs_
    = std::make_shared<std::map<std::string, caf::actor>>();
  std::set<std::string> suppressed_;
  /// The application's sending hubs, kept homed on an available silo (hub_homing.hpp).
  lifecycle::hub_homing homing_;
  std::vector<silo_address> stopped_;
};

/// Link latencies of the simulated network (ms, drawn per frame from the seeded PRNG): a
/// graceful stop then takes virtual time (the quiescence hold waits for legs on the wire,
/// membership publications and hand-offs travel), so traffic really flows during each
/// stop. With 0 ms every stop completes within one virtual millisecond.
constexpr int64_t link_latency_min_ms = 2;
constexpr int64_t link_latency_max_ms = 10;

/// The S12.58 scenario, small enough for a unit test: 3 silos, 2 pure clients hosting the
/// portal hubs (heartbeat and request senders, stream subscribers), co-hosted owner hubs
/// (frame senders, through the co-hosted entry) and node hubs (request targets answering
/// through their silo), 20 streams, 500 paced deliveries/s for 16 s of virtual traffic;
/// A, B and C in turn are stopped gracefully and restarted with the next generation.
scenario s12_58_scenario(uint64_t seed) {
  auto s = default_scenario();
  s.name = "sim-roll-three-silos";
  s.seed = seed;
  s.duration_s = 16;
  s.rate_per_s = 500;
  s.silos = {"A", "B", "C"};
  s.pure_clients = 2;
  s.traffic.streams = 20;
  s.traffic.subscribers_per_stream = 2;
  s.traffic.owner_hubs = 6;
  s.traffic.node_hubs = 6;
  s.traffic.portal_hubs = 12;
  s.traffic.senders = sender_placement::pure_client;
  s.roll.order = {"A", "B", "C"};
  s.roll.first_stop_at_ms = 2000;
  s.roll.restart_delay_ms = 1000;
  s.roll.interval_ms = 2000;
  // S12.58 allows a request to end by its deadline when the request landed and only its
  // response was lost (checked below); the default scenario's later bound is not its own.
  s.expect.max_request_deadlines.reset();
  return s;
}

/// What one simulated run produced.
struct sim_run {
  report rep;
  std::string ledger_lines;        ///< every ledger event as a JSON line
  uint64_t ledger_digest = 0;      ///< FNV-1a 64 of `ledger_lines`
  uint64_t network_digest = 0;     ///< `sim_network` trace digest
  bool quiescent = false;          ///< the driver ended with nothing in flight
  int64_t end_ms = 0;              ///< driver time at the end
  std::vector<std::string> stop_log_failures; ///< stopped silos without the quiescence line
  std::vector<std::string> abandoned;         ///< lines about abandoned or stuck legs
  std::vector<std::string> resent_not_landed; ///< re-sent requests whose chain did not land
  std::vector<std::string> deadline_not_landed; ///< requests ended by their deadline, never landed
  uint64_t deadlines = 0;          ///< requests ended by their deadline
  uint64_t resent_requests = 0;    ///< re-sent requests seen in the ledger
  size_t stops = 0;                ///< stopped incarnations
  int64_t real_ms = 0;
};

/// Runs `s` on a fresh fixture and world (seed = the scenario's seed).
sim_run run_sim(const scenario& s, sim_topology topo = {}) {
  auto wall0 = std::chrono::steady_clock::now();
  sim_run out;
  fixture fx;
  {
    test::silo_world w{fx, s.seed, link_latency_min_ms, link_latency_max_ms};
    auto rec = fx.track(fx.sys.spawn(recorder, &fx));
    auto& events = fixture::state_of<recorder_state>(rec).events;
    sim_mesh mesh{fx, w, s, rec, topo};
    demo_driver driver{s, mesh, "simulation"};
    std::ostringstream ledger_out;
    driver.write_ledger_events_to(&ledger_out);
    int64_t t0 = 0;
    std::map<std::string, int64_t> stop_started;
    std::map<std::string, int64_t> active_stopped_at;
    auto drain = [&]() -> bool {
      if (events.empty())
        return false;
      std::vector<sim_event> batch;
      batch.swap(events);
      // Hold first: a reaction to an earlier event of this batch must not be sent through
      // a routing service that is already gone.
      for (auto& e : batch)
        if (e.kind == sim_event::what::down)
          mesh.silo_down(e.a);
      for (auto& e : batch) {
        auto t = e.t_ms - t0;
        switch (e.kind) {
          case sim_event::what::ep: {
            if (ends_with(e.id, "-response"))
              break; // the node hubs' own responses are not scenario deliveries
            auto verdict = static_cast<routing::verdict>(e.verdict);
            if (e.a == "received")
              driver.on_landed(e.id, t);
            else if (e.a == "response")
              driver.on_response(e.id, t);
            else if (e.a == "nack")
              driver.on_nack(e.id, verdict, e.text, t);
            else if (e.a == "deadline")
              driver.on_deadline(e.id, t);
            else if (e.a == "duplicate")
              driver.on_duplicate_dropped(e.id, t);
            else if (e.a == "suppressed")
              driver.on_suppressed_failure(e.id, verdict, e.text, t);
            else if (e.a == "entry_failed")
              driver.on_hub_event(e.a, e.id, verdict, e.text, mesh.is_suppressed(e.id), t);
            break;
          }
          case sim_event::what::stage:
            if (!e.flag && e.stage == lifecycle::stages::become_active) {
              active_stopped_at[e.a] = t;
              mesh.active_stopped(e.a);
            }
            driver.on_silo(silo_event{e.a, e.generation,
                                      e.flag ? roll_phase::starting : roll_phase::stopping,
                                      e.stage, std::nullopt},
                           t);
            break;
          case sim_event::what::up:
            REQUIRE_MESSAGE(e.flag, "silo " << e.a << " failed to start");
            mesh.silo_up(e.a);
            driver.on_silo(silo_event{e.a, e.generation, roll_phase::active, std::nullopt,
                                      std::nullopt},
                           t);
            break;
          case sim_event::what::down: {
            std::optional<int64_t> hold;
            auto a = stop_started.find(e.a);
            auto b = active_stopped_at.find(e.a);
            if (a != stop_started.end() && b != active_stopped_at.end()
                && b->second >= a->second)
              hold = b->second - a->second;
            driver.on_silo(silo_event{e.a, e.generation, roll_phase::stopped, std::nullopt,
                                      hold},
                           t);
            break;
          }
        }
      }
      return true;
    };
    // Start: every silo Active, then the clients, the hubs, and 1 s to settle.
    mesh.start_silos();
    size_t up = 0;
    REQUIRE(fx.run_until(
      [&] {
        for (auto& e : events)
          if (e.kind == sim_event::what::up)
            ++up;
        drain();
        return up == s.silos.size();
      },
      std::chrono::seconds(30)));
    mesh.add_clients();
    mesh.build_hubs();
    fx.run_for(std::chrono::seconds(1));
    drain();
    // Traffic, in virtual time. The end: quiescent after the traffic, or 60 s of drain.
    t0 = fx.now_ms();
    std::optional<int64_t> drain_deadline;
    for (;;) {
      // Events first: the driver must know of every stop before it submits again.
      fx.run();
      if (drain())
        continue;
      auto now = fx.now_ms() - t0;
      auto before = driver.stops().size();
      driver.advance(now);
      if (driver.stops().size() > before)
        stop_started[driver.stops().back().name] = now;
      fx.run();
      if (drain())
        continue;
      if (driver.traffic_done()) {
        if (!drain_deadline)
          drain_deadline = now + 60000;
        if (driver.quiescent() || now >= *drain_deadline)
          break;
      }
      auto wake = driver.next_wakeup_ms();
      auto timer = fx.next_timeout_ms();
      if (wake && (timer < 0 || *wake + t0 <= timer))
        fx.run_to(std::max(*wake + t0, fx.now_ms()));
      else if (timer >= 0 && (!drain_deadline || timer - t0 <= *drain_deadline))
        fx.fire_next_timeout();
      else if (drain_deadline)
        fx.run_to(*drain_deadline + t0);
      else
        break; // nothing left to move anything
    }
    out.quiescent = driver.quiescent();
    out.end_ms = fx.now_ms() - t0;
    driver.write_ledger_events_to(nullptr);
    out.rep = driver.finish();
    out.ledger_lines = ledger_out.str();
    if (auto dump = std::getenv("SIMROLL_LEDGER_DUMP"))
      std::ofstream{dump} << out.ledger_lines;
    if (auto dump = std::getenv("SIMROLL_LOG_DUMP")) {
      std::ofstream f{dump};
      for (auto& l : fx.logs.lines())
        f << (l.t_ms - t0) << " " << l.component << " " << static_cast<int>(l.lvl) << " "
          << l.text << "\n";
    }
    out.ledger_digest = fnv1a64(out.ledger_lines);
    auto digest = testing::ask<uint64_t>(fx, w.net, sim_digest_atom::value);
    fx.run();
    REQUIRE(digest->ok());
    out.network_digest = digest->value;
    if (auto dump = std::getenv("SIMROLL_DIR_DUMP")) {
      std::ofstream f{dump};
      for (auto& e : w.silos) {
        if (e.gone)
          continue;
        auto xs = testing::ask<std::vector<activation_address>>(fx, e.s.partition,
                                                                 dir_entries_atom::value);
        fx.run();
        for (auto& a : xs->value)
          f << e.s.addr.to_string() << ": " << a.to_string() << "\n";
      }
    }
    if (auto dump = std::getenv("SIMROLL_NET_DUMP")) {
      auto tr = testing::ask<std::vector<std::string>>(fx, w.net, sim_trace_atom::value);
      fx.run();
      std::ofstream f{dump};
      for (auto& l : tr->value)
        f << l << "\n";
    }
    // Each stopping silo logged its quiescence outcome (SPEC §8.2).
    for (auto& a : mesh.stopped()) {
      auto none = w.first(a, "routing quiescence: no routing work in flight");
      auto landed = w.first(a, "routing quiescence: work landed after");
      if (none.t_ms < 0 && landed.t_ms < 0)
        out.stop_log_failures.push_back(a.to_string());
    }
    out.stops = mesh.stopped().size();
    // No leg abandoned, none stuck (SPEC §8.2).
    for (auto needle : {"abandoning", "did not land within", "releasing with"})
      for (auto& l : fx.logs.find(needle))
        out.abandoned.push_back(l.text);
    // Every re-sent request landed: its chain ends in a response.
    std::map<std::string, std::string> kind_of, outcome_of;
    std::set<std::string> landed_ids;
    std::istringstream in{out.ledger_lines};
    for (std::string line; std::getline(in, line);) {
      auto j = nlohmann::json::parse(line);
      auto ev = j.at("event").get<std::string>();
      auto id = j.value("id", std::string{});
      if (ev == "accepted")
        kind_of[id] = j.at("kind").get<std::string>();
      else if (ev == "landed")
        landed_ids.insert(id);
      else if (ev == "response" || ev == "nack" || ev == "deadline")
        outcome_of.emplace(id, ev == "nack" ? "nack " + j.at("verdict").get<std::string>()
                                            : ev);
    }
    for (auto& [id, o] : outcome_of)
      if (o == "deadline") {
        ++out.deadlines;
        if (landed_ids.count(id) == 0)
          out.deadline_not_landed.push_back(id);
      }
    for (auto& [id, kind] : kind_of)
      if (kind == "request" && id.find("-r") != std::string::npos) {
        ++out.resent_requests;
        auto o = outcome_of.find(id);
        auto text = o == outcome_of.end() ? std::string{"none"} : o->second;
        // Landed at its target, or a transient NACK followed by the next re-send of the
        // chain (the chain then ends later).
        if (landed_ids.count(id) == 0 && text != "nack shutting_down"
            && text != "nack unavailable")
          out.resent_not_landed.push_back(id + ": " + text);
      }
  }
  fx.shutdown();
  out.real_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                  std::chrono::steady_clock::now() - wall0)
                  .count();
  return out;
}

/// Every assertion of S12.58 on one run.
void check_s12_58(const sim_run& r, const scenario& s) {
  INFO("seed " << s.seed << "\n" << render_table(r.rep));
  CHECK(r.quiescent);
  for (auto& c : r.rep.checks) {
    INFO(c.name << ": " << c.detail);
    CHECK(c.ok);
  }
  CHECK(r.rep.passed);
  if (!r.rep.passed)
    for (auto& t : r.rep.input.ledger.nack_texts)
      MESSAGE("NACK text: " << t);
  auto& l = r.rep.input.ledger;
  CHECK(l.total.lost == 0);
  CHECK(l.multiple_terminal == 0);
  CHECK(l.total.accepted > 0);
  // The scenario's traffic really flowed: every kind accepted and landed.
  for (auto k : {delivery_kind::frame, delivery_kind::post, delivery_kind::request}) {
    REQUIRE(l.by_kind.count(k) == 1);
    CHECK(l.by_kind.at(k).landed > 0);
  }
  // No sender saw a `no_compatible_silo` fault or "no active silo" text; no verdict that
  // waiting cannot help; no request deadline.
  for (auto& t : l.nack_texts) {
    CHECK(t.find("no_compatible_silo") == std::string::npos);
    CHECK(t.find("no active silo") == std::string::npos);
  }
  // A request's deadline is its one terminal outcome only when the request itself landed
  // and its response was what could not be delivered (SPEC §6.12: the response's NACK goes
  // to the responder, responses are not re-sent).
  CHECK(r.deadline_not_landed.empty());
  for (auto& x : r.deadline_not_landed)
    MESSAGE("deadline of a request that never landed: " << x);
  CHECK(l.order_violations == 0);
  CHECK(l.stale_drops == 0);
  REQUIRE(r.rep.input.mirrors_diverged);
  CHECK(*r.rep.input.mirrors_diverged == 0);
  // The roll: each silo stopped once and came back with a newer generation.
  REQUIRE(r.rep.input.silos.size() == s.roll.order.size());
  for (size_t i = 0; i < s.roll.order.size(); ++i) {
    auto& st = r.rep.input.silos[i];
    CHECK(st.name == s.roll.order[i]);
    REQUIRE(st.generation_after);
    CHECK(*st.generation_after > st.generation_before);
    CHECK(st.stop_duration_ms);
    CHECK(st.landed_while_out > 0);
  }
  CHECK(r.stops == s.roll.order.size());
  CHECK(r.stop_log_failures.empty());
  for (auto& x : r.stop_log_failures)
    INFO("no quiescence line: " << x);
  CHECK(r.abandoned.empty());
  for (auto& x : r.abandoned)
    MESSAGE(x);
  CHECK(r.resent_not_landed.empty());
  for (auto& x : r.resent_not_landed)
    MESSAGE(x);
  CHECK(r.rep.input.traffic.request_resends_exhausted == 0);
  CHECK(r.rep.input.traffic.requests_resent == r.resent_requests);
}

std::string numbers(const sim_run& r) {
  auto& l = r.rep.input.ledger;
  std::ostringstream o;
  o << "accepted " << l.total.accepted << ", landed " << l.total.landed << ", NACKed "
    << l.total.nacked << " {";
  for (auto& [v, n] : l.nacked_by_verdict)
    o << routing::to_string(v) << ": " << n << " ";
  o << "}, suppressed failures {";
  for (auto& [v, n] : l.suppressed_by_verdict)
    o << routing::to_string(v) << ": " << n << " ";
  o << "}, requests re-sent " << r.rep.input.traffic.requests_resent << ", fresh Fulls "
    << r.rep.input.traffic.fresh_fulls_after_nack << ", request deadlines (landed, response lost) "
    << r.deadlines << ", landed while out";
  for (auto& st : r.rep.input.silos)
    o << " " << st.name << "=" << st.landed_while_out << " (hold "
      << (st.quiescence_hold_ms ? std::to_string(*st.quiescence_hold_ms) : "-") << " ms)";
  o << ", latency p99 "
    << (l.latency_p99_ms ? std::to_string(*l.latency_p99_ms) + " ms" : std::string{"-"})
    << ", overload refusals " << r.rep.input.traffic.overload_refusals;
  o << ", virtual end " << r.end_ms << " ms, real " << r.real_ms << " ms";
  return o.str();
}

} // namespace

TEST_CASE("S12.58 3 silos and 2 pure clients with co-hosted hubs roll gracefully in simulation: one terminal outcome per delivery, nothing lost, mirrors equal their owners") {
  auto s = s12_58_scenario(42);
  auto r = run_sim(s);
  MESSAGE(numbers(r));
  check_s12_58(r, s);
}

TEST_CASE("S12.62 the simulated roll is deterministic with seed 42 and every seed from 1 to 10 satisfies S12.58") {
  auto s = s12_58_scenario(42);
  auto first = run_sim(s);
  auto second = run_sim(s);
  MESSAGE(numbers(first));
  CHECK(first.network_digest == second.network_digest);
  CHECK(first.ledger_digest == second.ledger_digest);
  CHECK(first.ledger_lines == second.ledger_lines);
  CHECK(first.ledger_lines.size() > 0);
  check_s12_58(first, s);
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    auto si = s12_58_scenario(seed);
    auto r = run_sim(si);
    MESSAGE("seed " << seed << ": " << numbers(r));
    check_s12_58(r, si);
  }
}

TEST_CASE("S12.58 the simulated roll also holds with portal hubs co-hosted on the silos as well as in the pure clients (senders both), seed 42 and seeds 1 to 10") {
  auto s = s12_58_scenario(42);
  s.traffic.senders = sender_placement::both;
  auto r = run_sim(s);
  MESSAGE(numbers(r));
  check_s12_58(r, s);
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    auto si = s12_58_scenario(seed);
    si.traffic.senders = sender_placement::both;
    auto ri = run_sim(si);
    MESSAGE("seed " << seed << ": " << numbers(ri));
    check_s12_58(ri, si);
  }
}

// -- the users' topology: answering node hubs inside every silo ----------------------------

namespace {

/// Everything S12.58 asserts, plus: no request ended by its deadline (a graceful stop must
/// leave every request answered, or NACKed once its retry budget is spent).
void check_s13_09(const sim_run& r, const scenario& s) {
  check_s12_58(r, s);
  INFO("seed " << s.seed);
  CHECK(r.rep.input.ledger.total.deadlines == 0);
  CHECK(r.deadlines == 0);
}

/// The S13.10 scenario: no sequential roll; A stopped at 2 s and B 10 ms later, each restarted
/// 1 s after its own stop completed, so B's stop begins while A's is still in progress.
scenario s13_10_scenario(uint64_t seed) {
  auto s = s12_58_scenario(seed);
  s.name = "sim-overlapping-stops";
  s.roll.order.clear();
  s.roll.steps = {roll_step_spec{"A", 2000, 1000}, roll_step_spec{"B", 2010, 1000}};
  return s;
}

/// Admission bounds of every router core and gateway: the nominal load (500/s) passes them
/// (with 8 it was already refused one delivery in eleven), three times that does not.
constexpr const char* s13_12_config
  = R"({"routing":{"max_in_flight":16},"gateway":{"max_outstanding":16}})";

/// The accepted deliveries' latency bound of S13.12.
constexpr int64_t s13_12_max_p99_ms = 2000;

} // namespace

TEST_CASE("S13.09 S12.58 with the answering node hubs co-hosted in every silo and every silo rolled: S12.58's assertions hold and no request ends by its deadline, seeds 1 to 10") {
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    auto s = s12_58_scenario(seed);
    s.name = "sim-roll-users-topology";
    s.expect.max_request_deadlines = 0;
    auto r = run_sim(s, sim_topology{true});
    MESSAGE("seed " << seed << ": " << numbers(r));
    check_s13_09(r, s);
  }
}

TEST_CASE("S13.10 3 silos under traffic, two stopped gracefully with overlapping windows: nothing lost, one terminal outcome per delivery, seeds 1 to 10") {
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    auto s = s13_10_scenario(seed);
    auto r = run_sim(s, sim_topology{true});
    MESSAGE("seed " << seed << ": " << numbers(r));
    INFO("seed " << seed << "\n" << render_table(r.rep));
    auto& l = r.rep.input.ledger;
    CHECK(r.quiescent);
    CHECK(l.total.accepted > 0);
    CHECK(l.total.lost == 0);
    CHECK(l.multiple_terminal == 0);
    // Both stops happened, overlapped, and both silos came back with a newer generation.
    REQUIRE(r.rep.input.silos.size() == 2);
    auto& a = r.rep.input.silos[0];
    auto& b = r.rep.input.silos[1];
    CHECK(a.name == "A");
    CHECK(b.name == "B");
    REQUIRE(a.stop_duration_ms);
    REQUIRE(b.stop_duration_ms);
    CHECK(b.stop_started_ms < a.stop_started_ms + *a.stop_duration_ms);
    REQUIRE(a.generation_after);
    REQUIRE(b.generation_after);
    CHECK(*a.generation_after > a.generation_before);
    CHECK(*b.generation_after > b.generation_before);
    CHECK(r.stops == 2);
  }
}

TEST_CASE("S13.12 traffic at 3 times the carried rate with a roll: nothing lost, one terminal outcome per delivery, every refusal carries retry_after_ms, accepted deliveries' p99 within the bound") {
  // The carried rate: what the mesh with these admission bounds carries of the nominal
  // load, without a roll.
  auto base = s12_58_scenario(42);
  base.name = "sim-carried-rate";
  base.config_json = s13_12_config;
  base.roll.order.clear();
  auto measured = run_sim(base, sim_topology{true});
  auto& ml = measured.rep.input.ledger;
  REQUIRE(ml.total.lost == 0);
  auto carried_per_s = static_cast<int64_t>(ml.total.landed) / base.duration_s;
  MESSAGE("carried " << carried_per_s << " deliveries/s: " << numbers(measured));
  REQUIRE(carried_per_s > 0);
  // Three times that, with the roll.
  auto s = s12_58_scenario(42);
  s.name = "sim-overload-roll";
  s.config_json = s13_12_config;
  s.rate_per_s = 3 * carried_per_s;
  s.expect.max_p99_ms = s13_12_max_p99_ms;
  auto r = run_sim(s, sim_topology{true});
  MESSAGE(numbers(r) << ", overload refusals " << r.rep.input.traffic.overload_refusals
                     << ", re-sent after overload " << r.rep.input.traffic.overload_resends);
  INFO(render_table(r.rep));
  auto& l = r.rep.input.ledger;
  auto& t = r.rep.input.traffic;
  CHECK(r.quiescent);
  CHECK(l.total.lost == 0);
  CHECK(l.multiple_terminal == 0);
  // The load really exceeded the bounds, and every refusal said when to come back.
  CHECK(t.overload_refusals > 0);
  CHECK(t.overload_refusals_without_retry_after == 0);
  CHECK(t.overload_resends > 0);
  REQUIRE(l.latency_p99_ms);
  CHECK(*l.latency_p99_ms <= s13_12_max_p99_ms);
  CHECK(r.stops == s.roll.order.size());
}
