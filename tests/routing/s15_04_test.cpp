// S15.04 (SPEC §15 C4): a slow destination does not starve the others. Three silos A, B, C;
// silo C stalls undetected (alive to membership, answering nothing) for 40 s while a
// co-hosted sender on A posts every 100 ms to a node hub active on A, one active on B and one
// active on C. The legs to C wait on their grain calls; without a bound per destination they
// fill A's router core (`routing.max_in_flight`) and the traffic between A and B is refused
// "overloaded". With `routing.max_in_flight_per_destination` the deliveries for C beyond it
// are refused `unavailable` "destination {C} is not keeping up" with `retry_after_ms`, and the
// deliveries to A and B all land at the instant they are sent.

#include <doctest/doctest.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "s12_stall_world.hpp"

using namespace cafmesh;
using namespace cafmesh::testing;
using namespace std::chrono_literals;
using testing::fixture;

namespace {

constexpr int64_t core_bound = 30;        // routing.max_in_flight of every silo
constexpr int64_t destination_bound = 10; // routing.max_in_flight_per_destination
constexpr int ticks = 400;                // 40 s at one post per hub every 100 ms

void bounds(config::mesh_config& c) {
  c.routing.max_in_flight = core_bound;
  c.routing.max_in_flight_per_destination = destination_bound;
}

} // namespace

TEST_CASE_FIXTURE(fixture, "S15.04 silo C stalled for 40 s under traffic: deliveries whose path does not go through C all land at once and none is refused overloaded, and those for C beyond routing.max_in_flight_per_destination are refused unavailable, destination C is not keeping up") {
  silo_world w{*this};
  silo_world_options o;
  o.configure = bounds;
  silo_address a = w.add_silo("a", o).addr;
  REQUIRE(w.last_start->ok());
  silo_address b = w.add_silo("b", o).addr;
  REQUIRE(w.last_start->ok());
  silo_address c = w.add_silo("c", o).addr;
  REQUIRE(w.last_start->ok());
  auto active = ring_of(w, a);
  REQUIRE(active.size() == 3);
  auto ha = cohosted_hub(*this, w, a, "node/Sender/A");
  // One node hub active on each silo, activated by a warm-up delivery before the stall;
  // the hubs on A and B have grain ids A or B own (their path does not go through C).
  std::map<silo_address, std::string> key_on;
  std::map<std::string, built_hub> hubs;
  for (int i = 0; key_on.size() < 3 && i < 200; ++i) {
    auto key = "Org/K" + std::to_string(i);
    auto owner = ring_owner(active, grain_id{"messagehub", key});
    caf::anon_send(ha, ep_post_atom::value, make_delivery("warm-" + key, "node/" + key));
    settle_now(*this);
    auto built = hub_built_for(w, key);
    REQUIRE(!built.silo.empty());
    if (key_on.count(built.silo) != 0 || (built.silo != c && owner == c))
      continue;
    key_on[built.silo] = key;
    hubs[key] = built;
  }
  REQUIRE(key_on.size() == 3);
  auto core0 = core_stats(*this, w, a);
  auto outcomes0 = hub_of(ha).outcomes.size();
  caf::anon_send(w.net, sim_stall_atom::value, c, false);
  run();
  auto off = clock_offset_ms(*this);
  auto t0 = now_ms();
  for (int tick = 0; tick < ticks; ++tick) {
    run_to(t0 + tick * 100);
    // C's first: its legs would take every place the core's bound leaves.
    for (auto silo : {c, a, b})
      caf::anon_send(ha, ep_post_atom::value,
                     make_delivery("t" + std::to_string(tick) + "-" + silo.host,
                                   "node/" + key_on[silo]));
    run();
  }
  run_to(t0 + ticks * 100);
  auto core1 = core_stats(*this, w, a);
  // Deliveries whose path does not go through C: every one landed once, at the instant it
  // was sent (zero link latency), none refused.
  for (auto s : {a, b}) {
    auto& hub = hub_of(hubs[key_on[s]].hub);
    size_t landed = 0;
    for (auto& r : hub.received) {
      if (r.env.id.rfind("warm-", 0) == 0)
        continue;
      ++landed;
      auto tick = std::stoi(r.env.id.substr(1, r.env.id.find('-') - 1));
      INFO("delivery " << r.env.id);
      CHECK(r.t_ms - off == t0 + tick * 100);
    }
    CHECK(landed == ticks);
  }
  CHECK(core1.refused_overloaded == core0.refused_overloaded);
  // Deliveries for C: at most the per-destination bound wait on C at any time; the others
  // are refused at once, `unavailable`, naming C, with `retry_after_ms`.
  size_t refused_c = 0;
  for (size_t i = outcomes0; i < hub_of(ha).outcomes.size(); ++i) {
    auto& x = hub_of(ha).outcomes[i];
    INFO("outcome for " << x.id << ": " << x.message);
    REQUIRE(x.id.size() > c.host.size());
    CHECK(x.id.substr(x.id.size() - c.host.size()) == c.host);
    if (x.kind != "nack" || x.message.find("is not keeping up") == std::string::npos)
      continue;
    ++refused_c;
    CHECK(x.verdict == verdict::unavailable);
    CHECK(x.message
          == "destination " + c.to_string() + " is not keeping up: "
               + std::to_string(destination_bound)
               + " deliveries in flight to it (routing.max_in_flight_per_destination "
               + std::to_string(destination_bound) + "); retry after 500 ms");
    auto sent_tick = std::stoi(x.id.substr(1, x.id.find('-') - 1));
    CHECK(x.t_ms - off == t0 + sent_tick * 100); // refused at once
  }
  CHECK(core1.refused_destination - core0.refused_destination == refused_c);
  // The legs C's calls hold never exceed the bound, so every delivery for C after the first
  // `destination_bound` (sent before a first attempt ended: attempts wait 30 s) is refused.
  CHECK(refused_c >= static_cast<size_t>(ticks - 3 * destination_bound));
  CHECK(core1.accepted - core0.accepted == 2 * ticks + (ticks - refused_c));
  MESSAGE("hubs: A " << key_on[a] << ", B " << key_on[b] << ", C " << key_on[c]
                     << "; refused for C " << refused_c << " of " << ticks);
  caf::anon_send(w.net, sim_unstall_atom::value, c);
  run();
}
