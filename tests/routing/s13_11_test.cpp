// S13.11 on whole silos: silo B is killed under steady traffic from a pure client homed on
// B, to application hubs that answer inside the silos. Every request B had accepted ends
// within the failure-detection bound plus 1 s (one NACK `failed`, its outcome unknown), no
// request ends by its deadline, and the only deliveries without a terminal outcome are
// one-way posts B had accepted, recorded as lost with the crash.

#include <doctest/doctest.h>

#include <chrono>
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





} // namespace

TEST_CASE_FIXTURE(fixture, "S13.11 a silo killed under traffic with answering hubs inside the silos: every request it had accepted ends within the failure-detection bound plus 1 s, and only its accepted one-way posts are left without an outcome, recorded lost with the crash") {
  silo_world w{*this};
  auto a = w.add_silo("a").addr;
  auto b = w.add_silo("b").addr;
  auto c = w.add_silo("c").addr;
  REQUIRE(w.last_start->ok());
  for (auto& e : w.silos)
    testing::fixture::state_of<test_hub_factory_state>(e.hubs).respond = true;
  auto pb = client_on(*this, w, "pc-b", b, "client/pb");
  auto& svc = service_of(pb.c.routing);
  // Four application hubs off B (built on A and C), whose directory entries B does not own.
  auto active = ring_of(w, a);
  std::vector<std::string> keys;
  for (int i = 0; keys.size() < 4; ++i) {
    REQUIRE(i < 400);
    auto key = "Org/H" + std::to_string(i);
    if (ring_owner(active, grain_id{"messagehub", key}) == b)
      continue;
    caf::anon_send(pb.hub, ep_post_atom::value, make_delivery("warm-" + key, "node/" + key));
    settle_now(*this);
    auto built = hub_built_for(w, key);
    REQUIRE(!built.silo.empty());
    if (built.silo != b)
      keys.push_back(key);
  }
  REQUIRE(hub_of(pb.hub).outcomes.empty());
  // B's frames take 200 ms to A and C and 150 ms back to the client, so legs and answers
  // are in flight when B dies.
  set_delay(*this, w, b, a, 200);
  set_delay(*this, w, b, c, 200);
  set_delay(*this, w, b, pb.c.addr, 150);
  auto off = clock_offset_ms(*this);
  auto t0 = now_ms();
  const int n = 20;
  std::vector<std::string> lost;
  int64_t tk = -1;
  int sent_before_kill = -1; // requests r0 .. r{sent_before_kill - 1} went out via B
  for (int i = 0; i < n; ++i) {
    run_to(t0 + 100 * i);
    if (tk < 0 && now_ms() >= t0 + 1000) {
      run_to(t0 + 1050);
      tk = now_ms();
      auto st = core_stats(*this, w, b);
      for (auto& id : st.in_flight_ids)
        caf::anon_send(w.net, sim_note_atom::value, lost_line(b, id));
      run();
      lost = st.in_flight_ids;
      sent_before_kill = i;
      w.kill(b);
      run_to(t0 + 100 * i);
    }
    auto key = "node/" + keys[i % keys.size()];
    caf::anon_send(pb.hub, ep_request_atom::value, make_delivery("r" + std::to_string(i), key),
                   int64_t{30000});
    caf::anon_send(pb.hub, ep_post_atom::value, make_delivery("p" + std::to_string(i), key));
    run();
  }
  REQUIRE(tk == t0 + 1050);
  REQUIRE(sent_before_kill == 10);
  REQUIRE(!lost.empty());
  run_to(tk + 120000);

  auto& net = cafmesh::detail::state_of(w.net);
  std::set<std::string> lost_ids(lost.begin(), lost.end());
  size_t departed_nacks = 0;
  for (int i = 0; i < n; ++i) {
    auto id = "r" + std::to_string(i);
    bool via_b = i < sent_before_kill; // dispatched while B was the client's gateway
    INFO("request " << id);
    INFO("via B: " << via_b);
    auto os = outcomes_for(pb.hub, id);
    REQUIRE(os.size() == 1);
    CHECK(os[0].kind != "deadline");
    if (via_b && os[0].kind == "nack") {
      // B had it (accepted, or its call had reached B): it ends at once, within the bound.
      CHECK(os[0].verdict == verdict::failed);
      CHECK(contains(os[0].message, "silo " + b.to_string()
                                      + " departed while the call was in flight; its "
                                        "outcome is unknown"));
      CHECK(os[0].t_ms - off == tk);
      CHECK(os[0].t_ms - off <= tk + 10000 + 1000);
      ++departed_nacks;
    } else if (via_b) {
      // Answered before B died (at the latest in the instant of the kill).
      CHECK(os[0].kind == "response");
      CHECK(os[0].t_ms - off <= tk);
    }
    // Every request B's router core still held ended by B's departure.
    if (lost_ids.count(id) > 0) {
      CHECK(via_b);
      CHECK(os[0].kind == "nack");
    }
  }
  CHECK(departed_nacks >= 1);
  // Posts: landed once, or NACKed once, or accepted by B and recorded lost with the crash.
  size_t without_outcome = 0;
  for (int i = 0; i < n; ++i) {
    auto id = "p" + std::to_string(i);
    INFO("post " << id);
    auto os = outcomes_for(pb.hub, id);
    auto landed = received_anywhere(w, id);
    CHECK(os.size() + landed <= 1);
    if (os.empty() && landed == 0) {
      ++without_outcome;
      CHECK(lost_ids.count(id) == 1);
      CHECK(net.count(lost_line(b, id)) == 1);
    }
  }
  CHECK(without_outcome >= 1);
  // Requests B had accepted were never answered by a deadline; the client left B once.
  for (auto& o : hub_of(pb.hub).outcomes)
    CHECK(o.kind != "deadline");
  CHECK(svc.gateway != b);
  CHECK(!svc.gateway.empty());
  CHECK(svc.stats.gateways_lost == 1);
  MESSAGE("lost with the crash: " << lost.size() << " deliver(ies); departure NACKs: "
                                  << departed_nacks << "; posts without outcome: "
                                  << without_outcome);
}
