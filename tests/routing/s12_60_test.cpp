// docs/scenarios.md S12.60 through a real pure client (the S12.50 world, tests/routing/
// entry_world.hpp): with the stateless-worker bypass disabled and the ring owner of
// `routing/default` stalled, a burst of 331 deliveries fails in placement together
// (docs/behaviour/directory-and-placement.md#placement); cafmesh goes further
// (docs/architecture.md, docs/behaviour/classification.md#codes): a placement timeout is
// resendable, so the client policy (docs/behaviour/classification.md#retry-policies) re-sends each,
// and once the owner is unstalled every one lands exactly once.

#include <doctest/doctest.h>

#include <chrono>
#include <set>
#include <string>
#include <vector>

#include "cafmesh/actors/ids.hpp"
#include "s12_stall_world.hpp"

using namespace cafmesh;
using namespace cafmesh::testing;
using namespace std::chrono_literals;

namespace {

constexpr int burst_size = 331;

/// Posts `burst_size` deliveries `d0..d330` to `target` from client hub `ch` within 50 ms of
/// virtual time starting now (as S12.50); returns the start instant.
int64_t post_burst(testing::fixture& fx, const routing::hub_endpoint_actor& ch,
                   const std::string& target) {
  auto t0 = fx.now_ms();
  for (int i = 0; i < burst_size; ++i) {
    fx.run_to(t0 + i * 50 / burst_size);
    caf::anon_send(ch, ep_post_atom::value, make_delivery("d" + std::to_string(i), target));
    fx.run();
  }
  return t0;
}

/// The hub endpoint a test hub factory built for `key` on any silo, and its silo.
std::pair<caf::actor, silo_address> built_hub_of(entry_world& w, const std::string& key) {
  for (auto& s : w.silos) {
    auto& st = testing::fixture::state_of<test_hub_factory_state>(s.hubs);
    auto i = st.hubs.find(key);
    if (i != st.hubs.end())
      return {i->second, s.addr};
  }
  return {caf::actor{}, silo_address{}};
}

} // namespace

TEST_CASE_FIXTURE(testing::fixture, "S12.60 a pure client's 331 deliveries within 50 ms with the routing/default ring owner stalled and the bypass disabled all fail placement together, are re-sent under the client policy and, the owner unstalled at t = 35 s, all land exactly once with none NACKed") {
  entry_world w(*this);
  entry_silo_options no_bypass;
  no_bypass.bypass = false;
  std::vector<silo_address> all;
  for (auto h : {"a", "b", "c"})
    all.push_back(w.add_silo(h, no_bypass).addr);
  auto active = w.active_set(all[0]);
  REQUIRE(active.size() == 3);
  auto owner = ring_owner(active, routing_grain_id());
  REQUIRE(!owner.empty());
  auto gw = all[0] == owner ? all[1] : all[0];
  // A target whose messagehub's directory owner is the gateway: the stalled silo is the
  // ring owner of routing/default, and only that is what this scenario is about.
  std::string key;
  for (int i = 0;; ++i) {
    key = "Org/K" + std::to_string(i);
    if (ring_owner(active, grain_id{"messagehub", key}) == gw)
      break;
  }
  auto c = w.add_client("client");
  w.home(c, gw);
  auto ch = w.add_hub(c.routing, "client/c1");
  w.stall(owner);
  auto& pl = w.placement_of(gw);
  auto base = pl.stats;
  auto off = clock_offset_ms(*this);
  auto t0 = post_burst(*this, ch, "node/" + key);
  auto& svc = service_of(c.routing);
  CHECK(svc.gateway == gw);
  CHECK(svc.stats.client_dispatches == burst_size);
  CHECK(svc.stats.client_attempts == burst_size);
  REQUIRE(svc.attempts_by_id["d0"].size() == 1);
  auto a0 = svc.attempts_by_id["d0"][0];
  CHECK(svc.attempts_by_id["d330"][0] - a0 == 49); // all 331 within 50 ms
  CHECK(pl.stats.items_created - base.items_created == 1);
  CHECK(pl.stats.joined - base.joined == burst_size - 1);
  // All 331 fail in placement together: the one work item times out at t0 + 30 s.
  run_to(t0 + 29999);
  CHECK(pl.stats.timeouts == base.timeouts);
  run_to(t0 + 30000);
  CHECK(pl.stats.timeouts - base.timeouts == 1);
  CHECK(svc.stats.client_attempts == burst_size);
  CHECK(svc.stats.client_failed == 0);
  // Each is re-sent under the client policy (first delay 200 ms), all at t0 + 30.2 s.
  run_to(t0 + 30199);
  CHECK(svc.stats.client_attempts == burst_size);
  run_to(t0 + 30200);
  CHECK(svc.stats.client_attempts == 2 * burst_size);
  for (int i = 0; i < burst_size; ++i) {
    auto& att = svc.attempts_by_id["d" + std::to_string(i)];
    REQUIRE(att.size() == 2);
    CHECK(att[1] - a0 == 30200);
  }
  CHECK(pl.stats.items_created - base.items_created == 2);
  // The owner is unstalled at t = 35 s: the re-sends' work item completes at that instant
  // (its lookup of 30.2 s is still within its 5 s bound) and every delivery lands.
  run_to(t0 + 35000 - 1);
  CHECK(svc.stats.client_accepted == 0);
  CHECK(built_hub_of(w, key).first == caf::actor{});
  run_to(t0 + 35000);
  w.unstall(owner);
  settle_now(*this);
  CHECK(now_ms() == t0 + 35000);
  auto [hub, hub_silo] = built_hub_of(w, key);
  REQUIRE(hub);
  CHECK(hub_of(hub).received.size() == burst_size);
  for (auto& r : hub_of(hub).received)
    CHECK(r.t_ms - off == t0 + 35000);
  // Long past every placement, response and retry bound: nothing more happens.
  run_to(t0 + 200000);
  std::set<std::string> ids;
  for (auto& r : hub_of(hub).received)
    ids.insert(r.env.id);
  CHECK(hub_of(hub).received.size() == burst_size); // exactly once each
  CHECK(ids.size() == burst_size);
  for (int i = 0; i < burst_size; ++i)
    CHECK(ids.count("d" + std::to_string(i)) == 1);
  CHECK(hub_of(ch).outcomes.empty()); // none NACKed
  CHECK(svc.stats.client_attempts == 2 * burst_size);
  CHECK(svc.stats.client_accepted == burst_size);
  CHECK(svc.stats.client_failed == 0);
  CHECK(pl.stats.timeouts - base.timeouts == 1);
  // Two work items for routing/default, then one for messagehub/{key} (the legs' target).
  CHECK(pl.stats.items_created - base.items_created == 3);
  MESSAGE("all " << burst_size << " landed at t0+35000 ms on " << hub_silo.to_string());
}
