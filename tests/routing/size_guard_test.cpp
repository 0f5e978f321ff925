// The size guard (docs/behaviour/size-guard.md) and the NACK payload
// (docs/behaviour/envelope.md#the-nack).

#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "cafmesh/actors/log.hpp"
#include "cafmesh/config/mesh_config.hpp"
#include "cafmesh/routing/size_guard.hpp"

using namespace cafmesh;
using namespace cafmesh::routing;

namespace {

/// A delivery whose payload is a JSON string of exactly `bytes` bytes (bytes >= 2).
envelope delivery_of(size_t bytes, std::string id = "cli-42") {
  envelope d;
  d.id = std::move(id);
  d.sender = address::from("portal/alice/tab1");
  d.target = address::from("node/Org/Acme");
  d.state = delivery_state::forwarded;
  d.properties["trace"] = "\"abc\"";
  d.access_context = std::string{"user:alice"};
  d.routing_path = {address::from("mesh/silo-a")};
  d.payload_type = "Acme.Documents.Upload";
  d.payload_json = "\"" + std::string(bytes - 2, 'x') + "\"";
  d.ordering_key = std::string{"stream-9"};
  return d;
}

/// Keeps stderr quiet unless CAFMESH_TEST_LOG is set, as the fixture does.
void quiet_stderr() {
  log::set_stderr_enabled(std::getenv("CAFMESH_TEST_LOG") != nullptr);
}

bool has_raw_line_break(const std::string& s) {
  return s.find('\n') != std::string::npos || s.find('\r') != std::string::npos;
}

} // namespace

TEST_CASE("size: thousands separators, UTF-8 code points and JSON quoting") {
  CHECK(with_thousands(0) == "0");
  CHECK(with_thousands(999) == "999");
  CHECK(with_thousands(1000) == "1,000");
  CHECK(with_thousands(1048576) == "1,048,576");
  CHECK(with_thousands(37483597) == "37,483,597");
  CHECK(with_thousands(104857600) == "104,857,600");
  CHECK(with_thousands(-5000) == "-5,000");
  CHECK(with_thousands(std::numeric_limits<int64_t>::min()) == "-9,223,372,036,854,775,808");
  const std::string mixed = "a€😀b"; // 1 + 3 + 4 + 1 bytes
  CHECK(mixed.size() == 9);
  CHECK(utf8_length(mixed) == 4);
  CHECK(utf8_prefix(mixed, 1) == "a");
  CHECK(utf8_prefix(mixed, 2) == "a€");
  CHECK(utf8_prefix(mixed, 3) == "a€😀");
  CHECK(utf8_prefix(mixed, 10) == mixed);
  // Invalid bytes count as one character each and are never merged with neighbours.
  const std::string bad = std::string("\xE2\x82", 2) + "z" + std::string("\xFF", 1);
  CHECK(utf8_length(bad) == 4);
  CHECK(utf8_prefix(bad, 3) == std::string("\xE2\x82", 2) + "z");
  CHECK(json_quote("a\nb") == "\"a\\nb\"");
  CHECK(json_quote("q\"b\\") == "\"q\\\"b\\\\\"");
  CHECK(json_quote(std::string("\x01", 1)) == "\"\\u0001\"");
  CHECK(json_quote("x\xE2\x80\xA8y") == "\"x\\u2028y\"");
  CHECK(json_quote("€") == "\"€\"");
  CHECK_FALSE(has_raw_line_break(json_quote("\r\n\n")));
}

TEST_CASE("size: S12.51 at limit - 1 the grain call passes, at the limit and at limit + 1 it is "
          "refused with one line naming target, sender, id, payload type, bytes, limit and the "
          "connection") {
  config::size_section cfg;
  cfg.grain_call_body_limit_bytes = 1000000;
  auto below = check_size(delivery_of(999999), size_crossing::grain_call, cfg);
  CHECK_FALSE(below.refused);
  CHECK(below.bytes == 999999);
  CHECK(below.limit_bytes == 1000000);
  CHECK(check_size(delivery_of(1000000), size_crossing::grain_call, cfg).refused);
  auto d = delivery_of(1000001);
  auto over = check_size(d, size_crossing::grain_call, cfg);
  CHECK(over.refused);
  CHECK(over.bytes == 1000001);
  auto line = size_refusal_log_line(d, over);
  CHECK_FALSE(has_raw_line_break(line));
  CHECK(line.find("node/Org/Acme") != std::string::npos);
  CHECK(line.find("portal/alice/tab1") != std::string::npos);
  CHECK(line.find("cli-42") != std::string::npos);
  CHECK(line.find("Acme.Documents.Upload") != std::string::npos);
  CHECK(line.find("1,000,001") != std::string::npos);
  CHECK(line.find("1,000,000") != std::string::npos);
  CHECK(line.find("connection") != std::string::npos);
  CHECK(line.find("an oversized frame would close the shared silo-to-silo connection")
        != std::string::npos);
  // The NACK: verdict rejected from an oversized fault, message naming the target.
  auto f = oversized_fault(d, over);
  CHECK(f.code == mesh_errc::oversized);
  CHECK(f.text.find("node/Org/Acme") != std::string::npos);
  // Logged: exactly one line, at error.
  quiet_stderr();
  log::capture logs{[] { return int64_t{0}; }};
  log_size_refusal(d, over);
  CHECK(logs.lines().size() == 1);
  CHECK(logs.count("connection", log::level::error) == 1);
}

TEST_CASE("size: S12.52 defaults refuse 142 MB grain calls, a 37,483,597-byte stream payload "
          "is refused naming 37,483,597 and 1,048,576, 1,048,575 passes and 1,048,576 does not") {
  config::size_section defaults;
  CHECK(size_limit_bytes(size_crossing::grain_call, defaults) == 104857600);
  CHECK(size_limit_bytes(size_crossing::stream_block, defaults) == 1048576);
  CHECK(refuses_size(142000000, size_limit_bytes(size_crossing::grain_call, defaults)));
  CHECK_FALSE(refuses_size(104857599, size_limit_bytes(size_crossing::grain_call, defaults)));
  // The stream limit is fixed: a larger grain-call limit does not move it.
  config::size_section big;
  big.grain_call_body_limit_bytes = 500000000;
  CHECK(size_limit_bytes(size_crossing::stream_block, big) == 1048576);
  auto d = delivery_of(37483597, "srv-7");
  d.target = address::from("portal/bob/tab2");
  auto c = check_size(d, size_crossing::stream_block, defaults);
  CHECK(c.refused);
  CHECK(c.bytes == 37483597);
  auto line = size_refusal_log_line(d, c);
  CHECK(line.find("37,483,597") != std::string::npos);
  CHECK(line.find("1,048,576") != std::string::npos);
  CHECK(line.find("portal/bob/tab2") != std::string::npos);
  CHECK(line.find("silo-to-silo") == std::string::npos);
  CHECK(line.find("nothing published") != std::string::npos);
  CHECK(line.size() < 1000);
  auto msg = size_refusal_message(d, c);
  CHECK(msg.find("portal/bob/tab2") != std::string::npos);
  auto nack = make_delivery_failure(d, msg, verdict::rejected);
  CHECK(nack.verdict == verdict::rejected);
  CHECK(nack.message.find("portal/bob/tab2") != std::string::npos);
  CHECK(nack.original.payload_json.size() < 4096);
  CHECK_FALSE(check_size(delivery_of(1048575), size_crossing::stream_block, defaults).refused);
  CHECK(check_size(delivery_of(1048576), size_crossing::stream_block, defaults).refused);
}

TEST_CASE("S12.53 an oversized echo becomes a note under 4,096 characters keeping the id, a "
          "small echo is unchanged, 400,000 euro signs are 1,200,000 bytes, a newline in the "
          "head still gives one log line") {
  // The oversized echo.
  auto big = delivery_of(2000000, "big-1");
  auto df = make_delivery_failure(big, "Delivery to 'node/Org/Acme' failed: too big",
                                  verdict::rejected);
  CHECK(df.request_id == "big-1");
  const auto& echo = df.original;
  CHECK(echo.payload_json.size() < 4096);
  CHECK(utf8_length(echo.payload_json) < 4096);
  CHECK(echo.payload_json.find("payloadOmitted") != std::string::npos);
  CHECK(echo.payload_json.find("2000000") != std::string::npos);
  CHECK(echo.payload_json.rfind("{\"payloadOmitted\":true,\"bytes\":2000000,\"head\":", 0) == 0);
  auto note = nlohmann::json::parse(echo.payload_json);
  CHECK(note["payloadOmitted"] == true);
  CHECK(note["bytes"] == 2000000);
  CHECK(note["head"].get<std::string>() == utf8_prefix(big.payload_json, 200));
  CHECK(utf8_length(note["head"].get<std::string>()) == 200);
  // Every other field is kept.
  auto restored = echo;
  restored.payload_json = big.payload_json;
  CHECK(restored == big);
  // The stripping threshold is 1,048,576 bytes.
  CHECK(strip_echo(delivery_of(1048575)) == delivery_of(1048575));
  CHECK(strip_echo(delivery_of(1048576)).payload_json.find("\"bytes\":1048576")
        != std::string::npos);
  // A small echo is carried unchanged.
  auto small = delivery_of(64, "small-1");
  CHECK(make_delivery_failure(small, "x", verdict::failed).original == small);
  // 400,000 euro signs: 1,200,000 bytes, refused for a stream payload.
  std::string euros;
  for (int i = 0; i < 400000; ++i)
    euros += "€";
  auto eu = delivery_of(2, "eu-1");
  eu.payload_json = "\"" + euros + "\"";
  CHECK(payload_bytes(eu) == 1200002); // as a JSON string literal: the two quotes count
  // The 400,000 euro signs themselves are measured as 1,200,000 bytes (never 400,000
  // characters) and refused against the 1,048,576-byte stream block.
  auto raw = delivery_of(2, "eu-raw");
  raw.payload_json = euros;
  CHECK(payload_bytes(raw) == 1200000);
  CHECK(check_size(raw, size_crossing::stream_block, config::size_section{}).refused);
  auto ec = check_size(eu, size_crossing::stream_block, config::size_section{});
  CHECK(ec.refused);
  CHECK(size_refusal_log_line(eu, ec).find("1,200,002") != std::string::npos);
  // Its echo head is 200 characters of whole euro signs.
  auto eu_note = nlohmann::json::parse(strip_echo(eu).payload_json);
  auto head = eu_note["head"].get<std::string>();
  CHECK(utf8_length(head) == 200);
  CHECK(head == "\"" + euros.substr(0, 199 * 3));
  // A newline (and a forged log line) in the first 200 characters: still one line.
  auto nl = delivery_of(2, "nl-1");
  nl.payload_json = "\"first\nERROR forged line\r\n" + std::string(1048576, 'y') + "\"";
  auto nc = check_size(nl, size_crossing::stream_block, config::size_section{});
  CHECK(nc.refused);
  quiet_stderr();
  log::capture logs{[] { return int64_t{0}; }};
  log_size_refusal(nl, nc);
  auto lines = logs.lines();
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].lvl == log::level::error);
  CHECK_FALSE(has_raw_line_break(lines[0].text));
  CHECK(lines[0].text.find("first\\nERROR forged line\\r\\n") != std::string::npos);
  // Control characters in the other fields cannot break the line either.
  auto odd = delivery_of(1048576, "id\nwith-newline");
  odd.payload_type = "T\r\nforged";
  CHECK_FALSE(has_raw_line_break(
    size_refusal_log_line(odd, check_size(odd, size_crossing::stream_block, 1048576))));
}

TEST_CASE("size: the NACK envelope is answer-suppressed, addressed to the sender, answers the "
          "delivery id and carries the access context") {
  auto d = delivery_of(64, "req-5");
  auto df = make_delivery_failure(d, "Delivery to 'node/Org/Acme' failed: boom",
                                  verdict::shutting_down, true, silo_address{"a", 11111, 4});
  CHECK(df.target_unserved);
  REQUIRE(df.responding_silo);
  auto e = make_nack_envelope(df, "silo-a-17", address::from("mesh/silo-a"));
  CHECK(e.id == "silo-a-17");
  CHECK(e.sender == address::from("mesh/silo-a"));
  CHECK(e.target == d.sender);
  CHECK(e.answer_suppressed);
  CHECK_FALSE(may_answer(e));
  REQUIRE(e.request_id);
  CHECK(*e.request_id == "req-5");
  REQUIRE(e.access_context);
  CHECK(*e.access_context == "user:alice");
  CHECK(e.payload_type == "delivery_failure");
  CHECK_FALSE(e.ordering_key);
  delivery_failure back;
  REQUIRE(from_json_text(e.payload_json, back));
  CHECK(back == df);
  auto j = nlohmann::json::parse(e.payload_json);
  CHECK(j["$type"] == "delivery_failure");
  CHECK(j["verdict"] == "shutting_down");
  CHECK(j["targetUnserved"] == true);
  CHECK(j["respondingSilo"] == "Sa:11111@4");
  CHECK(j["requestId"] == "req-5");
  CHECK(j["original"]["id"] == "req-5");
  CHECK(j["original"]["properties"]["trace"] == "\"abc\"");
  // Without an access context the NACK carries the system identity.
  auto anon = d;
  anon.access_context = caf::none;
  auto e2 = make_nack_envelope(make_delivery_failure(anon, "m", verdict::failed), "n-2",
                               address::from("mesh/silo-a"));
  REQUIRE(e2.access_context);
  CHECK(*e2.access_context == "system");
  delivery_failure back2;
  REQUIRE(from_json_text(e2.payload_json, back2));
  CHECK_FALSE(back2.responding_silo);
  CHECK_FALSE(back2.original.access_context);
  // An oversized original travels stripped inside the NACK.
  auto e3 = make_nack_envelope(make_delivery_failure(delivery_of(3000000), "m", verdict::rejected),
                               "n-3", address::from("mesh/silo-a"));
  CHECK(e3.payload_json.size() < 8192);
  delivery_failure back3;
  REQUIRE(from_json_text(e3.payload_json, back3));
  CHECK(back3.original.payload_json.find("payloadOmitted") != std::string::npos);
  // Garbage is refused without throwing.
  delivery_failure untouched;
  CHECK_FALSE(from_json_text("{", untouched));
  CHECK_FALSE(from_json_text("{\"$type\":\"other\"}", untouched));
  CHECK_FALSE(from_json_text("[1,2]", untouched));
}
