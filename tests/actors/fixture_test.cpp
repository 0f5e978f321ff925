#include <chrono>

#include <doctest/doctest.h>

#include <caf/all.hpp>

#include "cafmesh/actors/log.hpp"
#include "cafmesh/config/mesh_config.hpp"
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

TEST_CASE_FIXTURE(cafmesh::testing::fixture,
                  "log: the capture sees every level, one logger per component, context prefixed") {
  auto a = cafmesh::log::get("router_core");
  auto b = cafmesh::log::get("router_core").with_context("S127.0.0.1:1@1");
  CHECK(a.component() == "router_core");
  a.debug("plain");
  b.error("with context");
  cafmesh::config::log_section cfg;
  cfg.level = "error";
  cafmesh::log::configure(cfg); // stderr only: the capture still sees debug lines
  a.debug("after configure");
  REQUIRE(logs.lines().size() == 3);
  CHECK(logs.lines()[0].lvl == cafmesh::log::level::debug);
  CHECK(logs.lines()[1].text == "[S127.0.0.1:1@1] with context");
  CHECK(logs.lines()[1].lvl == cafmesh::log::level::error);
  CHECK(logs.count("after configure", cafmesh::log::level::debug) == 1);
  cafmesh::log::level lvl;
  CHECK(cafmesh::log::parse_level("warning", lvl));
  CHECK(lvl == cafmesh::log::level::warning);
  CHECK_FALSE(cafmesh::log::parse_level("loud", lvl));
  cfg.level = "info";
  cafmesh::log::configure(cfg);
}

TEST_CASE_FIXTURE(cafmesh::testing::fixture,
                  "log: a capture with a minimum level keeps only lines at or above it") {
  cafmesh::log::capture warnings{[] { return int64_t{7}; }, cafmesh::log::level::warning};
  auto a = cafmesh::log::get("router_core");
  a.debug("quiet");
  a.info("still quiet");
  a.warning("kept warning");
  a.error("kept error");
  auto kept = warnings.lines();
  REQUIRE(kept.size() == 2);
  CHECK(kept[0].text == "kept warning");
  CHECK(kept[0].lvl == cafmesh::log::level::warning);
  CHECK(kept[1].text == "kept error");
  CHECK(kept[1].t_ms == 7);
  CHECK(logs.lines().size() == 4); // the fixture's own capture still sees every level
}
