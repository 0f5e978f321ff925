// The install_and_consume test's application: builds an envelope, announces the cafmesh
// types, round-trips the envelope through CAF's binary serializer inside a message, and
// prints what it saw. Exit code 0 only if the envelope came back equal.

#include <iostream>
#include <string>
#include <vector>

#include <caf/all.hpp>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/routing/address.hpp"
#include "cafmesh/routing/envelope.hpp"
#include "cafmesh/routing/register_types.hpp"

int main() {
  using namespace cafmesh::routing;
  envelope e;
  e.id = "consumer-1";
  e.sender = address::from("client/7f3a~portal/alice");
  e.target = address::from("node/Org/Acme");
  e.state = delivery_state::forwarded;
  e.properties["count"] = "3";
  e.routing_path = {address::from("mesh/m1")};
  e.payload_type = "ping";
  e.payload_json = "{}";
  e.ordering_key = std::string{"s-1"};

  caf::actor_system_config cfg;
  cafmesh::register_types(cfg);
  caf::actor_system sys{cfg};

  std::vector<char> buf;
  caf::binary_serializer sink{sys, buf};
  auto msg = caf::make_message(e);
  if (auto err = sink(msg)) {
    std::cout << "serialize failed: " << sys.render(err) << "\n";
    return 1;
  }
  caf::message back_msg;
  caf::binary_deserializer source{sys, buf};
  if (auto err = source(back_msg)) {
    std::cout << "deserialize failed: " << sys.render(err) << "\n";
    return 1;
  }
  bool equal = back_msg.match_elements<envelope>() && back_msg.get_as<envelope>(0) == e;

  cafmesh::fault f{cafmesh::mesh_errc::departed_silo, "connect failed",
                   {cafmesh::fault{cafmesh::mesh_errc::rejected, "socket closed"}}};
  std::cout << "envelope " << caf::deep_to_string(e) << "\n";
  std::cout << "host " << to_string(host_address(e.sender)) << "\n";
  std::cout << "error " << sys.render(cafmesh::to_error(f)) << "\n";
  std::cout << "roundtrip " << (equal ? "equal" : "DIFFERENT") << "\n";
  return equal ? 0 : 1;
}
