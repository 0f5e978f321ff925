// Wire vocabulary of the actors layer (docs/behaviour/envelope.md#grain-ids-and-grain-types,
// #silo-addresses-and-activations, docs/behaviour/classification.md#faults-and-caf-errors): grain
// ids, silo addresses, activation tags, the fault tree, mesh_errc and the CAF-code
// translation table.

#include <string>
#include <vector>

#include <doctest/doctest.h>

#include <caf/all.hpp>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/ids.hpp"
#include "cafmesh/actors/peer_auth.hpp"
#include "cafmesh/actors/register_actor_types.hpp"
#include "cafmesh/testing/fixture.hpp"

using cafmesh::activation_tag;
using cafmesh::fault;
using cafmesh::grain_id;
using cafmesh::mesh_errc;
using cafmesh::peer_auth_stats;
using cafmesh::peer_refusal;
using cafmesh::peer_refusal_count;
using cafmesh::probe_answer;
using cafmesh::silo_address;
using cafmesh::tri_bool;
using namespace std::chrono_literals;

namespace {

using vq_ask_atom = caf::atom_constant<caf::atom("vqask")>;

/// Holds every request open forever.
caf::behavior vq_silent(caf::event_based_actor* self) {
  return {[=](vq_ask_atom) -> caf::response_promise { return self->make_response_promise(); }};
}

struct vq_asker_state {
  caf::optional<fault> result;
  int64_t at_ms = -1;
};

/// Asks `target` once with a 30 s timeout and keeps the translated error.
caf::behavior vq_asker(caf::stateful_actor<vq_asker_state>* self, caf::actor target,
                       cafmesh::testing::fixture* fx) {
  self->request(target, 30s, vq_ask_atom::value)
    .then([](caf::ok_atom) {},
          [=](caf::error& e) {
            self->state.result = cafmesh::to_fault(e);
            self->state.at_ms = fx->now_ms();
          });
  return {[](caf::ok_atom) {}};
}

/// Renders `e` for a failure message. doctest evaluates the message of every logged assertion
/// (also passing ones under `-s`), and CAF 0.17's `render` dereferences null on an empty error.
std::string describe(caf::actor_system& sys, const caf::error& e) {
  return e ? sys.render(e) : std::string{"none"};
}

/// Serializes `x` with CAF's binary serializer and reads it back into a fresh value.
template <class T>
T binary_roundtrip(caf::actor_system& sys, const T& x) {
  std::vector<char> buf;
  caf::binary_serializer sink{sys, buf};
  auto tmp = x;
  auto err = sink(tmp);
  REQUIRE_MESSAGE(!err, describe(sys, err));
  CHECK(!buf.empty());
  T y;
  caf::binary_deserializer source{sys, buf};
  err = source(y);
  REQUIRE_MESSAGE(!err, describe(sys, err));
  CHECK(source.remaining() == 0);
  return y;
}

/// Serializes `x` inside a type-erased `caf::message` (this needs the type's announcement,
/// `cafmesh.xxx` on the wire) and reads it back.
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

/// The 3-deep tree used throughout: every attribute set somewhere, two siblings at depth 2.
fault three_deep_fault() {
  fault leaf{mesh_errc::activation_deactivated, "activation #1a2b3c4d is gone"};
  leaf.activation_error_recorded = tri_bool::yes;
  leaf.silo = silo_address{"10.0.0.2", 11112, 42};
  fault middle{mesh_errc::runtime_gone, "catalog torn down", {leaf}};
  middle.probe = probe_answer::torn_down;
  middle.retry_after_ms = 1500u;
  fault sibling{mesh_errc::response_timeout, "no answer in 30000 ms"};
  sibling.retry_after_ms = 0u;
  fault root{mesh_errc::departed_silo, "Delivery to 'node/Org/Acme' failed", {middle, sibling}};
  root.silo = silo_address{"127.0.0.1", 11111, 7};
  root.activation_error_recorded = tri_bool::no;
  return root;
}

/// A chain of `depth` faults (code `rejected`, empty text), each the only cause of the one
/// before.
fault fault_chain(int depth) {
  fault f{mesh_errc::rejected, ""};
  for (int i = 1; i < depth; ++i)
    f = fault{mesh_errc::rejected, "", {f}};
  return f;
}

/// CAF 0.17's binary form of `fault_chain(depth)`, written by hand so that a chain too deep to
/// build in memory can be read: per fault its code, text length 0 and cause count, the cause,
/// then its four unset attributes (retry hint, recorded, probe, silo).
std::vector<char> fault_chain_bytes(int depth) {
  std::vector<char> out;
  for (int i = 1; i < depth; ++i)
    out.insert(out.end(), {1, 0, 1});
  out.insert(out.end(), {1, 0, 0});
  for (int i = 0; i < depth; ++i)
    out.insert(out.end(), {0, 0, 0, 0});
  return out;
}

/// Every mesh_errc with its docs/behaviour/classification.md#codes name.
const std::vector<std::pair<mesh_errc, std::string>>& all_codes() {
  static const std::vector<std::pair<mesh_errc, std::string>> codes{
    {mesh_errc::rejected, "rejected"},
    {mesh_errc::overloaded, "overloaded"},
    {mesh_errc::response_timeout, "response_timeout"},
    {mesh_errc::stream_post_timeout, "stream_post_timeout"},
    {mesh_errc::placement_timeout, "placement_timeout"},
    {mesh_errc::no_compatible_silo, "no_compatible_silo"},
    {mesh_errc::directory_unstable, "directory_unstable"},
    {mesh_errc::silo_unavailable, "silo_unavailable"},
    {mesh_errc::lifecycle_cancelled, "lifecycle_cancelled"},
    {mesh_errc::departed_silo, "departed_silo"},
    {mesh_errc::activation_deactivated, "activation_deactivated"},
    {mesh_errc::runtime_gone, "runtime_gone"},
    {mesh_errc::pod_hub_not_here, "pod_hub_not_here"},
    {mesh_errc::oversized, "oversized"},
    {mesh_errc::not_found, "not_found"},
    {mesh_errc::resolve_failed, "resolve_failed"},
    {mesh_errc::pool_refused, "pool_refused"},
    {mesh_errc::leg_crashed, "leg_crashed"},
    {mesh_errc::extension_missing, "extension_missing"},
    {mesh_errc::invalid_operation, "invalid_operation"},
    {mesh_errc::application, "application"},
    {mesh_errc::lifecycle_misuse, "lifecycle_misuse"},
    {mesh_errc::config_invalid, "config_invalid"},
  };
  return codes;
}

} // namespace

TEST_CASE("vocabulary: grain ids, silo addresses and activation tags render as documented") {
  CHECK(grain_id{"messagehub", "Org/Acme"}.to_string() == "messagehub/Org/Acme");
  CHECK(to_string(grain_id{"routing", "default"}) == "routing/default");
  CHECK(to_string(grain_id{"podhub", "portal/alice"}) == "podhub/portal/alice");
  CHECK(silo_address{"127.0.0.1", 11111, 7}.to_string() == "S127.0.0.1:11111@7");
  CHECK(to_string(silo_address{"10.0.0.2", 65535, 1700000000123ull})
        == "S10.0.0.2:65535@1700000000123");
  CHECK(activation_tag{0x1a2b3c4d}.to_string() == "activation #1a2b3c4d");
  CHECK(activation_tag{0x1a2b3c4d}.hex() == "1a2b3c4d");
  CHECK(activation_tag{0xab}.hex() == "000000ab");
  CHECK(activation_tag{0xFFFFFFFF}.hex() == "ffffffff");
  CHECK(activation_tag{0}.to_string() == "activation #00000000");
  // CAF's deep_to_string uses the ADL hooks, never `<unprintable>`.
  CHECK(caf::deep_to_string(silo_address{"h", 1, 2}) == "Sh:1@2");
  CHECK(caf::deep_to_string(caf::make_message(grain_id{"messagehub", "Org/Acme"},
                                              activation_tag{0x1a2b3c4d}))
        == "(messagehub/Org/Acme, activation #1a2b3c4d)");
}

TEST_CASE("vocabulary: the same host and port with another generation is a different silo") {
  silo_address a{"127.0.0.1", 11111, 7};
  silo_address b{"127.0.0.1", 11111, 8};
  CHECK(a != b);
  CHECK(a.same_endpoint(b));
  CHECK_FALSE(a.same_endpoint(silo_address{"127.0.0.1", 11112, 7}));
  CHECK(a == silo_address{"127.0.0.1", 11111, 7});
  CHECK(silo_address{}.empty());
  CHECK_FALSE(a.empty());
  // Ordered by rendered form (docs/behaviour/membership.md#snapshots): "S127.0.0.1:11111@10" <
  // "S127.0.0.1:11111@7".
  CHECK(silo_address{"127.0.0.1", 11111, 10} < a);
  CHECK(grain_id{"a", "b"} == grain_id{"a", "b"});
  CHECK(grain_id{"a", "b"} != grain_id{"a", "c"});
  CHECK(grain_id{"a", "b"} < grain_id{"a", "c"});
}

TEST_CASE("vocabulary: silo addresses order exactly as their renderings, without rendering") {
  // Hosts that prefix one another or sort against ':' and '@', ports and generations of every
  // width, the largest values and the empty address.
  std::vector<std::string> hosts{"", "a", "a:", "a9", "aa", "10.0.0.1", "10.0.0.10", "10.0.0.1:",
                                 "127.0.0.1", "node-1", "node-1@", "\xff"};
  std::vector<uint16_t> ports{0, 1, 9, 10, 11111, 65535};
  std::vector<uint64_t> generations{0, 1, 7, 10, 1765000000000, UINT64_MAX};
  std::vector<silo_address> all;
  for (auto& h : hosts)
    for (auto p : ports)
      for (auto g : generations)
        all.push_back(silo_address{h, p, g});
  size_t pairs = 0;
  for (auto& x : all)
    for (auto& y : all) {
      ++pairs;
      if ((x < y) != (x.to_string() < y.to_string()))
        FAIL_CHECK(x.to_string() << " < " << y.to_string() << " answers " << (x < y));
    }
  CHECK(pairs == all.size() * all.size());
  CHECK(all.size() == 432);
}

TEST_CASE("vocabulary: fnv1a64 matches the published FNV-1a 64 vectors") {
  CHECK(cafmesh::fnv1a64("") == 14695981039346656037ull);
  CHECK(cafmesh::fnv1a64("a") == 0xaf63dc4c8601ec8cull);
  CHECK(cafmesh::fnv1a64("foobar") == 0x85944171f73967e8ull);
}

TEST_CASE_FIXTURE(cafmesh::testing::fixture,
                  "vocabulary: grain ids, silo addresses and activation tags round-trip through the binary serializer") {
  grain_id g{"messagehub", "Org/Acme"};
  CHECK(binary_roundtrip(sys, g) == g);
  CHECK(message_roundtrip(sys, g) == g);
  silo_address s{"127.0.0.1", 11111, 1700000000123ull};
  CHECK(binary_roundtrip(sys, s) == s);
  CHECK(message_roundtrip(sys, s) == s);
  activation_tag t{0x1a2b3c4d};
  CHECK(binary_roundtrip(sys, t) == t);
  CHECK(message_roundtrip(sys, t) == t);
  CHECK(message_roundtrip(sys, std::vector<silo_address>{s, silo_address{"h", 2, 3}})
        == std::vector<silo_address>{s, silo_address{"h", 2, 3}});
}

TEST_CASE_FIXTURE(cafmesh::testing::fixture,
                  "vocabulary: a 3-deep fault tree with every attribute round-trips through the binary serializer") {
  auto f = three_deep_fault();
  REQUIRE(f.causes.size() == 2);
  REQUIRE(f.causes[0].causes.size() == 1);
  auto g = binary_roundtrip(sys, f);
  CHECK(g == f);
  CHECK(g.code == mesh_errc::departed_silo);
  CHECK(g.silo == silo_address{"127.0.0.1", 11111, 7});
  CHECK(g.activation_error_recorded == tri_bool::no);
  CHECK_FALSE(g.retry_after_ms);
  REQUIRE(g.causes.size() == 2);
  CHECK(g.causes[0].code == mesh_errc::runtime_gone);
  CHECK(g.causes[0].probe == probe_answer::torn_down);
  REQUIRE(g.causes[0].retry_after_ms);
  CHECK(*g.causes[0].retry_after_ms == 1500u);
  CHECK_FALSE(g.causes[0].silo);
  REQUIRE(g.causes[0].causes.size() == 1);
  const auto& leaf = g.causes[0].causes[0];
  CHECK(leaf.code == mesh_errc::activation_deactivated);
  CHECK(leaf.activation_error_recorded == tri_bool::yes);
  CHECK(leaf.silo == silo_address{"10.0.0.2", 11112, 42});
  CHECK(leaf.text == "activation #1a2b3c4d is gone");
  // A hint of 0 ms is set, not unset.
  REQUIRE(g.causes[1].retry_after_ms);
  CHECK(*g.causes[1].retry_after_ms == 0u);
  CHECK(message_roundtrip(sys, f) == f);
  // Equality is deep: a difference at depth 3 is seen.
  auto h = f;
  h.causes[0].causes[0].activation_error_recorded = tri_bool::unknown;
  CHECK(h != f);
  h = f;
  h.causes[0].retry_after_ms = caf::none;
  CHECK(h != f);
  // A default fault (no optionals set) round-trips too.
  fault plain;
  CHECK(binary_roundtrip(sys, plain) == plain);
}

TEST_CASE_FIXTURE(cafmesh::testing::fixture,
                  "vocabulary: a fault tree read from the wire may be 64 deep, a deeper one however deep is refused with invalid_argument") {
  std::vector<char> buf;
  caf::binary_serializer sink{sys, buf};
  auto three = fault_chain(3);
  REQUIRE(!sink(three));
  REQUIRE(buf == fault_chain_bytes(3));
  for (int depth : {65, 30000}) {
    CAPTURE(depth);
    fault f;
    auto bytes = fault_chain_bytes(depth);
    caf::binary_deserializer source{sys, bytes};
    auto err = source(f);
    REQUIRE(err);
    CHECK(err == caf::sec::invalid_argument);
    REQUIRE(err.context().match_elements<std::string>());
    CHECK(err.context().get_as<std::string>(0) == "fault tree deeper than 64");
  }
  // After the refusals (the depth count is per read), 64 deep is still read.
  fault f;
  auto bytes = fault_chain_bytes(cafmesh::max_fault_depth);
  caf::binary_deserializer source{sys, bytes};
  auto err = source(f);
  REQUIRE_MESSAGE(!err, describe(sys, err));
  CHECK(f == fault_chain(64));
}

TEST_CASE_FIXTURE(cafmesh::testing::fixture,
                  "vocabulary: a fault from the wire with a code, qualifier or probe answer its enum does not name is refused with invalid_argument") {
  // One fault: code, text length, cause count, retry hint, recorded, probe, silo.
  auto refusal = [&](size_t at, char value) -> std::string {
    auto bytes = fault_chain_bytes(1);
    REQUIRE(bytes.size() == 7);
    bytes[at] = value;
    fault f;
    caf::binary_deserializer source{sys, bytes};
    auto err = source(f);
    if (!err)
      return "";
    CHECK(err == caf::sec::invalid_argument);
    REQUIRE(err.context().match_elements<std::string>());
    return err.context().get_as<std::string>(0);
  };
  CHECK(refusal(0, static_cast<char>(mesh_errc::config_invalid)) == "");
  CHECK(refusal(0, 0) == "unknown mesh_errc 0");
  CHECK(refusal(0, 24) == "unknown mesh_errc 24");
  CHECK(refusal(4, static_cast<char>(tri_bool::yes)) == "");
  CHECK(refusal(4, 3) == "unknown fault qualifier");
  CHECK(refusal(5, static_cast<char>(probe_answer::torn_down)) == "");
  CHECK(refusal(5, 3) == "unknown fault qualifier");
}

TEST_CASE("vocabulary: a fault renders its text then each cause's rendering depth first") {
  CHECK(fault{mesh_errc::not_found, "No node found for node/Org/Acme"}.render()
        == "No node found for node/Org/Acme");
  CHECK(three_deep_fault().render()
        == "Delivery to 'node/Org/Acme' failed <- catalog torn down <- activation #1a2b3c4d is "
           "gone <- no answer in 30000 ms");
  fault a{mesh_errc::application, "A",
          {fault{mesh_errc::application, "B", {fault{mesh_errc::application, "C"}}},
           fault{mesh_errc::application, "D", {fault{mesh_errc::application, "E"}}}}};
  CHECK(a.render() == "A <- B <- C <- D <- E");
  CHECK(to_string(a) == a.render());
  CHECK(caf::deep_to_string(a) == "A <- B <- C <- D <- E");
}

TEST_CASE("vocabulary: every mesh_errc, tri_bool and probe_answer has its documented name") {
  for (const auto& [code, name] : all_codes()) {
    CAPTURE(name);
    CHECK(to_string(code) == name);
    CHECK(caf::deep_to_string(code) == name);
  }
  CHECK(all_codes().size() == 23);
  CHECK(static_cast<int>(mesh_errc::rejected) == 1); // 0 means "no error" to caf::error
  CHECK(to_string(static_cast<mesh_errc>(99)) == "mesh_errc(99)");
  CHECK(to_string(tri_bool::yes) == "yes");
  CHECK(to_string(tri_bool::no) == "no");
  CHECK(to_string(tri_bool::unknown) == "unknown");
  CHECK(to_string(probe_answer::alive) == "alive");
  CHECK(to_string(probe_answer::torn_down) == "torn_down");
  CHECK(to_string(probe_answer::no_answer) == "no_answer");
  CHECK(caf::deep_to_string(caf::make_message(tri_bool::yes, probe_answer::torn_down))
        == "(yes, torn_down)");
}

TEST_CASE("vocabulary: to_error and to_fault round-trip every mesh_errc") {
  for (const auto& [code, name] : all_codes()) {
    CAPTURE(name);
    fault f{code, "text of " + name, {fault{mesh_errc::rejected, "cause"}}};
    f.retry_after_ms = 250u;
    auto e = cafmesh::to_error(f);
    CHECK(e.code() == static_cast<uint8_t>(code));
    CHECK(e.category() == caf::atom("mesh"));
    CHECK(e.category() == cafmesh::mesh_error_category());
    REQUIRE(e.context().match_elements<fault>());
    CHECK(e.context().get_as<fault>(0) == f);
    CHECK(cafmesh::to_fault(e) == f);
    // caf::error from the bare code (ADL make_error): an empty fault named after the code.
    caf::error bare = code;
    CHECK(bare == code);
    CHECK(bare.category() == caf::atom("mesh"));
    auto g = cafmesh::to_fault(bare);
    CHECK(g.code == code);
    CHECK(g.text == name);
    CHECK(g.causes.empty());
  }
  // A mesh error without a fault in its context still yields its code.
  caf::error raw{static_cast<uint8_t>(mesh_errc::oversized), caf::atom("mesh")};
  auto f = cafmesh::to_fault(raw);
  CHECK(f.code == mesh_errc::oversized);
  CHECK(f.text == "oversized");
}

TEST_CASE("vocabulary: CAF codes translate to faults as the documented table says") {
  using caf::exit_reason;
  using caf::sec;
  auto code_of = [](const caf::error& e, bool departed = false) {
    return cafmesh::to_fault(e, departed).code;
  };
  CHECK(code_of(caf::make_error(sec::request_timeout)) == mesh_errc::response_timeout);
  // request_receiver_down: departed_silo when the caller knows the receiver's silo is gone
  // or superseded, else activation_deactivated with recorded = unknown.
  auto down = cafmesh::to_fault(caf::make_error(sec::request_receiver_down), false);
  CHECK(down.code == mesh_errc::activation_deactivated);
  CHECK(down.activation_error_recorded == tri_bool::unknown);
  CHECK(down.text == "system_error(request_receiver_down)");
  CHECK(code_of(caf::make_error(sec::request_receiver_down), true) == mesh_errc::departed_silo);
  for (auto code : {sec::cannot_connect_to_node, sec::no_route_to_receiving_node,
                    sec::disconnect_during_handshake, sec::socket_disconnected}) {
    CAPTURE(caf::to_string(code));
    CHECK(code_of(caf::make_error(code)) == mesh_errc::departed_silo);
    CHECK(code_of(caf::make_error(code), true) == mesh_errc::departed_silo);
  }
  // Exit reasons travel with category `exit` (CAF 0.17's make_error(exit_reason)).
  CHECK(caf::make_error(exit_reason::remote_link_unreachable).category() == caf::atom("exit"));
  CHECK(code_of(caf::make_error(exit_reason::remote_link_unreachable))
        == mesh_errc::departed_silo);
  CHECK(code_of(caf::make_error(exit_reason::unreachable)) == mesh_errc::departed_silo);
  // Anything else: application, text = the rendered CAF error.
  auto other = cafmesh::to_fault(caf::make_error(sec::unexpected_message));
  CHECK(other.code == mesh_errc::application);
  CHECK(other.text == "system_error(unexpected_message)");
  CHECK(other.causes.empty());
  auto shutdown = cafmesh::to_fault(caf::make_error(exit_reason::user_shutdown));
  CHECK(shutdown.code == mesh_errc::application);
  CHECK(shutdown.text == "exit_reason(user_shutdown)");
  CHECK(code_of(caf::make_error(exit_reason::kill)) == mesh_errc::application);
  CHECK(code_of(caf::make_error(sec::request_timeout), true) == mesh_errc::response_timeout);
  // No error at all is not a mesh fault either.
  auto none = cafmesh::to_fault(caf::error{});
  CHECK(none.code == mesh_errc::application);
  CHECK(none.text == "none");
  // A foreign category whose code number collides with a translated sec stays application.
  caf::error foreign{static_cast<uint8_t>(sec::request_timeout), caf::atom("other")};
  CHECK(code_of(foreign) == mesh_errc::application);
}

TEST_CASE_FIXTURE(cafmesh::testing::fixture,
                  "vocabulary: sys.render of a mesh error names the code and renders the fault") {
  fault f{mesh_errc::departed_silo, "connect failed",
          {fault{mesh_errc::rejected, "socket closed", {fault{mesh_errc::application, "peer gone"}}}}};
  CHECK(sys.render(cafmesh::to_error(f))
        == "mesh_error(departed_silo, connect failed <- socket closed <- peer gone)");
  CHECK(sys.render(caf::error{mesh_errc::placement_timeout})
        == "mesh_error(placement_timeout, placement_timeout)");
  CHECK(sys.render(caf::error{static_cast<uint8_t>(mesh_errc::oversized), caf::atom("mesh")})
        == "mesh_error(oversized)");
}

TEST_CASE_FIXTURE(cafmesh::testing::fixture,
                  "vocabulary: a caf::error carrying a 3-deep fault round-trips through the binary serializer") {
  auto f = three_deep_fault();
  auto e = binary_roundtrip(sys, cafmesh::to_error(f));
  CHECK(e.code() == static_cast<uint8_t>(mesh_errc::departed_silo));
  CHECK(e.category() == caf::atom("mesh"));
  CHECK(cafmesh::to_fault(e) == f);
  auto e2 = message_roundtrip(sys, cafmesh::to_error(f));
  CHECK(cafmesh::to_fault(e2) == f);
}

TEST_CASE_FIXTURE(cafmesh::testing::fixture,
                  "vocabulary: errors CAF really raises translate - a dead receiver and a 30 s request timeout") {
  // A request to an actor that has exited: sec::request_receiver_down -> activation_deactivated.
  auto dead = sys.spawn(vq_silent);
  caf::anon_send_exit(dead, caf::exit_reason::kill);
  run();
  auto a = track(sys.spawn(vq_asker, dead, this));
  auto& sa = state_of<vq_asker_state>(a);
  run();
  REQUIRE(sa.result);
  CHECK(sa.result->code == mesh_errc::activation_deactivated);
  CHECK(sa.result->activation_error_recorded == tri_bool::unknown);
  CHECK(sa.result->text == "system_error(request_receiver_down)");
  CHECK(sa.at_ms == 0);
  // A request nobody answers: sec::request_timeout at 30,000 virtual ms -> response_timeout.
  auto silent = track(sys.spawn(vq_silent));
  auto b = track(sys.spawn(vq_asker, silent, this));
  auto& sb = state_of<vq_asker_state>(b);
  run_for(29999ms);
  CHECK_FALSE(sb.result);
  run_for(1ms);
  REQUIRE(sb.result);
  CHECK(sb.result->code == mesh_errc::response_timeout);
  CHECK(sb.result->text == "system_error(request_timeout)");
  CHECK(sb.at_ms == 30000);
}

TEST_CASE_FIXTURE(cafmesh::testing::fixture,
                  "vocabulary: every peer refusal kind has its name, tls the last, and the "
                  "handshake counters round-trip with one counter per kind") {
  const std::vector<std::string> names{"protocol", "cluster_id", "secret",
                                       "timeout",  "oversized",  "tls"};
  REQUIRE(peer_refusal_count == names.size());
  for (size_t i = 0; i < peer_refusal_count; ++i)
    CHECK(to_string(static_cast<peer_refusal>(i)) == names[i]);
  CHECK(static_cast<size_t>(peer_refusal::tls) == peer_refusal_count - 1);
  peer_auth_stats x;
  x.admitted = 7;
  for (size_t i = 0; i < peer_refusal_count; ++i)
    x.refused[i] = 10 + i;
  auto y = binary_roundtrip(sys, x);
  CHECK(y.admitted == 7);
  CHECK(y.refused == x.refused);
}

TEST_CASE("register_actor_types alone announces every actors-folder type that crosses a wire, and renders a fault as mesh_error") {
  // A process that links only the actors library announces its types with this function:
  // a message centre's own error replies (a `fault`) must cross a link with nothing else.
  caf::actor_system_config cfg;
  cafmesh::register_actor_types(cfg);
  caf::actor_system sys{cfg};
  auto crosses = [&](caf::message m) {
    std::vector<char> buf;
    caf::binary_serializer sink{sys, buf};
    if (auto err = sink(m)) {
      INFO(sys.render(err));
      return false;
    }
    caf::message out;
    caf::binary_deserializer source{sys, buf};
    if (auto err = source(out))
      return false;
    return out.size() == m.size();
  };
  fault f{mesh_errc::silo_unavailable, "component 201 is not registered"};
  f.silo = silo_address{"10.0.0.2", 11111, 1};
  CHECK(crosses(caf::make_message(f)));
  CHECK(crosses(caf::make_message(cafmesh::to_error(f))));
  CHECK(crosses(caf::make_message(silo_address{"10.0.0.2", 11111, 1})));
  CHECK(crosses(caf::make_message(grain_id{"counter", "7"})));
  CHECK(crosses(caf::make_message(activation_tag{})));
  CHECK(crosses(caf::make_message(mesh_errc::departed_silo, tri_bool::yes, probe_answer::alive)));
  CHECK(sys.render(cafmesh::to_error(fault{mesh_errc::silo_unavailable, "x"}))
        == "mesh_error(silo_unavailable, " + fault{mesh_errc::silo_unavailable, "x"}.render()
             + ")");
}
