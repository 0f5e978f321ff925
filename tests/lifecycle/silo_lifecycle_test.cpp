#include <chrono>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include <caf/all.hpp>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/log.hpp"
#include "cafmesh/lifecycle/silo_lifecycle.hpp"
#include "cafmesh/testing/fixture.hpp"

#include "test_observer.hpp"

using namespace std::chrono_literals;
using namespace cafmesh;
using namespace cafmesh::lifecycle;
using namespace cafmesh::lifecycle::test;

namespace {

/// A fixture with one tracked lifecycle subject and one shared event log.
struct lc_fixture : testing::fixture {
  event_log log = make_log();
  silo_lifecycle_actor subject;

  lc_fixture() {
    subject = track(spawn_silo_lifecycle(
      sys, silo_lifecycle_options{"S10.0.0.1:11111@1", std::chrono::seconds(1)}));
  }

  /// Spawns an observer and subscribes it; the subscription must succeed.
  lifecycle_observer_actor add(observer_config cfg) {
    auto s = cfg.st;
    auto name = cfg.name;
    auto obs = spawn_observer(*this, std::move(cfg), log);
    auto r = ask(*this, subject, subscribe_atom::value, s, name, obs);
    run();
    REQUIRE(r->ok());
    return obs;
  }

  reply_ptr start() {
    return ask(*this, subject, run_start_atom::value);
  }

  reply_ptr stop(bool graceful) {
    return ask(*this, subject, run_stop_atom::value, graceful);
  }

  /// Names of the events `what`, in order.
  std::vector<std::string> names(const std::string& what) const {
    std::vector<std::string> out;
    for (auto& e : events(log, what))
      out.push_back(e.name);
    return out;
  }
};

fault boom(std::string text) {
  return fault{mesh_errc::application, std::move(text)};
}

} // namespace

// -- docs/scenarios.md lifecycle scenarios ---------------------------------------------

TEST_CASE_FIXTURE(lc_fixture, "S12.01 start ascending with same stage together and stop descending with "
                  "same stage in parallel") {
  add(obs(2000, "mc-a", 1000, 0));
  add(obs(2000, "mc-b", 2000, 0));
  add(obs(4000, "catalog", 500, 300));
  add(obs(20000, "gateway", 0, 200));
  auto started = start();
  REQUIRE(run_until([&] { return started->done; }));
  CHECK(started->ok());
  CHECK(started->t_ms == 2500);
  CHECK(names("start") == std::vector<std::string>{"mc-a", "mc-b", "catalog", "gateway"});
  // Both 2000 observers receive start at once, 4000 begins only after both answered.
  CHECK(find_event(log, "start", "mc-a").t_ms == 0);
  CHECK(find_event(log, "start", "mc-b").t_ms == 0);
  CHECK(find_event(log, "started", "mc-a").t_ms == 1000);
  CHECK(find_event(log, "started", "mc-b").t_ms == 2000);
  CHECK(find_event(log, "start", "catalog").t_ms == 2000);
  CHECK(find_event(log, "start", "gateway").t_ms == 2500);

  run_to(10000);
  auto stopped = stop(true);
  REQUIRE(run_until([&] { return stopped->done; }));
  CHECK(stopped->ok());
  CHECK(stopped->t_ms == 10500);
  auto stops = events(log, "stop");
  REQUIRE(stops.size() == 4);
  CHECK(stops[0].name == "gateway");
  CHECK(stops[0].st == 20000);
  CHECK(stops[0].t_ms == 10000);
  CHECK(stops[1].name == "catalog");
  CHECK(stops[1].st == 4000);
  CHECK(stops[1].t_ms == 10200);
  // Both 2000 observers at the same virtual instant, after 4000 answered.
  CHECK(stops[2].st == 2000);
  CHECK(stops[3].st == 2000);
  CHECK(stops[2].t_ms == 10500);
  CHECK(stops[3].t_ms == 10500);
  CHECK(stops[2].name != stops[3].name);
  for (auto& e : stops)
    CHECK(e.graceful);
}

TEST_CASE_FIXTURE(lc_fixture, "S12.02 a failing start waits for its stage and the stop covers the failed "
                  "stage but not the unstarted one") {
  add(obs(2000, "mc", 0, 0));
  auto fails = obs(10000, "app-fails");
  fails.start_fault = boom("application service exploded");
  add(fails);
  add(obs(10000, "app-slow", 3000, 0));
  add(obs(19999, "membership", 0, 0));
  auto started = start();
  run_to(2999);
  CHECK_FALSE(started->done);
  REQUIRE(run_until([&] { return started->done; }));
  CHECK(started->t_ms == 3000);
  REQUIRE(started->err);
  CHECK(started->code() == mesh_errc::application);
  CHECK(to_fault(started->err).text == "application service exploded");
  CHECK(find_event(log, "started", "app-slow").t_ms == 3000);
  CHECK(count_events(log, "start", "membership") == 0);
  auto err_lines = logs.find("application service exploded", log::level::error);
  REQUIRE(err_lines.size() == 1);
  CHECK(err_lines[0].t_ms == 3000);
  CHECK(err_lines[0].text.find("app-fails") != std::string::npos);

  run_to(4000);
  auto stopped = stop(true);
  REQUIRE(run_until([&] { return stopped->done; }));
  CHECK(stopped->ok());
  auto stops = events(log, "stop");
  REQUIRE(stops.size() == 3);
  CHECK(stops[0].st == 10000);
  CHECK(stops[1].st == 10000);
  CHECK(stops[0].t_ms == 4000);
  CHECK(stops[1].t_ms == 4000);
  CHECK(find_event(log, "stop", "app-fails").t_ms == 4000);
  CHECK(find_event(log, "stop", "app-slow").t_ms == 4000);
  CHECK(stops[2].name == "mc");
  CHECK(count_events(log, "stop", "membership") == 0);
}

TEST_CASE_FIXTURE(lc_fixture, "S12.03 two observers at 19998 stopping 5 s each finish the stage after 5 s "
                  "and 4000 waits for both") {
  add(obs(4000, "directory", 0, 0));
  add(obs(19998, "catalog-a", 0, 5000));
  add(obs(19998, "catalog-b", 0, 5000));
  auto started = start();
  REQUIRE(run_until([&] { return started->done; }));
  REQUIRE(started->ok());
  run_to(1000);
  auto stopped = stop(true);
  REQUIRE(run_until([&] { return stopped->done; }));
  CHECK(stopped->ok());
  CHECK(find_event(log, "stop", "catalog-a").t_ms == 1000);
  CHECK(find_event(log, "stop", "catalog-b").t_ms == 1000);
  CHECK(find_event(log, "stopped", "catalog-a").t_ms == 6000);
  CHECK(find_event(log, "stopped", "catalog-b").t_ms == 6000);
  // The stage took 5 s, not 10 s: 4000 begins at 6,000 ms.
  CHECK(find_event(log, "stop", "directory").t_ms == 6000);
  CHECK(stopped->t_ms == 6000);
  // docs/behaviour/lifecycle.md#the-lifecycle-subject: each 5 s stop is logged at info with stage
  // and name.
  auto slow = logs.find("took 5000 ms to stop", log::level::info);
  REQUIRE(slow.size() == 2);
  for (auto& l : slow) {
    CHECK(l.t_ms == 6000);
    CHECK(l.text.find("GrainDeactivation (19998)") != std::string::npos);
  }
  CHECK(logs.count("'catalog-a' at stage GrainDeactivation (19998) took 5000 ms")
        == 1);
  CHECK(logs.count("'catalog-b' at stage GrainDeactivation (19998) took 5000 ms")
        == 1);
}

TEST_CASE_FIXTURE(lc_fixture, "S12.04 an observer stop fault is logged as continuing to stop and every "
                  "lower stage still stops") {
  add(obs(stages::first, "pool", 0, 0));
  add(obs(2000, "mc", 0, 0));
  add(obs(4000, "directory", 0, 0));
  add(obs(10000, "app", 0, 0));
  add(obs(19998, "catalog", 0, 0));
  auto failing = obs(19999, "membership", 0, 100);
  failing.stop_fault = boom("cannot publish ShuttingDown");
  add(failing);
  add(obs(20000, "gateway", 0, 0));
  auto started = start();
  REQUIRE(run_until([&] { return started->done; }));
  REQUIRE(started->ok());
  auto stopped = stop(true);
  REQUIRE(run_until([&] { return stopped->done; }));
  CHECK(stopped->ok());
  CHECK(stopped->t_ms == 100);
  auto warn = logs.find("continuing to stop", log::level::warning);
  REQUIRE(warn.size() == 1);
  CHECK(warn[0].t_ms == 100);
  CHECK(warn[0].text.find("membership") != std::string::npos);
  CHECK(warn[0].text.find("cannot publish ShuttingDown") != std::string::npos);
  CHECK(names("stop")
        == std::vector<std::string>{"gateway", "membership", "catalog", "app", "directory",
                                    "mc", "pool"});
  CHECK(find_event(log, "stop", "pool").st == stages::first);
}

TEST_CASE_FIXTURE(lc_fixture, "S12.05 a non-graceful stop reaches every observer and an expired host "
                  "budget turns every lower stage non-graceful") {
  SUBCASE("graceful = false reaches every observer, none skipped") {
    add(obs(stages::first, "pool", 0, 0));
    add(obs(2000, "mc", 0, 0));
    add(obs(19998, "catalog", 0, 0));
    add(obs(19999, "membership", 0, 0));
    add(obs(20000, "quiescence", 0, 0));
    auto started = start();
    REQUIRE(run_until([&] { return started->done; }));
    auto stopped = stop(false);
    REQUIRE(run_until([&] { return stopped->done; }));
    CHECK(stopped->ok());
    auto stops = events(log, "stop");
    REQUIRE(stops.size() == 5);
    for (auto& e : stops)
      CHECK_FALSE(e.graceful);
    CHECK(names("stop")
          == std::vector<std::string>{"quiescence", "membership", "catalog", "mc", "pool"});
  }
  SUBCASE("host budget expires while 19998 stops") {
    add(obs(stages::first, "pool", 0, 0));
    add(obs(4000, "directory", 0, 0));
    add(obs(10000, "app", 0, 0));
    add(obs(19998, "catalog", 0, 40000));
    auto eager = obs(19998, "eager", 0, 40000);
    eager.answer_on_budget = true;
    add(eager);
    add(obs(20000, "quiescence", 0, 1000));
    auto started = start();
    REQUIRE(run_until([&] { return started->done; }));
    auto stopped = stop(true);
    // The host's 30 s budget (docs/behaviour/lifecycle.md#the-host): it sends
    // shutdown_budget_expired.
    run_to(30000);
    CHECK_FALSE(stopped->done);
    caf::anon_send(subject, budget_expired_atom::value);
    run();
    auto budget = events(log, "budget");
    REQUIRE(budget.size() == 2);
    for (auto& e : budget) {
      CHECK(e.st == 19998);
      CHECK(e.t_ms == 30000);
    }
    // The stage already done is not told; the eager observer abandons at once.
    CHECK(count_events(log, "budget", "quiescence") == 0);
    CHECK(find_event(log, "stopped", "eager").t_ms == 30000);
    REQUIRE(run_until([&] { return stopped->done; }));
    CHECK(stopped->ok());
    CHECK(find_event(log, "stopped", "catalog").t_ms == 41000);
    CHECK(find_event(log, "stop", "quiescence").graceful);
    CHECK(find_event(log, "stop", "catalog").graceful);
    CHECK(find_event(log, "stop", "eager").graceful);
    for (auto name : {"app", "directory", "pool"}) {
      auto e = find_event(log, "stop", name);
      CHECK(e.t_ms == 41000);
      CHECK_FALSE(e.graceful);
    }
    CHECK(stopped->t_ms == 41000);
  }
}

TEST_CASE_FIXTURE(lc_fixture, "S12.06 no subject deadline and single use and a stop without start") {
  SUBCASE("an observer that never answers its stop blocks the stop for 1 h and more") {
    add(obs(10000, "app", 0, 0));
    auto stuck = obs(19998, "stuck");
    stuck.stop_never_answers = true;
    add(stuck);
    auto started = start();
    REQUIRE(run_until([&] { return started->done; }));
    auto stopped = stop(true);
    CHECK_FALSE(run_until([&] { return stopped->done; }, 1h));
    run_to(3600 * 1000 + 1);
    CHECK_FALSE(stopped->done);
    CHECK(count_events(log, "stop", "stuck") == 1);
    CHECK(count_events(log, "stop", "app") == 0);
    CHECK(next_timeout_ms() == -1); // the subject armed no timer at all
  }
  SUBCASE("a started subject refuses a subscription and a second start") {
    add(obs(2000, "mc", 0, 0));
    auto started = start();
    REQUIRE(run_until([&] { return started->done; }));
    REQUIRE(started->ok());
    auto late = spawn_observer(*this, obs(4000, "late"), log);
    auto sub = ask(*this, subject, subscribe_atom::value, stage{4000}, std::string{"late"}, late);
    auto again = start();
    run();
    REQUIRE(sub->done);
    REQUIRE(again->done);
    CHECK(sub->code() == mesh_errc::lifecycle_misuse);
    CHECK(again->code() == mesh_errc::lifecycle_misuse);
    CHECK(count_events(log, "start", "mc") == 1);
    // A subscription during a running start is refused too.
  }
  SUBCASE("a subscription while the start runs is refused") {
    add(obs(2000, "mc", 1000, 0));
    auto started = start();
    run();
    auto late = spawn_observer(*this, obs(4000, "late"), log);
    auto sub = ask(*this, subject, subscribe_atom::value, stage{4000}, std::string{"late"}, late);
    run();
    REQUIRE(sub->done);
    CHECK(sub->code() == mesh_errc::lifecycle_misuse);
    REQUIRE(run_until([&] { return started->done; }));
    CHECK(started->ok());
    CHECK(count_events(log, "start", "late") == 0);
  }
  SUBCASE("a subject never started answers stop at once and calls nobody") {
    add(obs(2000, "mc", 0, 0));
    add(obs(20000, "gateway", 0, 0));
    run_to(500);
    auto stopped = stop(true);
    run();
    REQUIRE(stopped->done);
    CHECK(stopped->ok());
    CHECK(stopped->t_ms == 500);
    CHECK(log->empty());
  }
}

// -- further docs/behaviour/lifecycle.md#the-lifecycle-subject rules ------------------------------

TEST_CASE_FIXTURE(lc_fixture,
                  "silo_lifecycle: a stop during start cancels before the next stage and stops "
                  "what started") {
  add(obs(2000, "mc", 0, 0));
  add(obs(4000, "directory", 2000, 0));
  add(obs(10000, "app", 0, 0));
  auto started = start();
  run_to(1000);
  auto stopped = stop(true);
  run_to(1999);
  CHECK_FALSE(started->done);
  CHECK(count_events(log, "stop", "directory") == 0); // the running stage finishes first
  REQUIRE(run_until([&] { return stopped->done; }));
  CHECK(started->t_ms == 2000);
  CHECK(started->code() == mesh_errc::lifecycle_cancelled);
  CHECK(count_events(log, "start", "app") == 0);
  CHECK(names("stop") == std::vector<std::string>{"directory", "mc"});
  CHECK(find_event(log, "stop", "directory").t_ms == 2000);
  CHECK(stopped->ok());
  CHECK(stopped->t_ms == 2000);
}

TEST_CASE_FIXTURE(lc_fixture,
                  "silo_lifecycle: a second stop joins the first and both answer when it "
                  "completes") {
  add(obs(2000, "mc", 0, 4000));
  auto started = start();
  REQUIRE(run_until([&] { return started->done; }));
  auto first = stop(true);
  run_to(1000);
  auto second = stop(false);
  run_to(3999);
  CHECK_FALSE(first->done);
  CHECK_FALSE(second->done);
  run_to(4000);
  CHECK(first->ok());
  CHECK(second->ok());
  CHECK(first->t_ms == 4000);
  CHECK(second->t_ms == 4000);
  CHECK(count_events(log, "stop", "mc") == 1);
  CHECK(find_event(log, "stop", "mc").graceful); // the first stop's flag
  auto third = stop(true);
  run();
  CHECK(third->ok());
  CHECK(third->t_ms == 4000);
  CHECK(count_events(log, "stop", "mc") == 1);
}

TEST_CASE_FIXTURE(lc_fixture,
                  "silo_lifecycle: an observer stop over 1000 ms is logged at info and one of "
                  "exactly 1000 ms is not") {
  add(obs(10000, "exact", 0, 1000));
  add(obs(4000, "slower", 0, 1001));
  auto started = start();
  REQUIRE(run_until([&] { return started->done; }));
  auto stopped = stop(true);
  REQUIRE(run_until([&] { return stopped->done; }));
  CHECK(stopped->t_ms == 2001);
  CHECK(logs.count("took", log::level::info) == 1);
  auto l = logs.find("'slower' at stage RuntimeServices (4000) took 1001 ms to stop",
                     log::level::info);
  REQUIRE(l.size() == 1);
  CHECK(l[0].t_ms == 2001);
  CHECK(l[0].component == "lifecycle");
  CHECK(l[0].text.find("[S10.0.0.1:11111@1]") != std::string::npos);
}

TEST_CASE_FIXTURE(lc_fixture,
                  "silo_lifecycle: an observer that dies counts as that observer's error") {
  add(obs(2000, "mc", 0, 0));
  auto doomed = add(obs(4000, "doomed", 0, 0));
  add(obs(10000, "app", 0, 0));
  auto started = start();
  REQUIRE(run_until([&] { return started->done; }));
  caf::anon_send_exit(doomed, caf::exit_reason::user_shutdown);
  run();
  auto stopped = stop(true);
  REQUIRE(run_until([&] { return stopped->done; }));
  CHECK(stopped->ok());
  CHECK(names("stop") == std::vector<std::string>{"app", "mc"});
  auto warn = logs.find("continuing to stop", log::level::warning);
  REQUIRE(warn.size() == 1);
  CHECK(warn[0].text.find("doomed") != std::string::npos);
}

TEST_CASE_FIXTURE(lc_fixture,
                  "silo_lifecycle: an observer that dies holding its start fails the start") {
  add(obs(2000, "mc", 0, 0));
  auto doomed = add(obs(4000, "doomed", 5000, 0));
  add(obs(10000, "app", 0, 0));
  auto started = start();
  run_to(1000);
  CHECK_FALSE(started->done);
  caf::anon_send_exit(doomed, caf::exit_reason::user_shutdown);
  run();
  REQUIRE(started->done);
  CHECK(started->t_ms == 1000);
  CHECK(started->err);
  CHECK(count_events(log, "start", "app") == 0);
  CHECK(logs.count("doomed", log::level::error) == 1);
}
