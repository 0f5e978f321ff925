// The router core's own request bounds (router_core.cpp `bounded_request`): the node leg's
// resolve (docs/behaviour/routing.md#legs s) and grain attempt (docs/behaviour/routing.md#legs,
// placement 30 s + response 30 s) time out at exactly their bound in virtual time, several bounds
// share one timer, and an answer arriving after its bound is ignored (no landing, no second
// terminal event).

#include "router_fakes.hpp"

using namespace cafmesh::testing::router_bed;
using cafmesh::testing::fixture;

namespace {

const char* resolve_timeout_text = "Path resolution for 'node/Org/Acme' failed: timed out after 30 s";

/// The one delivery of `b` ended in exactly one NACK and its late answer changed nothing:
/// one terminal event, no landing, nothing in flight, the gauge back at zero.
void check_one_nack_and_nothing_after(bed& b) {
  auto st = b.stats();
  CHECK(st.terminal_events == 1);
  CHECK(st.nacked == 1);
  CHECK(st.landed == 0);
  CHECK(st.in_flight == 0);
  CHECK(b.local_nacks().size() == 1);
  CHECK(b.gauge_count() == 0);
}

} // namespace

TEST_CASE_FIXTURE(fixture, "router: a resolver answering after the 30 s resolve bound is ignored after the leg was NACKed failed at exactly 30 s") {
  bed b(*this);
  b.start();
  b.res().hold.insert("node/Org/Acme");
  b.route(bed::make("d1", "node/Org/Acme"));
  run();
  CHECK(b.res().calls.size() == 1);
  CHECK(b.gauge_count() == 1);
  run_for(29999ms);
  CHECK(b.local_nacks().empty());
  CHECK(b.stats().in_flight == 1);
  run_for(1ms);
  auto ns = b.local_nacks();
  REQUIRE(ns.size() == 1);
  CHECK(ns[0].request_id == "d1");
  CHECK(ns[0].verdict == verdict::failed);
  CHECK(ns[0].message == resolve_timeout_text);
  // The resolver answers now (found): the leg is gone, nothing is attempted.
  caf::anon_send(b.resolver, ft_release_atom::value, std::string{"node/Org/Acme"});
  run();
  run_for(120s);
  CHECK(b.grain().attempts.empty());
  check_one_nack_and_nothing_after(b);
}

TEST_CASE_FIXTURE(fixture, "router: a grain port answering processed after the 60 s attempt bound lands nothing after the leg was NACKed failed at exactly 60 s") {
  bed b(*this);
  b.start();
  b.script("messagehub/Org/Acme", {answer::held()});
  b.route(bed::make("d1", "node/Org/Acme"));
  run();
  CHECK(b.grain().attempts.size() == 1);
  run_for(59999ms);
  CHECK(b.local_nacks().empty());
  CHECK(b.stats().in_flight == 1);
  run_for(1ms);
  auto ns = b.local_nacks();
  REQUIRE(ns.size() == 1);
  CHECK(ns[0].request_id == "d1");
  CHECK(ns[0].verdict == verdict::failed);
  // The held call is answered `processed` now: too late, the leg already terminated.
  b.release("messagehub/Org/Acme");
  run();
  run_for(120s);
  CHECK(b.grain().attempts.size() == 1);
  check_one_nack_and_nothing_after(b);
}

TEST_CASE_FIXTURE(fixture, "router: three stalled resolves started 10 s apart time out each at its own 30 s bound and an answered one never does") {
  bed b(*this);
  b.start();
  b.res().hold.insert("node/Org/Acme");
  auto t0 = now_ms();
  b.route(bed::make("d1", "node/Org/Acme"));
  run();
  run_for(10s);
  b.route(bed::make("d2", "node/Org/Acme"));
  // Answered at once: its bound must never fire.
  b.route(bed::make("d9", "node/Org/Quick"));
  run();
  run_for(10s);
  b.route(bed::make("d3", "node/Org/Acme"));
  run();
  CHECK(b.stats().landed == 1); // d9
  auto nacks_at = [&](int64_t t) {
    run_to(t0 + t - 1);
    auto before = b.local_nacks().size();
    run_to(t0 + t);
    return std::make_pair(before, b.local_nacks().size());
  };
  CHECK(nacks_at(30000) == std::make_pair(size_t{0}, size_t{1}));
  CHECK(nacks_at(40000) == std::make_pair(size_t{1}, size_t{2}));
  CHECK(nacks_at(50000) == std::make_pair(size_t{2}, size_t{3}));
  auto ns = b.local_nacks();
  REQUIRE(ns.size() == 3);
  CHECK(ns[0].request_id == "d1");
  CHECK(ns[1].request_id == "d2");
  CHECK(ns[2].request_id == "d3");
  for (auto& n : ns)
    CHECK(n.message == resolve_timeout_text);
  run_for(120s);
  auto st = b.stats();
  CHECK(st.terminal_events == 4);
  CHECK(st.landed == 1);
  CHECK(st.nacked == 3);
  CHECK(st.in_flight == 0);
  CHECK(b.gauge_count() == 0);
}
