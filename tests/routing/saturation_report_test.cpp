// Tests for the router core's in-flight count and saturation report
// (docs/behaviour/routing.md#saturation-report-and-refusal-log), driven with explicit virtual
// times. Dispatcher-level versions of S12.42 and S12.43; the full scenarios (router core + pool +
// legs in virtual time) are finished in the router-core integration.

#include <cstdint>
#include <deque>
#include <optional>
#include <string>

#include <doctest/doctest.h>

#include "cafmesh/actors/log.hpp"
#include "cafmesh/routing/ordered_route_dispatcher.hpp"
#include "cafmesh/routing/saturation_report.hpp"

using cafmesh::log::level;
using cafmesh::routing::leg_id;
using cafmesh::routing::leg_phase;
using cafmesh::routing::ordered_route_dispatcher;
using cafmesh::routing::ordering_channel;
using cafmesh::routing::queue_snapshot;
using cafmesh::routing::saturation_event_kind;
using cafmesh::routing::saturation_monitor;

TEST_CASE("saturation: 64 legs in flight produce one warning report and a 65th is still "
          "accepted") {
  saturation_monitor m;
  for (leg_id i = 0; i < 63; ++i)
    CHECK_FALSE(m.accept(i, leg_phase::dispatched, static_cast<int64_t>(i)));
  CHECK_FALSE(m.latched());
  auto ev = m.accept(63, leg_phase::dispatched, 63);
  REQUIRE(ev);
  CHECK(ev->kind == saturation_event_kind::report);
  CHECK(ev->lvl == level::warning);
  CHECK(ev->at_ms == 63);
  CHECK(ev->ages.in_flight == 64);
  CHECK(ev->ages.oldest_dispatched_age_ms == int64_t{63});
  CHECK_FALSE(ev->ages.oldest_queued_age_ms);
  queue_snapshot q{3, 2, 5, "cache/mesh1 [s1]"};
  CHECK(render(*ev, q)
        == "routing saturation: 64 leg(s) in flight; oldest dispatched leg 63 ms since "
           "dispatch; no leg queued; queues: channels 3, destinations 2, deepest 5 "
           "(cache/mesh1 [s1])");
  CHECK(m.latched());
  // It measures, never limits: the 65th is counted like any other, with no second report.
  CHECK_FALSE(m.accept(64, leg_phase::queued, 64));
  CHECK(m.in_flight() == 65);
  CHECK(m.reports() == 1);
}

TEST_CASE("saturation: the report names both ages and labels the queued one") {
  saturation_monitor m;
  m.accept(1, leg_phase::queued, 0);
  m.dispatched(1, 500);
  m.accept(2, leg_phase::queued, 100);
  for (leg_id i = 3; i < 65; ++i)
    m.accept(i, leg_phase::queued, 1000);
  CHECK(m.in_flight() == 64);
  CHECK(m.reports() == 1);
  auto ages = m.ages(2000);
  CHECK(ages.in_flight == 64);
  CHECK(ages.oldest_dispatched_age_ms == int64_t{1500});
  CHECK(ages.oldest_queued_age_ms == int64_t{1900});
  CHECK(render_ages(ages)
        == "oldest dispatched leg 1500 ms since dispatch; oldest queued leg 1900 ms "
           "(queued, not dispatched)");
}

TEST_CASE("saturation: a report is critical when the oldest dispatched leg is 100 s old") {
  saturation_monitor m;
  m.accept(0, leg_phase::dispatched, 0);
  for (leg_id i = 1; i < 63; ++i)
    m.accept(i, leg_phase::queued, 99999);
  SUBCASE("99,999 ms: warning") {
    auto ev = m.accept(63, leg_phase::queued, 99999);
    REQUIRE(ev);
    CHECK(ev->lvl == level::warning);
    CHECK_FALSE(m.escalated());
  }
  SUBCASE("100,000 ms: critical, and it counts as the episode's escalation") {
    auto ev = m.accept(63, leg_phase::queued, 100000);
    REQUIRE(ev);
    CHECK(ev->kind == saturation_event_kind::report);
    CHECK(ev->lvl == level::critical);
    CHECK(m.escalated());
    for (int64_t t = 110000; t <= 200000; t += 1000) {
      m.accept(1000 + t, leg_phase::queued, t);
      CHECK_FALSE(m.dispatched(1000 + t, t));
    }
  }
}

// Monitor part of S12.43.
TEST_CASE("saturation: a head that never lands escalates to critical exactly once, at the "
          "first review after its age reached 100 s, and the count falling to 32 clears") {
  saturation_monitor m;
  // The head is dispatched at t = 0 and never lands; 63 more legs queue behind heads.
  CHECK_FALSE(m.accept(0, leg_phase::dispatched, 0));
  for (leg_id i = 1; i < 63; ++i)
    CHECK_FALSE(m.accept(i, leg_phase::queued, 0));
  auto report = m.accept(63, leg_phase::queued, 0);
  REQUIRE(report);
  CHECK(report->lvl == level::warning);
  CHECK(m.in_flight() == 64);
  // Dispatches continue every 3 s: one queued leg terminates, a new one is accepted and
  // dispatched. Reviews run at most every 10 s: at 12, 24, ..., 96 s the head is younger
  // than 100 s; the review at 108 s is the first after it reached 100 s.
  std::deque<leg_id> terminable;
  for (leg_id i = 1; i < 64; ++i)
    terminable.push_back(i);
  leg_id next_new = 1000;
  int criticals = 0;
  int64_t critical_at = -1;
  for (int64_t t = 3000; t <= 300000; t += 3000) {
    CHECK_FALSE(m.terminated(terminable.front(), t));
    terminable.pop_front();
    auto leg = next_new++;
    CHECK_FALSE(m.accept(leg, leg_phase::queued, t));
    terminable.push_back(leg);
    if (auto ev = m.dispatched(leg, t)) {
      CHECK(ev->kind == saturation_event_kind::escalation);
      CHECK(ev->lvl == level::critical);
      CHECK(ev->ages.oldest_dispatched_age_ms == int64_t{108000});
      CHECK(ev->ages.in_flight == 64);
      auto text = render(*ev, queue_snapshot{});
      CHECK(text
            == "routing saturation critical: oldest dispatched leg in flight 108000 ms "
               "(self bound 100000 ms); 64 leg(s) in flight; oldest dispatched leg 108000 "
               "ms since dispatch; oldest queued leg 108000 ms (queued, not dispatched); "
               "queues: channels 0, destinations 0, deepest 0");
      ++criticals;
      critical_at = t;
    }
    if (t == 96000)
      CHECK(m.reviews() == 8);
  }
  CHECK(criticals == 1);
  CHECK(critical_at == 108000);
  CHECK(m.reviews() == 9);
  CHECK(m.reports() == 1);
  // Falling to 33 does not clear; falling to 32 does.
  CHECK(m.in_flight() == 64);
  for (int i = 0; i < 31; ++i) {
    CHECK_FALSE(m.terminated(terminable.front(), 301000));
    terminable.pop_front();
  }
  CHECK(m.in_flight() == 33);
  CHECK(m.latched());
  auto cleared = m.terminated(terminable.front(), 302500);
  REQUIRE(cleared);
  CHECK(cleared->kind == saturation_event_kind::cleared);
  CHECK(cleared->lvl == level::warning);
  CHECK(cleared->latched_ms == 302500);
  CHECK(render(*cleared, queue_snapshot{})
        == "routing saturation cleared after 302500 ms; 32 leg(s) in flight");
  CHECK_FALSE(m.latched());
  CHECK_FALSE(m.escalated());
}

TEST_CASE("saturation: no review while not latched, and a report past the self bound is "
          "critical") {
  saturation_monitor m;
  for (leg_id i = 0; i < 10; ++i)
    m.accept(i, leg_phase::dispatched, 0);
  for (int64_t t = 1000; t <= 300000; t += 1000)
    CHECK_FALSE(m.on_dispatch(t));
  CHECK(m.reviews() == 0);
  for (leg_id i = 10; i < 64; ++i)
    m.accept(i, leg_phase::queued, 300000);
  REQUIRE(m.latched());
  // Latched at 300 s; the head (dispatched at 0) is already 300 s old, so the report was
  // critical and no review is needed for escalation any more.
  CHECK(m.escalated());
  CHECK(m.reports() == 1);
}

TEST_CASE("saturation: reviews are spaced by 10 s from the report and from each other") {
  saturation_monitor m;
  for (leg_id i = 0; i < 64; ++i)
    m.accept(i, leg_phase::dispatched, 5000);
  REQUIRE(m.latched());
  CHECK_FALSE(m.on_dispatch(14999));
  CHECK(m.reviews() == 0);
  CHECK_FALSE(m.on_dispatch(15000));
  CHECK(m.reviews() == 1);
  CHECK_FALSE(m.on_dispatch(24999));
  CHECK(m.reviews() == 1);
  CHECK_FALSE(m.on_dispatch(25000));
  CHECK(m.reviews() == 2);
  auto ev = m.on_dispatch(105000);
  REQUIRE(ev);
  CHECK(ev->kind == saturation_event_kind::escalation);
  CHECK(ev->ages.oldest_dispatched_age_ms == int64_t{100000});
  CHECK(m.reviews() == 3);
  CHECK_FALSE(m.on_dispatch(200000));
}

TEST_CASE("saturation: a second episode reports again after clearing, not before") {
  saturation_monitor m;
  for (leg_id i = 0; i < 64; ++i)
    m.accept(i, leg_phase::dispatched, 0);
  CHECK(m.reports() == 1);
  // Down to 40 and back to 64 while latched: no new report.
  for (leg_id i = 0; i < 24; ++i)
    CHECK_FALSE(m.terminated(i, 1000));
  for (leg_id i = 100; i < 124; ++i)
    CHECK_FALSE(m.accept(i, leg_phase::dispatched, 1000));
  CHECK(m.in_flight() == 64);
  CHECK(m.reports() == 1);
  // Clear at 32, then reach 64 again: a second report.
  std::optional<cafmesh::routing::saturation_event> cleared;
  for (leg_id i = 24; i < 56 && !cleared; ++i)
    cleared = m.terminated(i, 2000);
  REQUIRE(cleared);
  CHECK(cleared->ages.in_flight == 32);
  CHECK(cleared->latched_ms == 2000);
  std::optional<cafmesh::routing::saturation_event> again;
  for (leg_id i = 200; i < 232; ++i) {
    auto ev = m.accept(i, leg_phase::queued, 3000);
    if (ev)
      again = ev;
  }
  REQUIRE(again);
  CHECK(again->kind == saturation_event_kind::report);
  CHECK(again->at_ms == 3000);
  CHECK(m.reports() == 2);
  // Unknown and repeated ids change nothing.
  CHECK_FALSE(m.terminated(999999, 3000));
  CHECK_FALSE(m.accept(200, leg_phase::queued, 3000));
  CHECK(m.in_flight() == 64);
}

// Monitor part of S12.42.
TEST_CASE("saturation: with a head running 200 ms while 2 legs of its stream wait, after the "
          "landing the oldest dispatched age is within the time since landing and the "
          "queued leg is at least 200 ms old, labelled") {
  ordered_route_dispatcher d;
  saturation_monitor m;
  auto ch = ordering_channel{"cache/mesh1", std::string{"stream-1"}};
  const int64_t t0 = 1000;
  for (leg_id i = 1; i <= 3; ++i) {
    m.accept(i, leg_phase::queued, t0);
    if (d.enqueue(ch, i))
      m.dispatched(i, t0);
  }
  auto before = m.ages(t0 + 150);
  CHECK(before.oldest_dispatched_age_ms == int64_t{150});
  CHECK(before.oldest_queued_age_ms == int64_t{150});
  // The head lands at t0 + 200; the next leg of the stream starts at once.
  const int64_t landed = t0 + 200;
  m.terminated(1, landed);
  auto next = d.on_terminal(1);
  REQUIRE(next == leg_id{2});
  m.dispatched(*next, landed);
  for (int64_t now : {landed, landed + 50, landed + 5000}) {
    auto ages = m.ages(now);
    CHECK(ages.in_flight == 2);
    REQUIRE(ages.oldest_dispatched_age_ms);
    CHECK(*ages.oldest_dispatched_age_ms <= now - landed);
    REQUIRE(ages.oldest_queued_age_ms);
    CHECK(*ages.oldest_queued_age_ms >= 200);
    CHECK(*ages.oldest_queued_age_ms == now - t0);
  }
  CHECK(render_ages(m.ages(landed + 50))
        == "oldest dispatched leg 50 ms since dispatch; oldest queued leg 250 ms (queued, "
           "not dispatched)");
}

TEST_CASE("saturation: events are logged on component router_core at their level") {
  int64_t now = 0;
  cafmesh::log::capture cap([&] { return now; });
  saturation_monitor m;
  for (leg_id i = 0; i < 64; ++i)
    m.accept(i, leg_phase::dispatched, 0);
  now = 100000;
  auto esc = m.on_dispatch(100000);
  REQUIRE(esc);
  log_saturation_event(*esc, queue_snapshot{});
  std::optional<cafmesh::routing::saturation_event> cleared;
  now = 123456;
  for (leg_id i = 0; i < 64 && !cleared; ++i)
    cleared = m.terminated(i, 123456);
  REQUIRE(cleared);
  log_saturation_event(*cleared, queue_snapshot{});
  auto crit = cap.find("routing saturation critical", level::critical);
  REQUIRE(crit.size() == 1);
  CHECK(crit[0].component == "router_core");
  CHECK(crit[0].t_ms == 100000);
  auto clr = cap.find("routing saturation cleared after 123456 ms", level::warning);
  REQUIRE(clr.size() == 1);
  CHECK(clr[0].component == "router_core");
}

TEST_CASE("saturation: thresholds come from the routing configuration") {
  cafmesh::config::routing_section cfg;
  cfg.saturation_report_count = 4;
  cfg.saturation_clear_count = 2;
  cfg.leg_self_bound_ms = 500;
  cfg.saturation_review_ms = 100;
  saturation_monitor m{cfg};
  for (leg_id i = 0; i < 3; ++i)
    CHECK_FALSE(m.accept(i, leg_phase::dispatched, 0));
  auto ev = m.accept(3, leg_phase::dispatched, 0);
  REQUIRE(ev);
  CHECK_FALSE(m.on_dispatch(99));
  CHECK_FALSE(m.on_dispatch(100));
  auto esc = m.on_dispatch(500);
  REQUIRE(esc);
  CHECK(esc->leg_self_bound_ms == 500);
  CHECK_FALSE(m.terminated(0, 600));
  auto cleared = m.terminated(1, 700);
  REQUIRE(cleared);
  CHECK(cleared->ages.in_flight == 2);
}

namespace {

cafmesh::config::routing_section warn_after(int64_t ms) {
  cafmesh::config::routing_section cfg;
  cfg.saturation_warn_after_ms = ms;
  return cfg;
}

} // namespace

TEST_CASE("saturation: with saturation_warn_after_ms a burst that clears in time logs its report and its clearing at info, no warning") {
  saturation_monitor m{warn_after(1000)};
  for (leg_id i = 0; i < 63; ++i)
    CHECK_FALSE(m.accept(i, leg_phase::dispatched, 0));
  auto report = m.accept(63, leg_phase::dispatched, 10);
  REQUIRE(report);
  CHECK(report->kind == saturation_event_kind::report);
  CHECK(report->lvl == level::info);
  CHECK(m.lasting_due(*report) == int64_t{1010});
  CHECK_FALSE(m.lasting(1009)); // not yet lasting
  for (leg_id i = 0; i < 31; ++i)
    CHECK_FALSE(m.terminated(i, 900));
  auto cleared = m.terminated(31, 999);
  REQUIRE(cleared);
  CHECK(cleared->kind == saturation_event_kind::cleared);
  CHECK(cleared->lvl == level::info);
  CHECK(cleared->latched_ms == 989);
  CHECK_FALSE(m.lasting(1010)); // the check falls due after the episode ended: nothing
  CHECK(m.reports() == 1);
}

TEST_CASE("saturation: with saturation_warn_after_ms a saturation that lasts warns once when it is due, and its clearing is a warning") {
  saturation_monitor m{warn_after(1000)};
  for (leg_id i = 0; i < 64; ++i)
    m.accept(i, leg_phase::dispatched, 0);
  REQUIRE(m.latched());
  auto due = int64_t{1000};
  auto ev = m.lasting(due);
  REQUIRE(ev);
  CHECK(ev->kind == saturation_event_kind::lasting);
  CHECK(ev->lvl == level::warning);
  CHECK(ev->latched_ms == 1000);
  queue_snapshot q{1, 1, 64, "node/Org/N0 [s1]"};
  CHECK(render(*ev, q)
        == "routing saturation lasting 1000 ms: 64 leg(s) in flight; oldest dispatched leg "
           "1000 ms since dispatch; no leg queued; queues: channels 1, destinations 1, "
           "deepest 64 (node/Org/N0 [s1])");
  CHECK_FALSE(m.lasting(2000)); // once per episode
  for (leg_id i = 0; i < 31; ++i)
    m.terminated(i, 3000);
  auto cleared = m.terminated(31, 3000);
  REQUIRE(cleared);
  CHECK(cleared->lvl == level::warning);
  // A second episode waits again: a check due for the first one finds nothing to say.
  for (leg_id i = 100; i < 132; ++i)
    m.accept(i, leg_phase::dispatched, 4000);
  REQUIRE(m.latched());
  CHECK_FALSE(m.lasting(4500));
  REQUIRE(m.lasting(5000));
}

TEST_CASE("saturation: with saturation_warn_after_ms a report at critical is critical at once and needs no lasting check") {
  saturation_monitor m{warn_after(1000)};
  m.accept(0, leg_phase::dispatched, 0);
  for (leg_id i = 1; i < 63; ++i)
    m.accept(i, leg_phase::dispatched, 100000);
  auto report = m.accept(63, leg_phase::dispatched, 100000);
  REQUIRE(report);
  CHECK(report->lvl == level::critical);
  CHECK_FALSE(m.lasting_due(*report));
  CHECK_FALSE(m.lasting(101000));
}

TEST_CASE("saturation: legs whose owner keeps their times are counted in one byte, their ages "
          "come from the owner's oldest times, and the review escalates on them") {
  using cafmesh::routing::counted_leg;
  using cafmesh::routing::oldest_times;
  static_assert(sizeof(counted_leg) == 1);
  cafmesh::config::routing_section cfg;
  cfg.saturation_report_count = 3;
  cfg.saturation_clear_count = 1;
  cfg.leg_self_bound_ms = 1000;
  cfg.saturation_review_ms = 100;
  cfg.saturation_warn_after_ms = 0;
  saturation_monitor m{cfg};
  // The owner's legs: times kept beside their counted_leg.
  struct owned {
    counted_leg link;
    int64_t accepted_ms = 0;
    int64_t started_ms = -1;
  };
  std::deque<owned> legs(3);
  int asked = 0;
  m.oldest_source([&] {
    ++asked;
    oldest_times out;
    for (auto& x : legs) {
      if (!x.link.counted)
        continue;
      auto& o = x.link.phase == leg_phase::queued ? out.queued_since_ms : out.dispatched_since_ms;
      auto since = x.link.phase == leg_phase::queued ? x.accepted_ms : x.started_ms;
      if (!o || since < *o)
        o = since;
    }
    return out;
  });
  legs[0].accepted_ms = 0;
  CHECK_FALSE(m.accept(legs[0].link, leg_phase::queued, 0));
  legs[0].started_ms = 200;
  CHECK_FALSE(m.dispatched(legs[0].link, 200));
  legs[1].accepted_ms = 300;
  CHECK_FALSE(m.accept(legs[1].link, leg_phase::queued, 300));
  CHECK(asked == 0); // no event, no review: nobody asked for ages
  legs[2].accepted_ms = 400;
  auto ev = m.accept(legs[2].link, leg_phase::queued, 400);
  REQUIRE(ev);
  CHECK(ev->kind == saturation_event_kind::report);
  CHECK(ev->ages.in_flight == 3);
  CHECK(ev->ages.oldest_dispatched_age_ms == int64_t{200});
  CHECK(ev->ages.oldest_queued_age_ms == int64_t{100});
  CHECK(asked == 1);
  // The review on a dispatch asks again: leg 0 dispatched at 200 is 1,000 ms old at 1,200.
  legs[1].started_ms = 1200;
  auto esc = m.dispatched(legs[1].link, 1200);
  REQUIRE(esc);
  CHECK(esc->kind == saturation_event_kind::escalation);
  CHECK(esc->lvl == level::critical);
  CHECK(esc->ages.oldest_dispatched_age_ms == int64_t{1000});
  CHECK(esc->ages.oldest_queued_age_ms == int64_t{800});
  // A terminated leg is no longer counted, nor asked about; a second terminal changes nothing.
  CHECK_FALSE(m.terminated(legs[0].link, 1300));
  CHECK_FALSE(m.terminated(legs[0].link, 1300));
  CHECK(m.in_flight() == 2);
  auto ages = m.ages(1300);
  CHECK(ages.oldest_dispatched_age_ms == int64_t{100});
  CHECK(ages.oldest_queued_age_ms == int64_t{900});
  auto cleared = m.terminated(legs[1].link, 1400);
  REQUIRE(cleared);
  CHECK(cleared->kind == saturation_event_kind::cleared);
  CHECK(cleared->ages.in_flight == 1);
  CHECK_FALSE(cleared->ages.oldest_dispatched_age_ms);
  CHECK(cleared->ages.oldest_queued_age_ms == int64_t{1000});
}
