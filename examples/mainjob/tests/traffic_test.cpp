#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "cafmesh/mainjob/trace_replay.hpp"
#include "cafmesh/mainjob/traffic.hpp"

using namespace cafmesh;
using namespace cafmesh::mainjob;
using routing::verdict;

namespace {

scenario small(uint64_t seed = 42) {
  auto s = default_scenario();
  s.seed = seed;
  s.duration_s = 2;
  s.rate_per_s = 100;
  s.traffic.streams = 4;
  s.traffic.subscribers_per_stream = 2;
  s.traffic.owner_hubs = 2;
  s.traffic.portal_hubs = 5;
  s.traffic.node_hubs = 3;
  return s;
}

std::vector<std::string> fingerprint(std::vector<planned_delivery> plan) {
  std::vector<std::string> out;
  for (auto& d : plan)
    out.push_back(d.id + " " + to_trace_line(d) + " v"
                  + (d.frame ? std::to_string(d.frame->version) : std::string{"-"}));
  return out;
}

observed_outcome nack(verdict v) {
  return {outcome_kind::nack, v};
}

} // namespace

TEST_CASE("mainjob traffic: the same seed gives the same schedule, another seed another") {
  auto a = fingerprint(traffic_generator{small(42)}.take_all());
  auto b = fingerprint(traffic_generator{small(42)}.take_all());
  auto c = fingerprint(traffic_generator{small(43)}.take_all());
  CHECK(a.size() >= 200);
  CHECK(a == b);
  CHECK(a != c);
  // taking the schedule piecemeal gives the same deliveries
  traffic_generator g{small(42)};
  std::vector<planned_delivery> pieces;
  for (int64_t t = 0; t < 3000; t += 7)
    for (auto& d : g.take_due(t))
      pieces.push_back(d);
  CHECK(fingerprint(pieces) == a);
  CHECK_FALSE(g.next_due_ms().has_value());
}

TEST_CASE("mainjob traffic: pacing puts delivery i at floor(i * 1000 / rate)") {
  auto s = small();
  s.rate_per_s = 3;
  s.duration_s = 1;
  s.traffic.weights = {0, 1, 1}; // no frames: every event is one delivery
  traffic_generator g{s};
  CHECK(g.next_due_ms() == 0);
  auto plan = g.take_all();
  REQUIRE(plan.size() == 3);
  CHECK(plan[0].t_ms == 0);
  CHECK(plan[1].t_ms == 333);
  CHECK(plan[2].t_ms == 666);
  CHECK(plan[0].id == "demo-1");
  CHECK(plan[2].id == "demo-3");
  CHECK(g.counters().paced == 3);
  s.rate_per_s = 2000;
  traffic_generator fast{s};
  auto due = fast.take_due(1);
  REQUIRE(due.size() == 4); // slots at 0, 0, 1, 1
  CHECK(due[1].t_ms == 0);
  CHECK(due[2].t_ms == 1);
  CHECK(fast.next_due_ms() == 2);
}

TEST_CASE("mainjob traffic: initial Fulls first, then owner-stamped patches to every subscriber") {
  auto s = small();
  traffic_generator g{s};
  CHECK(g.subscribers(3) == std::vector<int64_t>{1, 2}); // (3 * 2 + j) % 5
  auto plan = g.take_all();
  // 4 streams x 2 subscribers initial Fulls at version 0
  for (size_t i = 0; i < 8; ++i) {
    CAPTURE(i);
    REQUIRE(plan[i].frame.has_value());
    CHECK(plan[i].frame->type == routing::sync_frame::kind::full);
    CHECK(plan[i].frame->version == 0);
    CHECK(plan[i].kind == delivery_kind::frame);
  }
  CHECK(plan[6].sender == "node/Owner/O1"); // stream 3 is owned by owner 3 % 2
  CHECK(plan[6].target == "portal/user1/tab1");
  CHECK(plan[6].stream == "stream-3");
  CHECK(plan[7].target == "portal/user2/tab1");
  // every later frame is a patch; per stream the versions step by one per event and each
  // event goes to every subscriber with the same version
  std::map<std::string, uint64_t> last;
  for (size_t i = 8; i < plan.size(); ++i) {
    auto& d = plan[i];
    if (d.kind == delivery_kind::post) {
      CHECK(d.answer_suppressed);
      CHECK(d.stream.empty());
      CHECK(d.payload_type == "demo.heartbeat");
      continue;
    }
    if (d.kind == delivery_kind::request) {
      CHECK_FALSE(d.answer_suppressed);
      CHECK(d.attempt == 0);
      continue;
    }
    REQUIRE(d.frame.has_value());
    CHECK(d.frame->type == routing::sync_frame::kind::patch);
    auto& v = last[d.stream + " " + d.target];
    CHECK(d.frame->version == v + 1);
    v = d.frame->version;
  }
}

TEST_CASE("mainjob traffic: every mirror fed its frames in order ends equal to the owner's state") {
  auto s = small(5);
  traffic_generator g{s};
  auto plan = g.take_all();
  std::map<std::string, routing::delta_mirror> mirrors;
  for (auto& d : plan) {
    if (d.kind != delivery_kind::frame)
      continue;
    auto key = d.target + " " + d.stream;
    auto i = mirrors.try_emplace(key, key).first;
    CHECK(i->second.on_frame(*d.frame) == routing::frame_outcome::applied);
  }
  CHECK(mirrors.size() == 8);
  for (int64_t st = 0; st < s.traffic.streams; ++st)
    for (auto sub : g.subscribers(st)) {
      auto owner = owner_hub_address(st % s.traffic.owner_hubs);
      auto& m = mirrors.at(portal_hub_address(sub) + " " + stream_id(st));
      CHECK(m.version() == g.streams().version(owner, stream_id(st)));
      CHECK(m.state() == g.streams().state(owner, stream_id(st)));
      CHECK(m.counters().stale_dropped == 0);
    }
}

TEST_CASE("mainjob traffic: a transiently NACKed frame is answered by a fresh Full at the current version") {
  auto s = small();
  traffic_generator g{s};
  auto early = g.take_due(200);
  // the last patch taken so far
  auto it = std::find_if(early.rbegin(), early.rend(), [](const planned_delivery& d) {
    return d.frame && d.frame->type == routing::sync_frame::kind::patch;
  });
  REQUIRE(it != early.rend());
  auto nacked = *it;
  auto owner_version = g.streams().version(nacked.sender, nacked.stream);
  CHECK(owner_version >= nacked.frame->version);
  auto reaction = g.on_outcome(nacked, nack(verdict::shutting_down), 250);
  REQUIRE(reaction.size() == 1);
  auto& full = reaction[0];
  CHECK(full.id == "demo-r1");
  CHECK(full.t_ms == 250 + 250); // the first reaction of a chain waits 250 ms
  CHECK(full.kind == delivery_kind::frame);
  CHECK(full.sender == nacked.sender);
  CHECK(full.target == nacked.target);
  CHECK(full.stream == nacked.stream);
  REQUIRE(full.frame.has_value());
  CHECK(full.frame->type == routing::sync_frame::kind::full);
  CHECK(full.frame->version == owner_version);
  CHECK(full.frame->state == g.streams().state(nacked.sender, nacked.stream));
  CHECK(g.counters().fresh_fulls_after_nack == 1);
  // unavailable is transient too; the Full itself NACKed gets another Full
  CHECK(g.on_outcome(full, nack(verdict::unavailable), 260).size() == 1);
  CHECK(g.counters().fresh_fulls_after_nack == 2);
  // terminal verdicts and landings: no reaction, the frame is never re-sent
  CHECK(g.on_outcome(nacked, nack(verdict::not_found), 270).empty());
  CHECK(g.on_outcome(nacked, nack(verdict::failed), 270).empty());
  CHECK(g.on_outcome(nacked, {outcome_kind::landed, verdict::failed}, 270).empty());
  CHECK(g.counters().fresh_fulls_after_nack == 2);
}

TEST_CASE("mainjob traffic: a request NACKed shutting_down or unavailable is re-sent as a new delivery at most 5 times") {
  auto s = small();
  s.traffic.weights = {0, 0, 1};
  traffic_generator g{s};
  auto plan = g.take_due(0);
  REQUIRE(plan.size() == 1);
  auto d = plan[0];
  CHECK(d.kind == delivery_kind::request);
  std::vector<std::string> ids{d.id};
  for (int attempt = 1; attempt <= 5; ++attempt) {
    auto next = g.on_outcome(d, nack(attempt % 2 == 0 ? verdict::unavailable
                                                      : verdict::shutting_down),
                             100 * attempt);
    REQUIRE(next.size() == 1);
    CHECK(next[0].attempt == attempt);
    CHECK(next[0].chain == "demo-1");
    CHECK(next[0].sender == d.sender);
    CHECK(next[0].target == d.target);
    // due reaction_delay_ms(n) after the NACK: 250, 500, 1000, 2000, 4000 ms
    CHECK(next[0].t_ms == 100 * attempt + std::min<int64_t>(int64_t{250} << (attempt - 1), 4000));
    d = next[0];
    ids.push_back(d.id);
  }
  CHECK(ids == std::vector<std::string>{"demo-1", "demo-r1", "demo-r2", "demo-r3", "demo-r4",
                                        "demo-r5"});
  CHECK(g.counters().requests_resent == 5);
  CHECK(g.on_outcome(d, nack(verdict::shutting_down), 600).empty()); // the 6th is not made
  CHECK(g.counters().request_resends_exhausted == 1);
  // terminal verdicts, responses and deadlines are never re-sent
  CHECK(g.on_outcome(plan[0], nack(verdict::failed), 700).empty());
  CHECK(g.on_outcome(plan[0], {outcome_kind::deadline, verdict::failed}, 700).empty());
  CHECK(g.on_outcome(plan[0], {outcome_kind::response, verdict::failed}, 700).empty());
  CHECK(g.counters().requests_resent == 5);
}

TEST_CASE("mainjob traffic: heartbeats are never re-sent") {
  auto s = small();
  s.traffic.weights = {0, 1, 0};
  traffic_generator g{s};
  auto hb = g.take_due(0);
  REQUIRE(hb.size() == 1);
  CHECK(hb[0].answer_suppressed);
  CHECK(g.on_outcome(hb[0], {outcome_kind::suppressed_failure, verdict::shutting_down}, 5)
          .empty());
}

TEST_CASE("mainjob traffic: payloads are valid JSON of at least payload_bytes") {
  auto s = small();
  traffic_generator g{s};
  auto plan = g.take_due(500);
  REQUIRE(plan.size() > 10);
  for (auto& d : plan) {
    auto text = render_payload(d);
    CHECK(static_cast<int64_t>(text.size()) == d.payload_bytes);
    CHECK_NOTHROW(nlohmann::json::parse(text));
  }
  planned_delivery tiny;
  tiny.payload_type = "demo.request";
  tiny.id = "demo-1";
  tiny.payload_bytes = 40; // natural 37 bytes: a pad adds at least 9
  CHECK(render_payload(tiny) == R"({"type":"demo.request","id":"demo-1","pad":""})");
  tiny.payload_bytes = 0;
  CHECK(render_payload(tiny) == R"({"type":"demo.request","id":"demo-1"})");
  planned_delivery p;
  p.frame = routing::sync_frame::patch(9, {routing::sync_op::set("k1", "9")});
  CHECK(render_payload(p) == R"({"v":9,"ops":[{"op":"set","key":"k1","value":9}]})");
}

TEST_CASE("mainjob traffic: reactions wait 250, 500, 1000, 2000 and 4000 ms (the attach policy), then 4000") {
  std::vector<int64_t> got;
  for (int64_t n = 1; n <= 7; ++n)
    got.push_back(reaction_delay_ms(n));
  CHECK(got == std::vector<int64_t>{250, 500, 1000, 2000, 4000, 4000, 4000});
}

TEST_CASE("mainjob traffic: a burst of 331 requests comes on top of the paced schedule, evenly within 50 ms, and leaves the paced schedule unchanged") {
  auto plain = small();
  auto with = small();
  with.traffic.bursts.push_back({1000, 331, 50});
  traffic_generator a{plain}, b{with};
  auto pa = a.take_all();
  auto pb = b.take_all();
  std::vector<planned_delivery> paced, burst;
  for (auto& d : pb)
    (d.id.rfind("demo-b", 0) == 0 ? burst : paced).push_back(d);
  CHECK(fingerprint(paced) == fingerprint(pa));
  REQUIRE(burst.size() == 331);
  CHECK(b.counters().burst == 331);
  CHECK(b.counters().paced == a.counters().paced);
  for (size_t k = 0; k < burst.size(); ++k) {
    CAPTURE(k);
    auto& d = burst[k];
    CHECK(d.id == "demo-b" + std::to_string(k + 1));
    CHECK(d.t_ms == 1000 + static_cast<int64_t>(k) * 50 / 331);
    CHECK(d.kind == delivery_kind::request);
    CHECK(d.sender == portal_hub_address(static_cast<int64_t>(k) % 5));
    CHECK(d.target == node_hub_address(static_cast<int64_t>(k) % 3));
    CHECK(d.payload_type == "demo.request");
  }
  CHECK(burst.front().t_ms == 1000);
  CHECK(burst.back().t_ms == 1049);
  // Merged by due time, a paced delivery first when both are due at the same ms.
  for (size_t i = 1; i < pb.size(); ++i)
    CHECK(pb[i - 1].t_ms <= pb[i].t_ms);
  auto first_burst = std::find_if(pb.begin(), pb.end(),
                                  [](auto& d) { return d.id == "demo-b1"; });
  REQUIRE(first_burst != pb.end());
  REQUIRE(first_burst != pb.begin());
  CHECK(std::prev(first_burst)->t_ms == 1000);
  CHECK(std::prev(first_burst)->id.rfind("demo-b", 0) != 0);
  // take_due hands out the burst when it is due, not before.
  traffic_generator c{with};
  auto early = c.take_due(999);
  CHECK(std::none_of(early.begin(), early.end(),
                     [](auto& d) { return d.id.rfind("demo-b", 0) == 0; }));
  CHECK(c.next_due_ms() == std::optional<int64_t>{1000});
  auto at = c.take_due(1010);
  CHECK(std::count_if(at.begin(), at.end(), [](auto& d) { return d.id.rfind("demo-b", 0) == 0; })
        == 331 * 11 / 50 + 1);
}

TEST_CASE("mainjob traffic: an overload refusal is re-sent as a new delivery after its retry_after_ms, without using up the request's re-sends") {
  auto o = overload_refusal(outcome_kind::nack, verdict::unavailable,
                            "router core overloaded: 64 legs in flight (retry_after_ms=250)");
  CHECK(o.overloaded);
  CHECK(o.retry_after_ms == 250);
  CHECK(overload_refusal(outcome_kind::nack, verdict::unavailable,
                         R"({"text":"overloaded","retry_after_ms": 40})")
          .retry_after_ms
        == 40);
  CHECK(overload_refusal(outcome_kind::nack, verdict::unavailable,
                         "silo S1 overloaded: 16 deliveries in flight (routing.max_in_flight "
                         "16); retry after 500 ms")
          .retry_after_ms
        == 500);
  CHECK_FALSE(overload_refusal(outcome_kind::nack, verdict::unavailable,
                               "overloaded; retry after a while (about 5 s)")
                .retry_after_ms);
  CHECK_FALSE(overload_refusal(outcome_kind::nack, verdict::failed, "overloaded").overloaded);
  CHECK_FALSE(overload_refusal(outcome_kind::nack, verdict::unavailable, "no gateway").overloaded);
  CHECK_FALSE(
    overload_refusal(outcome_kind::nack, verdict::unavailable, "overloaded").retry_after_ms);
  auto s = small();
  s.traffic.weights = {0, 0, 1};
  s.traffic.overload_max_resends = 2;
  traffic_generator g{s};
  auto plan = g.take_due(0);
  REQUIRE(plan.size() == 1);
  auto d = plan[0];
  auto next = g.on_outcome(d, o, 100);
  REQUIRE(next.size() == 1);
  CHECK(next[0].id == "demo-r1");
  CHECK(next[0].t_ms == 350);
  CHECK(next[0].attempt == 0);
  CHECK(next[0].overload_attempt == 1);
  CHECK(next[0].chain == "demo-1");
  auto plain = overload_refusal(outcome_kind::nack, verdict::unavailable, "gateway overloaded");
  auto again = g.on_outcome(next[0], plain, 400);
  REQUIRE(again.size() == 1);
  CHECK(again[0].t_ms == 400 + overload_default_retry_after_ms);
  CHECK(g.on_outcome(again[0], o, 600).empty()); // the third is not made
  CHECK(g.counters().overload_refusals == 3);
  CHECK(g.counters().overload_refusals_without_retry_after == 1);
  CHECK(g.counters().overload_resends == 2);
  CHECK(g.counters().overload_resends_exhausted == 1);
  CHECK(g.counters().requests_resent == 0);
  // a refused heartbeat (its failure is a suppressed failure) is re-sent too
  auto hb = d;
  hb.kind = delivery_kind::post;
  hb.answer_suppressed = true;
  CHECK(g.on_outcome(hb, overload_refusal(outcome_kind::suppressed_failure, verdict::unavailable,
                                          "overloaded retry_after_ms=5"),
                     0)
          .size()
        == 1);
}
