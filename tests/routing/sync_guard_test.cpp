// The delta-sync receiver guard (docs/behaviour/sync-guard.md).

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "cafmesh/actors/log.hpp"
#include "cafmesh/routing/sync_guard.hpp"

using namespace cafmesh;
using namespace cafmesh::routing;

namespace {

struct quiet_capture : log::capture {
  quiet_capture() : log::capture([] { return int64_t{0}; }) {
    log::set_stderr_enabled(std::getenv("CAFMESH_TEST_LOG") != nullptr);
  }
};

sync_frame P(uint64_t v, std::string key, std::string value) {
  return sync_frame::patch(v, {sync_op::set(std::move(key), std::move(value))});
}

size_t count_kind(const std::vector<sync_request>& rs, sync_request::kind k) {
  size_t n = 0;
  for (const auto& r : rs)
    if (r.what == k)
      ++n;
  return n;
}

} // namespace

TEST_CASE("S12.56 at C = 7 patch(6) is dropped with a debug line and never re-requested, "
          "patch(7) applies, a detected-behind resubscribe lets full(2) in, then full(1) is "
          "dropped, and a patch before that Full leaves the latch armed") {
  quiet_capture logs;
  delta_mirror m{"node/Org/Acme#layout"};
  CHECK(m.on_frame(sync_frame::full(7, {{"a", "1"}})) == frame_outcome::applied);
  REQUIRE(m.version());
  CHECK(*m.version() == 7);
  m.take_requests();
  // patch(6): dropped by the gate, one debug line, nothing requested.
  CHECK(m.on_frame(P(6, "a", "6")) == frame_outcome::stale_dropped);
  CHECK(m.counters().stale_dropped == 1);
  CHECK(m.state().at("a") == "1");
  CHECK(m.take_requests().empty());
  CHECK(m.counters().fresh_full_requests == 0);
  auto dbg = logs.find("patch(6)", log::level::debug);
  REQUIRE(dbg.size() == 1);
  CHECK(dbg[0].text.find("below mirror version 7") != std::string::npos);
  CHECK(logs.count_level(log::level::info) + logs.count_level(log::level::warning)
          + logs.count_level(log::level::error)
        == 0);
  // patch(7): v = C passes and applies.
  CHECK(m.on_frame(P(7, "b", "2")) == frame_outcome::applied);
  CHECK(m.state().at("b") == "2");
  CHECK(*m.version() == 7);
  // Without the latch a lower Full is stale too.
  CHECK(m.on_frame(sync_frame::full(3, {{"z", "0"}})) == frame_outcome::stale_dropped);
  CHECK(m.state().count("z") == 0);
  // The change feed announces 9 > 7: the mirror is behind, resubscribes and arms the latch.
  CHECK_FALSE(m.on_announce(7));
  CHECK(m.on_announce(9));
  CHECK(m.latch_armed());
  auto reqs = m.take_requests();
  REQUIRE(reqs.size() == 1);
  CHECK(reqs[0].what == sync_request::kind::fresh_full);
  CHECK(reqs[0].frame_version == 9);
  // A patch before the Full does not consume the latch (stale or not).
  CHECK(m.on_frame(P(1, "c", "3")) == frame_outcome::stale_dropped);
  CHECK(m.latch_armed());
  CHECK(m.on_frame(P(8, "c", "3")) != frame_outcome::applied);
  CHECK(m.latch_armed());
  // The recycled owner's full(2) applies although 2 < 7, and sets C = 2.
  CHECK(m.on_frame(sync_frame::full(2, {{"r", "\"fresh\""}})) == frame_outcome::applied);
  CHECK(*m.version() == 2);
  CHECK(m.state() == sync_state{{"r", "\"fresh\""}});
  CHECK_FALSE(m.latch_armed());
  CHECK_FALSE(m.resync_in_flight());
  // A further full(1) is dropped: the latch was one-shot.
  CHECK(m.on_frame(sync_frame::full(1, {{"old", "1"}})) == frame_outcome::stale_dropped);
  CHECK(*m.version() == 2);
  CHECK(m.state() == sync_state{{"r", "\"fresh\""}});
  CHECK(m.take_requests().empty());
}

TEST_CASE("sync: the S12.57 mirror part, 5 patches without a base give exactly one fresh-Full request, a patch that "
          "does not apply requests a Full whose version is adopted, and P7 before P6 loses a "
          "for good while FIFO order applies both") {
  // No base: 5 patches, one request in flight, 4 dropped.
  delta_mirror m{"cache/mesh1#s1"};
  CHECK(m.on_frame(P(3, "a", "1")) == frame_outcome::resync_requested);
  for (uint64_t v = 4; v <= 7; ++v)
    CHECK(m.on_frame(P(v, "a", "1")) == frame_outcome::gap_dropped);
  auto reqs = m.take_requests();
  CHECK(reqs.size() == 1);
  CHECK(count_kind(reqs, sync_request::kind::fresh_full) == 1);
  CHECK(m.counters().fresh_full_requests == 1);
  CHECK(m.counters().gap_dropped == 4);
  CHECK(m.resync_in_flight());
  CHECK_FALSE(m.has_state());
  // The Full arrives: state and version adopted, the gap is closed.
  CHECK(m.on_frame(sync_frame::full(8, {{"a", "1"}})) == frame_outcome::applied);
  CHECK(*m.version() == 8);
  CHECK_FALSE(m.resync_in_flight());
  // A new gap may request again.
  CHECK(m.on_frame(sync_frame::patch(9, {sync_op::remove("missing")}))
        == frame_outcome::resync_requested);
  CHECK(m.counters().fresh_full_requests == 2);
  CHECK(m.state() == sync_state{{"a", "1"}}); // the failed patch changed nothing
  CHECK(*m.version() == 8);
  CHECK(m.on_frame(P(10, "b", "2")) == frame_outcome::gap_dropped);
  CHECK(m.counters().fresh_full_requests == 2);
  auto reqs2 = m.take_requests();
  REQUIRE(reqs2.size() == 1);
  CHECK(reqs2[0].frame_version == 9);
  CHECK(reqs2[0].reason.find("does not apply") != std::string::npos);
  CHECK(m.on_frame(sync_frame::full(12, {{"a", "1"}, {"b", "2"}})) == frame_outcome::applied);
  CHECK(*m.version() == 12);
  CHECK(m.state() == sync_state{{"a", "1"}, {"b", "2"}});

  // Negative control: per-channel FIFO disabled, P7 overtakes P6.
  delta_mirror swapped{"node/Org/Acme#view"};
  swapped.on_frame(sync_frame::full(5, {}));
  CHECK(swapped.on_frame(P(7, "b", "\"B\"")) == frame_outcome::applied);
  CHECK(swapped.on_frame(P(6, "a", "\"A\"")) == frame_outcome::stale_dropped);
  CHECK(swapped.state().count("a") == 0);
  CHECK(swapped.state() == sync_state{{"b", "\"B\""}});
  CHECK(swapped.take_requests().empty()); // nothing ever asks for `a` again
  CHECK(swapped.counters().fresh_full_requests == 0);
  // With FIFO both apply.
  delta_mirror fifo{"node/Org/Acme#view"};
  fifo.on_frame(sync_frame::full(5, {}));
  CHECK(fifo.on_frame(P(6, "a", "\"A\"")) == frame_outcome::applied);
  CHECK(fifo.on_frame(P(7, "b", "\"B\"")) == frame_outcome::applied);
  CHECK(fifo.state() == sync_state{{"a", "\"A\""}, {"b", "\"B\""}});
  CHECK(*fifo.version() == 7);
  CHECK(fifo.counters().applied == 3);
}

TEST_CASE("sync: patches apply atomically, test and remove decide whether a patch applies") {
  sync_state s{{"a", "1"}, {"b", "2"}};
  CHECK(apply_ops(s, {sync_op::test("a", "1"), sync_op::set("c", "3"), sync_op::remove("b")}));
  CHECK(s == sync_state{{"a", "1"}, {"c", "3"}});
  // The last op fails: nothing of the patch is applied.
  CHECK_FALSE(apply_ops(s, {sync_op::set("d", "4"), sync_op::test("a", "2")}));
  CHECK(s == sync_state{{"a", "1"}, {"c", "3"}});
  CHECK_FALSE(apply_ops(s, {sync_op::remove("zz")}));
  CHECK(s.size() == 2);
}

TEST_CASE("sync: a malformed frame NACKs its sender and changes nothing") {
  delta_mirror m{"m"};
  CHECK(m.on_frame(sync_frame::full(1, {{"a", "not json"}})) == frame_outcome::nacked);
  CHECK_FALSE(m.version());
  CHECK(m.on_frame(sync_frame::full(2, {{"a", "1"}})) == frame_outcome::applied);
  CHECK(m.on_frame(P(3, "", "1")) == frame_outcome::nacked);
  CHECK(m.on_frame(P(3, "b", "{oops")) == frame_outcome::nacked);
  CHECK(m.state() == sync_state{{"a", "1"}});
  CHECK(*m.version() == 2);
  auto reqs = m.take_requests();
  CHECK(reqs.size() == 3);
  CHECK(count_kind(reqs, sync_request::kind::nack_sender) == 3);
  CHECK(reqs[0].frame_version == 1);
  CHECK(m.counters().nacked == 3);
  CHECK(m.counters().fresh_full_requests == 0);
}

TEST_CASE("sync: a failed fresh-Full request lets the next patch of the gap ask again") {
  delta_mirror m{"m"};
  CHECK(m.on_frame(P(1, "a", "1")) == frame_outcome::resync_requested);
  CHECK(m.on_frame(P(2, "a", "1")) == frame_outcome::gap_dropped);
  m.request_failed();
  CHECK_FALSE(m.resync_in_flight());
  CHECK(m.on_frame(P(3, "a", "1")) == frame_outcome::resync_requested);
  CHECK(m.counters().fresh_full_requests == 2);
  CHECK(m.take_requests().size() == 2);
  // A resubscribe while a request is in flight arms the latch without a second request.
  delta_mirror n{"n"};
  n.on_frame(sync_frame::full(5, {{"a", "1"}}));
  n.on_frame(sync_frame::patch(6, {sync_op::remove("x")})); // does not apply -> request
  CHECK(n.resync_in_flight());
  CHECK(n.on_announce(20));
  CHECK(n.latch_armed());
  CHECK(n.counters().fresh_full_requests == 1);
  // No version yet: an announcement cannot tell the mirror is behind.
  delta_mirror fresh{"fresh"};
  CHECK_FALSE(fresh.on_announce(4));
  CHECK_FALSE(fresh.latch_armed());
}
