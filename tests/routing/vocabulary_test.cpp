// Wire vocabulary of the routing layer (docs/behaviour/envelope.md#addresses, #the-envelope,
// #delivery-states, #verdicts, #the-nack): addresses and their host-address reduction, the
// envelope, delivery states, verdicts and the NACK payload.

#include <stdexcept>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include <caf/all.hpp>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/routing/address.hpp"
#include "cafmesh/routing/envelope.hpp"
#include "cafmesh/routing/register_types.hpp"
#include "cafmesh/routing/verdict.hpp"
#include "cafmesh/testing/fixture.hpp"

using cafmesh::silo_address;
using cafmesh::routing::address;
using cafmesh::routing::delivery_failure;
using cafmesh::routing::delivery_state;
using cafmesh::routing::envelope;
using cafmesh::routing::host_address;
using cafmesh::routing::verdict;

namespace {

/// Renders `e` for a failure message. doctest evaluates the message of every logged assertion
/// (also passing ones under `-s`), and CAF 0.17's `render` dereferences null on an empty error.
std::string describe(caf::actor_system& sys, const caf::error& e) {
  return e ? sys.render(e) : std::string{"none"};
}

template <class T>
T binary_roundtrip(caf::actor_system& sys, const T& x) {
  std::vector<char> buf;
  caf::binary_serializer sink{sys, buf};
  auto tmp = x;
  auto err = sink(tmp);
  REQUIRE_MESSAGE(!err, describe(sys, err));
  T y;
  caf::binary_deserializer source{sys, buf};
  err = source(y);
  REQUIRE_MESSAGE(!err, describe(sys, err));
  CHECK(source.remaining() == 0);
  return y;
}

template <class T>
T message_roundtrip(caf::actor_system& sys, const T& x) {
  auto msg = caf::make_message(x);
  std::vector<char> buf;
  caf::binary_serializer sink{sys, buf};
  auto err = sink(msg);
  REQUIRE_MESSAGE(!err, describe(sys, err));
  caf::message out;
  caf::binary_deserializer source{sys, buf};
  err = source(out);
  REQUIRE_MESSAGE(!err, describe(sys, err));
  REQUIRE(out.match_elements<T>());
  return out.get_as<T>(0);
}

address addr(const std::string& text) {
  return address::from(text);
}

/// An envelope with every docs/behaviour/envelope.md#the-envelope field set to a non-default value.
envelope full_envelope() {
  envelope e;
  e.id = "p7-42";
  e.sender = addr("portal/alice/tab1~mesh/m1");
  e.target = addr("node/Org/Acme");
  e.state = delivery_state::forwarded;
  e.properties = {{"error", "\"Hub node/Org/Acme is shutting down\""},
                  {"verdict", "\"shutting_down\""},
                  {"count", "3"}};
  e.access_context = std::string{"user:alice"};
  e.routing_path = {addr("mesh/m1"), addr("client/7f3a~portal/alice"), addr("node/Org/Acme")};
  e.payload_type = "MeshWeaver.Data.DataChangedEvent";
  e.payload_json = R"({"$type":"DataChangedEvent","changes":[1,2,3],"text":"\u00e9/~"})";
  e.ordering_key = std::string{"stream-9"};
  e.answer_suppressed = true;
  e.request_id = std::string{"p3-17"};
  return e;
}

} // namespace

TEST_CASE("vocabulary: addresses parse and render as documented") {
  auto a = addr("node/Org/Acme");
  CHECK(a.type == "node");
  CHECK(a.id == "Org/Acme");
  CHECK(a.hosts.empty());
  CHECK(a.path() == "node/Org/Acme");
  CHECK(a.to_string() == "node/Org/Acme");
  auto p = addr("portal/alice/tab1");
  CHECK(p.type == "portal");
  CHECK(p.id == "alice/tab1");
  CHECK(addr("client/7f3a").id == "7f3a");
  CHECK(addr("cache/mesh1").type == "cache");
  auto h = addr("client/7f3a~portal/alice~mesh/m1");
  CHECK(h.type == "client");
  CHECK(h.id == "7f3a");
  CHECK(h.hosts == std::vector<std::string>{"portal/alice", "mesh/m1"});
  CHECK(h.path() == "client/7f3a");
  CHECK(h.to_string() == "client/7f3a~portal/alice~mesh/m1");
  CHECK(to_string(h) == "client/7f3a~portal/alice~mesh/m1");
  CHECK(caf::deep_to_string(h) == "client/7f3a~portal/alice~mesh/m1");
  CHECK(address{}.to_string().empty());
  CHECK(address{}.empty());
  // hosted_by appends the host's path and then the host's own chain.
  CHECK(addr("client/7f3a").hosted_by(addr("portal/alice~mesh/m1")) == h);
  // Every rendering parses back to the same address.
  for (auto text : {"node/Org/Acme", "portal/alice/tab1", "a/b/c/d~e/f/g~mesh/m1", "x/y~z/w"}) {
    CAPTURE(text);
    CHECK(addr(text).to_string() == text);
  }
}

TEST_CASE("vocabulary: malformed address texts are refused and leave the output untouched") {
  for (auto text : {"", "node", "/Org", "node/", "node/Org~", "node/Org~mesh", "node/Org~/m1",
                    "node/Org~mesh/", "~mesh/m1"}) {
    CAPTURE(text);
    address out = addr("keep/me");
    CHECK_FALSE(address::parse(text, out));
    CHECK(out == addr("keep/me"));
    CHECK_THROWS_AS(address::from(text), std::invalid_argument);
  }
}

TEST_CASE("vocabulary: host-address reduction follows the chain to the outermost host") {
  // Unhosted: its own host address.
  CHECK(host_address(addr("node/Org/Acme")) == addr("node/Org/Acme"));
  // Outermost host is the mesh: the address itself is the routing target.
  auto by_mesh = addr("portal/alice/tab1~mesh/m1");
  CHECK(host_address(by_mesh) == by_mesh);
  CHECK(host_address(by_mesh).to_string() == "portal/alice/tab1~mesh/m1");
  // Outermost host of another type: the host is the routing target.
  CHECK(host_address(addr("client/7f3a~portal/alice")) == addr("portal/alice"));
  CHECK(host_address(addr("client/7f3a~portal/alice")).to_string() == "portal/alice");
  // 2-deep chains: only the outermost host decides.
  auto deep_mesh = addr("client/7f3a~portal/alice~mesh/m1");
  CHECK(host_address(deep_mesh) == deep_mesh);
  CHECK(host_address(addr("client/7f3a~mesh/m1~portal/alice")) == addr("portal/alice"));
  CHECK(host_address(addr("client/7f3a~portal/alice/tab1~node/Org/Acme"))
        == addr("node/Org/Acme"));
  // The mesh's own type is a parameter.
  CHECK(host_address(addr("client/7f3a~grid/g1"), "grid") == addr("client/7f3a~grid/g1"));
  CHECK(host_address(addr("client/7f3a~mesh/m1"), "grid") == addr("mesh/m1"));
}

TEST_CASE("vocabulary: addresses compare byte-wise on the rendered string") {
  // Rendered "node/Org/Acme" < "node/Org~x/y" because '/' (0x2f) < '~' (0x7e), although a
  // field-wise order would put id "Org" before "Org/Acme".
  CHECK(addr("node/Org/Acme") < addr("node/Org~x/y"));
  CHECK_FALSE(addr("node/Org~x/y") < addr("node/Org/Acme"));
  CHECK(addr("node/Acme") < addr("node/acme"));  // upper case first
  CHECK(addr("node/z") < addr("node/\xc3\xa9")); // bytes compare unsigned: 0xc3 > 'z'
  CHECK(addr("a/b/c") < addr("a/bc"));
  CHECK_FALSE(addr("a/b") < addr("a/b"));
  CHECK(addr("a/b") == addr("a/b"));
  CHECK(addr("a/b~mesh/m") != addr("a/b"));
}

TEST_CASE("vocabulary: delivery states and verdicts carry their documented names") {
  const std::vector<std::pair<delivery_state, std::string>> states{
    {delivery_state::submitted, "submitted"}, {delivery_state::forwarded, "forwarded"},
    {delivery_state::processed, "processed"}, {delivery_state::not_found, "not_found"},
    {delivery_state::rejected, "rejected"},   {delivery_state::failed, "failed"},
    {delivery_state::ignored, "ignored"},
  };
  for (const auto& [s, name] : states) {
    CHECK(to_string(s) == name);
    CHECK(caf::deep_to_string(s) == name);
  }
  const std::vector<std::pair<verdict, std::string>> verdicts{
    {verdict::shutting_down, "shutting_down"},
    {verdict::unavailable, "unavailable"},
    {verdict::failed, "failed"},
    {verdict::not_found, "not_found"},
    {verdict::rejected, "rejected"},
    {verdict::routing_loop, "routing_loop"},
    {verdict::unauthorized, "unauthorized"},
    {verdict::forbidden, "forbidden"},
    {verdict::unknown, "unknown"},
    {verdict::exception, "exception"},
    {verdict::compilation_failed, "compilation_failed"},
    {verdict::compilation_in_progress, "compilation_in_progress"},
    {verdict::startup_script_failed, "startup_script_failed"},
    {verdict::ignored, "ignored"},
  };
  for (const auto& [v, name] : verdicts) {
    CAPTURE(name);
    CHECK(to_string(v) == name);
    CHECK(caf::deep_to_string(v) == name);
    verdict parsed = verdict::ignored;
    REQUIRE(from_string(name, parsed));
    CHECK(parsed == v);
    CHECK(cafmesh::routing::is_transient_verdict(v)
          == (v == verdict::shutting_down || v == verdict::unavailable));
  }
  verdict untouched = verdict::rejected;
  CHECK_FALSE(from_string("Shutting_Down", untouched));
  CHECK_FALSE(from_string("", untouched));
  CHECK(untouched == verdict::rejected);
}

TEST_CASE_FIXTURE(cafmesh::testing::fixture,
                  "vocabulary: addresses, states and verdicts round-trip through the binary serializer") {
  auto h = addr("client/7f3a~portal/alice~mesh/m1");
  CHECK(binary_roundtrip(sys, h) == h);
  CHECK(message_roundtrip(sys, h) == h);
  CHECK(binary_roundtrip(sys, address{}) == address{});
  CHECK(message_roundtrip(sys, delivery_state::ignored) == delivery_state::ignored);
  CHECK(message_roundtrip(sys, verdict::startup_script_failed) == verdict::startup_script_failed);
  CHECK(binary_roundtrip(sys, verdict::routing_loop) == verdict::routing_loop);
  std::vector<address> path{addr("mesh/m1"), h};
  CHECK(message_roundtrip(sys, path) == path);
}

TEST_CASE_FIXTURE(cafmesh::testing::fixture,
                  "vocabulary: an envelope with every field set round-trips through the binary serializer") {
  auto e = full_envelope();
  auto r = binary_roundtrip(sys, e);
  CHECK(r == e);
  CHECK(r.id == "p7-42");
  CHECK(r.sender.to_string() == "portal/alice/tab1~mesh/m1");
  CHECK(r.state == delivery_state::forwarded);
  CHECK(r.properties.at("error") == "\"Hub node/Org/Acme is shutting down\"");
  CHECK(r.properties.size() == 3);
  REQUIRE(r.access_context);
  CHECK(*r.access_context == "user:alice");
  REQUIRE(r.routing_path.size() == 3);
  CHECK(r.routing_path[1].to_string() == "client/7f3a~portal/alice");
  CHECK(r.payload_json == e.payload_json);
  REQUIRE(r.ordering_key);
  CHECK(*r.ordering_key == "stream-9");
  CHECK(r.answer_suppressed);
  REQUIRE(r.request_id);
  CHECK(*r.request_id == "p3-17");
  CHECK(message_roundtrip(sys, e) == e);
  // Optionals unset, defaults elsewhere.
  envelope bare;
  bare.id = "p1-1";
  bare.sender = addr("client/7f3a");
  bare.target = addr("node/Org/Acme");
  auto rb = binary_roundtrip(sys, bare);
  CHECK(rb == bare);
  CHECK_FALSE(rb.access_context);
  CHECK_FALSE(rb.ordering_key);
  CHECK_FALSE(rb.request_id);
  CHECK_FALSE(rb.answer_suppressed);
  CHECK(rb.state == delivery_state::submitted);
  // Set-but-empty differs from unset and survives as such.
  auto empty_key = bare;
  empty_key.ordering_key = std::string{};
  CHECK(empty_key != bare);
  auto rk = binary_roundtrip(sys, empty_key);
  REQUIRE(rk.ordering_key);
  CHECK(rk.ordering_key->empty());
  // Equality sees every field.
  auto changed = e;
  changed.routing_path.pop_back();
  CHECK(changed != e);
  changed = e;
  changed.request_id = caf::none;
  CHECK(changed != e);
  changed = e;
  changed.properties["count"] = "4";
  CHECK(changed != e);
}

TEST_CASE_FIXTURE(cafmesh::testing::fixture,
                  "vocabulary: a delivery_failure NACK round-trips with and without a responding silo") {
  delivery_failure nack;
  nack.request_id = "p7-42";
  nack.original = full_envelope();
  nack.message = "Delivery to 'node/Org/Acme' failed: Hub node/Org/Acme is shutting down";
  nack.verdict = verdict::shutting_down;
  nack.target_unserved = true;
  nack.responding_silo = silo_address{"127.0.0.1", 11111, 7};
  auto r = binary_roundtrip(sys, nack);
  CHECK(r == nack);
  CHECK(r.verdict == verdict::shutting_down);
  CHECK(r.target_unserved);
  REQUIRE(r.responding_silo);
  CHECK(r.responding_silo->to_string() == "S127.0.0.1:11111@7");
  CHECK(r.original == full_envelope());
  CHECK(message_roundtrip(sys, nack) == nack);
  auto plain = nack;
  plain.responding_silo = caf::none;
  plain.target_unserved = false;
  plain.verdict = verdict::not_found;
  auto rp = binary_roundtrip(sys, plain);
  CHECK(rp == plain);
  CHECK_FALSE(rp.responding_silo);
  CHECK_FALSE(rp.target_unserved);
  CHECK(rp != nack);
}

namespace {

/// CAF's binary form of `x`.
template <class T>
std::vector<char> binary_of(caf::actor_system& sys, T x) {
  std::vector<char> buf;
  caf::binary_serializer sink{sys, buf};
  auto err = sink(x);
  REQUIRE_MESSAGE(!err, describe(sys, err));
  return buf;
}

/// Reads a `T` from `bytes`; answers the text of the refusal, or "" when it was read.
template <class T>
std::string refusal_of(caf::actor_system& sys, const std::vector<char>& bytes) {
  T x;
  caf::binary_deserializer source{sys, bytes};
  auto err = source(x);
  if (!err)
    return "";
  CHECK(err == caf::sec::invalid_argument);
  REQUIRE(err.context().template match_elements<std::string>());
  return err.context().template get_as<std::string>(0);
}

} // namespace

TEST_CASE_FIXTURE(cafmesh::testing::fixture,
                  "vocabulary: an envelope or NACK from the wire with a state or verdict its enum does not name is refused with invalid_argument") {
  // A default envelope: id, sender (type, id, hosts), target (type, id, hosts), then the state.
  auto bytes = binary_of(sys, envelope{});
  REQUIRE(bytes.size() > 7);
  REQUIRE(bytes[7] == 0);
  bytes[7] = static_cast<char>(delivery_state::ignored);
  CHECK(refusal_of<envelope>(sys, bytes) == "");
  bytes[7] = 7;
  CHECK(refusal_of<envelope>(sys, bytes) == "unknown delivery_state 7");
  bytes[7] = 32;
  CHECK(refusal_of<envelope>(sys, bytes) == "unknown delivery_state 32");
  // A default NACK: request id, the echo, the message, then the verdict.
  auto echo_size = binary_of(sys, envelope{}).size();
  auto nack = binary_of(sys, delivery_failure{});
  auto at = 1 + echo_size + 1;
  REQUIRE(nack.size() > at);
  REQUIRE(nack[at] == static_cast<char>(verdict::failed));
  nack[at] = static_cast<char>(verdict::ignored);
  CHECK(refusal_of<delivery_failure>(sys, nack) == "");
  nack[at] = 14;
  CHECK(refusal_of<delivery_failure>(sys, nack) == "unknown verdict 14");
  // The echo's state is checked inside a NACK too.
  nack[at] = static_cast<char>(verdict::failed);
  nack[1 + 7] = 9;
  CHECK(refusal_of<delivery_failure>(sys, nack) == "unknown delivery_state 9");
}

TEST_CASE("vocabulary: may_answer and the failed-and-NACKed marking follow the documented rules") {
  envelope d;
  CHECK(cafmesh::routing::may_answer(d));
  d.answer_suppressed = true;
  CHECK_FALSE(cafmesh::routing::may_answer(d));
  envelope f;
  CHECK_FALSE(cafmesh::routing::is_failed_and_nacked(f));
  f.state = delivery_state::failed;
  CHECK_FALSE(cafmesh::routing::is_failed_and_nacked(f));
  f.properties["sender_was_nacked"] = "false";
  CHECK_FALSE(cafmesh::routing::is_failed_and_nacked(f));
  envelope g;
  g.state = delivery_state::processed;
  cafmesh::routing::mark_failed_and_nacked(g);
  CHECK(g.state == delivery_state::failed);
  CHECK(g.properties.at("sender_was_nacked") == "true");
  CHECK(cafmesh::routing::is_failed_and_nacked(g));
  g.state = delivery_state::rejected;
  CHECK_FALSE(cafmesh::routing::is_failed_and_nacked(g));
}

TEST_CASE("vocabulary: deep_to_string prints every envelope field readably") {
  auto text = caf::deep_to_string(full_envelope());
  CHECK(text.find("<unprintable>") == std::string::npos);
  CHECK(text.find("forwarded") != std::string::npos);
  CHECK(text.find("portal/alice/tab1~mesh/m1") != std::string::npos);
  CHECK(text.find("stream-9") != std::string::npos);
  delivery_failure nack;
  nack.verdict = verdict::routing_loop;
  nack.responding_silo = silo_address{"h", 1, 2};
  auto ntext = caf::deep_to_string(nack);
  CHECK(ntext.find("<unprintable>") == std::string::npos);
  CHECK(ntext.find("routing_loop") != std::string::npos);
  CHECK(ntext.find("Sh:1@2") != std::string::npos);
}

TEST_CASE("vocabulary: register_types announces every wire type under its cafmesh name and is idempotent") {
  caf::actor_system_config cfg;
  cafmesh::register_types(cfg);
  cafmesh::register_types(cfg);
  auto name_of = [&](const std::type_info& ti) {
    auto i = cfg.type_names_by_rtti.find(std::type_index(ti));
    return i == cfg.type_names_by_rtti.end() ? std::string{"<none>"} : i->second;
  };
  CHECK(name_of(typeid(cafmesh::grain_id)) == "cafmesh.grain_id");
  CHECK(name_of(typeid(cafmesh::silo_address)) == "cafmesh.silo_address");
  CHECK(name_of(typeid(cafmesh::activation_tag)) == "cafmesh.activation_tag");
  CHECK(name_of(typeid(cafmesh::mesh_errc)) == "cafmesh.mesh_errc");
  CHECK(name_of(typeid(cafmesh::tri_bool)) == "cafmesh.tri_bool");
  CHECK(name_of(typeid(cafmesh::probe_answer)) == "cafmesh.probe_answer");
  CHECK(name_of(typeid(cafmesh::fault)) == "cafmesh.fault");
  CHECK(name_of(typeid(std::vector<cafmesh::fault>)) == "std::vector<cafmesh.fault>");
  CHECK(name_of(typeid(address)) == "cafmesh.address");
  CHECK(name_of(typeid(delivery_state)) == "cafmesh.delivery_state");
  CHECK(name_of(typeid(verdict)) == "cafmesh.verdict");
  CHECK(name_of(typeid(envelope)) == "cafmesh.envelope");
  CHECK(name_of(typeid(delivery_failure)) == "cafmesh.delivery_failure");
  CHECK(cfg.error_renderers.count(caf::atom("mesh")) == 1);
  cfg.set("scheduler.policy", caf::atom("testing"));
  caf::actor_system sys{cfg};
  CHECK(sys.render(cafmesh::to_error(cafmesh::fault{cafmesh::mesh_errc::not_found, "gone"}))
        == "mesh_error(not_found, gone)");
}

TEST_CASE("vocabulary: delivery state names parse back") {
  for (auto s : {delivery_state::submitted, delivery_state::forwarded, delivery_state::processed,
                 delivery_state::not_found, delivery_state::rejected, delivery_state::failed,
                 delivery_state::ignored}) {
    delivery_state parsed = delivery_state::ignored;
    REQUIRE(from_string(to_string(s), parsed));
    CHECK(parsed == s);
  }
  delivery_state untouched = delivery_state::processed;
  CHECK_FALSE(from_string("Forwarded", untouched));
  CHECK(untouched == delivery_state::processed);
}
