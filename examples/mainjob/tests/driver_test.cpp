// The demo driver against a scripted stand-in for the mesh. The stand-in lives only in this
// test: it answers each delivery the way a test case tells it to, so the driver's
// bookkeeping (ledger, reactions, mirrors, roll, report) can be checked with exact values.

#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <string>

#include "cafmesh/mainjob/driver.hpp"
#include "small_scenario.hpp"

using namespace cafmesh;
using namespace cafmesh::mainjob;
using routing::verdict;

namespace {

struct scripted_mesh : mesh_port {
  std::vector<planned_delivery> submitted;
  std::vector<std::string> commands;
  void submit(const planned_delivery& d) override { submitted.push_back(d); }
  void stop_silo(const std::string& name) override { commands.push_back("stop " + name); }
  void restart_silo(const std::string& name) override { commands.push_back("restart " + name); }
  void stall_silo(const std::string& name, bool detected) override {
    commands.push_back("stall " + name + (detected ? " detected" : " undetected"));
  }
  void unstall_silo(const std::string& name) override { commands.push_back("unstall " + name); }
};

scenario small() {
  return tests::small_scenario();
}

using answer_fn = std::function<void(demo_driver&, const planned_delivery&, int64_t)>;

/// Lands every delivery at once (and answers requests).
void land(demo_driver& d, const planned_delivery& p, int64_t t) {
  d.on_landed(p.id, t);
  if (p.kind == delivery_kind::request)
    d.on_response(p.id, t);
}

/// Runs the driver in virtual time: at each wakeup, advance, then answer every new submission.
/// `on_command` sees each new mesh command at the time it was issued.
void run(demo_driver& d, scripted_mesh& m, const answer_fn& answer,
         const std::function<void(const std::string&, int64_t)>& on_command = {},
         int64_t cap_ms = 100000) {
  size_t answered = 0;
  size_t commanded = 0;
  int64_t t = 0;
  for (;;) {
    d.advance(t);
    while (answered < m.submitted.size() || commanded < m.commands.size()) {
      while (answered < m.submitted.size()) {
        auto p = m.submitted[answered++];
        answer(d, p, t);
      }
      while (commanded < m.commands.size() && on_command)
        on_command(m.commands[commanded++], t);
      commanded = on_command ? commanded : m.commands.size();
    }
    auto next = d.next_wakeup_ms();
    if (!next || t >= cap_ms)
      break;
    t = std::max(*next, t + 1);
  }
}

} // namespace

TEST_CASE("mainjob driver: everything landing gives a clean report") {
  auto s = small();
  scripted_mesh m;
  demo_driver d{s, m, "in_process"};
  run(d, m, land);
  CHECK(d.quiescent());
  auto r = d.finish();
  CHECK(r.passed);
  CHECK(r.exit_code == 0);
  CHECK(r.input.ledger.total.accepted == m.submitted.size());
  CHECK(r.input.ledger.total.landed == m.submitted.size());
  CHECK(r.input.ledger.total.lost == 0);
  CHECK(r.input.mirrors_diverged == 0u);
  CHECK(r.input.traffic.paced == m.submitted.size());
  CHECK(r.input.ledger.latency_p99_ms == 0);
  CHECK(m.commands.empty());
}

TEST_CASE("mainjob driver: a delivery never answered is lost and fails the run") {
  auto s = small();
  scripted_mesh m;
  demo_driver d{s, m, "in_process"};
  std::string silent;
  run(d, m, [&](demo_driver& dd, const planned_delivery& p, int64_t t) {
    if (silent.empty() && p.kind == delivery_kind::request) {
      silent = p.id; // never answered
      return;
    }
    land(dd, p, t);
  });
  REQUIRE_FALSE(silent.empty());
  CHECK(d.traffic_done());
  CHECK_FALSE(d.quiescent());
  auto r = d.finish();
  CHECK(r.input.ledger.total.lost == 1);
  CHECK(r.input.ledger.lost_ids == std::vector<std::string>{silent});
  CHECK(r.exit_code == 1);
}

TEST_CASE("mainjob driver: transient NACKs bring a fresh Full for frames and a new request") {
  auto s = small();
  scripted_mesh m;
  demo_driver d{s, m, "in_process"};
  std::string nacked_patch;
  std::string nacked_request;
  run(d, m, [&](demo_driver& dd, const planned_delivery& p, int64_t t) {
    if (nacked_patch.empty() && p.frame && p.frame->type == routing::sync_frame::kind::patch) {
      nacked_patch = p.id;
      dd.on_nack(p.id, verdict::shutting_down, "Host is shutting down", t);
      return;
    }
    if (nacked_request.empty() && p.kind == delivery_kind::request) {
      nacked_request = p.id;
      dd.on_nack(p.id, verdict::unavailable, "placement timed out", t);
      return;
    }
    land(dd, p, t);
  });
  auto r = d.finish();
  CHECK(r.input.traffic.fresh_fulls_after_nack == 1);
  CHECK(r.input.traffic.requests_resent == 1);
  CHECK(r.input.ledger.nacked_by_verdict
        == std::map<verdict, uint64_t>{{verdict::shutting_down, 1}, {verdict::unavailable, 1}});
  CHECK(r.input.ledger.total.lost == 0);
  // the Full repaired the subscriber that missed the patch
  CHECK(r.input.mirrors_diverged == 0u);
  CHECK(r.passed);
  auto reactions = std::count_if(m.submitted.begin(), m.submitted.end(), [](auto& p) {
    return p.id.rfind("demo-r", 0) == 0;
  });
  CHECK(reactions == 2);
}

TEST_CASE("mainjob driver: swapped frames show as order violation and stale drop") {
  auto s = small();
  s.traffic.weights = {1, 0, 0};
  scripted_mesh m;
  demo_driver d{s, m, "in_process"};
  std::optional<planned_delivery> held;
  run(d, m, [&](demo_driver& dd, const planned_delivery& p, int64_t t) {
    // hold the first patch to portal/user0/tab1 and land it after the next one to that target
    if (p.frame && p.frame->type == routing::sync_frame::kind::patch
        && p.target == "portal/user0/tab1") {
      if (!held) {
        held = p;
        return;
      }
      if (!held->id.empty() && held->stream == p.stream) {
        land(dd, p, t);
        land(dd, *held, t);
        held->id.clear();
        return;
      }
    }
    land(dd, p, t);
  });
  REQUIRE(held.has_value());
  auto r = d.finish();
  CHECK(r.input.ledger.order_violations == 1);
  CHECK(r.input.ledger.stale_drops == 1);
  CHECK(r.input.ledger.total.lost == 0);
  CHECK(r.exit_code == 1);
}

TEST_CASE("mainjob driver: the roll stops, restarts and measures each silo in turn") {
  auto s = small();
  s.silos = {"A", "B"};
  s.roll.order = {"A", "B"};
  s.roll.first_stop_at_ms = 100;
  s.roll.restart_delay_ms = 10;
  s.roll.interval_ms = 20;
  scripted_mesh m;
  demo_driver d{s, m, "in_process"};
  d.on_silo({"A", 1, roll_phase::active, std::nullopt, std::nullopt}, 0);
  d.on_silo({"B", 2, roll_phase::active, std::nullopt, std::nullopt}, 0);
  std::vector<std::pair<int64_t, std::string>> seen;
  uint64_t next_generation = 3;
  // each stop takes 30 ms with a 7 ms hold; each start 5 ms; events arrive through pending
  std::vector<std::pair<int64_t, silo_event>> pending;
  auto deliver_pending = [&](int64_t t) {
    for (auto i = pending.begin(); i != pending.end();)
      if (i->first <= t) {
        d.on_silo(i->second, i->first);
        i = pending.erase(i);
      } else {
        ++i;
      }
  };
  int64_t t = 0;
  size_t commanded = 0;
  while (t <= 2000) {
    deliver_pending(t);
    d.advance(t);
    for (auto& p : m.submitted)
      if (!d.ledger().terminated(p.id))
        land(d, p, t);
    while (commanded < m.commands.size()) {
      auto& c = m.commands[commanded++];
      seen.emplace_back(t, c);
      auto name = c.substr(c.find(' ') + 1);
      if (c.rfind("stop", 0) == 0) {
        auto gen = name == "A" ? 1u : 2u;
        pending.push_back({t, {name, gen, roll_phase::stopping, lifecycle::stages::active, {}}});
        pending.push_back({t + 30, {name, gen, roll_phase::stopped, std::nullopt, 7}});
      } else {
        pending.push_back({t + 5, {name, next_generation++, roll_phase::active, {}, {}}});
      }
    }
    ++t;
  }
  CHECK(seen
        == std::vector<std::pair<int64_t, std::string>>{
          {100, "stop A"}, {140, "restart A"}, {165, "stop B"}, {205, "restart B"}});
  REQUIRE(d.stops().size() == 2);
  // 50 deliveries/s land as soon as sent: slots 100, 120 and 140 fall in A's time out of
  // service [100, 145) (stop 30 ms, restart 10 ms later, Active 5 ms after that), slots
  // 180 and 200 in B's [165, 210); the new generations were Active at 145 and 210
  CHECK(d.stops()[0] == silo_stop_record{"A", 1, 3, 100, 7, 30, 3, 145});
  CHECK(d.stops()[1] == silo_stop_record{"B", 2, 4, 165, 7, 30, 2, 210});
  CHECK(d.traffic_done());
  auto r = d.finish();
  CHECK(r.input.silos.size() == 2);
  CHECK(r.passed);
}

TEST_CASE("mainjob driver: the progress sample shows the rolling silo and its stage") {
  auto s = small();
  s.roll.order = {"B"};
  s.roll.first_stop_at_ms = 0;
  scripted_mesh m;
  demo_driver d{s, m, "in_process"};
  d.on_silo({"B", 4, roll_phase::active, std::nullopt, std::nullopt}, 0);
  d.advance(0);
  REQUIRE(m.commands == std::vector<std::string>{"stop B"});
  d.on_silo({"B", 4, roll_phase::stopping, lifecycle::stages::grain_deactivation, {}}, 3);
  auto p = d.progress(3);
  REQUIRE(p.roll.has_value());
  CHECK(render_progress(p).substr(render_progress(p).find("roll:"))
        == "roll: B@4 stopping, stage GrainDeactivation (19998)");
  CHECK(p.in_flight == m.submitted.size());
  CHECK(p.delivered == 0);
}

TEST_CASE("mainjob driver: stall faults start and end on time") {
  auto s = small();
  s.faults = {{"stall", "C", 200, 300, false, {}}};
  scripted_mesh m;
  demo_driver d{s, m, "in_process"};
  d.advance(199);
  CHECK(m.commands.empty());
  CHECK(d.next_wakeup_ms() == 200);
  d.advance(200);
  CHECK(m.commands == std::vector<std::string>{"stall C undetected"});
  d.advance(499);
  d.advance(500);
  CHECK(m.commands == std::vector<std::string>{"stall C undetected", "unstall C"});
}

TEST_CASE("mainjob driver: roll steps stop silos at their own times, so their windows overlap") {
  auto s = small();
  s.silos = {"A", "B"};
  s.roll.steps = {{"A", 100, 10}, {"B", 110, 20}};
  scripted_mesh m;
  demo_driver d{s, m, "in_process"};
  d.on_silo({"A", 1, roll_phase::active, std::nullopt, std::nullopt}, 0);
  d.on_silo({"B", 2, roll_phase::active, std::nullopt, std::nullopt}, 0);
  d.advance(100);
  CHECK(m.commands == std::vector<std::string>{"stop A"});
  CHECK(d.next_wakeup_ms() <= 110);
  d.advance(110);
  CHECK(m.commands == std::vector<std::string>{"stop A", "stop B"});
  CHECK_FALSE(d.traffic_done());
  d.on_silo({"A", 1, roll_phase::stopped, std::nullopt, 3}, 130);
  d.on_silo({"B", 2, roll_phase::stopped, std::nullopt, 4}, 135);
  d.advance(139);
  CHECK(m.commands.size() == 2);
  d.advance(140); // A: 10 ms after its stop
  CHECK(m.commands.back() == "restart A");
  d.advance(155); // B: 20 ms after its stop
  CHECK(m.commands.back() == "restart B");
  d.on_silo({"B", 4, roll_phase::active, std::nullopt, std::nullopt}, 160);
  d.on_silo({"A", 3, roll_phase::active, std::nullopt, std::nullopt}, 161);
  REQUIRE(d.stops().size() == 2);
  CHECK(d.stops()[0].name == "A");
  CHECK(d.stops()[0].stop_duration_ms == 30);
  CHECK(d.stops()[0].generation_after == 3u);
  CHECK(d.stops()[1].name == "B");
  CHECK(d.stops()[1].stop_duration_ms == 25);
  CHECK(d.stops()[1].generation_after == 4u);
}

TEST_CASE("mainjob driver: kill and second_signal faults reach the mesh, a mesh that cannot inject them fails the run") {
  struct killing_mesh : scripted_mesh {
    bool kill_silo(const std::string& name) override {
      commands.push_back("kill " + name);
      return true;
    }
    bool signal_silo_again(const std::string& name) override {
      commands.push_back("signal " + name);
      return true;
    }
  };
  auto s = small();
  s.faults = {{"kill", "A", 100, 1, false, 50}, {"second_signal", "B", 120, 1, false, {}}};
  killing_mesh m;
  demo_driver d{s, m, "in_process"};
  d.advance(100);
  CHECK(m.commands == std::vector<std::string>{"kill A"});
  d.advance(120);
  CHECK(m.commands == std::vector<std::string>{"kill A", "signal B"});
  d.advance(150);
  CHECK(m.commands == std::vector<std::string>{"kill A", "signal B", "restart A"});
  scripted_mesh plain;
  demo_driver d2{s, plain, "in_process"};
  run(d2, plain, land);
  auto r = d2.finish();
  CHECK_FALSE(r.passed);
  auto i = std::find_if(r.checks.begin(), r.checks.end(),
                        [](auto& c) { return c.name == "every fault was injected"; });
  REQUIRE(i != r.checks.end());
  CHECK_FALSE(i->ok);
  CHECK(i->detail == "2 not injected");
}

TEST_CASE("mainjob driver: an entry's overload refusal counts as unavailable and its delivery is re-sent after retry_after_ms") {
  auto s = small();
  s.traffic.weights = {0, 0, 1};
  scripted_mesh m;
  demo_driver d{s, m, "in_process"};
  d.advance(0);
  REQUIRE(m.submitted.size() == 1);
  auto first = m.submitted[0];
  d.on_hub_event("entry_failed", first.id, verdict::failed,
                 "router core overloaded: 16 legs in flight (retry_after_ms=40)", false, 5);
  CHECK(d.ledger().terminated(first.id));
  CHECK(d.next_wakeup_ms() <= 45);
  auto resends = [&] {
    std::vector<planned_delivery> out;
    for (auto& p : m.submitted)
      if (p.id.rfind("demo-r", 0) == 0)
        out.push_back(p);
    return out;
  };
  d.advance(44);
  CHECK(resends().empty());
  d.advance(45);
  REQUIRE(resends().size() == 1);
  CHECK(resends()[0].target == first.target);
  CHECK(resends()[0].sender == first.sender);
  CHECK(resends()[0].overload_attempt == 1);
  auto r = d.finish();
  CHECK(r.input.ledger.nacked_by_verdict.at(verdict::unavailable) == 1);
  CHECK(r.input.traffic.overload_refusals == 1);
  CHECK(r.input.traffic.overload_refusals_without_retry_after == 0);
  CHECK(r.input.traffic.overload_resends == 1);
}

namespace {

/// A run in which the first submission `pick` selects is refused as overloaded with `text`
/// and every other lands: the refused delivery, when, and when each id was submitted.
struct refused_run {
  planned_delivery refused;
  int64_t refused_ms = -1;
  std::map<std::string, int64_t> submitted_at;
};

refused_run run_refusing_first(demo_driver& d, scripted_mesh& m,
                               const std::function<bool(const planned_delivery&, int64_t)>& pick,
                               const std::string& text) {
  refused_run out;
  run(d, m, [&](demo_driver& dd, const planned_delivery& p, int64_t t) {
    out.submitted_at.emplace(p.id, t);
    if (out.refused_ms < 0 && pick(p, t)) {
      out.refused = p;
      out.refused_ms = t;
      dd.on_nack(p.id, verdict::unavailable, text, t);
      return;
    }
    land(dd, p, t);
  });
  return out;
}

} // namespace

TEST_CASE("mainjob driver: a sender refused as overloaded backs off for retry_after_ms: its heartbeats due meanwhile are not offered and its requests wait for the end") {
  auto s = small();
  s.traffic.weights = {0, 1, 1};
  scripted_mesh m;
  demo_driver d{s, m, "in_process"};
  auto rr = run_refusing_first(
    d, m,
    [](const planned_delivery& p, int64_t t) {
      return p.kind == delivery_kind::request && t >= 100;
    },
    "client c overloaded: 2 dispatches outstanding; retry after 300 ms");
  auto refused_ms = rr.refused_ms;
  auto& sender = rr.refused.sender;
  auto& submitted_at = rr.submitted_at;
  REQUIRE(refused_ms >= 100);
  auto until = refused_ms + 300;
  // Nothing from the refused sender left during its back-off; what was held left at its end.
  size_t held_requests = 0;
  for (auto& p : m.submitted) {
    if (p.sender != sender)
      continue;
    auto t = submitted_at.at(p.id);
    CHECK_FALSE((t > refused_ms && t < until));
    if (t == until && p.kind == delivery_kind::request && p.id.rfind("demo-r", 0) != 0)
      ++held_requests;
  }
  auto r = d.finish();
  CHECK(r.input.traffic.overload_refusals == 1);
  CHECK(r.input.traffic.overload_resends == 1);
  CHECK(r.input.traffic.withheld_requests == held_requests);
  CHECK(r.input.traffic.withheld_requests >= 1);
  CHECK(r.input.traffic.withheld_heartbeats >= 1);
  // Every paced delivery was offered once, except the heartbeats withheld.
  auto paced_offered = std::count_if(m.submitted.begin(), m.submitted.end(), [](auto& p) {
    return p.id.rfind("demo-r", 0) != 0;
  });
  CHECK(static_cast<uint64_t>(paced_offered) + r.input.traffic.withheld_heartbeats
        == r.input.traffic.paced);
  CHECK(r.input.ledger.total.lost == 0);
  // The heartbeats shed during the back-off were offered and not carried; everything else
  // was (the refused request by its re-send).
  auto rt = rates_of(r.input);
  CHECK(rt.offered == r.input.traffic.paced);
  CHECK(rt.carried == r.input.traffic.paced - r.input.traffic.withheld_heartbeats);
  for (auto& c : r.checks)
    if (c.name.rfind("carried rate", 0) != 0)
      CHECK_MESSAGE(c.ok, c.name);
}

TEST_CASE("mainjob driver: frames of a sender refused as overloaded are carried by one owed Full per receiver and stream, sent when its back-off ends, and every mirror ends equal to its owner") {
  auto s = small();
  s.traffic.weights = {1, 0, 0};
  scripted_mesh m;
  demo_driver d{s, m, "in_process"};
  auto rr = run_refusing_first(
    d, m,
    [](const planned_delivery& p, int64_t) {
      return p.frame && p.frame->type == routing::sync_frame::kind::patch;
    },
    "silo s overloaded: 2 deliveries in flight; retry after 300 ms");
  auto refused_ms = rr.refused_ms;
  auto& refused = rr.refused;
  auto& submitted_at = rr.submitted_at;
  REQUIRE(refused_ms >= 0);
  auto until = refused_ms + 300;
  size_t fulls_to_pair = 0;
  for (auto& p : m.submitted) {
    if (p.sender != refused.sender)
      continue;
    auto t = submitted_at.at(p.id);
    CHECK_FALSE((t > refused_ms && t < until));
    if (t > refused_ms && p.target == refused.target && p.stream == refused.stream
        && p.frame->type == routing::sync_frame::kind::full)
      ++fulls_to_pair;
  }
  CHECK(fulls_to_pair == 1);
  auto r = d.finish();
  CHECK(r.input.traffic.overload_refusals == 1);
  CHECK(r.input.traffic.withheld_frames >= 1);
  CHECK(r.input.mirrors_diverged == 0u);
  CHECK(r.input.ledger.total.lost == 0);
  // Frames shed while the sender backed off are not carried, though the owed Full brought
  // their stream's state; the others landed (the refused frame by its Full).
  auto rt = rates_of(r.input);
  CHECK(rt.offered == r.input.traffic.paced);
  CHECK(r.input.traffic.withheld_frames_carried == 0);
  CHECK(rt.carried == r.input.ledger.total.landed);
  CHECK(rt.carried < rt.offered);
  for (auto& c : r.checks)
    if (c.name.rfind("carried rate", 0) != 0)
      CHECK_MESSAGE(c.ok, c.name);
}
