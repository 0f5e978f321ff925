// Per-stream order of a pure client's frames across a re-homing
// (docs/behaviour/routing.md#a-pure-clients-streams-across-a-re-homing): a stream's frames
// that a stopping gateway accepted, or refused and left to a retry, land before the frames of
// that stream the client sends through its next gateway.

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "cafmesh/testing/silo_world.hpp"

using namespace cafmesh;
using namespace cafmesh::testing;
using namespace std::chrono_literals;
using testing::fixture;

namespace {

struct flow_result {
  std::vector<std::string> sent;
  std::vector<std::string> landed;   ///< in landing order
  std::map<std::string, int> nacked; ///< id -> NACKs
  uint64_t stop_sends = 0;
};

/// Two pure clients: the portal client P homed on silo B (its portal attached there) and
/// the sender client O homed on silo A. O's owner hub sends `streams` streams of frames to
/// P's portal, one frame per stream every 10 ms; 60 rounds in, A is stopped gracefully while
/// 100 more rounds follow. Link latency 1..5 ms, so frames are in flight at A's router core
/// when it stops.
flow_result stop_sender_gateway_under_flow(fixture& fx, int streams) {
  silo_world w{fx, 1, 1, 5};
  auto a = w.add_silo("a").addr;
  auto b = w.add_silo("b").addr;
  w.add_silo("c");
  auto p = w.add_client("p", b);
  auto o = w.add_client("o", a);
  const std::string portal_path = "portal/user1/tab1";
  auto portal = add_hub(fx, p.routing, portal_path);
  auto owner = add_hub(fx, o.routing, "node/Owner/O1");
  fx.run_for(1s);
  REQUIRE(service_of(p.routing).inbound.at(portal_path).attached);
  REQUIRE(service_of(o.routing).gateway == a);
  flow_result out;
  std::shared_ptr<testing::reply<caf::ok_atom>> stopped;
  for (int round = 0; round < 160; ++round) {
    if (round == 60)
      stopped = w.stop(a, true);
    for (int s = 0; s < streams; ++s) {
      auto id = "s" + std::to_string(s) + "-f" + std::to_string(round);
      out.sent.push_back(id);
      caf::anon_send(owner, routing::ep_post_atom::value,
                     make_delivery(id, portal_path, "stream-" + std::to_string(s)));
    }
    fx.run_for(10ms);
  }
  REQUIRE(fx.run_until([&] { return stopped->done; }, std::chrono::minutes(2)));
  CHECK(stopped->ok());
  fx.run_for(60s);
  for (auto& r : hub_of(portal).received)
    out.landed.push_back(r.env.id);
  for (auto& x : hub_of(owner).outcomes)
    if (x.kind == "nack")
      ++out.nacked[x.id];
  out.stop_sends = service_of(o.routing).stats.stop_sends;
  CHECK(service_of(o.routing).gateway != a);
  return out;
}

/// Frames of stream `s` in the order they landed.
std::vector<int> landed_rounds(const flow_result& r, int s) {
  std::vector<int> out;
  auto prefix = "s" + std::to_string(s) + "-f";
  for (auto& id : r.landed)
    if (id.compare(0, prefix.size(), prefix) == 0)
      out.push_back(std::stoi(id.substr(prefix.size())));
  return out;
}

} // namespace

TEST_CASE_FIXTURE(fixture, "client order: a pure client's gateway stops under 4 streams of frames, every frame lands once, each stream in send order, across the re-homing") {
  auto r = stop_sender_gateway_under_flow(*this, 4);
  CHECK(r.stop_sends == 1);
  // Nothing is lost or NACKed: the portal's pod hub is on B, which stays.
  CHECK(r.nacked.empty());
  std::map<std::string, int> times;
  for (auto& id : r.landed)
    ++times[id];
  CHECK(times.size() == r.sent.size());
  for (auto& id : r.sent) {
    INFO(id);
    CHECK(times[id] == 1);
  }
  for (int s = 0; s < 4; ++s) {
    INFO("stream-" << s);
    auto rounds = landed_rounds(r, s);
    std::string text;
    for (auto x : rounds)
      text += std::to_string(x) + " ";
    INFO("landed rounds: " << text);
    std::vector<int> want(160);
    for (int i = 0; i < 160; ++i)
      want[i] = i;
    CHECK(rounds == want);
  }
}

TEST_CASE_FIXTURE(fixture, "client order: after stop-send a gateway refuses a routing-grain call with silo_unavailable naming itself, before placement could pass it to another silo's router core") {
  silo_world w{*this};
  auto a = w.add_silo("a").addr;
  auto b = w.add_silo("b").addr;
  auto& ga = w.at(a);
  auto stats = [&](const silo_address& s) {
    auto r = testing::ask<routing::router_core_stats>(*this, w.at(s).core,
                                                      routing::rc_stats_atom::value);
    run();
    REQUIRE(r->ok());
    return r->value;
  };
  auto route = [&](const std::string& id) {
    auto r = testing::ask<routing::dispatch_verdicts>(
      *this, ga.gateway, pl_call_atom::value, routing::routing_grain_id(), int32_t{0},
      caf::make_message(routing::hg_routes_atom::value,
                        std::vector<routing::dispatch_item>{
                          {make_delivery(id, "portal/user1/tab1", "s1"), caf::timespan{0}}},
                        silo_address{"c", 11111, 99}));
    run_for(1s);
    return r;
  };
  // Before stop-send the call reaches A's router core, which accepts the delivery.
  auto first = route("d-1");
  REQUIRE(first->done);
  REQUIRE(first->ok());
  REQUIRE(first->value.size() == 1);
  CHECK_FALSE(first->value[0]);
  CHECK(stats(a).accepted == 1);
  auto sent = testing::ask<size_t>(*this, ga.gateway, routing::gw_stop_send_atom::value, true);
  run();
  REQUIRE(sent->ok());
  // After it, the gateway itself refuses: nothing is handed to placement, no router core
  // accepts the delivery, and the refusal names A so that the client leaves it.
  auto second = route("d-2");
  REQUIRE(second->done);
  REQUIRE_FALSE(second->ok());
  auto f = to_fault(second->err);
  CHECK(f.code == mesh_errc::silo_unavailable);
  REQUIRE(f.silo);
  CHECK(*f.silo == a);
  CHECK(f.text == "gateway " + a.to_string() + " is leaving; route elsewhere");
  CHECK(stats(a).accepted == 1);
  CHECK(stats(b).accepted == 0);
}
