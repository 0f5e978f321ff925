// Admission control at the router core: a delivery that finds `routing.max_in_flight` legs
// accepted and not terminated is refused before acceptance, on either entry, with verdict
// `unavailable`, "overloaded" and `retry_after_ms`; accepted legs are never refused or shed.

#include "router_fakes.hpp"

#include "cafmesh/routing/retry_policy.hpp"

using namespace cafmesh::testing::router_bed;
using cafmesh::testing::fixture;

TEST_CASE_FIXTURE(fixture, "S13.08 a router core at routing.max_in_flight refuses the next delivery unavailable with overloaded and retry_after_ms before acceptance, accepts again once legs end, and never refuses an accepted delivery") {
  bed b(*this);
  b.cfg.routing.max_in_flight = 3;
  b.cfg.routing.overload_retry_after_ms = 750;
  b.start();
  b.grain().fallback = answer::held();
  for (auto id : {"a1", "a2", "a3"})
    b.route(bed::make(id, "node/Org/Acme"));
  run();
  auto st = b.stats();
  REQUIRE(st.accepted == 3);
  REQUIRE(st.in_flight == 3);
  const std::string text = "silo " + b.silo.to_string()
                           + " overloaded: 3 deliveries in flight (routing.max_in_flight 3);"
                             " retry after 750 ms";
  // Co-hosted entry: refused with one NACK, nothing accepted, no grain call.
  b.route(bed::make("r1", "node/Org/Acme"));
  run();
  st = b.stats();
  CHECK(st.accepted == 3);
  CHECK(st.refused_overloaded == 1);
  CHECK(st.in_flight == 3);
  CHECK(b.grain().attempts.size() == 3);
  auto nacks = b.local_nacks();
  REQUIRE(nacks.size() == 1);
  CHECK(nacks[0].request_id == "r1");
  CHECK(nacks[0].verdict == verdict::unavailable);
  CHECK(nacks[0].message == text);
  REQUIRE(b.local().delivered.size() == 1);
  CHECK(b.local().delivered[0].properties.at("retry_after_ms") == "750");
  // Grain entry (pure clients): refused with the error `overloaded` carrying the hint; it is
  // resendable and classifies as `unavailable`.
  auto g = grain_route(*this, b, bed::make("r2", "node/Org/Acme"));
  REQUIRE(g);
  auto f = to_fault(g);
  CHECK(f.code == mesh_errc::overloaded);
  CHECK(f.text == text);
  REQUIRE(f.retry_after_ms);
  CHECK(*f.retry_after_ms == 750u);
  CHECK(is_resendable(f));
  CHECK(classify(f) == verdict::unavailable);
  // The client policy waits at least the hint (200 ms schedule raised to 750 ms).
  retry_state rs{client_policy(b.cfg.client)};
  auto d = rs.next(f);
  CHECK(d.retry);
  CHECK(d.delay_ms == 750);
  st = b.stats();
  CHECK(st.accepted == 3);
  CHECK(st.refused_overloaded == 2);
  // The accepted legs land: none was refused or shed.
  b.release();
  run();
  st = b.stats();
  CHECK(st.landed == 3);
  CHECK(st.in_flight == 0);
  // Accepting again.
  b.grain().fallback = answer::ok();
  b.route(bed::make("n1", "node/Org/Acme"));
  auto g2 = grain_route(*this, b, bed::make("n2", "node/Org/Acme"));
  CHECK_FALSE(g2); // accepted
  run();
  st = b.stats();
  CHECK(st.accepted == 5);
  CHECK(st.landed == 5);
  CHECK(st.refused_overloaded == 2);
  CHECK(st.nacked == 0);
  // Only the two refused deliveries were ever NACKed.
  CHECK(b.local_nacks().size() == 1);
  CHECK(b.gauge_count() == 0);
}

TEST_CASE_FIXTURE(fixture, "S13.08 continuations of accepted work are admitted beyond routing.max_in_flight: a response and a NACK at the bound are accepted on either entry, new work is refused") {
  bed b(*this);
  b.cfg.routing.max_in_flight = 2;
  b.start();
  b.grain().fallback = answer::held();
  for (auto id : {"a1", "a2"})
    b.route(bed::make(id, "node/Org/Acme"));
  run();
  REQUIRE(b.stats().in_flight == 2);
  // A response (request_id names the delivery it answers) on the co-hosted entry.
  auto resp = bed::make("resp1", "node/Org/Acme");
  resp.request_id = std::string{"q1"};
  b.route(resp);
  run();
  auto st = b.stats();
  CHECK(st.accepted == 3);
  CHECK(st.refused_overloaded == 0);
  CHECK(st.in_flight == 3);
  // A continuation through the grain entry (a pure client's hub answering).
  auto resp2 = bed::make("resp2", "node/Org/Acme");
  resp2.request_id = std::string{"q2"};
  auto g = grain_route(*this, b, resp2);
  CHECK_FALSE(g); // accepted
  // A NACK (a continuation carrying a delivery failure) on the co-hosted entry.
  auto nack = bed::make("nack1", "node/Org/Acme");
  nack.request_id = std::string{"q3"};
  nack.payload_type = delivery_failure_payload_type;
  b.route(nack);
  run();
  st = b.stats();
  CHECK(st.accepted == 5);
  CHECK(st.refused_overloaded == 0);
  // New work is still refused.
  b.route(bed::make("n1", "node/Org/Acme"));
  run();
  st = b.stats();
  CHECK(st.accepted == 5);
  CHECK(st.refused_overloaded == 1);
  CHECK(st.in_flight == 5);
  b.release();
  run();
  CHECK(b.stats().in_flight == 0);
  CHECK(b.gauge_count() == 0);
}

TEST_CASE_FIXTURE(fixture, "S13.08 legs waiting for their next attempt because their destination silo departed are not counted by admission control, so traffic to healthy silos is still admitted, they count again when they attempt") {
  bed b(*this);
  b.cfg.routing.max_in_flight = 2;
  b.start();
  silo_address gone{"10.0.0.9", 9999, 1};
  fault departed{mesh_errc::departed_silo, "silo " + gone.to_string() + " has departed"};
  departed.silo = gone;
  // Two legs to a grain on the departed silo: every attempt fails at once.
  b.script("messagehub/Org/Gone", {answer::err(departed), answer::err(departed), answer::err(departed),
                             answer::err(departed), answer::err(departed), answer::err(departed)});
  b.route(bed::make("g1", "node/Org/Gone"));
  b.route(bed::make("g2", "node/Org/Gone"));
  run_for(std::chrono::milliseconds(1));
  auto st = b.stats();
  REQUIRE(st.accepted == 2);
  REQUIRE(st.in_flight == 2);
  REQUIRE(b.grain().attempts_for("messagehub/Org/Gone") == 2);
  // Both wait for their retry: a delivery to a healthy grain is admitted and lands.
  b.route(bed::make("h1", "node/Org/Healthy"));
  run_for(std::chrono::milliseconds(1));
  st = b.stats();
  CHECK(st.refused_overloaded == 0);
  CHECK(st.accepted == 3);
  CHECK(st.landed == 1);
  CHECK(b.local_nacks().empty());
}
