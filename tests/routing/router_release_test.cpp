// Legs that will not land because their silo stops, at the router core: ended on request
// of the quiescence participant (`q_end_legs`) or cancelled by the pool drain after the
// stopping signal, each with exactly one NACK whose verdict says whether the delivery was
// ever attempted.

#include "router_fakes.hpp"

#include "cafmesh/testing/ask.hpp"

using namespace cafmesh::testing::router_bed;
using cafmesh::testing::fixture;

namespace {

std::string before_text(bed& b, const std::string& target) {
  return "silo " + b.silo.to_string() + " stopped before the delivery to " + target
         + " was attempted";
}

std::string in_flight_text(bed& b, const std::string& target) {
  return "silo " + b.silo.to_string() + " stopped while the delivery to " + target
         + " was in flight; its outcome is unknown";
}

} // namespace

TEST_CASE_FIXTURE(fixture, "router: q_end_legs ends every leg that has not landed with one NACK, shutting_down before the attempt and failed in flight, and answers the residual") {
  bed b(*this);
  b.start();
  b.grain().fallback = answer::held();
  b.route(bed::make("h1", "cache/one"));
  b.route(bed::make("q1", "cache/one"));
  b.route(bed::make("n1", "node/Org/Acme"));
  auto quiet = bed::make("s1", "cache/one");
  quiet.answer_suppressed = true;
  b.route(quiet);
  run();
  REQUIRE(b.stats().in_flight == 4);
  REQUIRE(b.grain().attempts.size() == 2); // h1 and n1; q1 and s1 wait behind h1
  auto residual = cafmesh::testing::router_bed::ask<std::vector<std::string>>(*this, b.rc, routing::q_end_legs_atom::value,
                                                std::string{"non-graceful stop"});
  CHECK(residual == std::vector<std::string>{"h1", "q1", "n1", "s1"});
  auto out = cafmesh::testing::router_bed::ask<caf::ok_atom>(*this, b.rc, routing::q_nacks_out_atom::value);
  (void) out;
  auto nacks = b.local_nacks();
  REQUIRE(nacks.size() == 3);
  std::map<std::string, delivery_failure> by_id;
  for (auto& n : nacks)
    CHECK(by_id.emplace(n.request_id, n).second);
  CHECK(by_id.at("h1").verdict == verdict::failed);
  CHECK(by_id.at("h1").message == in_flight_text(b, "cache/one"));
  CHECK(by_id.at("n1").verdict == verdict::failed);
  CHECK(by_id.at("n1").message == in_flight_text(b, "node/Org/Acme"));
  CHECK(by_id.at("q1").verdict == verdict::shutting_down);
  CHECK(by_id.at("q1").message == before_text(b, "cache/one"));
  auto st = b.stats();
  CHECK(st.in_flight == 0);
  CHECK(st.ended_by_release == 4);
  CHECK(st.terminal_events == 4);
  CHECK(st.nacked == 4);
  CHECK(st.suppressed_failures == 1);
  CHECK(b.gauge_count() == 0);
  // A late answer of a held call changes nothing.
  b.release();
  run();
  CHECK(b.local_nacks().size() == 3);
  CHECK(b.stats().landed == 0);
}

TEST_CASE_FIXTURE(fixture, "router: q_end_legs ends a response that has not left with one NACK failed to its request's sender, not to the hub that answered") {
  bed b(*this);
  b.start();
  b.grain().fallback = answer::held();
  // The answering hub portal/alice (local here) responds to request req-7 of node/Org/Acme.
  auto response = bed::make("req-7-response", "node/Org/Acme", "portal/alice");
  response.request_id = std::string{"req-7"};
  response.payload_type = "response";
  b.route(response);
  run();
  REQUIRE(b.stats().in_flight == 1);
  REQUIRE(b.grain().attempts.size() == 1);
  auto residual = cafmesh::testing::router_bed::ask<std::vector<std::string>>(
    *this, b.rc, routing::q_end_legs_atom::value, std::string{"non-graceful stop"});
  CHECK(residual == std::vector<std::string>{"req-7-response"});
  run();
  CHECK(b.local_nacks().empty()); // the answering hub is not NACKed
  REQUIRE(b.grain().attempts.size() == 2);
  auto& nack = b.grain().attempts[1].env;
  CHECK(nack.target == address::from("node/Org/Acme"));
  CHECK(nack.payload_type == delivery_failure_payload_type);
  REQUIRE(nack.request_id);
  CHECK(*nack.request_id == "req-7");
  delivery_failure f;
  REQUIRE(from_json_text(nack.payload_json, f));
  CHECK(f.verdict == verdict::failed);
  CHECK(f.message
        == "silo " + b.silo.to_string()
             + " stopped before the response of portal/alice to request req-7 left it; the "
               "request's outcome is unknown");
  CHECK(b.stats().ended_by_release == 1);
}

TEST_CASE_FIXTURE(fixture, "router: after the stopping signal a leg cancelled by the pool drain is abandoned with one NACK and legs the draining pool refuses get one NACK each") {
  bed b(*this);
  b.start();
  b.grain().fallback = answer::held();
  b.route(bed::make("h1", "cache/one"));
  b.route(bed::make("q1", "cache/one"));
  b.route(bed::make("q2", "cache/one"));
  run();
  auto ok = cafmesh::testing::router_bed::ask<caf::ok_atom>(*this, b.rc, lifecycle::host_stopping_atom::value);
  (void) ok;
  auto drain = testing::ask<uint64_t>(*this, b.pool, routing::pool_drain_atom::value);
  run_to(8000);
  REQUIRE(drain->done);
  CHECK(drain->t_ms == 8000);
  CHECK(drain->value == 0);
  auto nacks = b.local_nacks();
  REQUIRE(nacks.size() == 3);
  CHECK(nacks[0].request_id == "h1");
  CHECK(nacks[0].verdict == verdict::failed);
  CHECK(nacks[0].message == in_flight_text(b, "cache/one"));
  CHECK(nacks[1].request_id == "q1");
  CHECK(nacks[1].verdict == verdict::shutting_down);
  CHECK(nacks[1].message == before_text(b, "cache/one"));
  CHECK(nacks[2].request_id == "q2");
  CHECK(nacks[2].verdict == verdict::shutting_down);
  auto st = b.stats();
  CHECK(st.abandoned == 1);
  CHECK(st.refused == 2);
  CHECK(st.terminal_events == 3);
  CHECK(st.nacks_pool_refused == 0);
  CHECK(b.gauge_count() == 0);
  CHECK(logs.count("could not leave") == 0);
}

TEST_CASE_FIXTURE(fixture, "router: NACKs of a stop that cannot leave within the release bound are named in one error line and dropped") {
  bed b(*this);
  b.cfg.pool.drain_grace_ms = 2000;
  b.start();
  b.local().hold = true; // the sender's local route never answers
  b.with_streams = true;
  b.grain().fallback = answer::held();
  for (int i = 0; i < 22; ++i)
    b.route(bed::make("d" + std::to_string(i), "node/Org/N" + std::to_string(i)));
  run();
  auto residual = cafmesh::testing::router_bed::ask<std::vector<std::string>>(*this, b.rc, routing::q_end_legs_atom::value,
                                                std::string{"hold budget expired"});
  CHECK(residual.size() == 22);
  auto out = testing::ask<caf::ok_atom>(*this, b.rc, routing::q_nacks_out_atom::value);
  run_to(1999);
  CHECK_FALSE(out->done);
  run_to(2000);
  REQUIRE(out->done);
  CHECK(out->t_ms == 2000);
  auto errs = logs.find("could not leave", cafmesh::log::level::error);
  REQUIRE(errs.size() == 1);
  CHECK(errs[0].text.find("22 NACK(s) could not leave silo " + b.silo.to_string()
                          + " within 2 s of its stop: d0, d1, d2, d3, d4, d5, d6, d7, d8, d9, "
                            "d10, d11, d12, d13, d14, d15, d16, d17, d18, d19, +2 more")
        != std::string::npos);
  auto st = b.stats();
  CHECK(st.nacks_unsent == 22);
  CHECK(st.nacks_alive == 0);
  CHECK(b.gauge_count() == 0);
}
