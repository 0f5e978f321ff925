#include <doctest/doctest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "cafmesh/mainjob/report.hpp"

using namespace cafmesh;
using namespace cafmesh::mainjob;
using routing::verdict;

namespace {

accepted_delivery post(std::string id, int64_t t_ms) {
  return {std::move(id), delivery_kind::post, "portal/u1/tab1", "node/Org/N1", "", 0, false,
          "client:1", t_ms};
}

report_input clean_input() {
  outcome_ledger l;
  l.accept(post("d-1", 0));
  l.accept(post("d-2", 0));
  l.accept(post("d-3", 0));
  l.landed("d-1", 3);
  l.landed("d-2", 5);
  l.nack("d-3", verdict::shutting_down, "Host is shutting down, cannot route to node/Org/N1", 7);
  // d-3 re-sent as d-4, which landed: every scheduled delivery was carried
  l.accept(post("d-4", 8));
  l.landed("d-4", 10);
  report_input in;
  in.scenario_name = "roll-three-silos";
  in.seed = 42;
  in.duration_s = 60;
  in.rate_per_s = 2000;
  in.mode = "in_process";
  in.ledger = l.summarize();
  in.traffic.paced = 3;
  in.traffic.requests_resent = 1;
  in.silos.push_back({"A", 1, 4, 5000, 120, 850, 12, 6200});
  in.silos.push_back({"B", 2, std::nullopt, 9000, std::nullopt, std::nullopt, 3, std::nullopt});
  in.expect = default_scenario().expect;
  return in;
}

} // namespace

TEST_CASE("mainjob report: clean run passes with exit code 0") {
  auto r = make_report(clean_input());
  CHECK(r.passed);
  CHECK(r.exit_code == 0);
  std::vector<std::string> names;
  for (auto& c : r.checks)
    names.push_back(c.name);
  CHECK(names
        == std::vector<std::string>{
          "lost = 0", "order violations = 0", "stale frames dropped = 0",
          "late copies after an unknown outcome = 0", "one terminal outcome per delivery", "no NACK for an answer-suppressed delivery",
          "deliveries landed while A was out > 0", "deliveries landed while B was out > 0",
          "NACKed failed <= 0", "NACKed not_found <= 0", "NACKed rejected <= 0",
          "NACKed routing_loop <= 0", "NACKed unauthorized <= 0", "NACKed forbidden <= 0",
          "request chains exhausted <= 0", "no NACK text contains \"no active silo\"",
          "no NACK text contains \"no_compatible_silo\"",
          "requests ended by their deadline <= 0", "latency p99 <= 2000 ms",
          "carried rate >= 0.95 of offered"});
}

TEST_CASE("mainjob report: exit code 1 when lost, order violations, stale drops or late copies are not 0") {
  auto in = clean_input();
  in.ledger.total.lost = 1;
  in.ledger.lost_ids = {"d-9"};
  auto r = make_report(in);
  CHECK_FALSE(r.passed);
  CHECK(r.exit_code == 1);
  CHECK(r.checks[0].detail == "1 (d-9)");
  in = clean_input();
  in.ledger.order_violations = 1;
  CHECK(make_report(in).exit_code == 1);
  in = clean_input();
  in.ledger.stale_drops = 2;
  auto stale = make_report(in);
  CHECK(stale.exit_code == 1);
  CHECK(stale.checks[2].ok == false);
  CHECK(stale.checks[2].detail == "2");
  in = clean_input();
  in.ledger.late_copies = 1;
  in.ledger.late_copy_ids = {"f-24"};
  auto late = make_report(in);
  CHECK(late.exit_code == 1);
  CHECK(late.checks[3].ok == false);
  CHECK(late.checks[3].detail == "1 (f-24)");
  in = clean_input();
  in.ledger.multiple_terminal = 1;
  CHECK(make_report(in).exit_code == 1);
}

TEST_CASE("mainjob report: the scenario's expectations are checked") {
  auto in = clean_input();
  in.ledger.nacked_by_verdict[verdict::failed] = 2;
  in.ledger.nack_texts.insert("no active silo is compatible with grain type routing");
  in.traffic.request_resends_exhausted = 1;
  in.expect.min_nacked[verdict::unavailable] = 1;
  auto r = make_report(in);
  CHECK(r.exit_code == 1);
  std::map<std::string, std::pair<bool, std::string>> by_name;
  for (auto& c : r.checks)
    by_name[c.name] = {c.ok, c.detail};
  CHECK(by_name.at("NACKed failed <= 0") == std::make_pair(false, std::string{"2"}));
  CHECK(by_name.at("NACKed unavailable >= 1") == std::make_pair(false, std::string{"0"}));
  CHECK(by_name.at("request chains exhausted <= 0") == std::make_pair(false, std::string{"1"}));
  CHECK(by_name.at("no NACK text contains \"no active silo\"")
        == std::make_pair(false,
                          std::string{"1 (no active silo is compatible with grain type routing)"}));
  CHECK(by_name.at("no NACK text contains \"no_compatible_silo\"").first);
}

TEST_CASE("mainjob report: JSON shape") {
  auto j = nlohmann::json::parse(render_json(make_report(clean_input())));
  std::vector<std::string> keys;
  for (auto& [k, v] : j.items())
    keys.push_back(k);
  std::sort(keys.begin(), keys.end());
  CHECK(keys
        == std::vector<std::string>{
          "accepted", "by_kind", "by_origin", "checks", "deadlines", "duplicate_accepts",
          "duplicate_outcomes_dropped", "duration_s", "entries", "exit_code", "faults", "landed",
          "landed_with_ambiguous_failure", "landed_with_ambiguous_failure_sample", "late_copies",
          "latency_ms", "lost", "lost_sample", "mirrors_diverged", "mode", "multiple_terminal_outcomes",
          "multiple_terminal_sample",
          "nacked", "nacked_total", "nacks_on_answer_suppressed", "node_exits",
          "order_violation_sample",
          "order_violations", "passed", "rate", "rate_per_s", "requests", "scenario", "schema", "seed", "silos",
          "stale_drops", "suppressed_failures", "suppressed_failures_total", "traffic",
          "unconfirmed", "unknown_outcomes"});
  CHECK(j["schema"] == "cafmesh.demo.report/1");
  CHECK(j["accepted"] == 4);
  CHECK(j["landed"] == 3);
  CHECK(j["nacked"] == nlohmann::json{{"shutting_down", 1}});
  CHECK(j["nacked_total"] == 1);
  CHECK(j["lost"] == 0);
  CHECK(j["latency_ms"] == nlohmann::json{{"samples", 3}, {"p50", 3}, {"p99", 5}, {"max", 5}});
  CHECK(j["rate"]
        == nlohmann::json{{"offered", 3},
                          {"carried", 3},
                          {"offered_per_s", 0.05},
                          {"carried_per_s", 0.05},
                          {"carried_ratio", 1.0},
                          {"sent_per_s", 4.0 / 60}});
  CHECK(j["faults"] == nlohmann::json::array());
  CHECK(j["traffic"]["requests_resent"] == 1);
  CHECK(j["by_kind"]["post"]["accepted"] == 4);
  CHECK(j["by_origin"]["client:1"]["nacked"] == 1);
  CHECK(j["silos"][0]
        == nlohmann::json{{"name", "A"},
                          {"generation_before", 1},
                          {"generation_after", 4},
                          {"stop_started_ms", 5000},
                          {"quiescence_hold_ms", 120},
                          {"stop_duration_ms", 850},
                          {"active_again_ms", 6200},
                          {"landed_while_out", 12}});
  CHECK(j["silos"][1]["active_again_ms"].is_null());
  CHECK(j["silos"][1]["generation_after"].is_null());
  CHECK(j["silos"][1]["quiescence_hold_ms"].is_null());
  CHECK(j["checks"][0] == nlohmann::json{{"name", "lost = 0"}, {"ok", true}, {"detail", "0"}});
  CHECK(j["mirrors_diverged"].is_null());
  CHECK(j["passed"] == true);
  CHECK(j["exit_code"] == 0);
}

TEST_CASE("mainjob report: the entries measured in the processes, routing/default from a co-hosted entry fails the run") {
  auto in = clean_input();
  auto unmeasured = make_report(in);
  CHECK(std::none_of(unmeasured.checks.begin(), unmeasured.checks.end(), [](auto& c) {
    return c.name == "routing/default calls from co-hosted entries = 0";
  }));
  in.entries.push_back({"silo A gen 7 (pid 11)", "grain", "co-hosted", 900, 0});
  in.entries.push_back({"silo B gen 8 (pid 12)", "grain", "co-hosted", 800, 0});
  in.entries.push_back({"client-1 (cafmesh-demo)", "client:1", "pure_client", 100, 104});
  auto r = make_report(in);
  auto check = std::find_if(r.checks.begin(), r.checks.end(), [](auto& c) {
    return c.name == "routing/default calls from co-hosted entries = 0";
  });
  REQUIRE(check != r.checks.end());
  CHECK(check->ok);
  CHECK(check->detail == "0 (2 silo entries)");
  CHECK(r.exit_code == exit_codes::ok);
  auto text = render_table(r);
  CHECK(text.find("entry process") != std::string::npos);
  CHECK(text.find("client-1 (cafmesh-demo)  client:1  pure_client  100         104")
        != std::string::npos);
  auto j = nlohmann::json::parse(render_json(r));
  CHECK(j["entries"].size() == 3);
  CHECK(j["entries"][2] == nlohmann::json{{"process", "client-1 (cafmesh-demo)"},
                                          {"origins", "client:1"},
                                          {"entry", "pure_client"},
                                          {"delivered", 100},
                                          {"routing_default_calls", 104}});
  in.entries[1].routing_default_calls = 3;
  auto bad = make_report(in);
  check = std::find_if(bad.checks.begin(), bad.checks.end(), [](auto& c) {
    return c.name == "routing/default calls from co-hosted entries = 0";
  });
  REQUIRE(check != bad.checks.end());
  CHECK_FALSE(check->ok);
  CHECK(check->detail == "3 (2 silo entries)");
  CHECK(bad.exit_code == exit_codes::failed);
}

TEST_CASE("mainjob report: a rolled node process that did not exit 0 fails the run") {
  auto in = clean_input();
  CHECK(nlohmann::json::parse(render_json(make_report(in)))["node_exits"].is_null());
  in.node_exits = 3;
  auto r = make_report(in);
  auto check = std::find_if(r.checks.begin(), r.checks.end(), [](auto& c) {
    return c.name == "every rolled node process exited 0";
  });
  REQUIRE(check != r.checks.end());
  CHECK(check->ok);
  CHECK(check->detail == "0 of 3 did not");
  CHECK(nlohmann::json::parse(render_json(r))["node_exits"]
        == nlohmann::json{{"stopped", 3}, {"unclean", 0}});
  in.node_exits_unclean = 1;
  auto bad = make_report(in);
  CHECK(bad.exit_code == exit_codes::failed);
  CHECK(render_table(bad).find("FAIL  every rolled node process exited 0") != std::string::npos);
}

TEST_CASE("mainjob report: a silo stop during which nothing landed fails the run") {
  auto in = clean_input();
  in.silos[1].landed_while_out = 0;
  auto r = make_report(in);
  CHECK_FALSE(r.passed);
  CHECK(r.exit_code == 1);
  auto failed = std::count_if(r.checks.begin(), r.checks.end(), [](auto& c) { return !c.ok; });
  CHECK(failed == 1);
  auto i = std::find_if(r.checks.begin(), r.checks.end(), [](auto& c) { return !c.ok; });
  REQUIRE(i != r.checks.end());
  CHECK(i->name == "deliveries landed while B was out > 0");
  CHECK(i->detail == "0");
}

TEST_CASE("mainjob report: table text") {
  auto text = render_table(make_report(clean_input()));
  CHECK(text.rfind("report: roll-three-silos (seed 42, 60 s at 2000 deliveries/s, in_process)\n",
                   0)
        == 0);
  CHECK(text.find("  accepted                       4\n") != std::string::npos);
  CHECK(text.find("    shutting_down                1\n") != std::string::npos);
  CHECK(text.find("  latency p50 / p99 / max (ms)   3 / 5 / 5 (3 samples)\n") != std::string::npos);
  CHECK(text.find("  offered/carried per s          0.1 / 0.1 (1 carried; sent 0.1 per s)\n")
        != std::string::npos);
  CHECK(text.find("  A     1 -> 4      5000        120                 850      6200                12\n")
        != std::string::npos);
  CHECK(text.find("  B     2 -> -      9000        -                   -        -                   3\n")
        != std::string::npos);
  CHECK(text.find("  PASS  lost = 0") != std::string::npos);
  CHECK(text.substr(text.size() - 23) == "\nresult: PASS (exit 0)\n");
}

TEST_CASE("mainjob report: every NACK of a verdict with required texts must contain one of them") {
  auto in = clean_input();
  in.expect.required_nack_texts[verdict::failed] = {"timed out", "expired"};
  in.ledger.nack_texts_by_verdict[verdict::failed] = {
    "grain call to messagehub/Org/N10 timed out after 3 s",
    "call #7 to activation on S127.0.0.1:1@1 expired in transit"};
  in.ledger.nack_texts_by_verdict[verdict::shutting_down] = {"Host is shutting down"};
  auto ok = make_report(in);
  std::map<std::string, std::pair<bool, std::string>> by_name;
  for (auto& c : ok.checks)
    by_name[c.name] = {c.ok, c.detail};
  CHECK(by_name.at("every failed NACK text contains \"timed out\" or \"expired\"")
        == std::make_pair(true, std::string{"0"}));
  CHECK(ok.exit_code == 0);
  in.ledger.nack_texts_by_verdict[verdict::failed].insert("Delivery to 'x' failed: boom");
  auto bad = make_report(in);
  by_name.clear();
  for (auto& c : bad.checks)
    by_name[c.name] = {c.ok, c.detail};
  CHECK(by_name.at("every failed NACK text contains \"timed out\" or \"expired\"")
        == std::make_pair(false, std::string{"1 (Delivery to 'x' failed: boom)"}));
  CHECK(bad.exit_code == 1);
}

TEST_CASE("mainjob report: requests answered and unanswered, offered and carried rate, the deadline and p99 expectations, overload refusals") {
  auto in = clean_input();
  outcome_ledger l;
  auto req = [](std::string id) {
    return accepted_delivery{std::move(id), delivery_kind::request, "portal/u1/tab1",
                             "node/Org/N1", "", 0, false, "client:1", 0};
  };
  l.accept(req("q-1"));
  l.accept(req("q-2"));
  l.accept(req("q-3"));
  l.landed("q-1", 4);
  l.response("q-1", 6);
  l.deadline("q-2", 30000);
  l.nack("q-3", verdict::unavailable, "overloaded (retry_after_ms=10)", 1);
  in.ledger = l.summarize();
  in.duration_s = 2;
  auto t = requests_of(in);
  CHECK(t.answered == 1);
  CHECK(t.unanswered == 2);
  auto rt = rates_of(in);
  CHECK(rt.offered_per_s == doctest::Approx(1.5));
  CHECK(rt.carried_per_s == doctest::Approx(0.5));
  in.expect.max_request_deadlines = 0;
  in.expect.max_p99_ms = 3;
  in.traffic.overload_refusals = 4;
  in.traffic.overload_refusals_without_retry_after = 1;
  auto r = make_report(in);
  auto check = [&](const std::string& name) {
    auto i = std::find_if(r.checks.begin(), r.checks.end(),
                          [&](auto& c) { return c.name == name; });
    REQUIRE_MESSAGE(i != r.checks.end(), name);
    return *i;
  };
  CHECK_FALSE(check("requests ended by their deadline <= 0").ok);
  CHECK(check("requests ended by their deadline <= 0").detail == "1");
  CHECK_FALSE(check("latency p99 <= 3 ms").ok); // the one landing took 4 ms
  CHECK(check("latency p99 <= 3 ms").detail == "4 ms (1 samples)");
  CHECK_FALSE(check("every overload refusal carries retry_after_ms").ok);
  CHECK(check("every overload refusal carries retry_after_ms").detail == "1 of 4 did not");
  CHECK_FALSE(r.passed);
  auto table = render_table(r);
  CHECK(table.find("  requests answered/unanswered   1 / 2\n") != std::string::npos);
  CHECK(table.find("  offered/carried per s          1.5 / 0.5 (0.333 carried; sent 1.5 per s)\n")
        != std::string::npos);
  CHECK(table.find("overload refusals") != std::string::npos);
  auto j = nlohmann::json::parse(render_json(r));
  CHECK(j["requests"]["answered"] == 1);
  CHECK(j["requests"]["unanswered"] == 2);
  CHECK(j["rate"]["offered_per_s"] == 1.5);
  CHECK(j["rate"]["carried_ratio"] == doctest::Approx(1.0 / 3));
  CHECK(j["latency_ms"]["max"] == 4);
  CHECK_FALSE(check("carried rate >= 0.95 of offered").ok);
  CHECK(check("carried rate >= 0.95 of offered").detail == "0.333 (1 of 3 deliveries)");
  CHECK(j["traffic"]["overload_refusals"] == 4);
}

TEST_CASE("mainjob report: carried rate >= min_carried_ratio of offered passes at exactly the bound and fails just below") {
  auto check_of = [](const report_input& in) {
    auto r = make_report(in);
    auto i = std::find_if(r.checks.begin(), r.checks.end(), [](auto& c) {
      return c.name.rfind("carried rate >= ", 0) == 0;
    });
    REQUIRE(i != r.checks.end());
    return *i;
  };
  auto in = clean_input();
  in.expect.min_carried_ratio.reset(); // the default, 0.95
  in.traffic.paced = 90;
  in.traffic.burst = 10; // bursts are offered too: 100 scheduled deliveries
  in.ledger.total.landed = 95;
  auto at = check_of(in);
  CHECK(at.name == "carried rate >= 0.95 of offered");
  CHECK(at.ok);
  CHECK(at.detail == "0.95 (95 of 100 deliveries)");
  in.ledger.total.landed = 94;
  auto below = check_of(in);
  CHECK_FALSE(below.ok);
  CHECK(below.detail == "0.94 (94 of 100 deliveries)");
  CHECK(make_report(in).exit_code == exit_codes::failed);
  // a scenario's own bound: overload at 3 times capacity expects a quarter of the offered
  in.expect.min_carried_ratio = 0.25;
  in.traffic.paced = 400;
  in.traffic.burst = 0;
  in.ledger.total.landed = 100;
  auto quarter = check_of(in);
  CHECK(quarter.name == "carried rate >= 0.25 of offered");
  CHECK(quarter.ok);
  CHECK(quarter.detail == "0.25 (100 of 400 deliveries)");
  in.ledger.total.landed = 99;
  CHECK_FALSE(check_of(in).ok);
  // deliveries whose success the sender cannot observe are neither offered nor carried
  in.expect.min_carried_ratio.reset();
  in.traffic.paced = 100;
  in.ledger.total.unconfirmed = 5;
  in.ledger.total.landed = 90;
  CHECK_FALSE(check_of(in).ok); // 90 of 95
  in.ledger.total.landed = 91;
  auto observable = check_of(in);
  CHECK(observable.ok);
  CHECK(observable.detail == "0.958 (91 of 95 deliveries)");
  // nothing offered: nothing was shown to be carried
  in.traffic.paced = 0;
  in.ledger.total.unconfirmed = 0;
  auto nothing = check_of(in);
  CHECK_FALSE(nothing.ok);
  CHECK(nothing.detail == "nothing offered");
  CHECK(nlohmann::json::parse(render_json(make_report(in)))["rate"]["carried_ratio"].is_null());
}
