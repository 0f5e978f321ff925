// The echo application of `cafmesh-node --app echo` (mesh_parts.hpp,
// `spawn_echo_hub_factory`) on the deterministic fixture: one hub per node-hub key, built on
// the first request and registered as a local route of the silo's routing service, answering
// what may be answered with a response to its sender.

#include <doctest/doctest.h>

#include <memory>
#include <vector>

#include <caf/all.hpp>

#include "cafmesh/mainjob/mesh_parts.hpp"
#include "cafmesh/routing/entry_atoms.hpp"
#include "cafmesh/routing/routing_service.hpp"
#include "cafmesh/testing/ask.hpp"
#include "cafmesh/testing/fixture.hpp"

using namespace cafmesh;
using namespace cafmesh::mainjob;
using cafmesh::testing::ask;

TEST_CASE_FIXTURE(cafmesh::testing::fixture, "echo app: one hub per key, a local route of the silo, answering requests with a response") {
  routing::routing_service_options ro;
  ro.role = config::process_role::silo_host;
  ro.process_name = "silo-A";
  auto rs = caf::actor_cast<caf::actor>(track(routing::spawn_routing_service(sys, ro)));
  auto factory = track(spawn_echo_hub_factory(sys, config::routing_section{}));
  // Before the silo's routing service is known nothing is built.
  auto early = ask<caf::actor>(*this, factory, routing::hf_build_atom::value, std::string{"Org/N1"});
  run();
  REQUIRE(early->done);
  CHECK(early->code() == mesh_errc::silo_unavailable);
  caf::anon_send(factory, mp_routing_atom::value, rs);
  run();
  auto first = ask<caf::actor>(*this, factory, routing::hf_build_atom::value, std::string{"Org/N1"});
  auto again = ask<caf::actor>(*this, factory, routing::hf_build_atom::value, std::string{"Org/N1"});
  auto other = ask<caf::actor>(*this, factory, routing::hf_build_atom::value, std::string{"Org/N2"});
  run();
  REQUIRE(first->ok());
  REQUIRE(again->ok());
  REQUIRE(other->ok());
  CHECK(first->value == again->value);
  CHECK(first->value != other->value);
  auto route = ask<bool>(*this, rs, routing::rs_has_route_atom::value,
                         routing::address::from("node/Org/N1"));
  run();
  CHECK(route->value);
  // The sender's local route (here in the same routing service) receives the response.
  auto got = std::make_shared<std::vector<routing::envelope>>();
  auto sink = track(sys.spawn([got](caf::event_based_actor*) -> caf::behavior {
    return {[got](routing::hb_in_atom, routing::envelope& e) { got->push_back(std::move(e)); }};
  }));
  ask(*this, rs, routing::rs_register_atom::value, routing::address::from("portal/u1/t1"), sink);
  run();
  routing::envelope req;
  req.id = "c1-7";
  req.sender = routing::address::from("portal/u1/t1");
  req.target = routing::address::from("node/Org/N1");
  req.payload_type = "demo.request";
  req.payload_json = "{}";
  auto heartbeat = req;
  heartbeat.id = "c1-8";
  heartbeat.answer_suppressed = true;
  auto handed = ask<routing::envelope>(*this, first->value, routing::hb_deliver_atom::value, req);
  auto handed_hb
    = ask<routing::envelope>(*this, first->value, routing::hb_deliver_atom::value, heartbeat);
  run();
  CHECK(handed->value.state == routing::delivery_state::processed);
  CHECK(handed_hb->value.state == routing::delivery_state::processed);
  REQUIRE(got->size() == 1); // the heartbeat is answer-suppressed: no response
  CHECK(got->front().request_id == std::string{"c1-7"});
  CHECK(got->front().sender == routing::address::from("node/Org/N1"));
  CHECK(got->front().id == "c1-7-response");
}
