// S13.07 on whole silos: silo A's process hosts the development membership oracle and is
// stopped first. Once A's process is gone the oracle cannot be reached: nothing it is asked
// is ever answered (as over a connection that hangs). B and C are then stopped gracefully:
// each membership step of their stops is bounded, expires with a warning and is skipped,
// and each stop completes within its host budget.

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "s12_stall_world.hpp"

using namespace cafmesh;
using namespace cafmesh::testing;
using namespace std::chrono_literals;
using testing::fixture;

namespace {

using oh_gone_atom = caf::atom_constant<caf::atom("ohgone")>;

struct oracle_host_state {
  bool gone = false;
  std::vector<caf::response_promise> unanswered;
  static inline const char* name = "test.oracle_host";
};

/// The oracle as the other processes reach it through the process that hosts it: passes
/// everything while that process runs; after `oh_gone_atom` the oracle is gone with its
/// process and nothing sent to it is ever answered.
caf::behavior oracle_host(caf::stateful_actor<oracle_host_state>* self, caf::actor oracle) {
  auto forward = [=](caf::message m) -> caf::response_promise {
    auto rp = self->make_response_promise();
    if (self->state.gone)
      self->state.unanswered.push_back(rp);
    else
      rp.delegate(oracle, std::move(m));
    return rp;
  };
  return {
    [=](mb_subscribe_atom a, const caf::actor& sub) {
      if (!self->state.gone)
        self->send(oracle, a, sub);
    },
    [=](mb_join_atom a, membership_row& row) { return forward(caf::make_message(a, row)); },
    [=](mb_status_atom a, const silo_address& s, silo_status to) {
      return forward(caf::make_message(a, s, to));
    },
    [=](oh_gone_atom) {
      self->state.gone = true;
      self->send_exit(oracle, caf::exit_reason::user_shutdown);
    },
  };
}

} // namespace

TEST_CASE_FIXTURE(fixture, "S13.07 A hosts the development oracle and stops first, B and C then stop gracefully, each within its host budget, their membership steps bounded and skipped with a warning") {
  silo_world w{*this};
  auto host = track(sys.spawn(oracle_host, caf::actor_cast<caf::actor>(w.oracle)));
  silo_world_options o;
  // A partial stand-in: it answers what an agent sends an oracle (subscribe, join, status).
  o.oracle = caf::actor_cast<membership_oracle_actor>(host);
  auto a = w.add_silo("a", o).addr;
  auto b = w.add_silo("b", o).addr;
  auto c = w.add_silo("c", o).addr;
  REQUIRE(w.last_start->ok());
  const int64_t budget_ms = w.cfg.host.shutdown_budget_ms;
  REQUIRE(budget_ms == 30000);
  // A stops first, its oracle still up; then A's process, and the oracle with it, is gone.
  auto ta = now_ms();
  auto stopped_a = w.stop(a, true);
  REQUIRE(run_until([&] { return stopped_a->done; }));
  REQUIRE(stopped_a->ok());
  CHECK(stopped_a->t_ms - ta <= budget_ms);
  caf::anon_send(host, oh_gone_atom::value);
  run();
  logs.clear();
  // B, then C.
  for (auto s : {b, c}) {
    INFO("silo " << s.to_string());
    auto t0 = now_ms();
    auto stopped = w.stop(s, true);
    REQUIRE(run_until([&] { return stopped->done; }));
    REQUIRE(stopped->ok());
    // ShuttingDown 5 s, Stopping 5 s, Dead 5 s: each expired and was skipped.
    CHECK(stopped->t_ms - t0 == 15000);
    CHECK(stopped->t_ms - t0 <= budget_ms);
    CHECK(w.first(s, "ShuttingDown not published within 5000 ms").t_ms == t0 + 5000);
    CHECK(w.first(s, "Stopping not published within 5000 ms").t_ms == t0 + 10000);
    CHECK(w.first(s, "Dead not published within 5000 ms").t_ms == t0 + 15000);
    for (auto needle : {"ShuttingDown not published", "Stopping not published",
                        "Dead not published"}) {
      auto hits = logs.find(std::string{needle} + " within 5000 ms", log::level::warning);
      size_t mine = 0;
      for (auto& l : hits)
        if (l.text.find("[" + s.to_string() + "]") != std::string::npos)
          ++mine;
      CHECK(mine == 1);
    }
    CHECK(logs.find("host shutdown budget of").empty());
    auto probe = testing::ask<probe_answer>(*this, w.registry,
                                                       lifecycle::probe_runtime_atom::value,
                                                       s.to_string());
    run();
    REQUIRE(probe->ok());
    CHECK(probe->value == probe_answer::torn_down);
  }
}
