// Tests for the sender's outcome tracker (docs/behaviour/routing.md#nacks, sender side). The
// S12.37 parts checked here are the tracker's; the transports and the trace are the hub
// endpoint's and the simulation's.

#include <cstdint>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "cafmesh/actors/log.hpp"
#include "cafmesh/routing/outcome_tracker.hpp"

using cafmesh::log::level;
using cafmesh::routing::outcome_action;
using cafmesh::routing::outcome_tracker;

namespace {

struct capture_fixture {
  int64_t now = 0;
  cafmesh::log::capture cap{[this] { return now; }};
};

} // namespace

TEST_CASE_FIXTURE(capture_fixture, "tracker: a NACK arriving by two transports reaches the "
                                   "application once and one duplicate line is logged") {
  outcome_tracker t;
  SUBCASE("request") {
    REQUIRE(t.track_request("acme-1", 30000, 0));
    now = 120;
    CHECK(t.on_nack("acme-1", 120) == outcome_action::deliver); // pod-hub transport
    now = 135;
    CHECK(t.on_nack("acme-1", 135) == outcome_action::duplicate); // stream transport
    auto lines = cap.find("duplicate outcome for delivery acme-1 dropped", level::debug);
    REQUIRE(lines.size() == 1);
    CHECK(lines[0].t_ms == 135);
    CHECK(lines[0].component == "outcome_tracker");
    CHECK(t.duplicates_dropped() == 1);
    CHECK_FALSE(t.pending("acme-1"));
    CHECK(t.remembered("acme-1"));
    CHECK(t.expire(30000).empty());
  }
  SUBCASE("one-way post") {
    CHECK(t.on_nack("acme-2", 10) == outcome_action::deliver);
    CHECK(t.on_nack("acme-2", 12) == outcome_action::duplicate);
    CHECK(t.on_nack("acme-2", 14) == outcome_action::duplicate);
    CHECK(cap.count("duplicate outcome for delivery acme-2 dropped", level::debug) == 2);
    CHECK(t.duplicates_dropped() == 2);
    CHECK(t.pending_count() == 0);
  }
}

TEST_CASE_FIXTURE(capture_fixture, "tracker: a response followed by a late NACK: only the "
                                   "response reaches the application") {
  outcome_tracker t;
  REQUIRE(t.track_request("acme-3", 60000, 0));
  CHECK(t.on_response("acme-3", 400) == outcome_action::deliver);
  CHECK(t.on_nack("acme-3", 9000) == outcome_action::duplicate);
  CHECK(t.on_response("acme-3", 9001) == outcome_action::duplicate);
  CHECK(t.duplicates_dropped() == 2);
  CHECK(cap.count("duplicate outcome for delivery acme-3 dropped", level::debug) == 2);
  CHECK_FALSE(t.next_deadline_ms());
}

TEST_CASE("tracker: a NACK before the response is the outcome, the response is dropped") {
  outcome_tracker t;
  REQUIRE(t.track_request("r", 30000, 0));
  CHECK(t.on_nack("r", 10) == outcome_action::deliver);
  CHECK(t.on_response("r", 20) == outcome_action::duplicate);
  CHECK(t.duplicates_dropped() == 1);
}

TEST_CASE("tracker: the deadline is the outcome when it comes first") {
  outcome_tracker t;
  REQUIRE(t.track_request("late", 30000, 0));
  REQUIRE(t.track_request("early", 10000, 5));
  REQUIRE(t.track_request("tie", 30000, 7));
  CHECK(t.next_deadline_ms() == int64_t{10000});
  CHECK(t.expire(9999).empty());
  CHECK(t.expire(10000) == std::vector<std::string>{"early"});
  CHECK(t.next_deadline_ms() == int64_t{30000});
  CHECK(t.on_response("late", 29999) == outcome_action::deliver);
  CHECK(t.expire(45000) == std::vector<std::string>{"tie"});
  CHECK_FALSE(t.next_deadline_ms());
  // Outcomes after the deadline are duplicates.
  CHECK(t.on_response("early", 10001) == outcome_action::duplicate);
  CHECK(t.on_nack("tie", 45001) == outcome_action::duplicate);
  CHECK(t.duplicates_dropped() == 2);
}

TEST_CASE("tracker: deadlines that fall due together expire in tracking order") {
  outcome_tracker t;
  t.track_request("b", 500, 0);
  t.track_request("a", 500, 1);
  t.track_request("c", 400, 2);
  CHECK(t.expire(600) == std::vector<std::string>{"c", "b", "a"});
}

TEST_CASE_FIXTURE(capture_fixture, "tracker: a response for an id never tracked is dropped as "
                                   "unmatched, not as a duplicate") {
  outcome_tracker t;
  CHECK(t.on_response("ghost-1", 5) == outcome_action::unmatched);
  CHECK(t.unmatched_dropped() == 1);
  CHECK(t.duplicates_dropped() == 0);
  CHECK(cap.count("outcome for unknown delivery ghost-1 dropped", level::debug) == 1);
  CHECK(cap.count("duplicate outcome") == 0);
  CHECK(to_string(outcome_action::unmatched) == "unmatched");
}

TEST_CASE("tracker: an id is tracked once") {
  outcome_tracker t;
  CHECK(t.track_request("x", 100, 0));
  CHECK_FALSE(t.track_request("x", 200, 0));
  CHECK(t.next_deadline_ms() == int64_t{100});
  CHECK(t.on_response("x", 50) == outcome_action::deliver);
  CHECK_FALSE(t.track_request("x", 200, 60)); // remembered
  CHECK(t.pending_count() == 0);
}

TEST_CASE("tracker: terminated ids are remembered 120,000 ms") {
  outcome_tracker t;
  REQUIRE(t.track_request("w", 30000, 0));
  CHECK(t.on_response("w", 1000) == outcome_action::deliver);
  CHECK(t.on_nack("w", 120999) == outcome_action::duplicate);
  CHECK(t.remembered("w"));
  // Forgotten at 120,000 ms after its termination: a NACK is then taken as a one-way
  // post's first NACK, and a response is unmatched.
  CHECK(t.on_response("w", 121000) == outcome_action::unmatched);
  CHECK_FALSE(t.remembered("w"));
  CHECK(t.on_nack("w", 121000) == outcome_action::deliver);
  CHECK(t.remembered("w"));
  CHECK(t.duplicates_dropped() == 1);
}

TEST_CASE("tracker: at most 65,536 ids are remembered, oldest forgotten first") {
  outcome_tracker t;
  for (int i = 0; i < 65537; ++i)
    REQUIRE(t.on_nack("p-" + std::to_string(i), i / 100) == outcome_action::deliver);
  CHECK(t.remembered_count() == 65536);
  CHECK_FALSE(t.remembered("p-0"));
  CHECK(t.remembered("p-1"));
  CHECK(t.remembered("p-65536"));
  CHECK(t.on_nack("p-1", 700) == outcome_action::duplicate);
  CHECK(t.on_nack("p-0", 700) == outcome_action::deliver);
  CHECK(t.remembered_count() == 65536);
  CHECK_FALSE(t.remembered("p-1"));
  CHECK(t.remembered("p-2"));
}

TEST_CASE("tracker: window and bound come from the routing configuration") {
  cafmesh::config::routing_section cfg;
  cfg.outcome_dedup_window_ms = 1000;
  cfg.outcome_dedup_max_ids = 3;
  outcome_tracker t{cfg};
  for (auto id : {"a", "b", "c", "d"})
    t.on_nack(id, 0);
  CHECK(t.remembered_count() == 3);
  CHECK_FALSE(t.remembered("a"));
  CHECK(t.on_nack("d", 999) == outcome_action::duplicate);
  CHECK(t.on_nack("d", 1000) == outcome_action::deliver);
  CHECK(t.remembered_count() == 1);
  // A pending request is not subject to the bound.
  for (auto id : {"r1", "r2", "r3", "r4", "r5"})
    CHECK(t.track_request(id, 5000, 1000));
  CHECK(t.pending_count() == 5);
  CHECK(t.expire(5000).size() == 5);
  CHECK(t.remembered_count() == 3);
}

TEST_CASE("tracker: a per-request timeout is the outcome only while the request is pending") {
  outcome_tracker t;
  REQUIRE(t.track_request("q1", 30000, 0));
  REQUIRE(t.track_request("q2", 30000, 0));
  CHECK(t.on_response("q2", 20000) == outcome_action::deliver);
  CHECK(t.on_deadline("q1", 30000) == outcome_action::deliver);
  CHECK(t.on_deadline("q2", 30000) == outcome_action::duplicate);
  CHECK(t.on_response("q1", 30001) == outcome_action::duplicate);
  CHECK(t.on_deadline("q3", 30000) == outcome_action::unmatched);
  CHECK(t.duplicates_dropped() == 2);
  CHECK(t.unmatched_dropped() == 1);
  CHECK(t.expire(30000).empty());
}
