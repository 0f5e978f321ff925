#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include "cafmesh/mainjob/scenario.hpp"

using namespace cafmesh;
using namespace cafmesh::mainjob;

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in{path};
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

std::vector<std::string> errors_of(const std::string& text) {
  auto r = parse_scenario(text);
  CHECK_FALSE(r.ok);
  return r.errors;
}

const std::string minimal = R"({"name":"x","expected_outcome":"y"})";

} // namespace

TEST_CASE("mainjob scenario: the shipped scenarios load and state an expected outcome") {
  for (auto name : {"roll-three-silos", "stalled-directory-owner", "co-hosted-vs-client",
                    "overlapping-stops", "kill-gateway"}) {
    CAPTURE(name);
    auto r = load_scenario_file(std::string{CAFMESH_SCENARIO_DIR} + "/" + name + ".json");
    REQUIRE_MESSAGE(r.ok, r.message());
    CHECK(r.value.name == name);
    CHECK(r.value.expected_outcome.size() > 40);
  }
}

TEST_CASE("mainjob scenario: overload-roll loads, with the admission bounds routing.max_in_flight and gateway.max_outstanding in its config") {
  auto r = load_scenario_file(std::string{CAFMESH_SCENARIO_DIR} + "/overload-roll.json");
  REQUIRE_MESSAGE(r.ok, r.message());
  CHECK(r.value.name == "overload-roll");
  CHECK(r.value.expect.max_p99_ms == 1000);
  CHECK(r.value.expect.min_overload_refusals == 1);
  CHECK(r.value.config_json.find("max_in_flight") != std::string::npos);
}

TEST_CASE("mainjob scenario: the embedded default is roll-three-silos.json byte for byte") {
  CHECK(default_scenario_text() == read_text(std::string{CAFMESH_SCENARIO_DIR}
                                             + "/roll-three-silos.json"));
  auto s = default_scenario();
  CHECK(s.name == "roll-three-silos");
  CHECK(s.seed == 42);
  CHECK(s.duration_s == 60);
  CHECK(s.rate_per_s == 2000);
  CHECK(s.silos == std::vector<std::string>{"A", "B", "C"});
  CHECK(s.pure_clients == 1);
  CHECK(s.traffic.streams == 100);
  CHECK(s.traffic.senders == sender_placement::pure_client);
  CHECK(s.roll.order == std::vector<std::string>{"A", "B", "C"});
  CHECK(s.expect.max_nacked.at(routing::verdict::failed) == 0);
  CHECK(s.expect.max_request_resends_exhausted == 0);
  CHECK(s.expect.forbidden_nack_texts
        == std::vector<std::string>{"no active silo", "no_compatible_silo"});
}

TEST_CASE("mainjob scenario: the shipped scenarios differ where they say") {
  auto stalled = load_scenario_file(std::string{CAFMESH_SCENARIO_DIR}
                                    + "/stalled-directory-owner.json");
  REQUIRE(stalled.ok);
  CHECK(stalled.value.roll.order.empty());
  REQUIRE(stalled.value.faults.size() == 1);
  CHECK(stalled.value.faults[0].silo == "C");
  CHECK(stalled.value.faults[0].at_ms == 5000);
  CHECK(stalled.value.faults[0].for_ms == 90000);
  CHECK_FALSE(stalled.value.faults[0].detected);
  REQUIRE(stalled.value.traffic.bursts.size() == 1);
  CHECK(stalled.value.traffic.bursts[0].count == 331);
  CHECK(stalled.value.traffic.bursts[0].within_ms == 50);
  CHECK(stalled.value.traffic.bursts[0].at_ms == 20000); // 15 s into the stall
  CHECK(stalled.value.expect.forbidden_nack_texts
        == std::vector<std::string>{"placement of routing/default"});
  CHECK(stalled.value.expect.required_nack_texts.at(routing::verdict::failed)
        == std::vector<std::string>{"timed out", "expired"});
  auto mixed = load_scenario_file(std::string{CAFMESH_SCENARIO_DIR} + "/co-hosted-vs-client.json");
  REQUIRE(mixed.ok);
  CHECK(mixed.value.traffic.senders == sender_placement::both);
}

TEST_CASE("mainjob scenario: a minimal document takes every default") {
  auto r = parse_scenario(minimal);
  REQUIRE_MESSAGE(r.ok, r.message());
  CHECK(r.value.seed == 42);
  CHECK(r.value.traffic.request_max_resends == 5);
  CHECK(r.value.config_json == "{}");
  CHECK(r.value.roll.order.empty());
}

TEST_CASE("mainjob scenario: to_json_text round-trips") {
  auto s = default_scenario();
  auto again = parse_scenario(to_json_text(s));
  REQUIRE_MESSAGE(again.ok, again.message());
  CHECK(to_json_text(again.value) == to_json_text(s));
  auto stalled = load_scenario_file(std::string{CAFMESH_SCENARIO_DIR}
                                    + "/stalled-directory-owner.json");
  REQUIRE(stalled.ok);
  auto back = parse_scenario(to_json_text(stalled.value));
  REQUIRE_MESSAGE(back.ok, back.message());
  CHECK(to_json_text(back.value) == to_json_text(stalled.value));
}

TEST_CASE("mainjob scenario: validation errors name the JSON pointer") {
  CHECK(errors_of(R"({"name":"x"})")
        == std::vector<std::string>{"/expected_outcome: expected a non-empty string, got nothing"});
  CHECK(errors_of(R"({"name":"x","expected_outcome":"y","rate_per_s":0})")
        == std::vector<std::string>{"/rate_per_s: expected an integer from 1 to 1000000, got 0"});
  CHECK(errors_of(R"({"name":"x","expected_outcome":"y","durations":5})")
        == std::vector<std::string>{"/durations: unknown key, did you mean \"duration_s\"?"});
  CHECK(errors_of(R"({"name":"x","expected_outcome":"y","traffic":{"streams":"many"}})")
        == std::vector<std::string>{"/traffic/streams: expected an integer from 0 to 1000000, got \"many\""});
  CHECK(errors_of(R"({"name":"x","expected_outcome":"y","seed":-1})")
        == std::vector<std::string>{"/seed: expected an integer from 0 to 18446744073709551615, got -1"});
  CHECK(errors_of(R"({"name":"x","name":"z","expected_outcome":"y"})")
        == std::vector<std::string>{"/name: duplicate key"});
  CHECK(errors_of(R"({"name":"x","expected_outcome":"y","topology":{"silos":["A","A"]}})")
        == std::vector<std::string>{"/topology/silos/1: expected a silo name not listed before, got \"A\""});
  CHECK(errors_of(R"({"name":"x","expected_outcome":"y","traffic":{"senders":"cohosted"}})")
        == std::vector<std::string>{
          "/traffic/senders: expected one of \"pure_client\", \"co_hosted\", \"both\", got \"cohosted\""});
  CHECK(errors_of("{\"name\":")
        == std::vector<std::string>{
          ": expected valid JSON, got a parse error at line 1, column 9: syntax error while "
          "parsing value - unexpected end of input; expected '[', '{', or a literal"});
  CHECK(errors_of(R"({"seed":-1e999})")
        == std::vector<std::string>{": expected JSON numbers within the range of a double, "
                                    "got number overflow parsing '-1e999'"});
}

TEST_CASE("mainjob scenario: errors come in document order, missing required keys last") {
  CHECK(errors_of(R"({"rate_per_s":0,"bogus":1,"faults":[{"kind":"crash","silo":"A","at_ms":0,"for_ms":1,"at_ms":2}]})")
        == std::vector<std::string>{
          "/rate_per_s: expected an integer from 1 to 1000000, got 0",
          "/bogus: unknown key, known keys: name, description, expected_outcome, seed, "
          "duration_s, rate_per_s, topology, traffic, roll, faults, config, expect",
          "/faults/0/kind: expected one of \"stall\", \"kill\", \"second_signal\", got \"crash\"",
          "/faults/0/at_ms: duplicate key",
          "/name: expected a non-empty string, got nothing",
          "/expected_outcome: expected a non-empty string, got nothing"});
}

TEST_CASE("mainjob scenario: relations are checked once every key is valid") {
  CHECK(errors_of(R"({"name":"x","expected_outcome":"y","roll":{"order":["A","D"]}})")
        == std::vector<std::string>{"/roll/order/1: expected one of the silos (A, B, C), got \"D\""});
  CHECK(errors_of(R"({"name":"x","expected_outcome":"y","duration_s":5,"roll":{"order":["A"]}})")
        == std::vector<std::string>{
          "/roll/first_stop_at_ms: expected an integer < duration_s * 1000 (5000), got 5000"});
  CHECK(errors_of(R"({"name":"x","expected_outcome":"y","traffic":{"portal_hubs":1}})")
        == std::vector<std::string>{
          "/traffic/subscribers_per_stream: expected an integer <= portal_hubs (1), got 2"});
  CHECK(errors_of(R"({"name":"x","expected_outcome":"y","topology":{"pure_clients":0}})")
        == std::vector<std::string>{
          "/topology/pure_clients: expected an integer >= 1 (traffic.senders is \"pure_client\"), got 0"});
  CHECK(errors_of(R"({"name":"x","expected_outcome":"y","faults":[{"kind":"stall","silo":"Z","at_ms":0,"for_ms":1}]})")
        == std::vector<std::string>{"/faults/0/silo: expected one of the silos (A, B, C), got \"Z\""});
  // a relation is not checked while a key is invalid on its own
  CHECK(errors_of(R"({"name":"x","expected_outcome":"y","rate_per_s":0,"roll":{"order":["D"]}})")
        == std::vector<std::string>{"/rate_per_s: expected an integer from 1 to 1000000, got 0"});
}

TEST_CASE("mainjob scenario: config overrides are validated by the config loader") {
  CHECK(errors_of(R"({"name":"x","expected_outcome":"y","config":{"routing":{"retry_max":"six"}}})")
        == std::vector<std::string>{"/config/routing/retry_max: expected an integer >= 0, got \"six\""});
  CHECK(errors_of(R"({"name":"x","expected_outcome":"y","config":{"mesh":{"process_role":"monolith"}}})")
        == std::vector<std::string>{
          "/config/mesh: expected no mesh section (the demo sets each process's role and name), "
          "got {\"process_role\":\"monolith\"}"});
  auto r = parse_scenario(
    R"({"name":"x","expected_outcome":"y","config":{"lifecycle":{"quiescence_hold_ms":200}}})");
  REQUIRE(r.ok);
  auto c = process_config(r.value, config::process_role::silo_host, "silo-A");
  REQUIRE_MESSAGE(c.ok, c.message());
  CHECK(c.value.lifecycle.quiescence_hold_ms == 200);
  CHECK(c.value.mesh.name == "silo-A");
  CHECK(c.value.mesh.role == config::process_role::silo_host);
}

TEST_CASE("mainjob scenario: expect names NACK verdicts only") {
  CHECK(errors_of(R"({"name":"x","expected_outcome":"y","expect":{"max_nacked":{"ignored":0,"failed":-1}}})")
        == std::vector<std::string>{
          "/expect/max_nacked/ignored: unknown key, expected a NACK verdict (docs/behaviour/envelope.md#verdicts)",
          "/expect/max_nacked/failed: expected an integer >= 0, got -1"});
}

TEST_CASE("mainjob scenario: overrides --seed --duration-s --rate") {
  auto s = default_scenario();
  CHECK(apply_overrides(s, {7u, 30, 500, std::nullopt, std::nullopt}).empty());
  CHECK(s.seed == 7);
  CHECK(s.duration_s == 30);
  CHECK(s.rate_per_s == 500);
  auto before = to_json_text(s);
  CHECK(apply_overrides(s, {std::nullopt, 0, 0, std::nullopt, std::nullopt})
        == std::vector<std::string>{
          "--duration-s: expected an integer from 1 to 86400, got 0",
          "--rate: expected an integer from 1 to 1000000, got 0"});
  CHECK(apply_overrides(s, {std::nullopt, 5, std::nullopt, std::nullopt, std::nullopt})
        == std::vector<std::string>{
          "--duration-s: expected more than roll.first_stop_at_ms (5000 ms) of traffic, got 5 s"});
  CHECK(to_json_text(s) == before); // refused overrides change nothing
  CHECK(apply_overrides(s, {std::nullopt, 5, std::nullopt, std::nullopt, std::nullopt}, false).empty()); // no roll: fine
  CHECK(s.duration_s == 5);
}

TEST_CASE("mainjob scenario: override --request-deadline-ms") {
  auto s = default_scenario();
  scenario_overrides o;
  o.request_deadline_ms = 10000;
  CHECK(apply_overrides(s, o).empty());
  CHECK(s.traffic.request_deadline_ms == 10000);
  o.request_deadline_ms = 0;
  CHECK(apply_overrides(s, o)
        == std::vector<std::string>{"--request-deadline-ms: expected an integer >= 1, got 0"});
  CHECK(s.traffic.request_deadline_ms == 10000);
}

TEST_CASE("mainjob scenario: override --time-scale stretches the traffic's and the roll's times "
          "by its factor and divides the rate, so the planned deliveries stay the same") {
  auto s = load_scenario_file(CAFMESH_SCENARIO_DIR "/overload-roll.json").value;
  REQUIRE(s.faults.empty());
  REQUIRE(s.traffic.bursts.empty());
  s.expect.max_p99_ms = 2000;
  auto before = s;
  scenario_overrides o;
  o.rate_per_s = 3001;
  o.time_scale = 4;
  CHECK(apply_overrides(s, o).empty());
  CHECK(s.duration_s == before.duration_s * 4);
  CHECK(s.rate_per_s == 750); // 3001 / 4, rounded down
  CHECK(s.traffic.request_deadline_ms == before.traffic.request_deadline_ms * 4);
  CHECK(s.roll.order == before.roll.order);
  CHECK(s.roll.first_stop_at_ms == before.roll.first_stop_at_ms * 4);
  CHECK(s.roll.restart_delay_ms == before.roll.restart_delay_ms * 4);
  CHECK(s.roll.interval_ms == before.roll.interval_ms * 4);
  CHECK(s.expect.max_p99_ms == std::optional<int64_t>{8000});
  CHECK(s.traffic.request_max_resends == before.traffic.request_max_resends);
  CHECK(s.config_json == before.config_json); // the silos' own timers are not scaled
  // Independent roll steps: each step's time and restart delay.
  auto stepped = before;
  stepped.roll.order.clear();
  stepped.roll.steps = {{"A", 3000, 1000}, {"B", 3500, 700}};
  CHECK(apply_overrides(stepped, scenario_overrides{std::nullopt, std::nullopt, std::nullopt,
                                                    std::nullopt, 3}).empty());
  CHECK(stepped.roll.steps == std::vector<roll_step_spec>{{"A", 9000, 3000}, {"B", 10500, 2100}});
  // A scale of 1 changes nothing; 0 and 101 are refused and change nothing either.
  auto one = before;
  CHECK(apply_overrides(one, scenario_overrides{std::nullopt, std::nullopt, std::nullopt,
                                                std::nullopt, 1}).empty());
  CHECK(to_json_text(one) == to_json_text(before));
  for (int64_t bad : {int64_t{0}, int64_t{101}}) {
    auto x = before;
    CHECK(apply_overrides(x, scenario_overrides{std::nullopt, std::nullopt, std::nullopt,
                                                std::nullopt, bad})
          == std::vector<std::string>{"--time-scale: expected an integer from 1 to 100, got "
                                      + std::to_string(bad)});
    CHECK(to_json_text(x) == to_json_text(before));
  }
  auto day = before;
  day.duration_s = 86400;
  day.rate_per_s = 1;
  CHECK(apply_overrides(day, scenario_overrides{std::nullopt, std::nullopt, std::nullopt,
                                                std::nullopt, 2})
        == std::vector<std::string>{"--time-scale: expected at most 86400 s of traffic once "
                                    "stretched, got 2 x 86400 s"});
  // The rate never falls below 1 per second.
  auto slow = before;
  slow.rate_per_s = 3;
  CHECK(apply_overrides(slow, scenario_overrides{std::nullopt, std::nullopt, std::nullopt,
                                                 std::nullopt, 4}).empty());
  CHECK(slow.rate_per_s == 1);
}

TEST_CASE("mainjob scenario: override --time-scale above 1 refuses a scenario with faults or "
          "bursts, whose lengths are measured against the silos' unscaled timers") {
  auto s = load_scenario_file(CAFMESH_SCENARIO_DIR "/stalled-directory-owner.json").value;
  REQUIRE(s.faults.size() == 1);
  REQUIRE(s.traffic.bursts.size() == 1);
  auto before = to_json_text(s);
  scenario_overrides o;
  o.time_scale = 2;
  CHECK(apply_overrides(s, o)
        == std::vector<std::string>{
          "--time-scale: expected a scenario without faults and bursts when above 1 (how long "
          "a stall, an outage or a burst lasts is measured against the silos' own timers, which "
          "are not scaled), got 1 fault(s) and 1 burst(s)"});
  CHECK(to_json_text(s) == before);
  o.time_scale = 1; // 1 changes nothing, so it is taken
  CHECK(apply_overrides(s, o).empty());
  CHECK(to_json_text(s) == before);
}

TEST_CASE("mainjob scenario: hub addresses and sender placement") {
  CHECK(node_hub_address(3) == "node/Org/N3");
  CHECK(owner_hub_address(0) == "node/Owner/O0");
  CHECK(portal_hub_address(12) == "portal/user12/tab1");
  CHECK(stream_id(99) == "stream-99");
  auto s = default_scenario();
  CHECK(portal_origin(s, 5) == "client:1");
  s.traffic.senders = sender_placement::co_hosted;
  CHECK(portal_origin(s, 4) == "silo:B");
  s.traffic.senders = sender_placement::both;
  s.pure_clients = 2;
  CHECK(portal_origin(s, 4) == "silo:C");   // even: silo (4 / 2) % 3
  CHECK(portal_origin(s, 3) == "client:2"); // odd: client (3 / 2) % 2 + 1
}

TEST_CASE("mainjob scenario: traffic bursts and required NACK texts are validated and round-trip") {
  CHECK(errors_of(R"({"name":"x","expected_outcome":"y","traffic":{"bursts":[{"at_ms":1000,"count":0},{"count":5}]}})")
        == std::vector<std::string>{
          "/traffic/bursts/0/count: expected an integer from 1 to 100000, got 0",
          "/traffic/bursts/1/at_ms: expected an integer >= 0, got nothing"});
  CHECK(errors_of(R"({"name":"x","expected_outcome":"y","duration_s":5,"traffic":{"bursts":[{"at_ms":5000,"count":3}]}})")
        == std::vector<std::string>{
          "/traffic/bursts/0/at_ms: expected an integer < duration_s * 1000 (5000), got 5000"});
  CHECK(errors_of(R"({"name":"x","expected_outcome":"y","expect":{"required_nack_texts":{"failed":[],"late":["x"],"unavailable":"timed out"}}})")
        == std::vector<std::string>{
          "/expect/required_nack_texts/failed: expected a non-empty array of non-empty strings, got []",
          "/expect/required_nack_texts/late: unknown key, expected a NACK verdict (docs/behaviour/envelope.md#verdicts)",
          "/expect/required_nack_texts/unavailable: expected an array of non-empty strings, got \"timed out\""});
  auto r = parse_scenario(R"({"name":"x","expected_outcome":"y","traffic":{"bursts":[{"at_ms":1500,"count":331}]},"expect":{"required_nack_texts":{"failed":["timed out","expired"]}}})");
  REQUIRE_MESSAGE(r.ok, r.message());
  REQUIRE(r.value.traffic.bursts.size() == 1);
  CHECK(r.value.traffic.bursts[0].at_ms == 1500);
  CHECK(r.value.traffic.bursts[0].count == 331);
  CHECK(r.value.traffic.bursts[0].within_ms == 50);
  CHECK(r.value.expect.required_nack_texts.at(routing::verdict::failed)
        == std::vector<std::string>{"timed out", "expired"});
  auto back = parse_scenario(to_json_text(r.value));
  REQUIRE_MESSAGE(back.ok, back.message());
  CHECK(to_json_text(back.value) == to_json_text(r.value));
}

TEST_CASE("mainjob scenario: overlapping roll steps are validated and round-trip") {
  auto r = parse_scenario(
    R"({"name":"x","expected_outcome":"y","duration_s":10,"roll":{"steps":[{"silo":"A","at_ms":2000},{"silo":"B","at_ms":2300,"restart_delay_ms":400}],"restart_delay_ms":700}})");
  REQUIRE_MESSAGE(r.ok, r.message());
  CHECK(r.value.roll.order.empty());
  CHECK(r.value.roll.steps
        == std::vector<roll_step_spec>{{"A", 2000, 700}, {"B", 2300, 400}});
  auto back = parse_scenario(to_json_text(r.value));
  REQUIRE_MESSAGE(back.ok, back.message());
  CHECK(back.value.roll.steps == r.value.roll.steps);
  CHECK(errors_of(R"({"name":"x","expected_outcome":"y","roll":{"steps":[{"silo":"A"}]}})")
        == std::vector<std::string>{"/roll/steps/0/at_ms: expected an integer >= 0, got nothing"});
  CHECK(errors_of(R"({"name":"x","expected_outcome":"y","roll":{"steps":[{"silo":"A","at":1}]}})")
        == std::vector<std::string>{"/roll/steps/0/at: unknown key, known keys: silo, at_ms, restart_delay_ms",
                                    "/roll/steps/0/at_ms: expected an integer >= 0, got nothing"});
  CHECK(errors_of(R"({"name":"x","expected_outcome":"y","roll":{"steps":{"silo":"A"}}})")
        == std::vector<std::string>{"/roll/steps: expected an array of roll steps, got {\"silo\":\"A\"}"});
  CHECK(errors_of(R"({"name":"x","expected_outcome":"y","roll":{"steps":[{"silo":"D","at_ms":1}]}})")
        == std::vector<std::string>{"/roll/steps/0/silo: expected one of the silos (A, B, C), got \"D\""});
  CHECK(errors_of(R"({"name":"x","expected_outcome":"y","roll":{"steps":[{"silo":"A","at_ms":1},{"silo":"A","at_ms":5}]}})")
        == std::vector<std::string>{"/roll/steps/1/silo: expected a silo no earlier step names, got \"A\""});
  CHECK(errors_of(R"({"name":"x","expected_outcome":"y","duration_s":2,"roll":{"steps":[{"silo":"A","at_ms":2000}]}})")
        == std::vector<std::string>{"/roll/steps/0/at_ms: expected an integer < duration_s * 1000 (2000), got 2000"});
  CHECK(errors_of(R"({"name":"x","expected_outcome":"y","roll":{"order":["B"],"steps":[{"silo":"A","at_ms":1}]}})")
        == std::vector<std::string>{
          "/roll/steps: expected an empty array when roll.order names silos (one or the other), got [\"A\"]..."});
}

TEST_CASE("mainjob scenario: fault kinds kill and second_signal are validated and round-trip") {
  auto r = parse_scenario(
    R"({"name":"x","expected_outcome":"y","faults":[{"kind":"kill","silo":"A","at_ms":3000,"restart_after_ms":2000},{"kind":"kill","silo":"B","at_ms":4000},{"kind":"second_signal","silo":"C","at_ms":5000}]})");
  REQUIRE_MESSAGE(r.ok, r.message());
  REQUIRE(r.value.faults.size() == 3);
  CHECK(r.value.faults[0].kind == "kill");
  CHECK(r.value.faults[0].restart_after_ms == 2000);
  CHECK_FALSE(r.value.faults[1].restart_after_ms.has_value());
  CHECK(r.value.faults[2].kind == "second_signal");
  CHECK(r.value.faults[2].at_ms == 5000);
  auto back = parse_scenario(to_json_text(r.value));
  REQUIRE_MESSAGE(back.ok, back.message());
  CHECK(to_json_text(back.value) == to_json_text(r.value));
  CHECK(errors_of(R"({"name":"x","expected_outcome":"y","faults":[{"kind":"crash","silo":"A","at_ms":1,"for_ms":1}]})")
        == std::vector<std::string>{
          "/faults/0/kind: expected one of \"stall\", \"kill\", \"second_signal\", got \"crash\""});
  CHECK(errors_of(R"({"name":"x","expected_outcome":"y","faults":[{"kind":"kill","silo":"A","at_ms":1,"for_ms":5}]})")
        .at(0)
        .rfind("/faults/0/for_ms: unknown key", 0)
        == 0);
  CHECK(errors_of(R"({"name":"x","expected_outcome":"y","faults":[{"kind":"second_signal","silo":"A","at_ms":1,"restart_after_ms":5}]})")
        .at(0)
        .rfind("/faults/0/restart_after_ms: unknown key", 0)
        == 0);
  CHECK(errors_of(R"({"name":"x","expected_outcome":"y","faults":[{"kind":"kill","silo":"A","at_ms":1,"restart_after_ms":-1}]})")
        == std::vector<std::string>{
          "/faults/0/restart_after_ms: expected an integer >= 0, got -1"});
  CHECK(errors_of(R"({"name":"x","expected_outcome":"y","faults":[{"kind":"kill","silo":"Q","at_ms":1}]})")
        == std::vector<std::string>{"/faults/0/silo: expected one of the silos (A, B, C), got \"Q\""});
  CHECK(errors_of(R"({"name":"x","expected_outcome":"y","faults":[{"kind":"stall","silo":"A","at_ms":1}]})")
        == std::vector<std::string>{"/faults/0/for_ms: expected an integer >= 1, got nothing"});
}

TEST_CASE("mainjob scenario: expect max_request_deadlines, max_p99_ms and traffic overload_max_resends") {
  auto r = parse_scenario(
    R"({"name":"x","expected_outcome":"y","traffic":{"overload_max_resends":7},"expect":{"max_request_deadlines":0,"max_p99_ms":250}})");
  REQUIRE_MESSAGE(r.ok, r.message());
  CHECK(r.value.traffic.overload_max_resends == 7);
  CHECK(r.value.expect.max_request_deadlines == 0);
  CHECK(r.value.expect.max_p99_ms == 250);
  auto back = parse_scenario(to_json_text(r.value));
  REQUIRE_MESSAGE(back.ok, back.message());
  CHECK(to_json_text(back.value) == to_json_text(r.value));
  CHECK(parse_scenario(minimal).value.traffic.overload_max_resends == 20);
  CHECK(errors_of(R"({"name":"x","expected_outcome":"y","expect":{"max_p99_ms":"fast"}})")
        .at(0)
        .rfind("/expect/max_p99_ms: expected an integer", 0)
        == 0);
}

TEST_CASE("mainjob scenario: expect min_carried_ratio is a number above 0 and at most 1, round-trips, and overload-roll sets its own") {
  auto r = parse_scenario(R"({"name":"x","expected_outcome":"y","expect":{"min_carried_ratio":0.25}})");
  REQUIRE_MESSAGE(r.ok, r.message());
  CHECK(r.value.expect.min_carried_ratio == 0.25);
  auto back = parse_scenario(to_json_text(r.value));
  REQUIRE_MESSAGE(back.ok, back.message());
  CHECK(back.value.expect.min_carried_ratio == 0.25);
  auto one = parse_scenario(R"({"name":"x","expected_outcome":"y","expect":{"min_carried_ratio":1}})");
  REQUIRE_MESSAGE(one.ok, one.message());
  CHECK(one.value.expect.min_carried_ratio == 1.0);
  // not given: none (the report applies its default, 0.95), and to_json_text leaves it out
  auto none = parse_scenario(minimal);
  REQUIRE(none.ok);
  CHECK_FALSE(none.value.expect.min_carried_ratio.has_value());
  CHECK(to_json_text(none.value).find("min_carried_ratio") == std::string::npos);
  for (auto [bad, shown] : std::vector<std::pair<std::string, std::string>>{
         {"0", "0"}, {"-0.5", "-0.5"}, {"1.01", "1.01"}, {"\"most\"", "\"most\""},
         {"true", "true"}, {"null", "null"}}) {
    CAPTURE(bad);
    CHECK(errors_of(R"({"name":"x","expected_outcome":"y","expect":{"min_carried_ratio":)" + bad
                    + "}}")
          == std::vector<std::string>{
            "/expect/min_carried_ratio: expected a number greater than 0 and at most 1, got "
            + shown});
  }
  auto overload = load_scenario_file(CAFMESH_SCENARIO_DIR "/overload-roll.json");
  REQUIRE_MESSAGE(overload.ok, overload.message());
  CHECK(overload.value.expect.min_carried_ratio == 0.05);
}
