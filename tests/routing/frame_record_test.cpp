// Link frames' flat records (SPEC §14 B7, docs/behaviour/peer-authentication.md#frame-records): the payloads
// that carry deliveries cross a link as a shape id and their fields, everything else as the
// nested caf::message it was; a record of an unknown shape or cut short is refused.

#include <cstdint>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include <caf/all.hpp>

#include "cafmesh/actors/frame_codec.hpp"
#include "cafmesh/actors/ids.hpp"
#include "cafmesh/actors/message_center.hpp"
#include "cafmesh/actors/placement_atoms.hpp"
#include "cafmesh/routing/dispatch_batch.hpp"
#include "cafmesh/routing/entry_atoms.hpp"
#include "cafmesh/routing/envelope.hpp"
#include "cafmesh/routing/frame_shapes.hpp"
#include "cafmesh/routing/router_atoms.hpp"
#include "cafmesh/testing/fixture.hpp"

using namespace cafmesh;
using namespace cafmesh::routing;

namespace {

envelope sample_delivery() {
  envelope d;
  d.id = "bench-a-17";
  d.sender = address::from("node/driver");
  d.target = address::from("portal/b3");
  d.properties["trace"] = "\"t-1\"";
  d.routing_path.push_back(address::from("silo/S127.0.0.1:4000@1"));
  d.payload_type = "bench.ping";
  d.payload_json = R"({"n":1})";
  d.ordering_key = std::string{"stream-9"};
  d.request_id = std::string{"q-4"};
  return d;
}

wire_frame frame_of(caf::message payload) {
  wire_frame f;
  f.src = silo_address{"127.0.0.1", 4000, 1};
  f.dst = silo_address{"127.0.0.1", 4001, 2};
  f.correlation_id = 42;
  f.target = component::activation;
  f.ttl_ms = 900;
  f.payload = std::move(payload);
  return f;
}

std::vector<char> bytes_of(caf::actor_system& sys, wire_frame f) {
  std::vector<char> buf;
  caf::binary_serializer sink{sys, buf};
  REQUIRE(!sink(f));
  return buf;
}

/// What the frame's payload would take as shape 0: the id byte and the caf::message.
size_t generic_size(caf::actor_system& sys, caf::message payload) {
  std::vector<char> buf;
  caf::binary_serializer sink{sys, buf};
  REQUIRE(!sink(payload));
  return 1 + buf.size();
}

/// The bytes before a frame's payload record: its two silo addresses, id, component and flag.
size_t header_size(caf::actor_system& sys, wire_frame f) {
  std::vector<char> buf;
  caf::binary_serializer sink{sys, buf};
  REQUIRE(!sink(f.src, f.dst, f.correlation_id, f.target, f.is_response));
  return buf.size();
}

/// The bytes after it: the error and the time-to-live.
size_t trailer_size(caf::actor_system& sys, wire_frame f) {
  std::vector<char> buf;
  caf::binary_serializer sink{sys, buf};
  REQUIRE(!sink(f.error, f.ttl_ms));
  return buf.size();
}

caf::error load_frame(caf::actor_system& sys, const std::vector<char>& buf, wire_frame& out) {
  caf::binary_deserializer source{sys, buf.data(), buf.size()};
  return source(out);
}

/// Reads `f` back from its bytes and checks every header field and the rendered payload.
void check_round_trip(caf::actor_system& sys, const wire_frame& f) {
  auto buf = bytes_of(sys, f);
  wire_frame back;
  REQUIRE(!load_frame(sys, buf, back));
  CHECK(back.src == f.src);
  CHECK(back.dst == f.dst);
  CHECK(back.correlation_id == f.correlation_id);
  CHECK(back.target == f.target);
  CHECK(back.is_response == f.is_response);
  CHECK(back.ttl_ms == f.ttl_ms);
  CHECK(back.payload.size() == f.payload.size());
  CHECK(caf::to_string(back.payload) == caf::to_string(f.payload));
  CHECK(bytes_of(sys, back) == buf);
}

} // namespace

TEST_CASE_FIXTURE(testing::fixture, "link frames: the six delivery shapes cross a link as flat records and read back equal, each smaller than its nested caf::message") {
  auto d = sample_delivery();
  silo_address caller{"127.0.0.1", 4000, 1};
  grain_id hub{"podhub", "portal/b3"};
  struct row {
    std::string what;
    caf::message payload;
    uint8_t shape;
    size_t flat;   ///< bytes of the record, shape byte included
    size_t nested; ///< bytes as shape 0
  };
  std::vector<row> rows{
    {"grain call over a direct route",
     caf::make_message(ct_invoke_atom::value, hub, activation_tag{7}, int32_t{0},
                       caf::make_message(hg_deliver_atom::value, d, caller, true)),
     1, 157, 294},
    {"grain call through placement",
     caf::make_message(ct_invoke_atom::value, hub, activation_tag{7}, int32_t{2},
                       caf::make_message(hg_deliver_atom::value, d, caller)),
     2, 156, 288},
    {"pure client's dispatches, two in a batch",
     caf::make_message(pl_call_atom::value, grain_id{"routing", "default"}, int32_t{0},
                       caf::make_message(hg_routes_atom::value,
                                         std::vector<dispatch_item>{
                                           {d, caf::timespan{std::chrono::milliseconds(29000)}},
                                           {d, caf::timespan{0}}},
                                         caller)),
     7, 278, 405},
    {"hand-over to a pure client", caf::make_message(lr_deliver_atom::value, d), 4, 111, 148},
    {"answer", caf::make_message(d), 5, 111, 134},
    {"answer to a hand-over", caf::make_message(true), 6, 2, 13},
  };
  for (auto& r : rows) {
    CAPTURE(r.what);
    auto f = frame_of(r.payload);
    auto buf = bytes_of(sys, f);
    // The header (two silo addresses, id, component, flag) comes first; the shape byte follows.
    auto header = header_size(sys, f);
    REQUIRE(buf.size() > header);
    CHECK(static_cast<uint8_t>(buf[header]) == r.shape);
    check_round_trip(sys, f);
    auto flat = buf.size() - header - trailer_size(sys, f);
    auto generic = generic_size(sys, r.payload);
    CHECK(flat == r.flat);
    CHECK(generic == r.nested);
  }
}

TEST_CASE_FIXTURE(testing::fixture, "link frames: a payload of no registered shape crosses as shape 0, the nested caf::message, and reads back equal") {
  auto d = sample_delivery();
  std::vector<caf::message> others{
    caf::message{},
    caf::make_message(caf::ok_atom::value),
    // The right atoms around the wrong element types, and the right types behind the wrong atom.
    caf::make_message(ct_invoke_atom::value, grain_id{"podhub", "x"}, activation_tag{1},
                      int32_t{0}, caf::make_message(hg_routes_atom::value, d,
                                                    silo_address{"h", 1, 1}, true)),
    caf::make_message(hg_deliver_atom::value, d),
    caf::make_message(d, d),
    caf::make_message(pl_call_atom::value, grain_id{"routing", "default"}, int32_t{0},
                      caf::make_message(hg_routes_atom::value, std::vector<envelope>{d},
                                        silo_address{"h", 1, 1})),
  };
  for (auto& m : others) {
    CAPTURE(caf::to_string(m));
    auto f = frame_of(m);
    f.is_response = true;
    auto buf = bytes_of(sys, f);
    auto header = header_size(sys, f);
    CHECK(static_cast<uint8_t>(buf[header]) == 0);
    check_round_trip(sys, f);
  }
}

TEST_CASE_FIXTURE(testing::fixture, "link frames: a record of an unknown shape or cut short is refused as a malformed message and yields no payload") {
  auto f = frame_of(caf::make_message(lr_deliver_atom::value, sample_delivery()));
  auto buf = bytes_of(sys, f);
  auto header = header_size(sys, f);
  auto trailer = trailer_size(sys, f);
  for (uint8_t id : {uint8_t{3}, uint8_t{8}, uint8_t{31}, uint8_t{32}, uint8_t{33}, uint8_t{200},
                     uint8_t{255}}) {
    CAPTURE(int{id});
    auto bad = buf;
    bad[header] = static_cast<char>(id);
    wire_frame back;
    auto err = load_frame(sys, bad, back);
    CHECK(err == caf::sec::malformed_basp_message);
    CHECK(back.payload.empty());
  }
  // Every cut of the record inside its payload fails; none crashes or yields a payload.
  size_t refused = 0;
  for (size_t n = header + 1; n < buf.size() - trailer; ++n) {
    std::vector<char> cut{buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(n)};
    wire_frame back;
    if (load_frame(sys, cut, back)) {
      ++refused;
      CHECK(back.payload.empty());
    }
  }
  CHECK(refused == buf.size() - trailer - header - 1);
}

TEST_CASE("link frames: a shape id is registered once, and another shape under a taken id, id 0 and ids past the table are refused") {
  CHECK(register_frame_shapes()); // again: the same shapes under the same ids
  frame_shape other{[](const caf::message&) { return false; },
                    [](caf::serializer&, const caf::message&) { return caf::error{}; },
                    [](caf::deserializer&, caf::message&) { return caf::error{}; }};
  CHECK_FALSE(register_frame_shape(1, other));
  CHECK_FALSE(register_frame_shape(0, other));
  CHECK_FALSE(register_frame_shape(max_frame_shapes + 1, other));
  CHECK_FALSE(register_frame_shape(8, frame_shape{}));
}
