#pragma once

// A two-process simulated world for the stream transport (docs/behaviour/routing.md#legs stream
// leg, docs/behaviour/routing.md#nacks NACK ladder, docs/behaviour/routing.md#nacks outcome
// tracker): process A runs a router core with the real gauge, pool and stream transport; process B
// (a client-like process) hosts hub endpoints, reachable from A by their pod hub (a small grain
// port that hands a `podhub/{path}` delivery to B's inbound component through the message centres,
// as the real pod hub does for a pure client) and by B's stream transport. Every cross-process
// message crosses `sim_network` (latency 0), so every timing is exact virtual time.

#include <doctest/doctest.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <caf/all.hpp>

#include "cafmesh/routing/node_path_resolver.hpp"
#include "cafmesh/actors/message_center.hpp"
#include "cafmesh/actors/sim_network.hpp"
#include "cafmesh/routing/io_pool.hpp"
#include "cafmesh/routing/routing_quiescence.hpp"
#include "cafmesh/routing/entry_atoms.hpp"
#include "cafmesh/routing/hub_endpoint.hpp"
#include "cafmesh/routing/router_core.hpp"
#include "cafmesh/routing/stream_transport.hpp"
#include "cafmesh/testing/ask.hpp"
#include "cafmesh/testing/fixture.hpp"
#include "cafmesh/routing/detail/hub_endpoint_state.hpp"

namespace cafmesh::testing::stream_bed {

using namespace cafmesh;
using namespace cafmesh::routing;
using namespace std::chrono_literals;

/// How the test grain port answers a `messagehub/{prefix}` delivery.
struct node_script {
  bool fail = false;
  fault f;
  int64_t delay_ms = 0;
};

struct port_state {
  caf::actor centre;            ///< process A's centre
  silo_address client;          ///< process B: where every pod hub's owner lives
  std::map<std::string, node_script> nodes; ///< by node prefix; default: processed
  std::vector<std::string> calls;           ///< rendered grain ids, in call order
  int64_t handover_timeout_ms = 30000;
};

/// The grain-delivery port of process A (router_ports.hpp). `podhub/{path}`: hand the
/// envelope to process B's inbound component (`lr_deliver`) through the centres, bounded by
/// `handover_timeout_ms`; `true` -> `forwarded`, `false` -> `pod_hub_not_here`, a fault or a
/// timeout -> that fault. `messagehub/{prefix}`: the scripted answer.
inline grain_port_actor::behavior_type
test_grain_port(grain_port_actor::stateful_pointer<port_state> self, caf::actor centre,
                silo_address client) {
  self->state.centre = std::move(centre);
  self->state.client = std::move(client);
  return {
    [=](gp_call_atom, uint64_t call, grain_id& g, envelope& e, caf::timespan) {
      grain_port_reply rp{self, call};
      auto& s = self->state;
      s.calls.push_back(g.to_string());
      if (g.type == "podhub") {
        self
          ->request(s.centre, std::chrono::milliseconds(s.handover_timeout_ms),
                    make_call(s.client, component::client, lr_deliver_atom::value, e))
          .then(
            [=](bool took) mutable {
              if (!took) {
                rp.deliver(to_error(fault{mesh_errc::pod_hub_not_here, "pod hub not here"}));
                return;
              }
              auto r = e;
              r.state = delivery_state::forwarded;
              rp.deliver(r);
            },
            [=](caf::error& err) mutable { rp.deliver(to_error(to_fault(err))); });
        return;
      }
      auto i = s.nodes.find(g.key);
      if (i == s.nodes.end() || !i->second.fail) {
        auto r = e;
        r.state = delivery_state::processed;
        rp.deliver(r);
        return;
      }
      auto f = i->second.f;
      if (i->second.delay_ms == 0) {
        rp.deliver(to_error(f));
        return;
      }
      // a delayed fault: answered by a timer (no self-re-arming)
      self->request(caf::actor_cast<grain_port_actor>(self),
                    std::chrono::milliseconds(i->second.delay_ms), gp_act_error_atom::value,
                    grain_id{"never", "answers"})
        .then([](std::string&) {}, [=](caf::error&) mutable { rp.deliver(to_error(f)); });
    },
    [=](gp_invalidate_atom, grain_id&) {},
    [=](gp_inval_silo_atom, silo_address&) {},
    [=](gp_act_error_atom, grain_id& g) -> caf::typed_response_promise<std::string> {
      auto rp = self->make_response_promise<std::string>();
      if (g.type != "never")
        rp.deliver(std::string{});
      // "never/answers" stays pending: the caller's request timeout is the timer
      return rp;
    },
  };
}

/// Path resolver: `node/{prefix}` resolves to node `prefix`; anything else is unknown.
inline path_resolver_actor::behavior_type test_resolver() {
  return {
    [](pr_resolve_atom, std::string& path) -> resolve_result {
      resolve_result r;
      if (auto prefix = routing::node_prefix_of("node", path)) {
        r.found = true;
        r.node_prefix = std::move(*prefix);
      }
      return r;
    },
  };
}

struct inbound_state {
  std::map<std::string, caf::actor> hubs; ///< rendered host path -> hub
  uint64_t handed = 0;
};

/// Process B's inbound component (`component::client`): `(lr_deliver_atom, envelope) ->
/// bool` hands the envelope to the hub of its target, as a pure client's routing service
/// does for its pod hubs.
inline caf::behavior test_inbound(caf::stateful_actor<inbound_state>* self) {
  return {
    [=](lr_deliver_atom, envelope& e) -> bool {
      auto i = self->state.hubs.find(host_address(e.target).path());
      if (i == self->state.hubs.end())
        return false;
      ++self->state.handed;
      self->send(i->second, hb_in_atom::value, std::move(e));
      return true;
    },
  };
}

/// Sends `e` to the router core of `router_silo` through `centre` as a routing-grain batch of
/// one, and answers `e` marked `forwarded` once the core accepted it, else the core's refusal.
inline caf::response_promise route_through(caf::event_based_actor* self, const caf::actor& centre,
                                           const silo_address& router_silo, const envelope& e) {
  auto rp = self->make_response_promise();
  self
    ->request(centre, std::chrono::seconds(60),
              make_call(router_silo, component::router, rc_grains_atom::value,
                        std::vector<dispatch_item>{{e, caf::timespan{0}}}, silo_address{}))
    .then(
      [=](dispatch_verdicts& v) mutable {
        if (v.size() != 1) {
          rp.deliver(caf::make_error(caf::sec::unexpected_response));
        } else if (v[0]) {
          rp.deliver(std::move(v[0]));
        } else {
          auto answer = e;
          answer.state = delivery_state::forwarded;
          rp.deliver(std::move(answer));
        }
      },
      [=](caf::error& err) mutable { rp.deliver(std::move(err)); });
  return rp;
}

/// Process B's entry: `(rs_deliver_atom, envelope) -> envelope` sends the envelope to A's
/// router core through the centres (the routing-grain path, answered `forwarded`).
inline caf::behavior test_entry(caf::event_based_actor* self, caf::actor centre,
                                silo_address router_silo) {
  return {
    [=](rs_deliver_atom, envelope& e) { return route_through(self, centre, router_silo, e); },
    [=](rs_request_atom, envelope& e, int64_t) {
      return route_through(self, centre, router_silo, e);
    },
  };
}

struct world {
  testing::fixture& fx;
  config::mesh_config cfg;
  silo_address a{"10.0.0.1", 11111, 1};
  silo_address b{"10.0.9.1", 0, 1};
  sim_network_actor net;
  caf::actor centre_a, centre_b, inbound, entry;
  routing::routing_quiescence_actor gauge;
  routing::io_pool_actor pool;
  grain_port_actor port;
  path_resolver_actor resolver;
  stream_transport_actor ta, tb;
  router_core_actor rc;
  bool start_a = true; ///< start A's stream transport

  explicit world(testing::fixture& f) : fx(f) {}

  void start() {
    sim_network_config nc;
    nc.seed = 1;
    nc.link_latency_min_ms = 0;
    nc.link_latency_max_ms = 0;
    net = fx.track(spawn_sim_network(fx.sys, nc));
    centre_a = fx.track(spawn_message_center(fx.sys, a, net));
    centre_b = fx.track(spawn_message_center(fx.sys, b, net));
    gauge = fx.track(routing::spawn_routing_quiescence(fx.sys, {a.to_string()}));
    pool = fx.track(routing::spawn_io_pool(
      fx.sys, routing::io_pool_options::from(cfg.pool, a.to_string())));
    port = fx.track(fx.sys.spawn(test_grain_port, centre_a, b));
    resolver = fx.track(fx.sys.spawn(test_resolver));
    auto timeout = cfg.routing.stream_transport_timeout_ms;
    ta = fx.track(spawn_stream_transport(fx.sys, {a, centre_a, timeout, {b}}));
    tb = fx.track(spawn_stream_transport(fx.sys, {b, centre_b, timeout, {a}}));
    auto o = router_core_options::from(cfg, a);
    o.gauge = gauge;
    o.pool = pool;
    o.grains = port;
    o.resolver = resolver;
    o.streams = caf::actor_cast<stream_port_actor>(ta);
    rc = fx.track(spawn_router_core(fx.sys, o));
    inbound = fx.track(fx.sys.spawn(test_inbound));
    entry = fx.track(fx.sys.spawn(test_entry, centre_b, a));
    caf::anon_send(centre_a, mc_register_atom::value, component::router,
                   caf::actor_cast<caf::actor>(rc));
    caf::anon_send(centre_b, mc_register_atom::value, component::client, inbound);
    if (start_a)
      caf::anon_send(ta, st_start_atom::value);
    caf::anon_send(tb, st_start_atom::value);
    fx.run();
  }

  /// A hub endpoint living in process B, reachable by its pod hub (inbound) and subscribed
  /// to B's stream transport under its own address.
  hub_endpoint_actor add_hub(const std::string& addr, bool subscribe = true) {
    auto ad = address::from(addr);
    auto h = fx.track(spawn_hub_endpoint(fx.sys, ad, entry, cfg.routing));
    fx.state_of<inbound_state>(inbound).hubs[ad.path()] = caf::actor_cast<caf::actor>(h);
    if (subscribe)
      caf::anon_send(tb, st_sub_atom::value, ad, caf::actor_cast<caf::actor>(h));
    fx.run();
    return h;
  }

  static envelope make(const std::string& id, const std::string& target,
                       const std::string& sender = "portal/bob", std::string payload = "{}") {
    envelope e;
    e.id = id;
    e.sender = address::from(sender);
    e.target = address::from(target);
    e.payload_type = "test.ping";
    e.payload_json = std::move(payload);
    return e;
  }

  void route(const envelope& e) { caf::anon_send(rc, rc_route_atom::value, e); }

  template <class T, class Handle, class... Ts>
  T get(const Handle& h, Ts... xs) {
    auto r = testing::ask<T>(fx, h, xs...);
    fx.run();
    REQUIRE(r->ok());
    return r->value;
  }

  router_core_stats stats() { return get<router_core_stats>(rc, rc_stats_atom::value); }
  stream_transport_stats stats_a() { return get<stream_transport_stats>(ta, st_stats_atom::value); }
  stream_transport_stats stats_b() { return get<stream_transport_stats>(tb, st_stats_atom::value); }
  uint64_t gauge_count() { return get<uint64_t>(gauge, routing::q_count_atom::value); }

  port_state& port_st() {
    auto ptr = caf::actor_cast<caf::abstract_actor*>(port);
    return dynamic_cast<grain_port_actor::stateful_base<port_state>&>(*ptr).state;
  }

  /// Drops the next `count` frames carrying `Atom` as their first payload element.
  template <class Atom>
  void drop_first(uint64_t count = 1) {
    drop_predicate p;
    p.count = count;
    p.pred = [](const wire_frame& f) {
      return !f.is_response && f.payload.size() > 0 && f.payload.match_element<caf::atom_value>(0)
             && f.payload.get_as<caf::atom_value>(0) == Atom::value;
    };
    caf::anon_send(net, sim_drop_atom::value, std::move(p));
    fx.run();
  }
};

inline cafmesh::routing::detail::hub_endpoint_state& hub(const hub_endpoint_actor& h) {
  return cafmesh::routing::detail::state_of(h);
}

/// The outcomes of `h` for delivery `id`.
inline std::vector<hub_outcome> outcomes_for(const hub_endpoint_actor& h,
                                             const std::string& id) {
  std::vector<hub_outcome> out;
  for (auto& o : hub(h).outcomes)
    if (o.id == id)
      out.push_back(o);
  return out;
}

} // namespace cafmesh::testing::stream_bed
