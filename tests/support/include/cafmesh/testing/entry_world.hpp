#pragma once

/// @file
/// Test world for the routing entry layer: whole silos built by `silo_builder` (the one
/// wiring, `lifecycle::spawn_silo`: message centre, membership agent, directory partition,
/// placement, catalog with the routing layer's grains, routing service, grain-delivery
/// adapter, I/O pool, quiescence gauge, stream transport, router core, pod-hub claimer,
/// gateway part, lifecycle subject and host), started through their host; the test hub
/// factory, path resolver and proxies below, pure-client and monolith processes, all in one
/// fixture system on the virtual clock, on one `sim_network` and one membership oracle. The
/// world's test switches (`entry_silo_options`) are builder overrides (`silo_options`,
/// `config::mesh_config`). Test grains and helpers come from the placement world
/// (placement_world.hpp, sim_world.hpp).

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <caf/all.hpp>

#include "cafmesh/routing/node_path_resolver.hpp"
#include "cafmesh/testing/ask.hpp"
#include "cafmesh/testing/placement_world.hpp"
#include "cafmesh/actors/lifecycle_atoms.hpp"
#include "cafmesh/actors/observer.hpp"
#include "cafmesh/actors/stage.hpp"
#include "cafmesh/lifecycle/in_process_cluster.hpp"
#include "cafmesh/lifecycle/silo_builder.hpp"
#include "cafmesh/lifecycle/silo_components.hpp"
#include "cafmesh/routing/io_pool.hpp"
#include "cafmesh/routing/routing_quiescence.hpp"
#include "cafmesh/actors/stopping_recipient.hpp"
#include "cafmesh/routing/hub_endpoint.hpp"
#include "cafmesh/routing/hub_grains.hpp"
#include "cafmesh/routing/router_core.hpp"
#include "cafmesh/routing/routing_service.hpp"
#include "cafmesh/actors/detail/catalog_state.hpp"
#include "cafmesh/actors/detail/placement_state.hpp"
#include "cafmesh/actors/detail/sim_network_state.hpp"
#include "cafmesh/routing/detail/hub_endpoint_state.hpp"
#include "cafmesh/routing/detail/hub_grains_state.hpp"
#include "cafmesh/routing/detail/routing_service_state.hpp"
#include "cafmesh/testing/builder_access.hpp"

namespace cafmesh::testing {

using namespace cafmesh::routing;

// -- test hub factory -----------------------------------------------------------------

struct test_hub_factory_state {
  caf::actor routing;                 ///< routing service the built hubs send through
  std::string type = "node";          ///< address type of built hubs: `{type}/{key}`
  int64_t delay_ms = 0;               ///< build time
  std::set<std::string> fail;         ///< keys whose build fails `application`
  bool respond = false;               ///< built hubs answer requests with a response
  std::vector<std::string> built;     ///< keys built, in order
  std::map<std::string, caf::actor> hubs;
  static inline const char* name = "test.hub_factory";
};

using tf_done_atom = caf::atom_constant<caf::atom("tfdone")>;

/// Builds hub endpoints (linked: they exit with the factory). Monolith: key = host path.
inline caf::behavior test_hub_factory(caf::stateful_actor<test_hub_factory_state>* self,
                                      caf::actor routing, std::string type) {
  self->state.routing = routing;
  self->state.type = type;
  auto pending = std::make_shared<std::map<uint64_t, std::pair<std::string, caf::response_promise>>>();
  auto seq = std::make_shared<uint64_t>(0);
  // Built hubs are linked; their own exits (a test disposing a hub) do not end the factory.
  self->set_exit_handler([=](caf::exit_msg& msg) {
    for (auto& kv : self->state.hubs)
      if (kv.second.address() == msg.source)
        return;
    self->quit(msg.reason);
  });
  return {
    [=](hf_build_atom, const std::string& key) -> caf::result<caf::actor> {
      auto& st = self->state;
      auto rp = self->make_response_promise();
      auto id = ++*seq;
      pending->emplace(id, std::make_pair(key, rp));
      self->delayed_send(self, std::chrono::milliseconds(st.delay_ms), tf_done_atom::value, id);
      return rp;
    },
    [=](tf_done_atom, uint64_t id) {
      auto& st = self->state;
      auto i = pending->find(id);
      if (i == pending->end())
        return;
      auto key = i->second.first;
      auto rp = i->second.second;
      pending->erase(i);
      if (st.fail.count(key) != 0) {
        rp.deliver(to_error(fault{mesh_errc::application, "hub constructor threw"}));
        return;
      }
      address a;
      if (st.type.empty())
        address::parse(key, a);
      else
        a = address{st.type, key, {}};
      // An application hub: the factory answers a plain handle.
      auto hub = caf::actor_cast<caf::actor>(
        spawn_hub_endpoint(self->system(), a, st.routing, {}, st.respond));
      self->link_to(hub);
      st.built.push_back(key);
      st.hubs[key] = hub;
      rp.deliver(hub);
    },
  };
}

// -- test path resolver: `node/{prefix}` -> prefix ----------------------------------------

inline caf::behavior test_resolver(caf::event_based_actor*) {
  return {
    [](pr_resolve_atom, const std::string& path) {
      resolve_result r;
      if (auto prefix = routing::node_prefix_of("node", path)) {
        r.found = true;
        r.node_prefix = std::move(*prefix);
      }
      return r;
    },
  };
}

// -- grain port proxy: rejects chosen first attempts, records every attempt ---------------

struct port_proxy_state {
  caf::actor real;
  std::set<std::string> reject_first; ///< delivery ids whose first attempt is `rejected`
  std::set<std::string> hold;         ///< delivery ids never answered (legs stay in flight)
  std::vector<grain_port_reply> held;
  std::map<std::string, int> attempts;
  /// Calls handed to `real`, by the proxy's own call id: the caller's reply and delivery id.
  std::map<uint64_t, std::pair<grain_port_reply, std::string>> forwarded;
  uint64_t next_call = 0;
  struct event {
    uint64_t seq;
    int64_t t_ms;
    std::string id;
    std::string what; ///< "attempt", "answer", "rejected"
  };
  std::vector<event> events;
  uint64_t seq = 0;
  testing::fixture* fx = nullptr;
  static inline const char* name = "test.port_proxy";
};

inline caf::behavior port_proxy(caf::stateful_actor<port_proxy_state>* self, caf::actor real,
                                testing::fixture* fx) {
  self->state.real = real;
  self->state.fx = fx;
  auto note = [=](const std::string& id, const std::string& what) {
    auto& st = self->state;
    st.events.push_back({++st.seq, st.fx->now_ms(), id, what});
  };
  // The forwarded call `own` (its reply and delivery id), taken out; none if unknown.
  auto take = [=](uint64_t own) -> std::optional<std::pair<grain_port_reply, std::string>> {
    auto& st = self->state;
    auto i = st.forwarded.find(own);
    if (i == st.forwarded.end())
      return std::nullopt;
    auto out = std::move(i->second);
    st.forwarded.erase(i);
    return out;
  };
  return {
    [=](gp_call_atom, uint64_t call, const grain_id& g, envelope& d, caf::timespan within) {
      auto& st = self->state;
      auto id = d.id;
      note(id, "attempt");
      grain_port_reply rp{self, call};
      if (st.hold.count(id) != 0) {
        st.held.push_back(rp);
        return;
      }
      if (st.attempts[id]++ == 0 && st.reject_first.count(id) != 0) {
        note(id, "rejected");
        rp.deliver(to_error(fault{mesh_errc::rejected, "turned away by the activation (test)"}));
        return;
      }
      auto own = ++st.next_call;
      st.forwarded.emplace(own, std::make_pair(rp, id));
      self->send(st.real, gp_call_atom::value, own, g, std::move(d), within);
    },
    [=](gp_result_atom, uint64_t own, envelope& r) {
      if (auto call = take(own)) {
        // Every attempt passes the proxy: the answers it hands on name no activation, so the
        // router core keeps no remote route (docs/delivery-costs.md#the-remote-frame-path).
        r.properties.erase("landed_activation");
        note(call->second, "answer");
        note(call->second, "answer:" + to_string(r.state));
        call->first.deliver(std::move(r));
      }
    },
    [=](gp_result_atom, uint64_t own, caf::error& e) {
      if (auto call = take(own)) {
        note(call->second, "error");
        call->first.deliver(std::move(e));
      }
    },
    [=](gp_invalidate_atom a, const grain_id& g) { self->send(self->state.real, a, g); },
    [=](gp_inval_silo_atom a, const silo_address& s) { self->send(self->state.real, a, s); },
    [=](gp_act_error_atom a, const grain_id& g) { return self->delegate(self->state.real, a, g); },
  };
}

// -- gateway proxy: rejects the first N client calls, or never answers ------------------

struct gateway_proxy_state {
  caf::actor real;       ///< the silo's gateway part
  int reject = 0;        ///< first N calls answered `rejected`
  bool silent = false;   ///< never answer
  std::vector<int64_t> calls_ms;
  std::vector<caf::response_promise> held;
  testing::fixture* fx = nullptr;
  static inline const char* name = "test.gateway_proxy";
};

/// Served as component `gateway` in front of the gateway part `real`
/// (`builder_access::wrap_gateway`): records every client grain call, refuses or holds the
/// chosen ones and hands the rest, and every attach, detach and connect, to `real`.
inline caf::behavior gateway_proxy(caf::stateful_actor<gateway_proxy_state>* self,
                                   caf::actor real, testing::fixture* fx) {
  self->state.real = real;
  self->state.fx = fx;
  return {
    [=](pl_call_atom a, const grain_id& g, int32_t fwd, caf::message& m) -> caf::result<caf::message> {
      auto& st = self->state;
      st.calls_ms.push_back(st.fx->now_ms());
      if (st.silent) {
        st.held.push_back(self->make_response_promise());
        return st.held.back();
      }
      if (st.reject > 0) {
        --st.reject;
        return to_error(fault{mesh_errc::rejected, "gateway queue full (test)"});
      }
      self->delegate(st.real, a, g, fwd, std::move(m));
      return caf::delegated<caf::message>{};
    },
    [=](gw_attach_atom a, const silo_address& client, const address& path) {
      self->delegate(self->state.real, a, client, path);
      return caf::delegated<bool>{};
    },
    [=](gw_detach_atom a, const silo_address& client, const address& path) {
      self->delegate(self->state.real, a, client, path);
      return caf::delegated<caf::ok_atom>{};
    },
    [=](gw_connect_atom a, const silo_address& client) {
      self->send(self->state.real, a, client);
    },
  };
}

// -- join hold: a silo that joins and stays Joining ---------------------------------------

using hold_release_atom = caf::atom_constant<caf::atom("tholdrel")>;

struct join_hold_state {
  bool started = false;  ///< the silo's start reached the hold
  bool released = false;
  caf::response_promise start;
  static inline const char* name = "test.join_hold";
};

/// The stage the join hold observes: after ApplicationServices (the routing actors are
/// ready) and before BecomeActive publishes Active (docs/behaviour/lifecycle.md#stages).
inline constexpr lifecycle::stage join_hold_stage = lifecycle::stages::application_services + 1;

/// A lifecycle observer (docs/behaviour/lifecycle.md#the-lifecycle-subject) whose start answers
/// only once `hold_release_atom` arrived: the silo's start waits there, joined (Joining) and not
/// yet Active, its gateway not yet open; released, the start goes on to BecomeActive and Active.
inline caf::behavior join_hold(caf::stateful_actor<join_hold_state>* self) {
  return {
    [=](lifecycle::start_stage_atom, lifecycle::stage) {
      auto& st = self->state;
      st.started = true;
      auto rp = self->make_response_promise();
      if (st.released)
        rp.deliver(caf::ok_atom::value);
      else
        st.start = rp;
      return rp;
    },
    [=](lifecycle::stop_stage_atom, lifecycle::stage, bool) { return caf::ok_atom::value; },
    [=](lifecycle::budget_expired_atom) {
      // nop
    },
    [=](hold_release_atom) {
      auto& st = self->state;
      st.released = true;
      if (st.start.pending())
        st.start.deliver(caf::ok_atom::value);
    },
  };
}

// -- the world ------------------------------------------------------------------------

/// One silo of the world: the handles of its `silo_components`, the test parts it was given
/// and the builder's handle (which owns the silo's actors).
struct entry_silo {
  silo_address addr;
  std::shared_ptr<grain_registry> registry;
  silo_routing_slots_ptr slots;
  caf::actor centre, placement, catalog, routing, hubs, resolver;
  membership_agent_actor agent;
  directory_partition_actor partition;
  routing::pod_hub_claimer_actor claimer;
  caf::actor gateway; ///< component `gateway`: the gateway proxy, if any, else the gateway part
  grain_port_actor grains;
  caf::actor proxy; ///< the port proxy, if any
  routing::io_pool_actor pool;
  routing::routing_quiescence_actor gauge;
  router_core_actor core;
  lifecycle::silo_lifecycle_actor subject;
  lifecycle::host_actor host;
  caf::actor hold; ///< the join hold (`activate = false`) until released, else null
  std::shared_ptr<lifecycle::silo> handle;
};

/// The test switches of one silo, applied as builder overrides.
struct entry_silo_options {
  /// Start until Active; false: the start stops at the join hold (Joining, gateway closed)
  /// until `set_status(addr, active)` releases it.
  bool activate = true;
  bool port_proxy = false;          ///< `builder_access::wrap_grain_port` with a `port_proxy`
  bool gateway_proxy = false;       ///< `builder_access::wrap_gateway` with a `gateway_proxy`
  int64_t hub_build_delay_ms = 0;   ///< `test_hub_factory_state::delay_ms`
  int64_t idle_deactivation_ms = 0; ///< `catalog.idle_deactivation_ms` (0: off)
  /// `directory.stateless_worker_bypass`
  /// (docs/behaviour/directory-and-placement.md#the-stateless-worker-bypass)
  bool bypass = true;
};

struct client_process {
  silo_address addr;
  caf::actor centre, routing;
  membership_agent_actor agent;
};

struct monolith_process {
  caf::actor routing, hubs;
};

class entry_world {
public:
  explicit entry_world(testing::fixture& fx) : fx_(fx) {
    net_ = fx_.track(spawn_sim_network(fx_.sys, placement_world::zero_latency()));
    oracle = fx_.track(spawn_membership_oracle(fx_.sys, {cfg.simulation.failure_detection_ms}, net_));
    cluster_ = std::make_shared<lifecycle::in_process_cluster>(net_, oracle);
  }

  /// Builds a silo at `host` with the next generation through `silo_builder` and starts
  /// it through its host: until Active (`opt.activate`), else until the join hold.
  entry_silo& add_silo(const std::string& host, entry_silo_options opt = {}) {
    auto& sys = fx_.sys;
    auto silo_cfg = cfg;
    silo_cfg.directory.stateless_worker_bypass = opt.bypass;
    silo_cfg.catalog.idle_deactivation_ms = opt.idle_deactivation_ms;
    silo_address self_addr{host, 11111, ++generation_};
    auto resolver = fx_.track(sys.spawn(test_resolver));
    caf::actor port_px;
    caf::actor gateway_px;
    // The one wiring of a silo (silo_builder), on the world's network and oracle; the
    // world's test switches are builder overrides (builder_access.hpp).
    lifecycle::silo_builder builder{sys};
    builder.config(silo_cfg).cluster(cluster_).without_entry().path_resolver(resolver);
    builder_access::at(builder, self_addr);
    builder_access::override_options(builder, [&](lifecycle::silo_options& so) {
      if (opt.port_proxy)
        builder_access::wrap_grain_port(so, [&](grain_port_actor real) {
          port_px = fx_.track(sys.spawn(port_proxy, caf::actor_cast<caf::actor>(real), &fx_));
          return caf::actor_cast<grain_port_actor>(port_px);
        });
      if (opt.gateway_proxy)
        builder_access::wrap_gateway(so, [&](caf::actor real) {
          gateway_px = fx_.track(sys.spawn(gateway_proxy, real, &fx_));
          return gateway_px;
        });
    });
    auto built = builder.build();
    if (!built)
      throw std::logic_error("entry_world: " + to_fault(built.error()).render());
    auto handle = std::make_shared<lifecycle::silo>(std::move(*built));
    const auto& c = handle->components();
    for (auto& a : c.all())
      if (a)
        fx_.track(a);
    entry_silo s;
    s.handle = handle;
    s.addr = c.addr;
    s.registry = c.registry;
    s.slots = c.slots;
    s.centre = c.centre;
    s.agent = c.agent;
    s.partition = c.partition;
    s.placement = c.placement;
    s.catalog = c.catalog;
    s.routing = c.routing;
    s.claimer = c.claimer;
    s.gateway = gateway_px ? gateway_px : c.gateway;
    s.grains = c.grains;
    s.proxy = port_px;
    s.pool = c.pool;
    s.gauge = c.gauge;
    s.core = c.core;
    s.subject = c.subject;
    s.host = c.host;
    s.resolver = resolver;
    s.hubs = fx_.track(sys.spawn(test_hub_factory, s.routing, std::string{"node"}));
    fx_.state_of<test_hub_factory_state>(s.hubs).delay_ms = opt.hub_build_delay_ms;
    s.slots->hubs = caf::actor_cast<hub_factory_actor>(s.hubs);
    if (!opt.activate) {
      s.hold = fx_.track(sys.spawn(join_hold));
      caf::anon_send(s.subject, lifecycle::subscribe_atom::value, join_hold_stage,
                     std::string{"test-join-hold"},
                     caf::actor_cast<lifecycle::lifecycle_observer_actor>(s.hold));
    }
    silos.push_back(std::move(s));
    auto& out = silos.back();
    fx_.run();
    auto started = testing::ask(fx_, out.host, lifecycle::host_start_atom::value);
    if (opt.activate) {
      if (!fx_.run_until([&] { return started->done; }) || !started->ok())
        throw std::logic_error("entry_world: silo " + out.addr.to_string()
                               + " did not start: " + to_fault(started->err).render());
    } else {
      auto& hs = fx_.state_of<join_hold_state>(out.hold);
      if (!fx_.run_until([&] { return hs.started || started->done; }) || started->done)
        throw std::logic_error("entry_world: silo " + out.addr.to_string()
                               + " did not reach its join hold");
    }
    return out;
  }

  /// A pure client; `configure` may change its routing service's options last.
  client_process add_client(const std::string& host, int64_t grain_call_limit_bytes = 104857600,
                            std::function<void(routing_service_options&)> configure = {}) {
    auto& sys = fx_.sys;
    client_process c;
    c.addr = silo_address{host, 11111, ++generation_};
    c.centre = fx_.track(spawn_message_center(sys, c.addr, net_));
    c.agent = fx_.track(spawn_membership_agent(sys, c.addr, oracle));
    caf::anon_send(c.agent, mb_subscribe_atom::value, c.centre);
    routing_service_options ro;
    ro.role = config::process_role::pure_client;
    ro.size.grain_call_body_limit_bytes = grain_call_limit_bytes;
    ro.process_name = c.addr.to_string();
    ro.centre = c.centre;
    if (configure)
      configure(ro);
    c.routing = caf::actor_cast<caf::actor>(fx_.track(spawn_routing_service(sys, ro)));
    caf::anon_send(c.agent, mb_subscribe_atom::value, c.routing);
    fx_.run();
    return c;
  }

  monolith_process add_monolith() {
    auto& sys = fx_.sys;
    monolith_process m;
    m.hubs = fx_.track(sys.spawn(test_hub_factory, caf::actor{}, std::string{}));
    routing_service_options ro;
    ro.role = config::process_role::monolith;
    ro.process_name = "monolith";
    ro.hubs = caf::actor_cast<hub_factory_actor>(m.hubs);
    m.routing = caf::actor_cast<caf::actor>(fx_.track(spawn_routing_service(sys, ro)));
    fx_.state_of<test_hub_factory_state>(m.hubs).routing = m.routing;
    fx_.run();
    return m;
  }

  /// Publishes status `to` of silo `s` through its agent; runs. A silo held at its join
  /// hold (`activate = false`) is instead released when `to` is Active: its start goes on
  /// and publishes Active itself (BecomeActive), then opens its gateway (Active).
  void set_status(const silo_address& s, silo_status to) {
    auto& x = at(s);
    if (x.hold && to == silo_status::active) {
      caf::anon_send(x.hold, hold_release_atom::value);
      x.hold = caf::actor{};
    } else {
      caf::anon_send(x.agent, mb_status_atom::value, to);
    }
    fx_.run();
  }

  /// Stalls `s` (undetectable: membership never notices, it stays Active); runs.
  void stall(const silo_address& s) {
    caf::anon_send(net_, sim_stall_atom::value, s, false);
    fx_.run();
  }

  /// Ends the stall of `s`: its held frames are delivered at this instant; runs.
  void unstall(const silo_address& s) {
    caf::anon_send(net_, sim_unstall_atom::value, s);
    fx_.run();
  }

  /// Homes pure client `c` on gateway `s` (the client keeps it while it stays Active and
  /// does not refuse; docs/behaviour/membership.md#gateways-for-pure-clients). Must be a silo of
  /// the latest active set.
  void home(const client_process& c, const silo_address& s) {
    testing::fixture::state_of<cafmesh::routing::detail::routing_service_state>(c.routing).gateway = s;
  }

  /// The active set as silo `s`'s placement sees it (the ring's members,
  /// docs/behaviour/directory-and-placement.md#who-owns-a-grain-id).
  std::vector<silo_address> active_set(const silo_address& s) {
    return placement_of(s).view.active_set();
  }

  entry_silo& at(const silo_address& a) {
    for (auto& s : silos)
      if (s.addr == a)
        return s;
    throw std::logic_error("no such silo");
  }

  /// A hub endpoint at `addr` registered as a local route of `routing`.
  hub_endpoint_actor add_hub(const caf::actor& routing, const std::string& addr,
                             bool respond = false) {
    auto h = fx_.track(spawn_hub_endpoint(fx_.sys, address::from(addr), routing, {}, respond));
    caf::anon_send(routing, rs_register_atom::value, address::from(addr),
                   caf::actor_cast<caf::actor>(h));
    fx_.run();
    return h;
  }

  cafmesh::detail::placement_state& placement_of(const silo_address& s) {
    return testing::fixture::state_of<cafmesh::detail::placement_state>(at(s).placement);
  }
  cafmesh::detail::catalog_state& catalog_of(const silo_address& s) {
    return testing::fixture::state_of<cafmesh::detail::catalog_state>(at(s).catalog);
  }
  cafmesh::routing::detail::grain_delivery_state& grains_of(const silo_address& s) {
    return testing::fixture::state_of<cafmesh::routing::detail::grain_delivery_state>(at(s).grains);
  }
  cafmesh::detail::sim_network_state& net_state() { return cafmesh::detail::state_of(net_); }

  /// The configuration every silo is built from (defaults); `add_silo` applies its
  /// options on a copy.
  config::mesh_config cfg;
  membership_oracle_actor oracle;
  std::deque<entry_silo> silos;

private:
  testing::fixture& fx_;
  sim_network_actor net_;
  lifecycle::in_process_cluster_ptr cluster_; ///< `net_` and `oracle` as the builders' cluster
  uint64_t generation_ = 0;
};

inline cafmesh::routing::detail::hub_endpoint_state& hub_of(const hub_endpoint_actor& h) {
  return cafmesh::routing::detail::state_of(h);
}
/// A hub endpoint held as an application hub (a plain handle, e.g. one a hub factory built).
inline cafmesh::routing::detail::hub_endpoint_state& hub_of(const caf::actor& h) {
  return cafmesh::routing::detail::state_of(caf::actor_cast<hub_endpoint_actor>(h));
}
inline cafmesh::routing::detail::routing_service_state& service_of(const caf::actor& h) {
  return testing::fixture::state_of<cafmesh::routing::detail::routing_service_state>(h);
}

/// Spawns a hub endpoint for `addr` on `routing` (answering requests if `respond`) and
/// registers it as that routing service's local route.
inline hub_endpoint_actor add_hub(fixture& fx, const caf::actor& routing, const std::string& addr,
                                  bool respond = false) {
  auto a = address::from(addr);
  auto h = fx.track(routing::spawn_hub_endpoint(fx.sys, a, routing, {}, respond));
  caf::anon_send(routing, routing::rs_register_atom::value, a, caf::actor_cast<caf::actor>(h));
  return h;
}

inline envelope make_delivery(const std::string& id, const std::string& target,
                              const std::string& key = "") {
  envelope d;
  d.id = id;
  d.target = address::from(target);
  d.payload_type = "test";
  d.payload_json = "{\"n\":1}";
  if (!key.empty())
    d.ordering_key = key;
  return d;
}

} // namespace cafmesh::testing
