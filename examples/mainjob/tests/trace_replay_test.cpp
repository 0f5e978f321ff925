#include <doctest/doctest.h>

#include "cafmesh/mainjob/trace_replay.hpp"

using namespace cafmesh;
using namespace cafmesh::mainjob;
using routing::verdict;

namespace {

std::vector<std::string> errors_of(const std::string& text) {
  auto r = parse_trace(text);
  CHECK_FALSE(r.ok);
  CHECK(r.entries.empty());
  return r.errors;
}

const char* good_trace =
  R"({"t_ms":0,"sender":"portal/u1/tab1","target":"node/Org/N1","stream":"","payload_bytes":10,"kind":"request"}
{"t_ms":0,"sender":"node/Owner/O1","target":"portal/u1/tab1","stream":"s1","payload_bytes":100,"kind":"frame"}

{"t_ms":5,"sender":"node/Owner/O1","target":"portal/u1/tab1","stream":"s1","payload_bytes":100,"kind":"frame"}
{"t_ms":5,"sender":"node/Owner/O1","target":"portal/u2/tab1","stream":"s1","payload_bytes":100,"kind":"frame"}
{"t_ms":9,"sender":"portal/u1/tab1","target":"node/Org/N2","stream":"","payload_bytes":0,"kind":"heartbeat"}
{"t_ms":9,"sender":"portal/u1/tab1","target":"node/Org/N2","stream":"","payload_bytes":0,"kind":"post"}
)";

} // namespace

TEST_CASE("mainjob trace: a valid file parses with its line numbers") {
  auto r = parse_trace(good_trace);
  REQUIRE_MESSAGE(r.ok, r.message());
  REQUIRE(r.entries.size() == 6);
  CHECK(r.entries[0] == trace_entry{1, 0, "portal/u1/tab1", "node/Org/N1", "", 10, "request"});
  CHECK(r.entries[2].line == 4); // the blank line 3 is skipped but counted
  CHECK(r.entries[5].kind == "post");
}

TEST_CASE("mainjob trace: validation errors name the line and the JSON pointer") {
  CHECK(errors_of(R"({"t_ms":-1,"sender":"portal/u1/tab1","target":"node/Org/N1","stream":"","payload_bytes":10,"kind":"request"})")
        == std::vector<std::string>{"line 1: /t_ms: expected an integer >= 0, got -1"});
  CHECK(errors_of("\n" R"({"t_ms":1,"sender":"nobody","target":"node/Org/N1","stream":"","payload_bytes":10,"kind":"request"})")
        == std::vector<std::string>{"line 2: /sender: expected an address type/id, got \"nobody\""});
  CHECK(errors_of(R"({"t_ms":1,"sender":"portal/u1/tab1","target":"node/Org/N1","stream":"","payload_bytes":10,"kind":"rpc"})")
        == std::vector<std::string>{
          "line 1: /kind: expected one of \"request\", \"post\", \"heartbeat\", \"frame\", got \"rpc\""});
  CHECK(errors_of(R"({"t_ms":1,"sender":"portal/u1/tab1","target":"node/Org/N1","payload_bytes":10,"kind":"request","tms":3})")
        == std::vector<std::string>{"line 1: /tms: unknown key, did you mean \"t_ms\"?",
                                    "line 1: /stream: expected a string, got nothing"});
  CHECK(errors_of(R"({"t_ms":1,"sender":"portal/u1/tab1","target":"node/Org/N1","stream":"","payload_bytes":1048576,"kind":"post"})")
        == std::vector<std::string>{
          "line 1: /payload_bytes: expected an integer from 0 to 1048575, got 1048576"});
  CHECK(errors_of("{\"t_ms\":1,")
        == std::vector<std::string>{
          "line 1: expected valid JSON, got a parse error at column 11: syntax error "
          "while parsing object key - unexpected end of input; expected string literal"});
  CHECK(errors_of("[1]") == std::vector<std::string>{"line 1: expected an object, got [1]"});
  CHECK(errors_of(R"({"t_ms":1e999})")
        == std::vector<std::string>{"line 1: expected JSON numbers within the range of a "
                                    "double, got number overflow parsing '1e999'"});
}

TEST_CASE("mainjob trace: times never go back and only frames have a stream") {
  CHECK(errors_of(
          R"({"t_ms":5,"sender":"portal/u1/tab1","target":"node/Org/N1","stream":"","payload_bytes":1,"kind":"post"}
{"t_ms":4,"sender":"portal/u1/tab1","target":"node/Org/N1","stream":"","payload_bytes":1,"kind":"post"}
{"t_ms":6,"sender":"node/Owner/O1","target":"portal/u1/tab1","stream":"","payload_bytes":1,"kind":"frame"}
{"t_ms":6,"sender":"portal/u1/tab1","target":"node/Org/N1","stream":"s","payload_bytes":1,"kind":"request"})")
        == std::vector<std::string>{
          "line 2: /t_ms: expected an integer >= 5 (the t_ms of the line before), got 4",
          "line 3: /stream: expected a non-empty stream id for kind \"frame\", got \"\"",
          "line 4: /stream: expected \"\" for kind \"request\" (only frames have a stream), got \"s\""});
}

TEST_CASE("mainjob trace: replay stamps owner versions, Full first per subscriber") {
  auto r = parse_trace(good_trace);
  REQUIRE(r.ok);
  trace_replay replay{r.entries, "c1", "client:1"};
  CHECK(replay.next_due_ms() == 0);
  auto first = replay.take_due(4);
  REQUIRE(first.size() == 2);
  CHECK(first[0].id == "c1-1");
  CHECK(first[0].kind == delivery_kind::request);
  CHECK(first[0].origin == "client:1");
  REQUIRE(first[1].frame.has_value());
  CHECK(first[1].frame->type == routing::sync_frame::kind::full);
  CHECK(first[1].frame->version == 1);
  CHECK(replay.next_due_ms() == 5);
  auto rest = replay.take_due(100);
  REQUIRE(rest.size() == 4);
  CHECK(rest[0].frame->type == routing::sync_frame::kind::patch); // u1 has had its Full
  CHECK(rest[0].frame->version == 2);
  CHECK(rest[1].frame->type == routing::sync_frame::kind::full);  // u2's first frame
  CHECK(rest[1].frame->version == 3);
  CHECK(rest[2].answer_suppressed);
  CHECK_FALSE(rest[3].answer_suppressed);
  CHECK(rest[3].kind == delivery_kind::post);
  CHECK_FALSE(replay.next_due_ms().has_value());
  // reactions are the generator's
  auto again = replay.on_outcome(first[0], {outcome_kind::nack, verdict::unavailable}, 50);
  REQUIRE(again.size() == 1);
  CHECK(again[0].id == "c1-r1");
  CHECK(again[0].attempt == 1);
  auto full = replay.on_outcome(rest[0], {outcome_kind::nack, verdict::shutting_down}, 51);
  REQUIRE(full.size() == 1);
  CHECK(full[0].frame->type == routing::sync_frame::kind::full);
  CHECK(full[0].frame->version == 3);
}

TEST_CASE("mainjob trace: a generated plan written as trace lines reads back") {
  auto s = default_scenario();
  s.duration_s = 1;
  s.rate_per_s = 300;
  traffic_generator g{s};
  auto plan = g.take_all();
  std::string text;
  for (auto& d : plan)
    text += to_trace_line(d) + "\n";
  auto r = parse_trace(text);
  REQUIRE_MESSAGE(r.ok, r.message());
  REQUIRE(r.entries.size() == plan.size());
  for (size_t i = 0; i < plan.size(); ++i) {
    CAPTURE(i);
    CHECK(r.entries[i].t_ms == plan[i].t_ms);
    CHECK(r.entries[i].sender == plan[i].sender);
    CHECK(r.entries[i].target == plan[i].target);
    CHECK(r.entries[i].stream == plan[i].stream);
    CHECK(r.entries[i].payload_bytes == plan[i].payload_bytes);
    CHECK(r.entries[i].kind
          == (plan[i].answer_suppressed ? "heartbeat" : to_string(plan[i].kind)));
  }
}

TEST_CASE("mainjob trace: an unreadable file is one error") {
  auto r = load_trace_file("/nonexistent/trace.jsonl");
  CHECK_FALSE(r.ok);
  CHECK(r.errors
        == std::vector<std::string>{
          "cannot read trace file \"/nonexistent/trace.jsonl\": No such file or directory"});
}
