// The stream transport (routing/stream_transport.hpp) and the router's stream leg over it
// (docs/behaviour/routing.md#legs "Stream leg", docs/behaviour/size-guard.md#limits stream block,
// examples/config/README.md#keys timeouts), in virtual time on two simulated processes
// (stream_world.hpp): A runs the router core and a stream transport, B hosts the subscribers.

#include "stream_world.hpp"

using namespace cafmesh::testing::stream_bed;
using cafmesh::testing::fixture;

namespace {

bool contains(const std::string& hay, const std::string& needle) {
  return hay.find(needle) != std::string::npos;
}

/// Runs until every accepted leg terminated and every NACK left its ladder.
void settle(fixture& fx, world& w, std::chrono::milliseconds cap = 200s) {
  fx.run();
  REQUIRE(fx.run_until([&] {
    auto st = w.stats();
    return st.in_flight == 0 && st.nacks_alive == 0;
  },
                       cap));
}

} // namespace

// -- the transport on its own ------------------------------------------------------------

TEST_CASE_FIXTURE(fixture, "stream transport: a probe finds a subscriber in its own process and in a peer process and says none when nobody subscribed") {
  world w{*this};
  w.start();
  auto viewer = w.add_hub("app/viewer");
  auto local = track(spawn_hub_endpoint(sys, address::from("app/local"), caf::actor{}));
  caf::anon_send(w.ta, st_sub_atom::value, address::from("app/local"),
                 caf::actor_cast<caf::actor>(local));
  run();
  auto p1 = testing::ask<bool>(*this, w.ta, sp_probe_atom::value, address::from("app/local"));
  auto p2 = testing::ask<bool>(*this, w.ta, sp_probe_atom::value, address::from("app/viewer"));
  auto p3 = testing::ask<bool>(*this, w.ta, sp_probe_atom::value, address::from("app/nobody"));
  run();
  REQUIRE(p1->ok());
  CHECK(p1->value);
  REQUIRE(p2->ok());
  CHECK(p2->value);
  REQUIRE(p3->ok());
  CHECK_FALSE(p3->value);
  CHECK(p3->t_ms == 0);
  CHECK(w.stats_a().probes_none == 1);
  (void) viewer;
}

TEST_CASE_FIXTURE(fixture, "stream transport: a publish reaches subscribers in every process and a subscriber that exited is gone at once") {
  world w{*this};
  w.start();
  auto v1 = w.add_hub("app/viewer");
  auto v2 = track(spawn_hub_endpoint(sys, address::from("app/viewer"), caf::actor{}));
  caf::anon_send(w.ta, st_sub_atom::value, address::from("app/viewer"),
                 caf::actor_cast<caf::actor>(v2));
  run();
  auto r = testing::ask<caf::ok_atom>(*this, w.ta, sp_publish_atom::value,
                                      address::from("app/viewer"), world::make("f1", "app/viewer"));
  run();
  CHECK(r->ok());
  REQUIRE(hub(v1).received.size() == 1);
  CHECK(hub(v1).received[0].env.id == "f1");
  REQUIRE(hub(v2).received.size() == 1);
  CHECK(w.stats_a().local_deliveries == 1);
  CHECK(w.stats_b().local_deliveries == 1);
  // the subscriber in B exits: B's transport drops it, the probe says none, a publish to
  // nobody fails not_found and is never reported as done
  caf::anon_send_exit(v1, caf::exit_reason::user_shutdown);
  caf::anon_send(w.ta, st_unsub_atom::value, address::from("app/viewer"),
                 caf::actor_cast<caf::actor>(v2));
  run();
  CHECK(w.stats_b().subscriptions == 0);
  auto p = testing::ask<bool>(*this, w.ta, sp_probe_atom::value, address::from("app/viewer"));
  auto q = testing::ask<caf::ok_atom>(*this, w.ta, sp_publish_atom::value,
                                      address::from("app/viewer"), world::make("f2", "app/viewer"));
  run();
  REQUIRE(p->ok());
  CHECK_FALSE(p->value);
  REQUIRE(q->done);
  CHECK(q->code() == mesh_errc::not_found);
  CHECK(contains(to_fault(q->err).text, "no live subscriber for 'app/viewer': nothing was published"));
}

TEST_CASE_FIXTURE(fixture, "stream transport: before its start it refuses probes and publishes with the not-started fault") {
  world w{*this};
  w.start_a = false;
  w.start();
  auto p = testing::ask<bool>(*this, w.ta, sp_probe_atom::value, address::from("app/viewer"));
  auto q = testing::ask<caf::ok_atom>(*this, w.ta, sp_publish_atom::value,
                                      address::from("app/viewer"), world::make("f1", "app/viewer"));
  run();
  REQUIRE(p->done);
  CHECK(p->code() == mesh_errc::lifecycle_misuse);
  CHECK(to_fault(p->err).text == "the stream transport has not started");
  REQUIRE(q->done);
  CHECK(q->code() == mesh_errc::lifecycle_misuse);
  CHECK(w.stats_a().not_started == 2);
  CHECK_FALSE(w.stats_a().started);
}

// -- the stream leg -------------------------------------------------------------------------------
// docs/behaviour/routing.md#legs

TEST_CASE_FIXTURE(fixture, "stream leg: a definite none is NACKed not_found with target_unserved and nothing is published") {
  world w{*this};
  w.cfg.routing.client_hosted_address_types = {"app"};
  w.start();
  auto bob = w.add_hub("portal/bob");
  w.route(world::make("s1", "app/gone"));
  settle(*this, w);
  auto os = outcomes_for(bob, "s1");
  REQUIRE(os.size() == 1);
  CHECK(os[0].kind == "nack");
  CHECK(os[0].verdict == verdict::not_found);
  CHECK(os[0].target_unserved);
  CHECK(os[0].message == "No live stream subscriber for 'app/gone'");
  CHECK(w.stats_a().publishes == 0);
  auto st = w.stats();
  CHECK(st.terminal_events == 1);
  CHECK(st.nacked == 1);
  CHECK(w.gauge_count() == 0);
}

TEST_CASE_FIXTURE(fixture, "stream leg: a probe silent for 10 s counts as yes and the delivery is published at 10,000 ms") {
  world w{*this};
  w.cfg.routing.client_hosted_address_types = {"app"};
  w.start();
  auto bob = w.add_hub("portal/bob");
  auto viewer = w.add_hub("app/viewer");
  w.drop_first<st_has_atom>(); // B never hears the probe: A's transport stays silent
  auto t0 = now_ms();
  w.route(world::make("s2", "app/viewer"));
  REQUIRE(run_until([&] { return !hub(viewer).received.empty(); }, 60s));
  CHECK(now_ms() - t0 == 10000);
  CHECK(hub(viewer).received[0].env.id == "s2");
  settle(*this, w);
  auto st = w.stats();
  CHECK(st.landed == 1);
  CHECK(st.terminal_events == 1);
  CHECK(hub(bob).outcomes.empty());
  CHECK(w.gauge_count() == 0);
}

TEST_CASE_FIXTURE(fixture, "stream leg: 1,048,576 payload bytes are rejected with nothing published while 1,048,575 are published") {
  world w{*this};
  w.cfg.routing.client_hosted_address_types = {"app"};
  w.start();
  auto bob = w.add_hub("portal/bob");
  auto viewer = w.add_hub("app/viewer");
  w.route(world::make("big", "app/viewer", "portal/bob", std::string(1048576, 'x')));
  settle(*this, w);
  auto os = outcomes_for(bob, "big");
  REQUIRE(os.size() == 1);
  CHECK(os[0].verdict == verdict::rejected);
  CHECK(contains(os[0].message, "app/viewer"));
  CHECK(contains(os[0].message, "1,048,576"));
  CHECK(w.stats_a().publishes == 0);
  CHECK(hub(viewer).received.empty());
  CHECK(logs.count("1,048,576", log::level::error) == 1);
  w.route(world::make("under", "app/viewer", "portal/bob", std::string(1048575, 'x')));
  settle(*this, w);
  REQUIRE(hub(viewer).received.size() == 1);
  CHECK(hub(viewer).received[0].env.id == "under");
  CHECK(outcomes_for(bob, "under").empty());
  CHECK(w.stats_a().publishes == 1);
  auto st = w.stats();
  CHECK(st.terminal_events == 2);
  CHECK(st.landed == 1);
  CHECK(st.nacked == 1);
}

TEST_CASE_FIXTURE(fixture, "stream leg: the router's post guard fires at exactly 60,000 ms with the documented text and NACKs failed") {
  world w{*this};
  w.cfg.routing.client_hosted_address_types = {"app"};
  w.cfg.routing.stream_transport_timeout_ms = 90000; // the transport outlasts the guard
  w.start();
  auto bob = w.add_hub("portal/bob");
  auto viewer = w.add_hub("app/viewer");
  w.drop_first<st_deliver_atom>(); // the post never completes
  auto t0 = now_ms();
  w.route(world::make("s3", "app/viewer"));
  REQUIRE(run_until([&] { return !outcomes_for(bob, "s3").empty(); }, 200s));
  CHECK(now_ms() - t0 == 60000);
  auto os = outcomes_for(bob, "s3");
  REQUIRE(os.size() == 1);
  CHECK(os[0].kind == "nack");
  CHECK(os[0].verdict == verdict::failed);
  CHECK(os[0].message == "Stream post to 'app/viewer' never completed within 60 s");
  CHECK_FALSE(os[0].target_unserved);
  CHECK(hub(viewer).received.empty());
  settle(*this, w);
  auto st = w.stats();
  CHECK(st.terminal_events == 1);
  CHECK(st.nacked == 1);
  CHECK(w.gauge_count() == 0);
}

TEST_CASE_FIXTURE(fixture, "stream leg: the transport's own 30 s bound fails the post before the router's guard") {
  world w{*this};
  w.cfg.routing.client_hosted_address_types = {"app"};
  w.start();
  auto bob = w.add_hub("portal/bob");
  w.add_hub("app/viewer");
  w.drop_first<st_deliver_atom>();
  auto t0 = now_ms();
  w.route(world::make("s4", "app/viewer"));
  REQUIRE(run_until([&] { return !outcomes_for(bob, "s4").empty(); }, 200s));
  CHECK(now_ms() - t0 == 30000);
  auto os = outcomes_for(bob, "s4");
  REQUIRE(os.size() == 1);
  CHECK(os[0].verdict == verdict::failed);
  CHECK(os[0].message
        == "Stream post to 'app/viewer' failed: stream post to 'app/viewer' was not confirmed by "
             + w.b.to_string() + " within 30 s");
  settle(*this, w);
  CHECK(w.stats().terminal_events == 1);
  CHECK(w.gauge_count() == 0);
}

TEST_CASE_FIXTURE(fixture, "stream leg: a stream transport that has not started is a composition fault NACKed failed") {
  world w{*this};
  w.cfg.routing.client_hosted_address_types = {"app"};
  w.start_a = false;
  w.start();
  auto bob = w.add_hub("portal/bob");
  auto viewer = w.add_hub("app/viewer");
  w.route(world::make("c1", "app/viewer"));
  settle(*this, w);
  auto os = outcomes_for(bob, "c1");
  REQUIRE(os.size() == 1);
  CHECK(os[0].verdict == verdict::failed);
  CHECK(os[0].message
        == "Routing to 'app/viewer' failed before the delivery could be attempted: the stream "
           "transport has not started");
  CHECK(hub(viewer).received.empty());
  auto st = w.stats();
  CHECK(st.terminal_events == 1);
  CHECK(st.nacked == 1);
  CHECK(w.gauge_count() == 0);
}

TEST_CASE_FIXTURE(fixture, "stream leg: a client-hosted pod hub not here falls back to the stream transport and lands") {
  world w{*this};
  w.cfg.routing.client_hosted_address_types = {"portal"};
  w.start();
  // portal/carol has no pod hub owner in B (the port answers pod_hub_not_here) but
  // subscribes to B's stream transport
  auto carol = track(spawn_hub_endpoint(sys, address::from("portal/carol"), w.entry));
  caf::anon_send(w.tb, st_sub_atom::value, address::from("portal/carol"),
                 caf::actor_cast<caf::actor>(carol));
  run();
  w.route(world::make("p1", "portal/carol", "portal/carol"));
  settle(*this, w);
  REQUIRE(hub(carol).received.size() == 1);
  CHECK(hub(carol).received[0].env.id == "p1");
  CHECK(hub(carol).outcomes.empty());
  CHECK(w.port_st().calls == std::vector<std::string>{"podhub/portal/carol"});
  auto st = w.stats();
  CHECK(st.landed == 1);
  CHECK(st.terminal_events == 1);
}
