// NACKs for deliveries a pure client handed to a gateway's routing grain
// (docs/behaviour/routing.md#nacks): the NACK goes first to the local route of that client,
// whose process hosts the sender. A sender whose address names a node hub (an owner hub
// `node/Owner/O0` in a pure client) is otherwise NACKed through the node hub the silos'
// application builds for that address, and its owner in the client never learns the outcome:
// the loss of the users' rolling restart (frames from a client's owner hubs to its portals,
// NACKed `shutting_down` while a portal's pod hub moves).

#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <vector>

#include "cafmesh/testing/silo_world.hpp"

using namespace cafmesh;
using namespace cafmesh::testing;
using namespace std::chrono_literals;
using testing::fixture;

namespace {

const std::string owner_path = "node/Owner/O0";
const std::string portal_path = "portal/user9/tab1";

/// Every key the silos' test hub factories built, in silo order.
std::vector<std::string> built_keys(silo_world& w) {
  std::vector<std::string> out;
  for (auto& e : w.silos)
    for (auto& k : fixture::state_of<test_hub_factory_state>(e.hubs).built)
      out.push_back(k);
  return out;
}

routing::router_core_stats core_stats(fixture& fx, const lifecycle::silo_components& s) {
  auto r = testing::ask<routing::router_core_stats>(fx, caf::actor_cast<caf::actor>(s.core),
                                                    routing::rc_stats_atom::value);
  fx.run();
  REQUIRE(r->ok());
  return r->value;
}

} // namespace

TEST_CASE_FIXTURE(fixture, "client sender NACK: a frame from a pure client's owner hub to an unserved portal is NACKed to that owner, not to a node hub of the silos") {
  silo_world w{*this};
  auto a = w.add_silo("a").addr;
  w.add_silo("b");
  auto c = w.add_client("c", a);
  auto owner = add_hub(*this, c.routing, owner_path);
  run();
  // No process claims the portal: the pod hub placed on the gateway (prefer-local) answers
  // that it is not here, and the leg ends in one NACK `shutting_down`, target unserved.
  caf::anon_send(owner, routing::ep_post_atom::value,
                 make_delivery("frame-1", portal_path, "stream-1"));
  run_for(2s);
  auto& hub = hub_of(owner);
  REQUIRE(hub.outcomes.size() == 1);
  CHECK(hub.outcomes[0].id == "frame-1");
  CHECK(hub.outcomes[0].kind == "nack");
  CHECK(hub.outcomes[0].verdict == routing::verdict::shutting_down);
  CHECK(hub.outcomes[0].target_unserved);
  CHECK(hub.outcomes[0].message.find("No silo serves hub '" + portal_path + "'")
        != std::string::npos);
  // It came from the gateway's router core straight to the client's local route; no silo
  // built a hub for the owner's address to take it.
  auto st = core_stats(*this, w.at(a));
  CHECK(st.accepted == 1);
  CHECK(st.nacks_posted == 1);
  CHECK(st.nacks_client == 1);
  CHECK(st.nacks_local == 0);
  CHECK(st.nacks_node_hub == 0);
  CHECK(st.nacks_stream == 0);
  CHECK(built_keys(w).empty());
  CHECK(service_of(c.routing).stats.lr_delivered == 1);
  // One terminal outcome: nothing more arrives later.
  run_for(60s);
  CHECK(hub.outcomes.size() == 1);
}

TEST_CASE_FIXTURE(fixture, "client sender NACK: the NACK falls back to the silo's ladder when the client has no route for the sender") {
  silo_world w{*this};
  auto a = w.add_silo("a").addr;
  auto c = w.add_client("c", a);
  // The sender is a hub of silo A, although the client dispatched its delivery: the client
  // has no route for it, and the NACK takes the silo's own rungs (here the local route).
  auto owner = add_hub(*this, w.at(a).routing, owner_path);
  run();
  auto d = make_delivery("frame-2", portal_path, "stream-1");
  d.sender = routing::address::from(owner_path);
  auto r = testing::ask<routing::envelope>(*this, c.routing, routing::rs_deliver_atom::value, d);
  run_for(2s);
  REQUIRE(r->ok());
  CHECK(r->value.state == routing::delivery_state::forwarded);
  auto& hub = hub_of(owner);
  REQUIRE(hub.outcomes.size() == 1);
  CHECK(hub.outcomes[0].id == "frame-2");
  CHECK(hub.outcomes[0].kind == "nack");
  CHECK(hub.outcomes[0].verdict == routing::verdict::shutting_down);
  auto st = core_stats(*this, w.at(a));
  CHECK(st.nacks_posted == 1);
  CHECK(st.nacks_client == 0);
  CHECK(st.nacks_local == 1);
  CHECK(service_of(c.routing).stats.lr_refused == 1);
  CHECK(built_keys(w).empty());
}
