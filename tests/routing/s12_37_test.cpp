// docs/scenarios.md S12.37 (cafmesh goes further, docs/behaviour/routing.md#nacks): one terminal
// outcome per delivery id at the sender, with a NACK that really travels over both the pod-hub
// and the stream transport (stream_world.hpp: the router core in process A, the sender's hub in
// process B behind its pod hub and subscribed to B's stream transport).

#include "stream_world.hpp"

using namespace cafmesh::testing::stream_bed;
using cafmesh::testing::fixture;

TEST_CASE_FIXTURE(fixture, "S12.37 a NACK delivered over both the pod hub and the stream transport reaches the application once and a late NACK after the response is dropped") {
  world w{*this};
  w.start();
  auto bob = w.add_hub("portal/bob");
  // node/Acme refuses every call: the request's leg ends in one NACK `failed`
  w.port_st().nodes["Acme"] = node_script{true, fault{mesh_errc::invalid_operation, "no such operation"}, 0};
  // The pod hub hands the NACK to bob, but its acknowledgement never reaches A: rung c
  // faults (30 s) and the ladder falls back to the stream transport (rung d), which hands
  // bob the same NACK a second time.
  drop_rule lost_ack;
  lost_ack.src = w.b;
  lost_ack.dst = w.a;
  lost_ack.target = component::client;
  lost_ack.is_response = true;
  lost_ack.count = 1;
  caf::anon_send(w.net, sim_drop_atom::value, lost_ack);
  run();

  SUBCASE("a NACK over both transports") {
    caf::anon_send(bob, ep_request_atom::value, world::make("q1", "node/Acme", "portal/bob"),
                   int64_t{120000});
    run();
    REQUIRE(run_until([&] {
      auto st = w.stats();
      return st.nacks_posted == 1 && st.nacks_alive == 0;
    },
                      200s));
    run();
    auto st = w.stats();
    // the NACK really went both ways: handed over by the pod hub, then published
    CHECK(w.fx.state_of<inbound_state>(w.inbound).handed == 1);
    CHECK(st.nacks_pod_hub == 0);
    CHECK(st.nacks_stream == 1);
    CHECK(w.stats_b().local_deliveries == 1);
    // the application saw exactly one NACK for q1
    auto os = outcomes_for(bob, "q1");
    REQUIRE(os.size() == 1);
    CHECK(os[0].kind == "nack");
    CHECK(os[0].verdict == verdict::failed);
    CHECK(os[0].message == "Delivery to 'node/Acme' failed: no such operation");
    CHECK(hub(bob).outcomes.size() == 1);
    // and the trace holds one "duplicate outcome ... dropped"
    CHECK(logs.count("duplicate outcome for delivery q1 dropped") == 1);
    CHECK(logs.count("duplicate outcome") == 1);
    CHECK(hub(bob).tracker.duplicates_dropped() == 1);
    CHECK(w.gauge_count() == 0);
  }

  SUBCASE("a response followed by a late NACK") {
    // node/Slow fails only after 5 s; the response reaches bob first, over the stream
    w.port_st().nodes["Slow"] = node_script{true, fault{mesh_errc::invalid_operation, "too late"}, 5000};
    caf::anon_send(bob, ep_request_atom::value, world::make("q2", "node/Slow", "portal/bob"),
                   int64_t{120000});
    run();
    envelope response = world::make("q2-response", "portal/bob", "node/Slow");
    response.request_id = std::string{"q2"};
    response.payload_type = "response";
    auto pub = testing::ask<caf::ok_atom>(*this, w.ta, sp_publish_atom::value,
                                          address::from("portal/bob"), response);
    run();
    REQUIRE(pub->ok());
    REQUIRE(outcomes_for(bob, "q2").size() == 1);
    CHECK(outcomes_for(bob, "q2")[0].kind == "response");
    // the late NACK arrives (pod hub, then stream after the lost acknowledgement)
    REQUIRE(run_until([&] {
      auto st = w.stats();
      return st.nacks_posted == 1 && st.nacks_alive == 0;
    },
                      200s));
    run();
    auto os = outcomes_for(bob, "q2");
    REQUIRE(os.size() == 1);
    CHECK(os[0].kind == "response");
    CHECK(hub(bob).outcomes.size() == 1);
    // both late copies of the NACK were dropped as duplicates
    CHECK(logs.count("duplicate outcome for delivery q2 dropped") == 2);
    CHECK(hub(bob).tracker.duplicates_dropped() == 2);
    CHECK(w.gauge_count() == 0);
  }
}
