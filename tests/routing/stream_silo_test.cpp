// The stream transport wired into whole silos (spawn_silo, docs/behaviour/routing.md#legs stream
// leg): every silo has one, started with the routing actors, whose peers are the silos of the
// membership snapshots.

#include <doctest/doctest.h>

#include "cafmesh/testing/silo_world.hpp"

using namespace cafmesh;
using namespace cafmesh::testing;
using namespace std::chrono_literals;
using testing::fixture;

TEST_CASE_FIXTURE(fixture, "stream transport in silos: a stream leg routed on silo B reaches a subscriber hosted in silo A's process and a missing one is NACKed not_found") {
  silo_world w{*this};
  w.cfg.routing.client_hosted_address_types = {"app"};
  auto a = w.add_silo("a").addr;
  auto b = w.add_silo("b").addr;
  run();
  // the subscriber lives in A's process and subscribes at A's transport
  auto viewer_addr = routing::address::from("app/viewer");
  auto viewer = track(routing::spawn_hub_endpoint(sys, viewer_addr, w.at(a).routing));
  caf::anon_send(w.at(a).streams, routing::st_sub_atom::value, viewer_addr,
                 caf::actor_cast<caf::actor>(viewer));
  // the sender is a co-hosted hub of silo B
  auto sender_addr = routing::address::from("node/Org/Sender");
  auto sender = track(routing::spawn_hub_endpoint(sys, sender_addr, w.at(b).routing));
  caf::anon_send(w.at(b).routing, routing::rs_register_atom::value, sender_addr,
                 caf::actor_cast<caf::actor>(sender));
  run();
  caf::anon_send(sender, routing::ep_post_atom::value, make_delivery("v1", "app/viewer"));
  caf::anon_send(sender, routing::ep_post_atom::value, make_delivery("v2", "app/nobody"));
  run_for(1s);
  REQUIRE(hub_of(viewer).received.size() == 1);
  CHECK(hub_of(viewer).received[0].env.id == "v1");
  REQUIRE(hub_of(sender).outcomes.size() == 1);
  auto& o = hub_of(sender).outcomes[0];
  CHECK(o.id == "v2");
  CHECK(o.kind == "nack");
  CHECK(o.verdict == routing::verdict::not_found);
  CHECK(o.target_unserved);
  CHECK(o.message == "No live stream subscriber for 'app/nobody'");
  auto ta = testing::ask<routing::stream_transport_stats>(*this, w.at(a).streams,
                                                          routing::st_stats_atom::value);
  auto tb = testing::ask<routing::stream_transport_stats>(*this, w.at(b).streams,
                                                          routing::st_stats_atom::value);
  run();
  REQUIRE(ta->ok());
  REQUIRE(tb->ok());
  CHECK(ta->value.started);
  CHECK(ta->value.local_deliveries == 1);
  CHECK(tb->value.publishes == 1);
  CHECK(tb->value.published == 1);
  CHECK(tb->value.probes_none == 1);
}

TEST_CASE_FIXTURE(fixture, "stream transport in silos: a hub registered at its routing service is subscribed while it stays registered") {
  silo_world w{*this};
  w.cfg.routing.client_hosted_address_types = {"app"};
  auto a = w.add_silo("a").addr;
  auto b = w.add_silo("b").addr;
  run();
  // app/viewer registered as a local route of silo A: subscribed at A's transport
  auto viewer_addr = routing::address::from("app/viewer");
  auto viewer = track(routing::spawn_hub_endpoint(sys, viewer_addr, w.at(a).routing));
  caf::anon_send(w.at(a).routing, routing::rs_register_atom::value, viewer_addr,
                 caf::actor_cast<caf::actor>(viewer));
  // the sender is a co-hosted hub of silo B
  auto sender_addr = routing::address::from("node/Org/Sender");
  auto sender = track(routing::spawn_hub_endpoint(sys, sender_addr, w.at(b).routing));
  caf::anon_send(w.at(b).routing, routing::rs_register_atom::value, sender_addr,
                 caf::actor_cast<caf::actor>(sender));
  run();
  caf::anon_send(sender, routing::ep_post_atom::value, make_delivery("v1", "app/viewer"));
  run_for(1s);
  REQUIRE(hub_of(viewer).received.size() == 1);
  CHECK(hub_of(viewer).received[0].env.id == "v1");
  CHECK(hub_of(sender).outcomes.empty());
  // unregistered: unsubscribed, the next delivery finds nobody
  caf::anon_send(w.at(a).routing, routing::rs_unregister_atom::value, viewer_addr);
  run();
  caf::anon_send(sender, routing::ep_post_atom::value, make_delivery("v2", "app/viewer"));
  run_for(1s);
  CHECK(hub_of(viewer).received.size() == 1);
  REQUIRE(hub_of(sender).outcomes.size() == 1);
  CHECK(hub_of(sender).outcomes[0].id == "v2");
  CHECK(hub_of(sender).outcomes[0].verdict == routing::verdict::not_found);
  CHECK(hub_of(sender).outcomes[0].target_unserved);
}
