#pragma once

/// @file
/// Helpers shared by the whole-silo scenario tests of docs/scenarios.md S12.26, S12.59 and S12.61
/// (tests/routing/s12_26_59_test.cpp, s12_61_test.cpp): co-hosted sender hubs, keys whose
/// `messagehub` grain id a given silo owns on the ring
/// (docs/behaviour/directory-and-placement.md#who-owns-a-grain-id), where a node hub was built, a
/// pure client homed on a chosen gateway, and router-core snapshots.

#include <chrono>
#include <string>
#include <vector>

#include <caf/all.hpp>

#include "cafmesh/testing/placement_world.hpp"
#include "cafmesh/routing/router_core_actor.hpp"
#include "cafmesh/testing/silo_world.hpp"
#include "cafmesh/actors/detail/placement_state.hpp"
#include "cafmesh/routing/detail/routing_service_state.hpp"

namespace cafmesh::testing {

/// The active set as `s`'s placement sees it (the ring's members,
/// docs/behaviour/directory-and-placement.md#who-owns-a-grain-id).
inline std::vector<silo_address> ring_of(silo_world& w, const silo_address& s) {
  return testing::fixture::state_of<cafmesh::detail::placement_state>(w.at(s).placement).view.active_set();
}

inline cafmesh::detail::placement_state& placement_at(silo_world& w, const silo_address& s) {
  return testing::fixture::state_of<cafmesh::detail::placement_state>(w.at(s).placement);
}

/// The first key `{prefix}{i}` (i = 0, 1, ...) whose `messagehub` grain id `owner` owns.
inline std::string key_owned_by(const std::vector<silo_address>& active,
                                const silo_address& owner, const std::string& prefix,
                                int from = 0) {
  for (int i = from;; ++i) {
    auto k = prefix + std::to_string(i);
    if (ring_owner(active, grain_id{"messagehub", k}) == owner)
      return k;
  }
}

/// A co-hosted hub endpoint at `addr` registered as a local route of `s`'s routing service.
inline hub_endpoint_actor cohosted_hub(testing::fixture& fx, silo_world& w,
                                       const silo_address& s, const std::string& addr) {
  auto h = fx.track(spawn_hub_endpoint(fx.sys, address::from(addr), w.at(s).routing));
  caf::anon_send(w.at(s).routing, rs_register_atom::value, address::from(addr),
                 caf::actor_cast<caf::actor>(h));
  fx.run();
  return h;
}

/// A pure client homed on gateway `gw` (docs/behaviour/membership.md#gateways-for-pure-clients)
/// with one hub `hub_addr` registered as a local route of its routing service.
struct homed_client {
  world_client c;
  hub_endpoint_actor hub;
};

inline homed_client client_on(testing::fixture& fx, silo_world& w, const std::string& host,
                              const silo_address& gw, const std::string& hub_addr) {
  homed_client out;
  out.c = w.add_client(host, gw);
  testing::fixture::state_of<cafmesh::routing::detail::routing_service_state>(out.c.routing).gateway = gw;
  out.hub = fx.track(spawn_hub_endpoint(fx.sys, address::from(hub_addr), out.c.routing));
  caf::anon_send(out.c.routing, rs_register_atom::value, address::from(hub_addr),
                 caf::actor_cast<caf::actor>(out.hub));
  fx.run();
  return out;
}

/// The silo whose hub factory built the hub of `key` (empty if none), and that hub.
struct built_hub {
  silo_address silo;
  caf::actor hub;
};

inline built_hub hub_built_for(silo_world& w, const std::string& key,
                               bool include_gone = false) {
  for (auto& e : w.silos) {
    if (e.gone && !include_gone)
      continue;
    auto& st = testing::fixture::state_of<test_hub_factory_state>(e.hubs);
    auto i = st.hubs.find(key);
    if (i != st.hubs.end())
      return {e.s.addr, i->second};
  }
  return {};
}

/// A router core's stats snapshot (runs the fixture to let the answer arrive).
inline router_core_stats core_stats(testing::fixture& fx, silo_world& w,
                                    const silo_address& s) {
  auto r = testing::ask<router_core_stats>(fx, w.at(s).core, rc_stats_atom::value);
  fx.run();
  REQUIRE(r->ok());
  return r->value;
}

/// Times `id` was received by `hub` (a hub endpoint, or one a hub factory built).
template <class Handle>
size_t received_count(const Handle& hub, const std::string& id) {
  size_t n = 0;
  for (auto& r : hub_of(hub).received)
    if (r.env.id == id)
      ++n;
  return n;
}

/// Times `id` was received by any node hub built anywhere (killed silos included).
inline size_t received_anywhere(silo_world& w, const std::string& id) {
  size_t n = 0;
  for (auto& e : w.silos)
    for (auto& kv : testing::fixture::state_of<test_hub_factory_state>(e.hubs).hubs)
      n += received_count(kv.second, id);
  return n;
}

/// Every outcome `hub` recorded for delivery `id`.
template <class Handle>
std::vector<routing::hub_outcome> outcomes_for(const Handle& hub, const std::string& id) {
  std::vector<routing::hub_outcome> out;
  for (auto& o : hub_of(hub).outcomes)
    if (o.id == id)
      out.push_back(o);
  return out;
}

/// Sets a fixed latency of `ms` on the simulated link `src` -> `dst`.
inline void set_delay(testing::fixture& fx, silo_world& w, const silo_address& src,
                      const silo_address& dst, int64_t ms) {
  caf::anon_send(w.net, sim_delay_atom::value, src, dst, ms, ms);
  fx.run();
}

/// The simulation trace's note for a delivery a crashed silo had accepted.
inline std::string lost_line(const silo_address& s, const std::string& id) {
  return "lost with the crash of " + s.to_string() + ": delivery " + id;
}

/// Actor-clock ms (what hub endpoints and routing services record) minus fixture ms
/// (`now_ms()`): the fixture starts its virtual clock one hour after the epoch.
inline int64_t clock_offset_ms(testing::fixture& fx) {
  using namespace std::chrono;
  return duration_cast<milliseconds>(fx.sched.clock().current_time.time_since_epoch()).count()
         - fx.now_ms();
}

/// Runs every ready actor and every timer due now, without advancing virtual time (a
/// zero-delay `delayed_send`, e.g. a hub factory's build, is a due timer).
inline void settle_now(testing::fixture& fx) {
  auto t = fx.now_ms();
  while (true) {
    fx.run();
    if (fx.next_timeout_ms() != t || !fx.fire_next_timeout())
      break;
  }
}

inline bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

} // namespace cafmesh::testing
