// CAF-serialised payloads (payload_codec.hpp): a typed value through a delivery's JSON text.

#include <doctest/doctest.h>

#include <string>

#include "cafmesh/routing/address.hpp"
#include "cafmesh/routing/payload_codec.hpp"
#include "cafmesh/testing/fixture.hpp"

using namespace cafmesh;
using namespace cafmesh::routing;

TEST_CASE("payload codec: a CAF-serialisable value round-trips through the JSON text") {
  testing::fixture fx;
  auto a = address::from("client/7f3a~portal/alice");
  auto text = encode_payload(fx.sys, a);
  REQUIRE(text);
  CHECK(text->rfind("\"caf:", 0) == 0);
  CHECK(text->back() == '"');
  auto back = decode_payload<address>(fx.sys, *text);
  REQUIRE(back);
  CHECK(*back == a);
}

TEST_CASE("payload codec: text that is no CAF payload is refused, classified rejected") {
  testing::fixture fx;
  for (std::string bad : {"{}", "\"caf:0\"", "\"caf:zz\"", "\"caf:", ""}) {
    auto r = decode_payload<address>(fx.sys, bad);
    REQUIRE_FALSE(r);
    CHECK_MESSAGE(to_fault(r.error()).code == mesh_errc::rejected, bad);
  }
  // Valid hex that is not an address.
  auto r = decode_payload<address>(fx.sys, "\"caf:ff\"");
  REQUIRE_FALSE(r);
  CHECK(to_fault(r.error()).code == mesh_errc::rejected);
}
