// Routing quiescence (docs/behaviour/quiescence.md): the gauge
// (docs/behaviour/quiescence.md#the-gauge) and the participant at stage Active
// (docs/behaviour/quiescence.md#the-participant-at-stage-active), driven directly through the
// observer protocol (the lifecycle subject is not needed here).

#include <chrono>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include <caf/all.hpp>

#include "cafmesh/actors/log.hpp"
#include "cafmesh/config/mesh_config.hpp"
#include "cafmesh/actors/observer.hpp"
#include "cafmesh/lifecycle/quiescence_participant.hpp"
#include "participant_under_test.hpp"
#include "cafmesh/routing/routing_quiescence.hpp"
#include "cafmesh/actors/stage.hpp"
#include "cafmesh/testing/fixture.hpp"

#include "cafmesh/testing/ask.hpp"

using namespace std::chrono_literals;
using namespace cafmesh::lifecycle;
using namespace cafmesh::routing;
using cafmesh::testing::ask;
using cafmesh::log::level;

namespace {

const std::string stuck_label = dispatch_label("acme/Stuck", "abc123");

void track_slot(const routing_quiescence_actor& g, uint64_t slot, const std::string& label,
                slot_state st = slot_state::dispatched) {
  caf::anon_send(g, q_track_atom::value, slot, label, st);
}

size_t occurrences(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (auto pos = text.find(needle); pos != std::string::npos;
       pos = text.find(needle, pos + needle.size()))
    ++n;
  return n;
}

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size()
         && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

} // namespace

// -- gauge ----------------------------------------------------------------------------------------
// docs/behaviour/quiescence.md#the-gauge

TEST_CASE("gauge: seconds render with one decimal and budgets in s or ms") {
  CHECK(render_seconds_1(31000) == "31.0");
  CHECK(render_seconds_1(30000) == "30.0");
  CHECK(render_seconds_1(1949) == "1.9");
  CHECK(render_seconds_1(1950) == "2.0");
  CHECK(render_seconds_1(200) == "0.2");
  CHECK(render_seconds_1(-5) == "0.0");
  CHECK(render_budget(30000) == "30 s");
  CHECK(render_budget(200) == "200 ms");
  quiescence_entry q{7, "stream-routed -> cache/a (delivery d1)", slot_state::queued, 1000, -1};
  CHECK(render_entry(q, 3000)
        == "stream-routed -> cache/a (delivery d1) (queued, not dispatched), queued 2.0s");
  quiescence_entry d{8, "dispatch -> acme/X (delivery d2)", slot_state::dispatched, 1000, 2500};
  CHECK(render_entry(d, 3000) == "dispatch -> acme/X (delivery d2), in flight 0.5s");
}

TEST_CASE("gauge: labels follow the documented form and participant options follow the lifecycle section") {
  CHECK(dispatch_label("acme/Stuck", "abc123") == "dispatch -> acme/Stuck (delivery abc123)");
  CHECK(stream_routed_label("cache/m1", "d7") == "stream-routed -> cache/m1 (delivery d7)");
  CHECK(nack_label("portal/alice", "d7") == "NACK -> portal/alice (delivery d7)");
  cafmesh::config::lifecycle_section defaults;
  auto o = quiescence_participant_options::from(defaults, "S1:1@1");
  CHECK(o.quiescence_hold == std::chrono::seconds(30));
  CHECK(o.quiescence_residual_sample == 10);
  CHECK(o.silo_name == "S1:1@1");
  cafmesh::config::lifecycle_section custom;
  custom.quiescence_hold_ms = 200;
  custom.quiescence_residual_sample = 3;
  auto c = quiescence_participant_options::from(custom);
  CHECK(c.quiescence_hold == std::chrono::milliseconds(200));
  CHECK(c.quiescence_residual_sample == 3);
}

TEST_CASE_FIXTURE(cafmesh::testing::fixture,
                  "gauge: track, mark_dispatched, hand_over and release keep an exact count") {
  auto g = track(spawn_routing_quiescence(sys));
  track_slot(g, 1, "dispatch -> a (delivery 1)");
  track_slot(g, 2, "dispatch -> b (delivery 2)", slot_state::queued);
  track_slot(g, 3, "stream-routed -> c (delivery 3)");
  run();
  auto c1 = ask<uint64_t>(*this, g, q_count_atom::value);
  run();
  CHECK(c1->value == 3);
  // A second track of a held slot is ignored.
  track_slot(g, 3, "dispatch -> dup (delivery 3)");
  caf::anon_send(g, q_mark_atom::value, uint64_t{2});
  caf::anon_send(g, q_handover_atom::value, uint64_t{2}, std::string("NACK -> hub/s (delivery 2)"));
  run();
  auto c2 = ask<uint64_t>(*this, g, q_count_atom::value);
  auto s2 = ask<quiescence_sample>(*this, g, q_oldest_atom::value, uint64_t{10});
  run();
  CHECK(c2->value == 3); // hand_over never moves the count
  REQUIRE(s2->value.entries.size() == 3);
  CHECK(s2->value.entries[1].slot == 2);
  CHECK(s2->value.entries[1].label == "NACK -> hub/s (delivery 2)");
  CHECK(s2->value.entries[1].state == slot_state::dispatched);
  CHECK(s2->value.entries[2].label == "stream-routed -> c (delivery 3)");
  caf::anon_send(g, q_release_atom::value, uint64_t{1});
  caf::anon_send(g, q_release_atom::value, uint64_t{99}); // unknown: ignored
  caf::anon_send(g, q_release_atom::value, uint64_t{1});  // twice: ignored
  run();
  auto c3 = ask<uint64_t>(*this, g, q_count_atom::value);
  run();
  CHECK(c3->value == 2);
  CHECK(logs.count("already held", level::warning) == 1);
}

TEST_CASE_FIXTURE(cafmesh::testing::fixture,
                  "gauge: await_zero answers at once at 0 and on the release that empties it") {
  auto g = track(spawn_routing_quiescence(sys));
  auto a0 = ask<caf::ok_atom>(*this, g, q_await_atom::value);
  run();
  CHECK(a0->done);
  CHECK(a0->t_ms == 0);
  track_slot(g, 1, "dispatch -> a (delivery 1)");
  track_slot(g, 2, "dispatch -> b (delivery 2)");
  run();
  auto a1 = ask<caf::ok_atom>(*this, g, q_await_atom::value);
  auto a2 = ask<caf::ok_atom>(*this, g, q_await_atom::value);
  run_to(300);
  caf::anon_send(g, q_release_atom::value, uint64_t{1});
  run_to(500);
  CHECK_FALSE(a1->done);
  caf::anon_send(g, q_release_atom::value, uint64_t{2});
  run();
  CHECK(a1->done);
  CHECK(a1->t_ms == 500);
  CHECK(a2->done);
  CHECK(a2->t_ms == 500);
  CHECK_FALSE(a1->err);
}

TEST_CASE_FIXTURE(cafmesh::testing::fixture,
                  "gauge: oldest(n) sorts by time taken and tells queued from dispatched") {
  auto g = track(spawn_routing_quiescence(sys));
  // Slot ids deliberately in the opposite order of the times they are taken.
  track_slot(g, 30, "dispatch -> a (delivery 30)");
  run_to(1000);
  track_slot(g, 20, "stream-routed -> b (delivery 20)", slot_state::queued);
  run_to(2000);
  track_slot(g, 10, "stream-routed -> c (delivery 10)", slot_state::queued);
  run_to(2500);
  caf::anon_send(g, q_mark_atom::value, uint64_t{10});
  run_to(3000);
  auto s = ask<quiescence_sample>(*this, g, q_oldest_atom::value, uint64_t{2});
  auto all = ask<quiescence_sample>(*this, g, q_oldest_atom::value, uint64_t{10});
  run();
  CHECK(s->value.count == 3);
  REQUIRE(s->value.entries.size() == 2);
  CHECK(s->value.entries[0].slot == 30);
  CHECK(s->value.entries[1].slot == 20);
  auto now = s->value.now_ms;
  CHECK(render_entry(s->value.entries[0], now) == "dispatch -> a (delivery 30), in flight 3.0s");
  CHECK(render_entry(s->value.entries[1], now)
        == "stream-routed -> b (delivery 20) (queued, not dispatched), queued 2.0s");
  REQUIRE(all->value.entries.size() == 3);
  CHECK(all->value.entries[2].slot == 10);
  CHECK(all->value.entries[2].dispatched_ms - all->value.entries[2].taken_ms == 500);
  CHECK(render_entry(all->value.entries[2], now)
        == "stream-routed -> c (delivery 10), in flight 0.5s");
}

namespace {

/// A unit source that names the units `entries` lists (as the router core names its legs).
quiescence_source_actor::behavior_type
named_units(quiescence_source_actor::pointer, std::vector<quiescence_entry> entries) {
  return {
    [=](q_oldest_atom, uint64_t n) {
      quiescence_sample out;
      out.count = entries.size();
      out.entries = entries;
      if (out.entries.size() > n)
        out.entries.resize(n);
      return out;
    },
  };
}

} // namespace

TEST_CASE_FIXTURE(cafmesh::testing::fixture,
                  "gauge: a source's units join the count, oldest(n) merges the units it names, await_zero waits for them") {
  auto g = track(spawn_routing_quiescence(sys));
  auto t0 = ask<quiescence_sample>(*this, g, q_oldest_atom::value, uint64_t{1});
  run();
  auto base = t0->value.now_ms; // the actor clock at virtual time 0
  quiescence_entry leg{7, "dispatch -> node/a (delivery 7)", slot_state::dispatched, base,
                       base + 400};
  quiescence_entry nack{9, "NACK -> portal/s (delivery 9)", slot_state::queued, base + 1500, -1};
  auto src = track(sys.spawn(named_units, std::vector<quiescence_entry>{leg, nack}));
  run_to(1000);
  track_slot(g, application_hub_slot_bit | 1, "application hub acme/h (delivery 8)");
  caf::anon_send(g, q_units_atom::value, src, uint64_t{2});
  run_to(2000);
  auto c = ask<uint64_t>(*this, g, q_count_atom::value);
  auto s = ask<quiescence_sample>(*this, g, q_oldest_atom::value, uint64_t{2});
  auto all = ask<quiescence_sample>(*this, g, q_oldest_atom::value, uint64_t{10});
  auto z = ask<caf::ok_atom>(*this, g, q_await_atom::value);
  run();
  CHECK(c->value == 3);
  CHECK(s->value.count == 3);
  REQUIRE(s->value.entries.size() == 2);
  CHECK(s->value.entries[0].slot == 7);
  CHECK(s->value.entries[1].slot == (application_hub_slot_bit | 1));
  CHECK(render_entry(s->value.entries[0], s->value.now_ms)
        == "dispatch -> node/a (delivery 7), in flight 1.6s");
  REQUIRE(all->value.entries.size() == 3);
  CHECK(all->value.entries[2].label == "NACK -> portal/s (delivery 9)");
  // The source's count falls to 0 and the hub's slot goes: only then is the gauge at zero.
  caf::anon_send(g, q_units_atom::value, src, uint64_t{0});
  run();
  CHECK_FALSE(z->done);
  caf::anon_send(g, q_release_atom::value, application_hub_slot_bit | 1);
  run();
  CHECK(z->done);
  auto c0 = ask<uint64_t>(*this, g, q_count_atom::value);
  auto none = ask<quiescence_sample>(*this, g, q_oldest_atom::value, uint64_t{10});
  run();
  CHECK(c0->value == 0);
  CHECK(none->value.entries.empty());
}

/// A unit source that never answers (stalled behind its backlog).
quiescence_source_actor::behavior_type stalled_units(quiescence_source_actor::pointer self) {
  return {
    [=](q_oldest_atom, uint64_t) { return self->make_response_promise<quiescence_sample>(); },
  };
}

TEST_CASE_FIXTURE(cafmesh::testing::fixture,
                  "gauge: a source that is gone adds its count but no units to oldest(n), one that does not answer within 1 s too") {
  auto g = track(spawn_routing_quiescence(sys));
  auto src = sys.spawn(named_units, std::vector<quiescence_entry>{});
  caf::anon_send(g, q_units_atom::value, src, uint64_t{4});
  run();
  caf::anon_send_exit(src, caf::exit_reason::kill);
  run();
  auto s = ask<quiescence_sample>(*this, g, q_oldest_atom::value, uint64_t{10});
  run();
  REQUIRE(s->done);
  CHECK(s->value.count == 4);
  CHECK(s->value.entries.empty());
  auto stalled = track(sys.spawn(stalled_units));
  caf::anon_send(g, q_units_atom::value, stalled, uint64_t{2});
  run();
  auto t = ask<quiescence_sample>(*this, g, q_oldest_atom::value, uint64_t{10});
  run_to(999);
  CHECK_FALSE(t->done);
  run_to(1000);
  REQUIRE(t->done);
  CHECK(t->t_ms == 1000);
  CHECK(t->value.count == 6);
  CHECK(t->value.entries.empty());
}

TEST_CASE_FIXTURE(cafmesh::testing::fixture,
                  "gauge: after teardown a source's count stays frozen and the source is no longer asked") {
  auto g = track(spawn_routing_quiescence(sys));
  auto stalled = track(sys.spawn(stalled_units));
  caf::anon_send(g, q_units_atom::value, stalled, uint64_t{3});
  run();
  auto td = ask<caf::ok_atom>(*this, g, q_teardown_atom::value);
  run();
  REQUIRE(td->done);
  caf::anon_send(g, q_units_atom::value, stalled, uint64_t{0}); // ignored: frozen
  auto s = ask<quiescence_sample>(*this, g, q_oldest_atom::value, uint64_t{10});
  run();
  REQUIRE(s->done); // at once: the stalled source is not asked
  CHECK(s->t_ms == 0);
  CHECK(s->value.count == 3);
  CHECK(s->value.entries.empty());
}

TEST_CASE_FIXTURE(cafmesh::testing::fixture,
                  "gauge: the request form of track allocates ids apart from caller ids") {
  auto g = track(spawn_routing_quiescence(sys));
  auto t1 = ask<uint64_t>(*this, g, q_track_atom::value, std::string("NACK -> x (delivery 1)"),
                          slot_state::dispatched);
  auto t2 = ask<uint64_t>(*this, g, q_track_atom::value, std::string("NACK -> y (delivery 2)"),
                          slot_state::dispatched);
  run();
  CHECK(t1->value == gauge_allocated_slot_bit);
  CHECK(t2->value == (gauge_allocated_slot_bit | 1));
  caf::anon_send(g, q_release_atom::value, t1->value);
  run();
  auto c = ask<uint64_t>(*this, g, q_count_atom::value);
  run();
  CHECK(c->value == 1);
}

TEST_CASE_FIXTURE(cafmesh::testing::fixture,
                  "gauge: after teardown every operation does nothing and never faults") {
  auto g = track(spawn_routing_quiescence(sys));
  track_slot(g, 1, stuck_label);
  run();
  auto pending = ask<caf::ok_atom>(*this, g, q_await_atom::value);
  run();
  CHECK_FALSE(pending->done);
  auto td = ask<caf::ok_atom>(*this, g, q_teardown_atom::value);
  run();
  CHECK(td->done);
  CHECK_FALSE(td->err);
  CHECK(pending->done); // answered at teardown: no update can ever arrive
  CHECK_FALSE(pending->err);
  track_slot(g, 2, "dispatch -> late (delivery 2)");
  caf::anon_send(g, q_mark_atom::value, uint64_t{1});
  caf::anon_send(g, q_handover_atom::value, uint64_t{1}, std::string("NACK -> z (delivery 1)"));
  caf::anon_send(g, q_release_atom::value, uint64_t{1});
  auto t = ask<uint64_t>(*this, g, q_track_atom::value, std::string("late"), slot_state::queued);
  auto c = ask<uint64_t>(*this, g, q_count_atom::value);
  auto s = ask<quiescence_sample>(*this, g, q_oldest_atom::value, uint64_t{10});
  auto z = ask<caf::ok_atom>(*this, g, q_await_atom::value);
  auto td2 = ask<caf::ok_atom>(*this, g, q_teardown_atom::value);
  run();
  CHECK(t->done);
  CHECK_FALSE(t->err);
  CHECK(c->value == 1); // frozen: the straggler updates changed nothing
  REQUIRE(s->value.entries.size() == 1);
  CHECK(s->value.entries[0].label == stuck_label);
  CHECK(z->done);
  CHECK_FALSE(z->err);
  CHECK(td2->done);
  CHECK_FALSE(td2->err);
}

// -- participant ----------------------------------------------------------------------------------
// docs/behaviour/quiescence.md#the-participant-at-stage-active

namespace {

struct participant_bed {
  routing_quiescence_actor gauge;
  lifecycle_observer_actor participant;
};

participant_bed make_bed(cafmesh::testing::fixture& fx, int64_t hold_ms = 30000) {
  participant_bed b;
  b.gauge = fx.track(spawn_routing_quiescence(fx.sys));
  quiescence_participant_options opts;
  opts.quiescence_hold = std::chrono::milliseconds(hold_ms);
  b.participant = fx.track(cafmesh::lifecycle::test::spawn_participant_under_test(fx.sys, b.gauge, opts));
  return b;
}

auto stop(cafmesh::testing::fixture& fx, const participant_bed& b, bool graceful) {
  return ask<caf::ok_atom>(fx, b.participant, stop_stage_atom::value, stages::active, graceful);
}

} // namespace

TEST_CASE_FIXTURE(cafmesh::testing::fixture,
                  "participant: start_stage answers at once and sets nothing up") {
  auto b = make_bed(*this);
  auto r = ask<caf::ok_atom>(*this, b.participant, start_stage_atom::value, stages::active);
  run();
  CHECK(r->done);
  CHECK(r->t_ms == 0);
  CHECK_FALSE(r->err);
  CHECK(next_timeout_ms() == -1);
  CHECK(logs.lines().empty());
}

TEST_CASE_FIXTURE(cafmesh::testing::fixture, "S12.11 nothing in flight: no hold, info no routing work in flight, no error") {
  auto b = make_bed(*this);
  auto r = stop(*this, b, true);
  run();
  CHECK(r->done);
  CHECK(r->t_ms == 0);
  CHECK(r->from == b.participant.address());
  CHECK(logs.count("routing quiescence: no routing work in flight", level::info) == 1);
  CHECK(logs.count("holding") == 0);
  CHECK(logs.count_level(level::error) == 0);
  CHECK(next_timeout_ms() == -1); // no hold timer armed
}

TEST_CASE_FIXTURE(cafmesh::testing::fixture, "S12.12 a stuck leg with a 200 ms hold: the stop proceeds at 200 ms with the error line") {
  auto b = make_bed(*this, 200);
  track_slot(b.gauge, 1, stuck_label);
  run();
  auto r = stop(*this, b, true);
  run();
  CHECK(logs.count("routing quiescence: holding silo stop for 1 route leg(s) (budget 200 ms)",
                   level::info)
        == 1);
  run_to(199);
  CHECK_FALSE(r->done);
  run_to(200);
  REQUIRE(r->done);
  CHECK(r->t_ms == 200);
  CHECK_FALSE(r->err);
  auto errs = logs.find("did not land", level::error);
  REQUIRE(errs.size() == 1);
  CHECK(errs[0].t_ms == 200);
  CHECK(errs[0].text.find("1 route leg(s) did not land") != std::string::npos);
  CHECK(errs[0].text.find("acme/Stuck") != std::string::npos);
  CHECK(errs[0].text.find("abc123") != std::string::npos);
  CHECK(errs[0].text
        == "1 route leg(s) did not land within 200 ms: "
           "dispatch -> acme/Stuck (delivery abc123), in flight 0.2s");
  CHECK(logs.count("work landed") == 0);
}

TEST_CASE_FIXTURE(cafmesh::testing::fixture, "S12.13 stuck legs from 0 s and 1 s: at 31 s the older one is listed first") {
  auto b = make_bed(*this);
  const std::string l0 = "dispatch -> acme/Stuck (delivery abc123)";
  const std::string l1 = "dispatch -> acme/Stuck2 (delivery def456)";
  track_slot(b.gauge, 1, l0);
  run_to(1000);
  track_slot(b.gauge, 2, l1);
  run();
  auto r = stop(*this, b, true);
  run_to(30999);
  CHECK_FALSE(r->done);
  run_to(31000);
  REQUIRE(r->done);
  CHECK(r->t_ms == 31000);
  auto errs = logs.find("did not land", level::error);
  REQUIRE(errs.size() == 1);
  auto& text = errs[0].text;
  auto p0 = text.find(l0 + ", in flight 31.0s");
  auto p1 = text.find(l1 + ", in flight 30.0s");
  REQUIRE(p0 != std::string::npos);
  REQUIRE(p1 != std::string::npos);
  CHECK(p0 < p1);
  CHECK(text == "2 route leg(s) did not land within 30 s: " + l0 + ", in flight 31.0s; " + l1
                  + ", in flight 30.0s");
}

TEST_CASE_FIXTURE(cafmesh::testing::fixture, "S12.14 25 stuck legs: the error names 10 and ends with (+15 more)") {
  auto b = make_bed(*this);
  for (int i = 0; i < 25; ++i) {
    auto id = std::string(i < 10 ? "0" : "") + std::to_string(i);
    track_slot(b.gauge, static_cast<uint64_t>(100 - i), "dispatch -> acme/L" + id + " (delivery d" + id + ")");
    run_for(10ms);
  }
  auto r = stop(*this, b, true);
  run_for(30000ms);
  REQUIRE(r->done);
  auto errs = logs.find("did not land", level::error);
  REQUIRE(errs.size() == 1);
  auto& text = errs[0].text;
  CHECK(text.find("25 route leg(s) did not land") != std::string::npos);
  CHECK(occurrences(text, ", in flight ") == 10);
  CHECK(ends_with(text, "(+15 more)"));
  for (int i = 0; i < 10; ++i) // the oldest ten, oldest first
    CHECK(text.find("acme/L0" + std::to_string(i) + " ") != std::string::npos);
  CHECK(text.find("acme/L10 ") == std::string::npos);
  CHECK(text.find("acme/L00") < text.find("acme/L09"));
}

TEST_CASE_FIXTURE(cafmesh::testing::fixture, "S12.15 a non-graceful stop with one leg in flight answers at once with a warning") {
  auto b = make_bed(*this);
  track_slot(b.gauge, 1, stuck_label);
  run_to(500);
  auto r = stop(*this, b, false);
  run();
  REQUIRE(r->done);
  CHECK(r->t_ms == 500);
  auto w = logs.find("NON-gracefully", level::warning);
  REQUIRE(w.size() == 1);
  CHECK(w[0].text.find(stuck_label) != std::string::npos);
  CHECK(w[0].text
        == "stopping NON-gracefully with 1 route leg(s) in flight; abandoning: " + stuck_label);
  CHECK(logs.count("holding") == 0);
  CHECK(next_timeout_ms() == -1); // nothing armed
}

TEST_CASE_FIXTURE(cafmesh::testing::fixture,
                  "participant: a non-graceful stop with nothing in flight logs nothing") {
  auto b = make_bed(*this);
  auto r = stop(*this, b, false);
  run();
  REQUIRE(r->done);
  CHECK(r->t_ms == 0);
  CHECK(logs.lines().empty());
}

TEST_CASE_FIXTURE(cafmesh::testing::fixture,
                  "participant: the hold lasts until the slot is released, then work landed after X ms") {
  auto b = make_bed(*this);
  track_slot(b.gauge, 1, stuck_label);
  run();
  auto r = stop(*this, b, true);
  run();
  CHECK(logs.count("routing quiescence: holding silo stop for 1 route leg(s) (budget 30 s)",
                   level::info)
        == 1);
  run_to(1233);
  CHECK_FALSE(r->done);
  run_to(1234);
  caf::anon_send(b.gauge, q_release_atom::value, uint64_t{1});
  run();
  REQUIRE(r->done);
  CHECK(r->t_ms == 1234);
  CHECK(r->from == b.participant.address()); // answered from the participant's own turn
  CHECK(logs.count("routing quiescence: work landed after 1234 ms", level::info) == 1);
  run_to(40000); // the stale hold timer fires and is ignored
  CHECK(logs.count_level(level::error) == 0);
  CHECK(logs.count_level(level::warning) == 0);
}

TEST_CASE_FIXTURE(cafmesh::testing::fixture,
                  "participant: budget_expired during the hold releases it with a warning") {
  auto b = make_bed(*this);
  track_slot(b.gauge, 1, stuck_label);
  track_slot(b.gauge, 2, "NACK -> hub/s (delivery 2)");
  run();
  auto r = stop(*this, b, true);
  run_to(5000);
  CHECK_FALSE(r->done);
  caf::anon_send(b.participant, budget_expired_atom::value);
  run();
  REQUIRE(r->done);
  CHECK(r->t_ms == 5000);
  CHECK(logs.count("routing quiescence: shutdown budget expired while holding; releasing with "
                   "2 route leg(s) in flight",
                   level::warning)
        == 1);
  run_to(40000);
  CHECK(logs.count_level(level::error) == 0);
  CHECK(logs.count("work landed") == 0);
}

TEST_CASE_FIXTURE(cafmesh::testing::fixture,
                  "participant: budget_expired outside a hold is ignored") {
  auto b = make_bed(*this);
  caf::anon_send(b.participant, budget_expired_atom::value);
  run();
  auto r = stop(*this, b, true);
  run();
  REQUIRE(r->done);
  CHECK(logs.count("no routing work in flight") == 1);
  CHECK(logs.count("budget expired") == 0);
}

TEST_CASE_FIXTURE(cafmesh::testing::fixture,
                  "participant: the expiry line renders queued legs and a second stop joins the first") {
  auto b = make_bed(*this, 2000);
  track_slot(b.gauge, 5, "stream-routed -> cache/m (delivery q1)", slot_state::queued);
  track_slot(b.gauge, 6, stuck_label);
  run();
  auto r1 = stop(*this, b, true);
  run_to(100);
  auto r2 = stop(*this, b, true);
  run_to(2000);
  REQUIRE(r1->done);
  REQUIRE(r2->done);
  CHECK(r1->t_ms == 2000);
  CHECK(r2->t_ms == 2000);
  auto errs = logs.find("did not land", level::error);
  REQUIRE(errs.size() == 1);
  CHECK(errs[0].text
        == "2 route leg(s) did not land within 2 s: stream-routed -> cache/m (delivery q1) "
           "(queued, not dispatched), queued 2.0s; " + stuck_label + ", in flight 2.0s");
  CHECK(logs.count("holding silo stop") == 1);
}
