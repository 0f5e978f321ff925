// docs/scenarios.md S12.50 through a real pure client: the stateless-worker bypass
// (docs/behaviour/directory-and-placement.md#the-stateless-worker-bypass) keeps
// `routing/default` off the directory, so a stalled ring owner of `routing/default` cannot
// fail a pure client's hand-over (docs/behaviour/routing.md#the-entry) — and without it every
// delivery of a burst fails
// `placement_timeout` together (the negative control).

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "cafmesh/actors/ids.hpp"
#include "cafmesh/testing/entry_world.hpp"

using namespace cafmesh;
using namespace cafmesh::testing;
using namespace std::chrono_literals;

namespace {

constexpr int burst_size = 331;

/// Silos a, b, c with `opt`; `owner` = the ring owner of routing/default (to be stalled),
/// `gw` = a gateway silo that is not the owner.
struct s1250_setup {
  std::vector<silo_address> all;
  silo_address owner;
  silo_address gw;
};

s1250_setup make_silos(entry_world& w, entry_silo_options opt) {
  s1250_setup out;
  for (auto h : {"a", "b", "c"})
    out.all.push_back(w.add_silo(h, opt).addr);
  auto active = w.active_set(out.all[0]);
  REQUIRE(active.size() == 3);
  out.owner = ring_owner(active, routing_grain_id());
  REQUIRE(!out.owner.empty());
  return out;
}

/// Posts `burst_size` deliveries `d0..d330` to `target` from client hub `ch` within 50 ms of
/// virtual time starting now; returns the start instant.
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

/// The first silo gateway `gw`'s placement PRNG picks among `candidates` for a `random`
/// grain (docs/behaviour/directory-and-placement.md#placement: seeded
/// `seed ^ fnv1a64("placement/" + self)`, sorted candidates).
silo_address first_random_pick(const silo_address& gw, uint64_t seed,
                               std::vector<silo_address> candidates) {
  std::sort(candidates.begin(), candidates.end());
  std::mt19937_64 rng(seed ^ fnv1a64("placement/" + gw.to_string()));
  return candidates[rng() % candidates.size()];
}

/// The hub endpoint a test hub factory built for `key` on any silo, or null.
caf::actor built_hub_of(entry_world& w, const std::string& key) {
  for (auto& s : w.silos) {
    auto& st = testing::fixture::state_of<test_hub_factory_state>(s.hubs);
    auto i = st.hubs.find(key);
    if (i != st.hubs.end())
      return i->second;
  }
  return caf::actor{};
}

} // namespace

TEST_CASE_FIXTURE(testing::fixture, "S12.50 bypass off: with the routing/default ring owner stalled 331 pure-client deliveries within 50 ms all fail placement_timeout at t0+30 s, with the bypass (default) none fails") {
  SUBCASE("bypass off: all 331 fail placement_timeout at the same instant") {
    entry_world w(*this);
    entry_silo_options no_bypass;
    no_bypass.bypass = false;
    auto su = make_silos(w, no_bypass);
    su.gw = su.all[0] == su.owner ? su.all[1] : su.all[0];
    auto c = w.add_client("client");
    w.home(c, su.gw);
    auto ch = w.add_hub(c.routing, "client/c1");
    w.stall(su.owner);
    auto& pl = w.placement_of(su.gw);
    auto base = pl.stats;
    auto t0 = post_burst(*this, ch, "node/Org/Acme");
    auto& svc = service_of(c.routing);
    // Every first attempt went through the non-owner gateway within the 50 ms.
    CHECK(svc.gateway == su.gw);
    CHECK(svc.stats.client_dispatches == burst_size);
    CHECK(svc.stats.client_attempts == burst_size);
    // Recorded times are actor-clock ms; `a0` = d0's first attempt = the fixture's t0 (zero
    // link latency: that call began the gateway's work item at once).
    REQUIRE(svc.attempts_by_id["d0"].size() == 1);
    auto a0 = svc.attempts_by_id["d0"][0];
    for (int i = 0; i < burst_size; ++i) {
      auto& att = svc.attempts_by_id["d" + std::to_string(i)];
      REQUIRE(att.size() == 1);
      CHECK(att[0] - a0 == i * 50 / burst_size);
    }
    CHECK(svc.attempts_by_id["d330"][0] - a0 == 49);
    // The gateway's placement made one work item for routing/default (330 joined it).
    CHECK(pl.stats.items_created - base.items_created == 1);
    CHECK(pl.stats.joined - base.joined == burst_size - 1);
    CHECK(pl.stats.timeouts == base.timeouts);
    // One ms before the 30 s bound nothing has failed yet.
    run_to(t0 + 29999);
    CHECK(pl.stats.timeouts == base.timeouts);
    CHECK(svc.stats.client_attempts == burst_size);
    // At t0 + 30 000 ms the one work item fails placement_timeout for all 331 calls.
    run_to(t0 + 30000);
    CHECK(pl.stats.timeouts - base.timeouts == 1);
    CHECK(pl.stats.items_created - base.items_created == 1);
    CHECK(svc.stats.client_attempts == burst_size);
    // Each delivery's failure reached the client at that same instant: the client policy
    // (docs/behaviour/classification.md#retry-policies, first back-off 200 ms) re-sends all 331 at
    // exactly t0 + 30 200 ms.
    run_to(t0 + 30199);
    CHECK(svc.stats.client_attempts == burst_size);
    run_to(t0 + 30200);
    CHECK(svc.stats.client_attempts == 2 * burst_size);
    for (int i = 0; i < burst_size; ++i) {
      auto& att = svc.attempts_by_id["d" + std::to_string(i)];
      REQUIRE(att.size() == 2);
      CHECK(att[1] - a0 == 30200);
    }
    // The re-sends fail placement_timeout again 30 s later (the owner is still stalled);
    // that is the policy's second placement timeout (routing.placement_timeout_attempts = 2),
    // so each delivery is NACKed unavailable with the fault's text.
    REQUIRE(run_until([&] { return hub_of(ch).outcomes.size() == burst_size; }, 60s));
    CHECK(now_ms() == t0 + 60200);
    CHECK(pl.stats.items_created - base.items_created == 2);
    CHECK(pl.stats.timeouts - base.timeouts == 2);
    size_t placement_timeout_nacks = 0;
    for (auto& o : hub_of(ch).outcomes) {
      CHECK(o.kind == "nack");
      CHECK(o.t_ms - a0 == 60200);
      CHECK(o.verdict == verdict::unavailable);
      if (o.message == "Delivery to 'node/Org/Acme' failed: placement of routing/default timed out after 30 s")
        ++placement_timeout_nacks;
    }
    CHECK(placement_timeout_nacks == burst_size);
    CHECK(svc.stats.client_failed == burst_size);
    CHECK(svc.stats.client_accepted == 0);
    MESSAGE("sample NACK: " << hub_of(ch).outcomes.front().message);
  }
  SUBCASE("bypass on (default): none of the 331 fails") {
    entry_world w(*this);
    auto su = make_silos(w, entry_silo_options{});
    auto active = w.active_set(su.all[0]);
    // The gateway: a non-owner whose placement's first random pick (where the target's
    // messagehub is placed) is not the stalled owner either — the node hub is not what
    // this scenario is about.
    silo_address hub_silo;
    for (auto& s : su.all) {
      if (s == su.owner)
        continue;
      auto pick = first_random_pick(s, w.placement_of(s).cfg.seed, active);
      if (pick != su.owner) {
        su.gw = s;
        hub_silo = pick;
        break;
      }
    }
    REQUIRE(!su.gw.empty());
    // A target whose messagehub's directory owner is the gateway (not the stalled silo).
    std::string key;
    for (int i = 0;; ++i) {
      key = "Org/K" + std::to_string(i);
      if (ring_owner(active, grain_id{"messagehub", key}) == su.gw)
        break;
    }
    auto c = w.add_client("client");
    w.home(c, su.gw);
    auto ch = w.add_hub(c.routing, "client/c1");
    w.stall(su.owner);
    auto& pl = w.placement_of(su.gw);
    auto base = pl.stats;
    auto t0 = post_burst(*this, ch, "node/" + key);
    caf::actor hub;
    REQUIRE(run_until(
      [&] {
        hub = built_hub_of(w, key);
        return hub && hub_of(hub).received.size() == burst_size;
      },
      60s));
    auto landed_ms = now_ms();
    run_to(t0 + 70000); // past every placement and response bound
    auto& svc = service_of(c.routing);
    CHECK(hub_of(hub).received.size() == burst_size);
    std::set<std::string> ids; // each of d0..d330 landed exactly once
    for (auto& r : hub_of(hub).received)
      ids.insert(r.env.id);
    CHECK(ids.size() == burst_size);
    CHECK(ids.count("d0") == 1);
    CHECK(ids.count("d330") == 1);
    CHECK(hub_of(ch).outcomes.empty());
    CHECK(svc.stats.client_attempts == burst_size); // one attempt each, no retry
    CHECK(svc.stats.client_accepted == burst_size);
    CHECK(svc.stats.client_failed == 0);
    CHECK(pl.stats.timeouts == base.timeouts);
    CHECK(testing::fixture::state_of<test_hub_factory_state>(w.at(hub_silo).hubs).hubs.count(key) == 1);
    CHECK(landed_ms - t0 < 30000);
    MESSAGE("all " << burst_size << " landed by t0+" << (landed_ms - t0) << " ms on " << hub_silo.to_string());
  }
}
