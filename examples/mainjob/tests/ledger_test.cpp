#include <doctest/doctest.h>

#include <sstream>

#include "cafmesh/mainjob/ledger.hpp"

using namespace cafmesh;
using namespace cafmesh::mainjob;
using routing::verdict;

namespace {

accepted_delivery request(std::string id, int64_t t_ms, std::string origin = "client:1") {
  return {std::move(id), delivery_kind::request, "portal/u1/tab1", "node/Org/N1", "", 0, false,
          std::move(origin), t_ms};
}

accepted_delivery heartbeat(std::string id, int64_t t_ms) {
  return {std::move(id), delivery_kind::post, "portal/u1/tab1", "node/Org/N1", "", 0, true,
          "client:1", t_ms};
}

accepted_delivery frame(std::string id, std::string target, std::string stream, uint64_t v,
                        int64_t t_ms) {
  return {std::move(id), delivery_kind::frame, "node/Owner/O1", std::move(target),
          std::move(stream), v, false, "grain", t_ms};
}

} // namespace

TEST_CASE("mainjob ledger: a delivery without a terminal outcome is lost") {
  outcome_ledger l;
  l.accept(request("r1", 0));
  l.accept(request("r2", 1));
  l.accept(heartbeat("h1", 2));
  l.accept(frame("f1", "portal/u2/tab1", "stream-1", 1, 3));
  CHECK(l.in_flight() == 4);
  l.landed("r1", 5); // a request's landing at the target is not its sender's outcome
  l.response("r2", 9);
  l.landed("h1", 4);
  auto s = l.summarize();
  CHECK(s.total.accepted == 4);
  CHECK(s.total.lost == 2);
  CHECK(s.lost_ids == std::vector<std::string>{"r1", "f1"});
  CHECK(s.total.landed == 2);
  CHECK(l.in_flight() == 2);
  CHECK(s.by_kind.at(delivery_kind::request).lost == 1);
  CHECK(s.by_kind.at(delivery_kind::frame).lost == 1);
  CHECK(s.by_kind.at(delivery_kind::post).landed == 1);
  CHECK(s.by_origin.at("client:1").accepted == 3);
  CHECK(s.by_origin.at("grain").lost == 1);
}

TEST_CASE("mainjob ledger: every kind of terminal outcome ends a delivery") {
  outcome_ledger l;
  l.accept(request("r1", 0));
  l.accept(request("r2", 0));
  l.accept(request("r3", 0));
  l.accept(heartbeat("h1", 0));
  l.accept(frame("f1", "portal/u2/tab1", "stream-1", 1, 0));
  l.response("r1", 10);
  l.nack("r2", verdict::shutting_down, "Host is shutting down, cannot route to node/Org/N1", 11);
  l.deadline("r3", 30000);
  l.suppressed_failure("h1", verdict::unavailable, "placement timed out", 12);
  l.nack("f1", verdict::unavailable, "timed out", 13);
  auto s = l.summarize();
  CHECK(s.total.lost == 0);
  CHECK(s.total.landed == 1);
  CHECK(s.total.nacked == 2);
  CHECK(s.total.deadlines == 1);
  CHECK(s.total.suppressed_failures == 1);
  CHECK(s.nacked_by_verdict
        == std::map<verdict, uint64_t>{{verdict::shutting_down, 1}, {verdict::unavailable, 1}});
  CHECK(s.suppressed_by_verdict == std::map<verdict, uint64_t>{{verdict::unavailable, 1}});
  CHECK(s.nack_texts
        == std::set<std::string>{"Host is shutting down, cannot route to node/Org/N1",
                                 "placement timed out", "timed out"});
  CHECK(s.multiple_terminal == 0);
  CHECK(l.in_flight() == 0);
}

TEST_CASE("mainjob ledger: more than one terminal outcome is detected") {
  outcome_ledger l;
  l.accept(request("r1", 0));
  l.accept(frame("f1", "portal/u2/tab1", "stream-1", 1, 0));
  l.accept(frame("f2", "portal/u2/tab1", "stream-1", 2, 0));
  l.accept(request("r2", 0));
  l.response("r1", 5);
  l.nack("r1", verdict::failed, "late", 6);    // passed on although r1 had terminated
  l.landed("f1", 3);
  l.nack("f1", verdict::shutting_down, "x", 4); // landed and NACKed
  l.landed("f2", 5);
  l.landed("f2", 6);                            // landed twice
  l.nack("r2", verdict::unavailable, "y", 7);   // exactly one: fine
  l.duplicate_dropped("r2", 8);                 // the tracker dropped a copy: fine
  auto s = l.summarize();
  CHECK(s.multiple_terminal == 3);
  CHECK(s.multiple_terminal_ids == std::vector<std::string>{"r1", "f1", "f2"});
  CHECK(s.duplicates_dropped == 1);
  // the first terminal outcome decides the counts
  CHECK(s.total.landed == 3);
  CHECK(s.total.nacked == 1);
  CHECK(s.nacked_by_verdict == std::map<verdict, uint64_t>{{verdict::unavailable, 1}});
}

TEST_CASE("mainjob ledger: per-stream order violations at a receiver") {
  outcome_ledger l;
  l.accept(frame("p6", "portal/a/tab1", "stream-1", 6, 0));
  l.accept(frame("p7", "portal/a/tab1", "stream-1", 7, 0));
  l.accept(frame("q5", "portal/b/tab1", "stream-1", 5, 0)); // other target: own order
  l.accept(frame("s3", "portal/a/tab1", "stream-2", 3, 0)); // other stream: own order
  l.accept(frame("full7", "portal/a/tab1", "stream-1", 7, 0));
  l.accept(frame("p8", "portal/a/tab1", "stream-1", 8, 0));
  l.landed("p7", 10);
  l.landed("p6", 11); // v6 after v7: violation
  l.landed("q5", 12);
  l.landed("s3", 13);
  l.landed("full7", 14); // equal version passes (docs/behaviour/sync-guard.md: v = C passes)
  l.landed("p8", 15);
  auto s = l.summarize();
  CHECK(s.order_violations == 1);
  REQUIRE(s.order_violation_samples.size() == 1);
  CHECK(s.order_violation_samples[0]
        == order_violation{"p6", "portal/a/tab1", "stream-1", 6, 7, 11});
  CHECK(s.total.lost == 0);
}

TEST_CASE("mainjob ledger: stale drops, unknown ids, duplicate accepts and NACKs on suppressed posts") {
  outcome_ledger l;
  CHECK(l.accept(heartbeat("h1", 0)));
  CHECK_FALSE(l.accept(heartbeat("h1", 1)));
  l.stale_dropped("portal/a/tab1", "stream-1", 6, 3);
  l.stale_dropped("portal/a/tab1", "stream-1", 5, 4);
  l.landed("nobody", 5);
  l.response("nobody-either", 5);
  l.nack("h1", verdict::failed, "must never happen", 6);
  auto s = l.summarize();
  CHECK(s.stale_drops == 2);
  CHECK(s.unknown_outcomes == 2);
  CHECK(s.duplicate_accepts == 1);
  CHECK(s.nacks_on_suppressed == 1);
  CHECK(s.total.accepted == 1);
}

TEST_CASE("mainjob ledger: nearest-rank percentiles") {
  CHECK(nearest_rank({}, 50) == std::nullopt);
  CHECK(nearest_rank({7}, 50) == 7);
  CHECK(nearest_rank({7}, 99) == 7);
  CHECK(nearest_rank({10, 1, 9, 2, 8, 3, 7, 4, 6, 5}, 50) == 5);  // rank ceil(5.0) = 5
  CHECK(nearest_rank({10, 1, 9, 2, 8, 3, 7, 4, 6, 5}, 99) == 10); // rank ceil(9.9) = 10
  CHECK(nearest_rank({1, 2, 3}, 50) == 2);                         // rank ceil(1.5) = 2
  std::vector<int64_t> hundred;
  for (int64_t i = 1; i <= 200; ++i)
    hundred.push_back(i);
  CHECK(nearest_rank(hundred, 50) == 100);
  CHECK(nearest_rank(hundred, 99) == 198);
  CHECK(nearest_rank({1, 2}, 0) == std::nullopt);
}

TEST_CASE("mainjob ledger: latency is the first landing minus the accepted time") {
  outcome_ledger l;
  l.accept(request("r1", 100));
  l.accept(heartbeat("h1", 100));
  l.accept(frame("f1", "portal/a/tab1", "stream-1", 1, 100));
  l.landed("r1", 104);
  l.response("r1", 110);
  l.landed("h1", 102);
  l.landed("f1", 150);
  l.landed("f1", 170); // a second landing does not change the sample
  auto s = l.summarize();
  CHECK(s.latency_samples == 3);
  CHECK(s.latency_p50_ms == 4);
  CHECK(s.latency_p99_ms == 50);
}

TEST_CASE("mainjob ledger: the event file reads back into the same summary") {
  std::ostringstream file;
  outcome_ledger l;
  l.write_events_to(&file);
  l.accept(request("r1", 0));
  l.accept(frame("p7", "portal/a/tab1", "stream-1", 7, 1));
  l.accept(frame("p6", "portal/a/tab1", "stream-1", 6, 2));
  l.accept(heartbeat("h1", 3));
  l.nack("r1", verdict::shutting_down, "Hub \"x\" is leaving", 4);
  l.landed("p7", 5);
  l.landed("p6", 6);
  l.suppressed_failure("h1", verdict::unavailable, "t", 7);
  l.duplicate_dropped("r1", 8);
  l.stale_dropped("portal/a/tab1", "stream-1", 6, 9);
  auto text = file.str();
  CHECK(text.substr(0, text.find('\n'))
        == R"({"t_ms":0,"event":"accepted","id":"r1","kind":"request","sender":"portal/u1/tab1",)"
           R"("target":"node/Org/N1","stream":"","version":0,"answer_suppressed":false,"origin":"client:1"})");
  outcome_ledger back;
  std::istringstream in{text};
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) {
    ++lines;
    CHECK(read_event_line(line, back) == "");
  }
  CHECK(lines == 10);
  auto a = l.summarize();
  auto b = back.summarize();
  CHECK(a.total == b.total);
  CHECK(b.order_violations == 1);
  CHECK(b.stale_drops == 1);
  CHECK(b.duplicates_dropped == 1);
  CHECK(a.nacked_by_verdict == b.nacked_by_verdict);
  CHECK(a.suppressed_by_verdict == b.suppressed_by_verdict);
  CHECK(read_event_line(R"({"t_ms":1,"event":"exploded","id":"x"})", back)
        == "expected \"event\" to be one of accepted, landed, response, nack, deadline, "
           "suppressed_failure, unconfirmed, duplicate_dropped, stale_dropped, got \"exploded\"");
  CHECK(read_event_line(R"({"t_ms":1,"event":"nack","id":"x","verdict":"meh","text":""})", back)
        == "expected \"verdict\" to be a verdict, got \"meh\"");
  CHECK(read_event_line(R"({"t_ms":1e999,"event":"landed","id":"x"})", back)
        == "expected JSON numbers within the range of a double, got number overflow parsing "
           "'1e999'");
}

TEST_CASE("mainjob ledger: a landing followed by a response-timeout failure is the response-timeout ambiguity, any other second outcome is not") {
  outcome_ledger l;
  l.accept(frame("f1", "portal/u2/tab1", "stream-1", 1, 0));
  l.accept(heartbeat("h1", 0));
  l.accept(frame("f2", "portal/u2/tab1", "stream-1", 2, 0));
  l.accept(frame("f3", "portal/u2/tab1", "stream-1", 3, 0));
  l.accept(request("r1", 0));
  // The answers were held after the landings: the senders were told failed by a timeout.
  l.landed("f1", 3);
  l.nack("f1", verdict::failed, "grain call to podhub/portal/u2/tab1 timed out after 3 s", 3003);
  l.landed("h1", 4);
  l.suppressed_failure("h1", verdict::failed,
                       "call #9 to activation on S1:1@1 expired in transit: its caller stopped "
                       "waiting after 3000 ms",
                       3004);
  // Not the ambiguity: a failure that is no timeout, and a timeout NACK before the landing.
  l.landed("f2", 5);
  l.nack("f2", verdict::failed, "boom", 6);
  l.nack("f3", verdict::failed, "grain call to podhub/portal/u2/tab1 timed out after 3 s", 3000);
  l.landed("f3", 3500);
  l.response("r1", 7);
  l.nack("r1", verdict::shutting_down, "Host is shutting down (timed out)", 8);
  auto s = l.summarize();
  CHECK(s.landed_with_ambiguous_failure == 2);
  CHECK(s.landed_with_ambiguous_failure_ids == std::vector<std::string>{"f1", "h1"});
  CHECK(s.multiple_terminal == 3);
  CHECK(s.multiple_terminal_ids == std::vector<std::string>{"f2", "f3", "r1"});
  CHECK(s.total.landed == 4);
  CHECK(s.total.lost == 0);
}

namespace {

/// Feeds `l` a run of `n` deliveries, one accepted every 10 ms, each ending a few ms later:
/// posts land, requests are answered, frames land (every 7th out of order), heartbeats fail
/// suppressed; every 11th post is NACKed after landing (a second outcome), every 13th
/// request is answered and then NACKed by a timeout (the
/// docs/behaviour/classification.md#why-a-response-timeout-is-never-resent ambiguity), every 17th
/// delivery stays in flight. Every later event comes within `late_ms` of the first.
void feed(outcome_ledger& l, int n, int64_t late_ms) {
  for (int i = 0; i < n; ++i) {
    auto t = int64_t{10} * i;
    auto id = "d-" + std::to_string(i);
    switch (i % 4) {
      case 0:
        l.accept(request(id, t));
        if (i % 17 == 0)
          break;
        l.landed(id, t + 2 + i % 5);
        l.response(id, t + 3 + i % 5);
        if (i % 13 == 0)
          l.nack(id, verdict::failed, "grain call timed out after 3 s", t + late_ms);
        break;
      case 1:
        l.accept(heartbeat(id, t));
        if (i % 17 != 0)
          l.suppressed_failure(id, verdict::unavailable, "placement timed out", t + 4);
        break;
      case 2:
        l.accept(frame(id, "portal/a/tab1", "stream-1",
                       static_cast<uint64_t>(i - (i % 7 == 2 ? 9 : 0)), t));
        if (i % 17 != 0)
          l.landed(id, t + 1 + i % 3);
        break;
      default:
        l.accept(accepted_delivery{id, delivery_kind::post, "portal/u1/tab1", "node/Org/N1",
                                   "", 0, false, "silo:A", t});
        if (i % 17 == 0)
          break;
        l.landed(id, t + 5);
        if (i % 11 == 0)
          l.nack(id, verdict::shutting_down, "Host is shutting down", t + late_ms);
        break;
    }
  }
}

/// Checks every figure of two summaries.
void check_same(const ledger_summary& a, const ledger_summary& b) {
  CHECK(a.total == b.total);
  CHECK(a.by_kind == b.by_kind);
  CHECK(a.by_origin == b.by_origin);
  CHECK(a.nacked_by_verdict == b.nacked_by_verdict);
  CHECK(a.suppressed_by_verdict == b.suppressed_by_verdict);
  CHECK(a.lost_ids == b.lost_ids);
  CHECK(a.multiple_terminal == b.multiple_terminal);
  CHECK(a.multiple_terminal_ids == b.multiple_terminal_ids);
  CHECK(a.landed_with_ambiguous_failure == b.landed_with_ambiguous_failure);
  CHECK(a.landed_with_ambiguous_failure_ids == b.landed_with_ambiguous_failure_ids);
  CHECK(a.duplicates_dropped == b.duplicates_dropped);
  CHECK(a.order_violations == b.order_violations);
  CHECK(a.order_violation_samples == b.order_violation_samples);
  CHECK(a.stale_drops == b.stale_drops);
  CHECK(a.unknown_outcomes == b.unknown_outcomes);
  CHECK(a.duplicate_accepts == b.duplicate_accepts);
  CHECK(a.nacks_on_suppressed == b.nacks_on_suppressed);
  CHECK(a.nack_texts == b.nack_texts);
  CHECK(a.nack_texts_by_verdict == b.nack_texts_by_verdict);
  CHECK(a.latency_samples == b.latency_samples);
  CHECK(a.latency_p50_ms == b.latency_p50_ms);
  CHECK(a.latency_p99_ms == b.latency_p99_ms);
  CHECK(a.latency_max_ms == b.latency_max_ms);
}

} // namespace

TEST_CASE("mainjob ledger: records are let go retain_ms after their first terminal outcome and the summary stays exact") {
  outcome_ledger all;
  outcome_ledger bounded{1000};
  feed(all, 20000, 500);
  feed(bounded, 20000, 500);
  // Mid-run: at most the deliveries that ended in the last 1,000 ms (100 of them, 10 ms
  // apart, with a landing or a few ms before a late NACK) besides those never ended.
  CHECK(bounded.records() < 1177 + 200);
  // An event long after the last one lets every terminated record go.
  all.stale_dropped("portal/a/tab1", "stream-1", 0, 300000);
  bounded.stale_dropped("portal/a/tab1", "stream-1", 0, 300000);
  CHECK(all.records() == 20000);
  CHECK(bounded.records() == 1177); // every 17th delivery never ended
  auto a = all.summarize();
  auto b = bounded.summarize();
  check_same(a, b);
  CHECK(a.total.accepted == 20000);
  CHECK(a.total.lost == 1177);
  CHECK(a.multiple_terminal > 0);
  CHECK(a.landed_with_ambiguous_failure > 0);
  CHECK(a.order_violations > 0);
  CHECK(a.lost_ids.size() == ledger_summary::sample_max);
  CHECK(a.multiple_terminal_ids.size() == ledger_summary::sample_max);
  CHECK(a.landed_with_ambiguous_failure_ids.size() == ledger_summary::sample_max);
}

TEST_CASE("mainjob ledger: a bounded ledger bins the same per-second figures as an unbounded one") {
  outcome_ledger all;
  outcome_ledger bounded{1000};
  feed(all, 5000, 500);
  feed(bounded, 5000, 500);
  REQUIRE(all.seconds().size() == bounded.seconds().size());
  // Accepts until 49,990 ms and their first outcomes a few ms later: seconds 0 to 49 (a
  // second outcome does not extend the run).
  CHECK(all.seconds().size() == 50);
  for (size_t s = 0; s < all.seconds().size(); ++s) {
    CAPTURE(s);
    auto& x = all.seconds()[s];
    auto& y = bounded.seconds()[s];
    CHECK(x.accepted == y.accepted);
    CHECK(x.ended == y.ended);
    CHECK(x.landed == y.landed);
    CHECK(x.nacked == y.nacked);
    CHECK(x.refusals == y.refusals);
    CHECK(x.deadlines == y.deadlines);
    CHECK(x.suppressed == y.suppressed);
    CHECK(x.latencies.count() == y.latencies.count());
    CHECK(x.latencies.nearest_rank(99) == y.latencies.nearest_rank(99));
  }
}

TEST_CASE("mainjob ledger: a later outcome inside retain_ms is a second outcome, after it an unknown one") {
  outcome_ledger l{1000};
  l.accept(heartbeat("h1", 0));
  l.accept(heartbeat("h2", 0));
  l.landed("h1", 10);
  l.landed("h2", 10);
  l.suppressed_failure("h1", verdict::failed, "boom", 1009); // 999 ms later: still kept
  CHECK(l.records() == 2);
  l.suppressed_failure("h2", verdict::failed, "boom", 1010); // 1,000 ms later: let go
  CHECK(l.records() == 0);
  auto s = l.summarize();
  CHECK(s.multiple_terminal == 1);
  CHECK(s.multiple_terminal_ids == std::vector<std::string>{"h1"});
  CHECK(s.unknown_outcomes == 1);
  CHECK(s.total.landed == 2);
  CHECK(s.total.lost == 0);
  CHECK(s.nack_texts == std::set<std::string>{"boom"}); // h1's text: it was still known
}

TEST_CASE("mainjob ledger: a delivery in flight is kept however old it is") {
  outcome_ledger l{10};
  l.accept(request("r1", 0));
  for (int i = 0; i < 1000; ++i) {
    auto id = "p" + std::to_string(i);
    l.accept(heartbeat(id, 100 + i));
    l.landed(id, 101 + i);
  }
  CHECK(l.records() == 11); // r1 and the heartbeats of the last 10 ms
  l.response("r1", 5000);
  auto s = l.summarize();
  CHECK(s.total.landed == 1001);
  CHECK(s.unknown_outcomes == 0);
  CHECK(s.latency_samples == 1000);
  CHECK(l.records() == 1); // r1, terminated at 5,000 ms, is kept until 5,010 ms
}

TEST_CASE("mainjob ledger: the latency histogram's percentiles are nearest_rank's") {
  latency_histogram h;
  CHECK(h.nearest_rank(50) == std::nullopt);
  std::vector<int64_t> values;
  for (int64_t i = 0; i < 1000; ++i) {
    auto v = (i * 7919) % 113; // 113 distinct values, each about 9 times
    values.push_back(v);
    h.add(v);
  }
  CHECK(h.count() == 1000);
  CHECK(h.distinct() == 113);
  for (int p : {1, 50, 90, 99, 100})
    CHECK(h.nearest_rank(p) == nearest_rank(values, p));
  CHECK(h.nearest_rank(0) == std::nullopt);
}

TEST_CASE("mainjob ledger: a failure that says the outcome is unknown and then the landing is the same ambiguity, a second landing or NACK after them is not") {
  // A non-graceful stop NACKs its in-flight legs "outcome is unknown" while a stall still
  // holds what they sent; it lands later (docs/testing.md#chaos).
  outcome_ledger l;
  l.accept(frame("f1", "portal/u2/tab1", "stream-1", 1, 0));
  l.accept(frame("f2", "portal/u2/tab1", "stream-1", 2, 0));
  l.accept(frame("f3", "portal/u2/tab1", "stream-1", 3, 0));
  auto unknown = [&](const std::string& id, int64_t t_ms) {
    l.nack(id, verdict::failed,
           "silo SA:11111@1 stopped while the delivery to portal/u2/tab1 was in flight; its "
           "outcome is unknown",
           t_ms);
  };
  unknown("f1", 5);
  l.landed("f1", 300);
  unknown("f2", 6);
  l.landed("f2", 301);
  l.landed("f2", 302);
  unknown("f3", 7);
  l.nack("f3", verdict::failed, "boom", 8);
  auto s = l.summarize();
  CHECK(s.landed_with_ambiguous_failure == 1);
  CHECK(s.landed_with_ambiguous_failure_ids == std::vector<std::string>{"f1"});
  CHECK(s.multiple_terminal == 2);
  CHECK(s.multiple_terminal_ids == std::vector<std::string>{"f2", "f3"});
  CHECK(s.total.nacked == 3);
  CHECK(s.total.lost == 0);
}

TEST_CASE("mainjob ledger: a landing followed by a failure that says the outcome is unknown (the silo the call went through ended) is the same response-timeout ambiguity") {
  outcome_ledger l;
  l.accept(frame("f1", "portal/u2/tab1", "stream-1", 1, 0));
  l.accept(frame("f2", "portal/u2/tab1", "stream-1", 2, 0));
  l.accept(frame("f3", "portal/u2/tab1", "stream-1", 3, 0));
  l.landed("f1", 3);
  l.nack("f1", verdict::failed,
         "Delivery to 'portal/u2/tab1' failed: silo SB:11111@2 departed while the call was in "
         "flight; its outcome is unknown",
         5);
  l.landed("f2", 4);
  l.nack("f2", verdict::failed,
         "silo SC:11111@3 stopped while the delivery to portal/u2/tab1 was in flight; its "
         "outcome is unknown",
         6);
  // Not the ambiguity: the same text with another verdict.
  l.landed("f3", 5);
  l.nack("f3", verdict::shutting_down, "its outcome is unknown", 7);
  auto s = l.summarize();
  CHECK(s.landed_with_ambiguous_failure == 2);
  CHECK(s.landed_with_ambiguous_failure_ids == std::vector<std::string>{"f1", "f2"});
  CHECK(s.multiple_terminal == 1);
  CHECK(s.multiple_terminal_ids == std::vector<std::string>{"f3"});
}

TEST_CASE("mainjob ledger: a frame told 'outcome is unknown' that lands behind a newer version of its stream is a late copy, not an order violation") {
  // A non-graceful stop NACKs a frame's in-flight leg "outcome is unknown" while a stall still
  // holds what the leg sent; the owner goes on with newer versions through another silo, and
  // the held copy lands behind them, where the receiver's guard drops it as stale
  // (docs/testing.md#chaos, docs/behaviour/sync-guard.md).
  outcome_ledger l;
  l.accept(frame("f24", "portal/u1/tab1", "stream-0", 24, 0));
  l.accept(frame("f25", "portal/u1/tab1", "stream-0", 25, 1));
  l.accept(frame("g3", "portal/u1/tab1", "stream-1", 3, 2));
  l.accept(frame("g4", "portal/u1/tab1", "stream-1", 4, 3));
  l.nack("f24", verdict::failed,
         "silo SA:11111@1 stopped while the delivery to portal/u1/tab1 was in flight; its "
         "outcome is unknown",
         10);
  l.landed("f25", 20);
  l.landed("f24", 30); // the held copy, behind v25
  // Without that NACK a landing behind a newer version is still an order violation.
  l.landed("g4", 21);
  l.landed("g3", 31);
  auto s = l.summarize();
  CHECK(s.late_copies == 1);
  CHECK(s.late_copy_ids == std::vector<std::string>{"f24"});
  CHECK(s.order_violations == 1);
  REQUIRE(s.order_violation_samples.size() == 1);
  CHECK(s.order_violation_samples[0]
        == order_violation{"g3", "portal/u1/tab1", "stream-1", 3, 4, 31});
  CHECK(s.landed_with_ambiguous_failure == 1); // f24: the NACK and the landing are one outcome
  CHECK(s.multiple_terminal == 0);
  CHECK(s.total.lost == 0);
}

TEST_CASE("mainjob ledger: answer_suppressed answers from the kept record, so a live mesh keeps no set of its own that grows with every heartbeat") {
  // docs/operations.md#memory: the demo and cafmesh-client used to keep every heartbeat id.
  outcome_ledger l{1000};
  l.accept(heartbeat("h1", 0));
  l.accept(frame("f1", "portal/a/tab1", "stream-1", 1, 0));
  CHECK(l.answer_suppressed("h1"));
  CHECK_FALSE(l.answer_suppressed("f1"));
  CHECK_FALSE(l.answer_suppressed("never"));
  l.landed("h1", 10);
  CHECK(l.answer_suppressed("h1")); // kept retain_ms after its outcome
  l.landed("f1", 2000);             // an event past the window lets h1 go
  CHECK_FALSE(l.answer_suppressed("h1"));
}

TEST_CASE("mainjob ledger: a record table sized for the window never rehashes while the window fills and turns over") {
  outcome_ledger l{1000};
  l.reserve(5000);
  auto buckets = l.record_buckets();
  CHECK(buckets >= 5000);
  // 4 deliveries per ms for 3 s: about 4,000 records kept at a time, 12,000 in all.
  for (int i = 0; i < 12000; ++i) {
    auto id = "h" + std::to_string(i);
    l.accept(heartbeat(id, i / 4));
    l.landed(id, i / 4 + 1);
  }
  CHECK(l.records() <= 4008);
  CHECK(l.record_buckets() == buckets);
}
