// docs/scenarios.md S12.26 and S12.59 end to end on whole silos (`spawn_silo`, tests/routing/
// silo_world.hpp): a stalled directory owner
// (docs/behaviour/directory-and-placement.md#lookup-registration-cache, #placement) costs a leg at
// most two placement-timeout attempts (docs/behaviour/classification.md#retry-policies) and one
// NACK `unavailable` (docs/behaviour/classification.md#codes), while routing through
// `routing/default` (stateless-worker bypass,
// docs/behaviour/directory-and-placement.md#the-stateless-worker-bypass) and traffic to node hubs
// the stalled silo does not own go on unaffected
// (docs/behaviour/directory-and-placement.md#the-incidents-behind-this-design "A busy cluster").

#include <doctest/doctest.h>

#include <chrono>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "s12_stall_world.hpp"

using namespace cafmesh;
using namespace cafmesh::testing;
using namespace std::chrono_literals;
using testing::fixture;

namespace {

/// Three started silos a, b, c.
struct abc {
  silo_address a, b, c;
};

abc three_silos(silo_world& w) {
  abc out;
  out.a = w.add_silo("a").addr;
  REQUIRE(w.last_start->ok());
  out.b = w.add_silo("b").addr;
  REQUIRE(w.last_start->ok());
  out.c = w.add_silo("c").addr;
  REQUIRE(w.last_start->ok());
  auto active = ring_of(w, out.a);
  REQUIRE(active.size() == 3);
  return out;
}

/// Stalls `s` without the failure detector noticing (docs/testing.md#the-simulation-harness
/// `stall`, undetected).
void stall_undetected(fixture& fx, silo_world& w, const silo_address& s) {
  caf::anon_send(w.net, sim_stall_atom::value, s, false);
  fx.run();
}

void unstall(fixture& fx, silo_world& w, const silo_address& s) {
  caf::anon_send(w.net, sim_unstall_atom::value, s);
  fx.run();
}

} // namespace

TEST_CASE_FIXTURE(fixture, "S12.26 a stalled directory owner fails the first attempt placement_timeout at 30 s and one retry follows, still stalled the second times out too with one NACK unavailable and no third attempt, unstalled at 40 s the second attempt lands with no NACK") {
  silo_world w{*this};
  auto s = three_silos(w);
  auto key = key_owned_by(ring_of(w, s.a), s.c, "Org/S");
  auto target = "node/" + key;
  auto sender = cohosted_hub(*this, w, s.a, "node/Sender/A");
  auto& pl = placement_at(w, s.a);
  auto off = clock_offset_ms(*this);
  stall_undetected(*this, w, s.c); // the directory owner of messagehub/{key}

  SUBCASE("owner still stalled: two placement-timeout attempts, one NACK unavailable") {
    auto base = pl.stats;
    auto lookups0 = pl.dir.lookups_sent();
    auto core0 = core_stats(*this, w, s.a);
    auto t0 = now_ms();
    caf::anon_send(sender, ep_post_atom::value, make_delivery("d1", target));
    run();
    // First attempt: one work item, lookups of 5 s each against the stalled owner.
    run_to(t0 + 29999);
    CHECK(pl.stats.timeouts - base.timeouts == 0);
    CHECK(core_stats(*this, w, s.a).grain_attempts - core0.grain_attempts == 1);
    run_to(t0 + 30000);
    CHECK(pl.stats.timeouts - base.timeouts == 1);
    CHECK(pl.stats.items_created - base.items_created == 1);
    CHECK(pl.dir.lookups_sent() - lookups0 == 6); // at 0, 5, ..., 25 s
    // One retry, 250 ms later (router policy, docs/behaviour/classification.md#retry-policies),
    // through placement again.
    run_to(t0 + 30249);
    CHECK(core_stats(*this, w, s.a).grain_attempts - core0.grain_attempts == 1);
    run_to(t0 + 30250);
    CHECK(core_stats(*this, w, s.a).grain_attempts - core0.grain_attempts == 2);
    CHECK(pl.stats.items_created - base.items_created == 2);
    CHECK(hub_of(sender).outcomes.empty());
    // The owner is still stalled: the second attempt times out at 60.25 s and is final.
    run_to(t0 + 60249);
    CHECK(hub_of(sender).outcomes.empty());
    run_to(t0 + 60250);
    CHECK(pl.stats.timeouts - base.timeouts == 2);
    REQUIRE(hub_of(sender).outcomes.size() == 1);
    auto& o = hub_of(sender).outcomes[0];
    CHECK(o.id == "d1");
    CHECK(o.kind == "nack");
    CHECK(o.t_ms - off == t0 + 60250);
    CHECK(o.verdict == verdict::unavailable);
    CHECK(o.message == "Delivery to '" + target + "' failed: placement of messagehub/" + key
                         + " timed out after 30 s");
    // No third attempt, no second NACK, however long we wait.
    run_for(300s);
    auto core1 = core_stats(*this, w, s.a);
    CHECK(core1.grain_attempts - core0.grain_attempts == 2);
    CHECK(core1.nacked - core0.nacked == 1);
    CHECK(core1.landed - core0.landed == 0);
    CHECK(core1.in_flight == 0);
    CHECK(pl.stats.timeouts - base.timeouts == 2);
    CHECK(pl.stats.items_created - base.items_created == 2);
    CHECK(hub_of(sender).outcomes.size() == 1);
    CHECK(hub_built_for(w, key).silo.empty()); // no activation anywhere
    CHECK(logs.find("NACKed unavailable after 2 attempt(s) (placement_timeout_cap)").size() == 1);
  }

  SUBCASE("owner unstalled at t = 40 s: the second attempt lands, no NACK") {
    auto base = pl.stats;
    auto core0 = core_stats(*this, w, s.a);
    auto t0 = now_ms();
    caf::anon_send(sender, ep_post_atom::value, make_delivery("d2", target));
    run();
    run_to(t0 + 40000);
    CHECK(pl.stats.timeouts - base.timeouts == 1);
    CHECK(core_stats(*this, w, s.a).grain_attempts - core0.grain_attempts == 2);
    CHECK(hub_built_for(w, key).silo.empty());
    unstall(*this, w, s.c);
    settle_now(*this);
    CHECK(now_ms() == t0 + 40000);
    // The second attempt's pending lookup (sent at 35.25 s, bound 40.25 s) is answered at
    // the release instant: the node hub is activated and the delivery lands at once.
    auto built = hub_built_for(w, key);
    REQUIRE(!built.silo.empty());
    REQUIRE(hub_of(built.hub).received.size() == 1);
    CHECK(hub_of(built.hub).received[0].env.id == "d2");
    CHECK(hub_of(built.hub).received[0].t_ms - off == t0 + 40000);
    run_for(300s);
    auto core1 = core_stats(*this, w, s.a);
    CHECK(core1.grain_attempts - core0.grain_attempts == 2);
    CHECK(core1.landed - core0.landed == 1);
    CHECK(core1.nacked - core0.nacked == 0);
    CHECK(core1.in_flight == 0);
    CHECK(pl.stats.timeouts - base.timeouts == 1);
    CHECK(hub_of(sender).outcomes.empty());
    CHECK(received_count(built.hub, "d2") == 1);
  }
}

TEST_CASE_FIXTURE(fixture, "S12.59 silo C stalled undetected for 12 virtual minutes leaves routing/default on A and B and traffic to node hubs active on A or B and owned by A or B unaffected, while a delivery to a node hub C owns ends after two placement timeouts in one NACK unavailable saying timed out") {
  silo_world w{*this};
  auto s = three_silos(w);
  auto active = ring_of(w, s.a);
  auto ha = cohosted_hub(*this, w, s.a, "node/Sender/A");
  auto hb = cohosted_hub(*this, w, s.b, "node/Sender/B");
  auto ca = client_on(*this, w, "pc-a", s.a, "client/ca");
  auto cb = client_on(*this, w, "pc-b", s.b, "client/cb");
  // Node hubs already active on A or B whose grain ids A or B own: one owned by A, one by B,
  // activated by a warm-up delivery before the stall (a key whose hub lands on C is skipped).
  std::vector<std::string> keys;
  std::map<std::string, built_hub> hubs;
  for (auto owner : {s.a, s.b}) {
    for (int from = 0;; ++from) {
      auto key = key_owned_by(active, owner, "Org/" + owner.host + "-", from);
      from = std::stoi(key.substr(key.rfind('-') + 1));
      caf::anon_send(ha, ep_post_atom::value, make_delivery("warm-" + key, "node/" + key));
      settle_now(*this);
      auto built = hub_built_for(w, key);
      REQUIRE(!built.silo.empty());
      if (built.silo == s.c)
        continue;
      keys.push_back(key);
      hubs[key] = built;
      break;
    }
  }
  REQUIRE(keys.size() == 2);
  auto c_key = key_owned_by(active, s.c, "Org/C-");
  auto base_a = placement_at(w, s.a).stats;
  auto base_b = placement_at(w, s.b).stats;
  auto core_a0 = core_stats(*this, w, s.a);
  auto core_b0 = core_stats(*this, w, s.b);
  auto lookups_c0 = placement_at(w, s.a).dir.lookups_sent();
  stall_undetected(*this, w, s.c);
  auto off = clock_offset_ms(*this);
  auto t0 = now_ms();
  // Traffic for 12 virtual minutes: every 10 s each sender (co-hosted on A and B, pure
  // clients through routing/default on A and B) posts once to each active hub.
  struct sent_rec {
    std::string id, key;
  };
  std::vector<sent_rec> sent;
  std::vector<std::pair<std::string, routing::hub_endpoint_actor>> senders{
    {"ha", ha}, {"hb", hb}, {"ca", ca.hub}, {"cb", cb.hub}};
  int64_t c_sent_ms = -1;
  for (int tick = 0; tick < 72; ++tick) {
    run_to(t0 + tick * 10000);
    for (auto& [name, h] : senders)
      for (auto& key : keys) {
        auto id = name + "-" + std::to_string(tick) + "-" + key;
        caf::anon_send(h, ep_post_atom::value, make_delivery(id, "node/" + key));
        sent.push_back({id, key});
      }
    if (tick == 6) { // one minute into the stall: a delivery to the hub C owns
      c_sent_ms = now_ms();
      caf::anon_send(ha, ep_post_atom::value, make_delivery("to-c", "node/" + c_key));
    }
    run();
  }
  run_to(t0 + 720000); // 12 minutes
  REQUIRE(sent.size() == 72 * 4 * 2);
  // Every post to an active hub landed exactly once.
  for (auto& r : sent) {
    INFO("delivery " << r.id);
    CHECK(received_count(hubs[r.key].hub, r.id) == 1);
  }
  for (auto& [key, h] : hubs) {
    CHECK(hub_of(h.hub).received.size() == 1 + 72 * 4); // the warm-up + 72 ticks x 4 senders
    // Unaffected: each landed at the instant it was sent (zero link latency).
    for (auto& r : hub_of(h.hub).received) {
      if (r.env.id.rfind("warm-", 0) == 0)
        continue;
      auto tick = std::stoi(r.env.id.substr(3, r.env.id.find('-', 3) - 3));
      INFO("delivery " << r.env.id);
      CHECK(r.t_ms - off == t0 + tick * 10000);
    }
  }
  // routing/default on A and B unaffected: every client delivery accepted at the first try.
  for (auto* c : {&ca, &cb}) {
    auto& svc = service_of(c->c.routing);
    CHECK(svc.stats.client_dispatches == 72 * 2);
    CHECK(svc.stats.client_attempts == 72 * 2);
    CHECK(svc.stats.client_accepted == 72 * 2);
    CHECK(svc.stats.client_failed == 0);
    CHECK(hub_of(c->hub).outcomes.empty());
  }
  CHECK(logs.count("placement of routing/default timed out") == 0);
  CHECK(placement_at(w, s.b).stats.timeouts == base_b.timeouts);
  // The delivery to the node hub C owns: two placement-timeout attempts, one NACK
  // `unavailable` containing "timed out", at 30 s + 250 ms + 30 s after it was sent.
  REQUIRE(hub_of(ha).outcomes.size() == 1);
  auto& o = hub_of(ha).outcomes[0];
  CHECK(o.id == "to-c");
  CHECK(o.kind == "nack");
  CHECK(o.verdict == verdict::unavailable);
  CHECK(contains(o.message, "timed out"));
  CHECK(o.t_ms - off == c_sent_ms + 60250);
  CHECK(placement_at(w, s.a).stats.timeouts - base_a.timeouts == 2); // only that delivery's
  CHECK(placement_at(w, s.a).dir.lookups_sent() - lookups_c0 == 12);
  CHECK(hub_of(hb).outcomes.empty());
  CHECK(hub_built_for(w, c_key).silo.empty());
  auto core_a1 = core_stats(*this, w, s.a);
  auto core_b1 = core_stats(*this, w, s.b);
  // A's legs: 72 x (co-hosted 2 + client 2) + the one to C; B's: 72 x (2 + 2).
  CHECK(core_a1.accepted - core_a0.accepted == 72 * 4 + 1);
  CHECK(core_a1.landed - core_a0.landed == 72 * 4);
  CHECK(core_a1.nacked - core_a0.nacked == 1);
  CHECK(core_a1.grain_attempts - core_a0.grain_attempts == 72 * 4 + 2);
  CHECK(core_b1.accepted - core_b0.accepted == 72 * 4);
  CHECK(core_b1.landed - core_b0.landed == 72 * 4);
  CHECK(core_b1.nacked - core_b0.nacked == 0);
  CHECK(core_b1.grain_attempts - core_b0.grain_attempts == 72 * 4);
  CHECK(core_a1.in_flight == 0);
  CHECK(core_b1.in_flight == 0);
  MESSAGE("active hubs: " << keys[0] << " on " << hubs[keys[0]].silo.to_string() << ", "
                          << keys[1] << " on " << hubs[keys[1]].silo.to_string()
                          << "; NACK: " << o.message);
  unstall(*this, w, s.c);
}
