#pragma once

/// @file
/// Test world for the routing entry layer: simulated silo_host silos (message centre,
/// membership agent, test directory, placement, catalog with the routing layer's grains,
/// routing service, grain-delivery adapter, I/O pool, router core, pod-hub claimer, test hub
/// factory and path resolver), pure-client and monolith processes, all in one fixture
/// system on the virtual clock. Built on the placement helper's test pieces
/// (tests/actors/sim_world.hpp: network, oracle, members with agent and directory partition).

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <caf/all.hpp>

#include "cafmesh/testing/placement_world.hpp"
#include "cafmesh/routing/io_pool.hpp"
#include "cafmesh/routing/routing_quiescence.hpp"
#include "cafmesh/actors/stopping_recipient.hpp"
#include "cafmesh/routing/hub_endpoint.hpp"
#include "cafmesh/routing/hub_grains.hpp"
#include "cafmesh/routing/router_core.hpp"
#include "cafmesh/routing/routing_service.hpp"

namespace cafmesh::test {

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
      auto hub = spawn_hub_endpoint(self->system(), a, st.routing, {}, st.respond);
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
      if (path.rfind("node/", 0) == 0) {
        r.found = true;
        r.node_prefix = path.substr(5);
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
  std::vector<caf::response_promise> held;
  std::map<std::string, int> attempts;
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
  return {
    [=](gp_deliver_atom, const grain_id& g, envelope& d) -> caf::result<envelope> {
      auto& st = self->state;
      auto id = d.id;
      note(id, "attempt");
      if (st.hold.count(id) != 0) {
        st.held.push_back(self->make_response_promise());
        return st.held.back();
      }
      if (st.attempts[id]++ == 0 && st.reject_first.count(id) != 0) {
        note(id, "rejected");
        return to_error(fault{mesh_errc::rejected, "turned away by the activation (test)"});
      }
      auto rp = self->make_response_promise<envelope>();
      self->request(st.real, caf::infinite, gp_deliver_atom::value, g, std::move(d))
        .then([=](envelope& r) mutable {
                note(id, "answer");
                note(id, "answer:" + to_string(r.state));
                rp.deliver(std::move(r));
              },
              [=](caf::error& e) mutable { note(id, "error"); rp.deliver(std::move(e)); });
      return rp;
    },
    [=](gp_invalidate_atom a, const grain_id& g) { self->send(self->state.real, a, g); },
    [=](gp_inval_silo_atom a, const silo_address& s) { self->send(self->state.real, a, s); },
    [=](gp_act_error_atom a, const grain_id& g) { return self->delegate(self->state.real, a, g); },
  };
}

// -- gateway proxy: rejects the first N client calls, or never answers ------------------

struct gateway_proxy_state {
  caf::actor placement;
  int reject = 0;        ///< first N calls answered `rejected`
  bool silent = false;   ///< never answer
  std::vector<int64_t> calls_ms;
  std::vector<caf::response_promise> held;
  testing::fixture* fx = nullptr;
  static inline const char* name = "test.gateway_proxy";
};

inline caf::behavior gateway_proxy(caf::stateful_actor<gateway_proxy_state>* self,
                                   caf::actor placement, testing::fixture* fx) {
  self->state.placement = placement;
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
      self->delegate(st.placement, a, g, fwd, std::move(m));
      return caf::delegated<caf::message>{};
    },
  };
}

// -- the world ------------------------------------------------------------------------

struct entry_silo {
  silo_address addr;
  std::shared_ptr<grain_registry> registry;
  silo_routing_slots_ptr slots;
  caf::actor centre, agent, partition, placement, catalog, routing, claimer, hubs,
    resolver, gateway;
  grain_port_actor grains;
  caf::actor proxy; ///< the port proxy, if any
  routing::io_pool_actor pool;
  routing::routing_quiescence_actor gauge;
  router_core_actor core;
};

struct entry_silo_options {
  bool activate = true;
  bool port_proxy = false;
  bool gateway_proxy = false;
  int64_t hub_build_delay_ms = 0;
  bool gauge = false; ///< give the router core a quiescence gauge
  int64_t idle_deactivation_ms = 0; ///< catalog idle collection (0: off)
  bool bypass = true; ///< `directory.stateless_worker_bypass` of placement and catalog (§5.3)
  /// The router core's per-channel FIFO (SPEC §6.8); false only for the S12.57 negative
  /// control.
  bool per_channel_fifo = true;
};

struct client_process {
  silo_address addr;
  caf::actor centre, agent, routing;
};

struct monolith_process {
  caf::actor routing, hubs;
};

class entry_world {
public:
  explicit entry_world(testing::fixture& fx) : fx_(fx), net_(fx, placement_world::zero_latency()) {
    oracle = net_.oracle;
  }

  entry_silo& add_silo(const std::string& host, entry_silo_options opt = {}) {
    auto& sys = fx_.sys;
    entry_silo s;
    auto& m = net_.add_member(host);
    s.addr = m.addr;
    s.centre = m.mc;
    s.agent = m.agent;
    s.partition = m.partition;
    s.registry = std::make_shared<grain_registry>();
    s.slots = std::make_shared<silo_routing_slots>();
    s.slots->silo = s.addr;
    register_routing_grains(*s.registry, s.slots);
    placement_config pc;
    pc.self = s.addr;
    pc.stateless_worker_bypass = opt.bypass;
    s.placement = fx_.track(spawn_placement_service(sys, pc, s.registry, s.centre));
    catalog_config cc;
    cc.self = s.addr;
    cc.stateless_worker_bypass = opt.bypass;
    cc.idle_deactivation_ms = opt.idle_deactivation_ms;
    s.catalog = fx_.track(spawn_catalog(sys, cc, s.registry, s.centre, s.placement));
    routing_service_options ro;
    ro.role = config::process_role::silo_host;
    ro.process_name = s.addr.to_string();
    s.routing = caf::actor_cast<caf::actor>(fx_.track(spawn_routing_service(sys, ro)));
    s.grains = fx_.track(spawn_grain_delivery(sys, s.placement));
    grain_port_actor port = s.grains;
    if (opt.port_proxy) {
      s.proxy = fx_.track(sys.spawn(port_proxy, caf::actor_cast<caf::actor>(s.grains), &fx_));
      port = caf::actor_cast<grain_port_actor>(s.proxy);
    }
    s.pool = fx_.track(routing::spawn_io_pool(sys));
    s.resolver = fx_.track(sys.spawn(test_resolver));
    router_core_options co;
    co.silo = s.addr;
    co.per_channel_fifo = opt.per_channel_fifo;
    co.grains = port;
    co.resolver = caf::actor_cast<path_resolver_actor>(s.resolver);
    co.local_routes = caf::actor_cast<local_route_port_actor>(s.routing);
    co.pool = s.pool;
    if (opt.gauge) {
      s.gauge = fx_.track(routing::spawn_routing_quiescence(sys));
      co.gauge = s.gauge;
    }
    s.core = fx_.track(spawn_router_core(sys, co));
    caf::anon_send(s.routing, rs_core_atom::value, s.core);
    s.hubs = fx_.track(sys.spawn(test_hub_factory, s.routing, std::string{"node"}));
    fx_.state_of<test_hub_factory_state>(s.hubs).delay_ms = opt.hub_build_delay_ms;
    s.slots->core = s.core;
    s.slots->routing = s.routing;
    s.slots->hubs = caf::actor_cast<hub_factory_actor>(s.hubs);
    s.claimer = fx_.track(spawn_pod_hub_claimer(sys, s.placement, s.routing,
                                                config::attach_section{}, s.addr.to_string()));
    s.gateway = s.placement;
    if (opt.gateway_proxy)
      s.gateway = fx_.track(sys.spawn(gateway_proxy, s.placement, &fx_));
    net_.reg(s.addr, component::catalog, s.catalog);
    net_.reg(s.addr, component::activation, s.catalog);
    net_.reg(s.addr, component::gateway, s.gateway);
    for (auto& sub : {s.placement, s.catalog, s.claimer})
      caf::anon_send(s.agent, mb_subscribe_atom::value, sub);
    fx_.run();
    caf::anon_send(s.agent, mb_join_atom::value, s.registry->manifest(), true);
    fx_.run();
    if (opt.activate) {
      caf::anon_send(s.agent, mb_status_atom::value, silo_status::active);
      fx_.run();
    }
    silos.push_back(s);
    return silos.back();
  }

  /// A pure client; `configure` may change its routing service's options last.
  client_process add_client(const std::string& host, int64_t grain_call_limit_bytes = 104857600,
                            std::function<void(routing_service_options&)> configure = {}) {
    auto& sys = fx_.sys;
    client_process c;
    c.addr = net_.add_silo(host);
    c.centre = net_.centres[c.addr];
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

  void set_status(const silo_address& s, silo_status to) {
    caf::anon_send(at(s).agent, mb_status_atom::value, to);
    fx_.run();
  }

  /// Stalls `s` (undetectable: membership never notices, it stays Active); runs.
  void stall(const silo_address& s) {
    caf::anon_send(net_.net, sim_stall_atom::value, s, false);
    fx_.run();
  }

  /// Ends the stall of `s`: its held frames are delivered at this instant; runs.
  void unstall(const silo_address& s) {
    caf::anon_send(net_.net, sim_unstall_atom::value, s);
    fx_.run();
  }

  /// Homes pure client `c` on gateway `s` (the client keeps it while it stays Active and
  /// does not refuse; SPEC §4.4). Must be a silo of the latest active set.
  void home(const client_process& c, const silo_address& s) {
    testing::fixture::state_of<routing_service_state>(c.routing).gateway = s;
  }

  /// The active set as silo `s`'s placement sees it (the ring's members, SPEC §5.1).
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
  caf::actor add_hub(const caf::actor& routing, const std::string& addr, bool respond = false) {
    auto h = fx_.track(spawn_hub_endpoint(fx_.sys, address::from(addr), routing, {}, respond));
    caf::anon_send(routing, rs_register_atom::value, address::from(addr), h);
    fx_.run();
    return h;
  }

  placement_state& placement_of(const silo_address& s) {
    return testing::fixture::state_of<placement_state>(at(s).placement);
  }
  catalog_state& catalog_of(const silo_address& s) {
    return testing::fixture::state_of<catalog_state>(at(s).catalog);
  }
  grain_delivery_state& grains_of(const silo_address& s) {
    return testing::fixture::state_of<grain_delivery_state>(at(s).grains);
  }
  sim_network_state& net_state() { return net_.net_state(); }

  caf::actor oracle;
  std::deque<entry_silo> silos;

private:
  testing::fixture& fx_;
  sim_world net_;
};

inline hub_endpoint_state& hub_of(const caf::actor& h) {
  return testing::fixture::state_of<hub_endpoint_state>(h);
}
inline routing_service_state& service_of(const caf::actor& h) {
  return testing::fixture::state_of<routing_service_state>(h);
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

} // namespace cafmesh::test
