#pragma once

/// @file
/// Test world of whole silos (docs/testing.md#the-simulation-harness): N silos built by
/// `spawn_silo` (every per-silo actor, the lifecycle subject with the
/// docs/behaviour/lifecycle.md#stages wiring, and the host), plus pure clients, on one fixture with
/// one `sim_network` and one membership oracle. Per silo: start, kill, stop(graceful) through the
/// host, restart with the next generation. The lifecycle trace is the fixture's log capture (every
/// line with its virtual ms); `trace_of(silo)` keeps the lines of one silo. Part of
/// cafmesh::testing (installed): link it to test an application's grains and hubs on whole
/// simulated silos.

#include <cstdint>
#include <deque>
#include <functional>
#include <tuple>
#include <string>
#include <vector>

#include <caf/all.hpp>

#include "cafmesh/actors/sim_network.hpp"
#include "cafmesh/routing/quiescence_atoms.hpp"
#include "cafmesh/actors/runtime_registry.hpp"
#include "cafmesh/actors/stage.hpp"
#include "cafmesh/lifecycle/pure_client.hpp"
#include "cafmesh/lifecycle/silo_builder.hpp"
#include "cafmesh/lifecycle/silo_components.hpp"
#include "cafmesh/routing/application_hub.hpp"
#include "cafmesh/testing/ask.hpp"
#include "cafmesh/testing/fixture.hpp"
#include "cafmesh/testing/entry_world.hpp"
#include "cafmesh/testing/builder_access.hpp"

namespace cafmesh::testing {

/// One silo of the world, with the test hub factory and path resolver it was given.
struct world_entry {
  lifecycle::silo_components s;
  std::shared_ptr<lifecycle::silo> handle; ///< the builder's handle (owns the silo's actors)
  caf::actor hubs;
  caf::actor resolver;
  bool gone = false; ///< killed or stopped
};

/// Options of one silo of a `silo_world`.
struct silo_world_options {
  bool start = true;                 ///< start the host and run until started
  /// docs/behaviour/quiescence.md#the-participant-at-stage-active negative control
  bool subscribe_quiescence = true;
  /// Application grain types; empty: `slow` (single, prefer-local, `slow_grain`) and
  /// `slowsw` (stateless worker, limit 1, `slow_grain`).
  std::function<void(grain_registry&, const silo_address&)> grains;
  std::function<void(config::mesh_config&)> configure;
  /// The application's path resolver; null: `test_resolver`.
  caf::actor resolver;
  /// The oracle this silo's agent talks to; null: the world's oracle.
  membership_oracle_actor oracle;
  /// The process's mesh teardown (host step 4); null: none.
  lifecycle::mesh_teardown_actor teardown;
  /// The application hubs this silo's hub factory builds answer every request they take
  /// in with a response (`test_hub_factory_state::respond`); off: they only record it.
  bool hubs_respond = false;
  /// The application's own hubs (pattern, handler; application_hub.hpp), served by the
  /// silo's hub table as in production. Empty: the test hub factory above.
  std::vector<std::pair<std::string, routing::async_hub_handler>> hubs;
  /// The router core's failure observer (`silo_options::failure_observer`); null: none.
  caf::actor failure_observer;
  /// Extra observers subscribed to the subject before the start (stage, name, observer).
  std::vector<std::tuple<lifecycle::stage, std::string, lifecycle::lifecycle_observer_actor>>
    probes;
};

/// A pure client of the world (`spawn_pure_client`): message centre, agent, routing service
/// (component `client`), and a recorder that gets a copy of every stop-send.
struct world_client {
  silo_address addr;
  caf::actor centre, routing, inbox;
  membership_agent_actor agent;
};

class silo_world {
public:
  /// Link latencies default to 0 (exact timings, docs/testing.md#the-simulation-harness); a
  /// scenario that needs the network to take time passes a range in ms.
  explicit silo_world(testing::fixture& fx, uint64_t seed = 1, int64_t latency_min_ms = 0,
                      int64_t latency_max_ms = 0)
    : fx_(fx) {
    cfg.simulation.seed = seed;
    cfg.simulation.link_latency_min_ms = latency_min_ms;
    cfg.simulation.link_latency_max_ms = latency_max_ms;
    sim_network_config nc;
    nc.seed = seed;
    nc.link_latency_min_ms = latency_min_ms;
    nc.link_latency_max_ms = latency_max_ms;
    net = fx_.track(spawn_sim_network(fx_.sys, nc));
    oracle = fx_.track(
      spawn_membership_oracle(fx_.sys, {cfg.simulation.failure_detection_ms}, net));
    registry = fx_.track(lifecycle::spawn_runtime_registry(fx_.sys));
    cluster_ = std::make_shared<lifecycle::in_process_cluster>(net, oracle);
  }

  /// Builds a silo at `host:port` with the next generation; by default starts it (host
  /// start) and runs until every stage started.
  lifecycle::silo_components& add_silo(const std::string& host, silo_world_options o = {},
                          uint16_t port = 11111) {
    auto silo_cfg = cfg;
    if (o.configure)
      o.configure(silo_cfg);
    auto resolver = o.resolver ? o.resolver : fx_.track(fx_.sys.spawn(test_resolver));
    silo_address self_addr{host, port, ++generation_};
    if (!o.grains)
      o.grains = [](grain_registry& r, const silo_address& s) {
        r.add_single("slow", placement_strategy::prefer_local, slow_grain(s));
        r.add_stateless("slowsw", 1, slow_grain(s));
      };
    // The one wiring of a silo (silo_builder), on the world's network and oracle; the
    // world's test switches are builder overrides (builder_access.hpp).
    lifecycle::silo_builder builder{fx_.sys};
    builder.config(silo_cfg)
      .cluster(cluster_)
      .without_entry()
      .path_resolver(resolver)
      .grains([g = o.grains, self_addr](grain_registry& r) {
        g(r, self_addr);
        return true;
      });
    builder_access::at(builder, self_addr);
    builder_access::override_options(builder, [&](lifecycle::silo_options& so) {
      so.oracle = o.oracle ? o.oracle : oracle;
      so.registry = registry;
      if (!o.subscribe_quiescence)
        builder_access::without_quiescence_participant(so);
      so.teardown = o.teardown;
      so.failure_observer = o.failure_observer;
    });
    for (auto& [pattern, handler] : o.hubs)
      builder.hub(pattern, handler);
    auto built = builder.build();
    if (!built)
      throw std::logic_error("silo_world: " + to_fault(built.error()).render());
    world_entry e;
    e.s = built->components();
    e.handle = std::make_shared<lifecycle::silo>(std::move(*built));
    for (auto& a : e.s.all())
      if (a)
        fx_.track(a);
    e.resolver = resolver;
    if (o.hubs.empty()) {
      e.hubs = fx_.track(fx_.sys.spawn(test_hub_factory, e.s.routing, std::string{"node"}));
      testing::fixture::state_of<test_hub_factory_state>(e.hubs).respond = o.hubs_respond;
      e.s.slots->hubs = caf::actor_cast<routing::hub_factory_actor>(e.hubs);
    }
    silos.push_back(std::move(e));
    auto& s = silos.back().s;
    for (auto& [stg, nm, obs] : o.probes)
      caf::anon_send(s.subject, lifecycle::subscribe_atom::value, stg, nm, obs);
    fx_.run();
    if (o.start) {
      auto r = testing::ask(fx_, s.host, lifecycle::host_start_atom::value);
      fx_.run();
      last_start = r;
    }
    return s;
  }

  /// A pure client (`spawn_pure_client`) homed on gateway `gw`
  /// (docs/behaviour/membership.md#gateways-for-pure-clients); an empty `gw` leaves the choice to
  /// the client (at random from the active set). Its stop-sends are also copied to `inbox`.
  /// `failure_observer`: receives the client's final failures of answer-suppressed
  /// deliveries (`routing_service_options::failure_observer`); null: none.
  world_client add_client(const std::string& host, const silo_address& gw,
                          std::function<void(config::mesh_config&)> configure = nullptr,
                          caf::actor failure_observer = caf::actor{}) {
    world_client c;
    c.addr = silo_address{host, 11111, ++generation_};
    c.inbox = fx_.track(fx_.sys.spawn(echo));
    lifecycle::pure_client_options po;
    po.cfg = cfg;
    if (configure)
      configure(po.cfg);
    po.self = c.addr;
    po.link = net;
    po.oracle = oracle;
    po.events = c.inbox;
    po.failure_observer = std::move(failure_observer);
    auto pc = lifecycle::spawn_pure_client(fx_.sys, po);
    c.centre = fx_.track(pc.centre);
    c.agent = fx_.track(pc.agent);
    c.routing = fx_.track(pc.routing);
    fx_.run();
    if (!gw.empty()) {
      caf::anon_send(c.routing, routing::rs_home_atom::value, gw);
      fx_.run();
    }
    clients.push_back(c);
    return c;
  }

  world_entry& entry(const silo_address& a) {
    for (auto& e : silos)
      if (e.s.addr == a)
        return e;
    throw std::logic_error("no such silo");
  }
  lifecycle::silo_components& at(const silo_address& a) { return entry(a).s; }

  /// Host stop (docs/testing.md#the-simulation-harness `stop(silo, graceful)`); the reply records
  /// when it answered.
  std::shared_ptr<testing::reply<caf::ok_atom>> stop(const silo_address& a, bool graceful) {
    auto r = testing::ask(fx_, at(a).host, lifecycle::host_halt_atom::value, graceful);
    entry(a).gone = true;
    return r;
  }

  /// Kills `a` (docs/testing.md#the-simulation-harness `kill`): the network drops its traffic and
  /// its actors exit without a lifecycle stop.
  void kill(const silo_address& a) {
    caf::anon_send(net, sim_kill_atom::value, a);
    at(a).stop_all();
    entry(a).gone = true;
    fx_.run();
  }

  /// Restarts `a` (docs/testing.md#the-simulation-harness `restart`): kills it if still alive, then
  /// a new silo on the same host and port with the next generation.
  lifecycle::silo_components& restart(const silo_address& a, silo_world_options o = {}) {
    if (!entry(a).gone)
      kill(a);
    return add_silo(a.host, std::move(o), a.port);
  }

  /// Asks the membership view of `a`'s agent (run the fixture to let it arrive).
  std::shared_ptr<testing::reply<membership_snapshot>> view_of(const silo_address& a) {
    return testing::ask<membership_snapshot>(fx_, at(a).agent, mb_get_atom::value);
  }

  /// Every captured line of silo `a` (context `[{a}]`), in order.
  std::vector<log::line> trace_of(const silo_address& a) const {
    std::vector<log::line> out;
    auto ctx = "[" + a.to_string() + "]";
    for (auto& l : fx_.logs.lines())
      if (l.text.find(ctx) != std::string::npos)
        out.push_back(l);
    return out;
  }

  /// The first line of `a`'s trace containing `needle` (t_ms -1 and empty if none), and its
  /// position in the trace.
  struct hit {
    int64_t t_ms = -1;
    long index = -1;
    std::string text;
  };
  hit first(const silo_address& a, const std::string& needle) const {
    auto tr = trace_of(a);
    for (size_t i = 0; i < tr.size(); ++i)
      if (tr[i].text.find(needle) != std::string::npos)
        return {tr[i].t_ms, static_cast<long>(i), tr[i].text};
    return {};
  }

  config::mesh_config cfg;
  sim_network_actor net;
  membership_oracle_actor oracle;
  lifecycle::runtime_registry_actor registry;
  std::deque<world_entry> silos;
  lifecycle::in_process_cluster_ptr cluster_; ///< `net` and `oracle` as the builders' cluster
  std::vector<world_client> clients;
  std::shared_ptr<testing::reply<caf::ok_atom>> last_start;

private:
  testing::fixture& fx_;
  uint64_t generation_ = 0;
};

} // namespace cafmesh::testing
