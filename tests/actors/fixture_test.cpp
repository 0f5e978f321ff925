#include <chrono>

#include <doctest/doctest.h>

#include <caf/all.hpp>

#include "cafmesh/actors/log.hpp"
#include "cafmesh/testing/fixture.hpp"

using namespace std::chrono_literals;

namespace {

using budget_atom = caf::atom_constant<caf::atom("tbudget")>;

struct budget_state {
  int64_t fired_at_ms = -1;
};

caf::behavior budget_actor(caf::stateful_actor<budget_state>* self,
                           cafmesh::testing::fixture* fx) {
  self->delayed_send(self, 30s, budget_atom::value);
  return {[=](budget_atom) {
    self->state.fired_at_ms = fx->now_ms();
    cafmesh::log::get("test").warning("budget expired");
  }};
}

} // namespace

TEST_CASE_FIXTURE(cafmesh::testing::fixture,
                  "fixture: a 30 s budget fires at 30,000 virtual ms in well under 1 s of wall time") {
  auto wall0 = std::chrono::steady_clock::now();
  auto a = track(sys.spawn(budget_actor, this));
  auto& st = state_of<budget_state>(a);
  run();
  CHECK(st.fired_at_ms == -1);
  CHECK(next_timeout_ms() == 30000);
  run_for(29999ms);
  CHECK(st.fired_at_ms == -1);
  CHECK(now_ms() == 29999);
  run_for(1ms);
  CHECK(st.fired_at_ms == 30000);
  auto lines = logs.find("budget expired", cafmesh::log::level::warning);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].t_ms == 30000);
  CHECK(lines[0].component == "test");
  CHECK(std::chrono::steady_clock::now() - wall0 < 1s);
}

TEST_CASE_FIXTURE(cafmesh::testing::fixture,
                  "fixture: run_until stops at the predicate and respects its virtual-time cap") {
  auto a = track(sys.spawn(budget_actor, this));
  auto& st = state_of<budget_state>(a);
  CHECK_FALSE(run_until([&] { return st.fired_at_ms >= 0; }, 10s));
  CHECK(now_ms() <= 10000);
  CHECK(run_until([&] { return st.fired_at_ms >= 0; }, 1h));
  CHECK(st.fired_at_ms == 30000);
}
