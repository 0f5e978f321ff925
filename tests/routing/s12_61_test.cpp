// docs/scenarios.md S12.61 end to end on whole silos (tests/routing/silo_world.hpp): silo B is
// killed without a lifecycle stop (docs/behaviour/lifecycle.md#non-graceful-stops-and-crashes,
// docs/testing.md#the-simulation-harness `kill`) while legs on A target node hubs on B. Those legs
// see `departed_silo` (docs/behaviour/classification.md#faults-and-caf-errors), invalidate and
// re-resolve (docs/behaviour/classification.md#retry-policies), and either land on new activations
// once B is declared Dead (10 s, examples/config/README.md#keys `simulation.failure_detection_ms`)
// or, with their budget spent before that, end in one `shutting_down` NACK
// (docs/behaviour/classification.md#codes). What B had itself accepted dies with it. As amended by
// docs/behaviour/membership.md#dead-peers, the requests B had accepted end within the
// failure-detection bound plus 1 s, not at their senders' deadlines: the pure client that handed
// them to B sees its connection to B break and ends each in one NACK `failed` ("outcome is
// unknown") at once. One-way posts are recorded in the trace as lost with the crash — the only
// permitted loss.

#include <doctest/doctest.h>

#include <chrono>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "s12_stall_world.hpp"
#include "cafmesh/actors/detail/sim_network_state.hpp"

using namespace cafmesh;
using namespace cafmesh::testing;
using namespace std::chrono_literals;
using testing::fixture;

namespace {

/// The trace line the simulation writes for a delivery lost with a crash of `s`.

/// docs/testing.md#the-simulation-harness `kill(silo)` with the loss record: every delivery `s`'s
/// router core had accepted and not yet terminated is written to the network trace as lost with
/// the crash, then the network drops `s`'s traffic and its actors exit without a lifecycle stop.
std::vector<std::string> kill_recording_losses(fixture& fx, silo_world& w,
                                               const silo_address& s) {
  auto st = core_stats(fx, w, s);
  for (auto& id : st.in_flight_ids)
    caf::anon_send(w.net, sim_note_atom::value, lost_line(s, id));
  fx.run();
  w.kill(s);
  return st.in_flight_ids;
}




} // namespace

TEST_CASE_FIXTURE(fixture, "S12.61 silo B killed while legs on A target node hubs on B: departed_silo, re-resolution once B is Dead at 10 s, landing on new activations or one shutting_down NACK, and B's own accepted requests end within the failure-detection bound plus 1 s (amended by docs/behaviour/membership.md#dead-peers) while its posts are recorded lost with the crash") {
  silo_world w{*this};
  auto a = w.add_silo("a").addr;
  auto b = w.add_silo("b").addr;
  auto c = w.add_silo("c").addr;
  REQUIRE(w.last_start->ok());
  auto active = ring_of(w, a);
  REQUIRE(active.size() == 3);
  auto ha = cohosted_hub(*this, w, a, "node/Sender/A");
  auto pb = client_on(*this, w, "pc-b", b, "client/pb");
  // Two node hubs active on B (directory owners A or C, so their entries survive B), and
  // one node hub active off B for the traffic B itself accepts.
  std::vector<std::string> on_b;
  std::string off_b;
  for (int i = 0; on_b.size() < 2 || off_b.empty(); ++i) {
    REQUIRE(i < 200);
    auto key = "Org/K" + std::to_string(i);
    if (ring_owner(active, grain_id{"messagehub", key}) == b)
      continue;
    caf::anon_send(ha, ep_post_atom::value, make_delivery("warm-" + key, "node/" + key));
    settle_now(*this);
    auto built = hub_built_for(w, key);
    REQUIRE(!built.silo.empty());
    if (built.silo == b && on_b.size() < 2)
      on_b.push_back(key);
    else if (built.silo != b && off_b.empty())
      off_b = key;
  }
  REQUIRE(hub_of(ha).outcomes.empty());
  auto core_a0 = core_stats(*this, w, a);
  // Legs in flight at the kill: frames from A to B, and from B to A and C, take 200 ms.
  set_delay(*this, w, a, b, 200);
  set_delay(*this, w, b, a, 200);
  set_delay(*this, w, b, c, 200);
  auto off = clock_offset_ms(*this);
  auto ts = now_ms();
  caf::anon_send(ha, ep_post_atom::value, make_delivery("a1", "node/" + on_b[0]));
  caf::anon_send(ha, ep_post_atom::value, make_delivery("a2", "node/" + on_b[1]));
  caf::anon_send(ha, ep_request_atom::value, make_delivery("ar", "node/" + on_b[0]),
                 int64_t{60000});
  caf::anon_send(pb.hub, ep_request_atom::value, make_delivery("pr1", "node/" + off_b),
                 int64_t{30000});
  caf::anon_send(pb.hub, ep_post_atom::value, make_delivery("pp1", "node/" + off_b));
  caf::anon_send(pb.hub, ep_request_atom::value, make_delivery("pr2", "node/" + off_b),
                 int64_t{45000});
  caf::anon_send(pb.hub, ep_post_atom::value, make_delivery("pp2", "node/" + off_b));
  run();
  run_to(ts + 100);
  auto tk = now_ms();
  // B accepted the client's two deliveries (answered `forwarded`) and holds their legs.
  auto& svc = service_of(pb.c.routing);
  CHECK(svc.stats.client_accepted == 4);
  CHECK(core_stats(*this, w, a).in_flight - core_a0.in_flight == 3);
  auto lost = kill_recording_losses(*this, w, b);
  CHECK(lost == std::vector<std::string>{"pr1", "pp1", "pr2", "pp2"});
  for (auto& x : {std::make_pair(a, b), std::make_pair(b, a), std::make_pair(b, c)})
    set_delay(*this, w, x.first, x.second, 0);
  // Legs started on A after the kill, while B is still Active in membership.
  run_to(tk + 1000);
  caf::anon_send(ha, ep_post_atom::value, make_delivery("a3", "node/" + on_b[0]));
  caf::anon_send(ha, ep_post_atom::value, make_delivery("a4", "node/" + on_b[1]));
  run();
  // B is declared Dead 10 s after it fell silent.
  run_to(tk + 9999);
  CHECK(placement_at(w, a).view.is_active(b));
  run_to(tk + 10000);
  CHECK_FALSE(placement_at(w, a).view.is_active(b));
  run_to(tk + 200000);

  // The legs in flight at the kill received departed_silo at the kill, retried at 0.25,
  // 0.75, 1.75, 3.75, 6.75 and 9.75 s (B still Active, the directory still naming it) and
  // end in one NACK `shutting_down` each at tk + 9.75 s.
  for (auto id : {"a1", "a2", "ar"}) {
    INFO("delivery " << id);
    auto os = outcomes_for(ha, id);
    REQUIRE(os.size() == 1);
    CHECK(os[0].kind == "nack");
    CHECK(os[0].verdict == verdict::shutting_down);
    CHECK(os[0].t_ms - off == tk + 9750);
    CHECK(contains(os[0].message, "has departed"));
    CHECK(received_anywhere(w, id) == 0);
  }
  CHECK(logs.find("delivery a1 to 'node/" + on_b[0]
                  + "' NACKed shutting_down after 7 attempt(s) (budget_exhausted)").size() == 1);
  // The legs started at tk + 1 s re-resolve after B is Dead: their 7th attempt at
  // tk + 10.75 s is placed on a new activation off B and lands, with no NACK.
  for (size_t i = 0; i < 2; ++i) {
    auto id = i == 0 ? std::string{"a3"} : std::string{"a4"};
    INFO("delivery " << id);
    CHECK(outcomes_for(ha, id).empty());
    auto built = hub_built_for(w, on_b[i]);
    REQUIRE(!built.silo.empty());
    CHECK(built.silo != b);
    REQUIRE(received_count(built.hub, id) == 1);
    for (auto& r : hub_of(built.hub).received)
      if (r.env.id == id)
        CHECK(r.t_ms - off == tk + 10750);
    CHECK(received_anywhere(w, id) == 1);
  }
  // Every failed attempt of the five legs on A was departed_silo: six each, retried.
  for (auto id : {"a1", "a2", "ar", "a3", "a4"}) {
    INFO("delivery " << id);
    size_t departed = 0;
    for (auto& l : logs.find(std::string{"delivery "} + id + ": attempt "))
      if (contains(l.text, "failed (silo " + b.to_string() + " has departed"))
        ++departed;
    CHECK(departed == 6);
  }
  auto core_a1 = core_stats(*this, w, a);
  CHECK(core_a1.accepted - core_a0.accepted == 5);
  CHECK(core_a1.nacked - core_a0.nacked == 3);
  CHECK(core_a1.landed - core_a0.landed == 2);
  CHECK(core_a1.grain_attempts - core_a0.grain_attempts == 5 * 7);
  CHECK(core_a1.in_flight == 0);
  // What B had accepted itself: each request ends once, within the failure-detection
  // bound plus 1 s of the kill (not at its sender's deadline, 30 s and 45 s): one NACK
  // `failed` at the kill itself, when the client's connection to B breaks; the one-way
  // posts have no outcome and are recorded lost with the crash; none landed.
  auto& net = cafmesh::detail::state_of(w.net);
  for (auto id : {"pr1", "pr2"}) {
    INFO("request " << id);
    auto pr = outcomes_for(pb.hub, id);
    REQUIRE(pr.size() == 1);
    CHECK(pr[0].kind == "nack");
    CHECK(pr[0].verdict == verdict::failed);
    CHECK(pr[0].t_ms - off == tk);
    CHECK(pr[0].t_ms - off <= tk + 10000 + 1000);
    CHECK(contains(pr[0].message, "silo " + b.to_string()
                                    + " departed while the call was in flight; its outcome "
                                      "is unknown"));
    CHECK(received_anywhere(w, id) == 0);
  }
  CHECK(svc.stats.departed_nacks == 2);
  for (auto id : {"pp1", "pp2"}) {
    INFO("post " << id);
    CHECK(outcomes_for(pb.hub, id).empty());
    CHECK(received_anywhere(w, id) == 0);
    CHECK(net.count(lost_line(b, id)) == 1);
  }
  CHECK(hub_of(pb.hub).outcomes.size() == 2);
  CHECK(net.count("lost with the crash") == 4); // the only loss: what B held
  // Every other delivery has exactly one terminal outcome or landing.
  CHECK(hub_of(ha).outcomes.size() == 3);
  MESSAGE("hubs on B: " << on_b[0] << ", " << on_b[1] << "; re-activated on "
                        << hub_built_for(w, on_b[0]).silo.to_string() << " and "
                        << hub_built_for(w, on_b[1]).silo.to_string());
}
