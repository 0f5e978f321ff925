// The routing I/O pool (docs/behaviour/quiescence.md#the-routing-io-pool), its
// exactly-one-terminal-event latch and the pool teardown participant at stage First, driven by a
// test owner that runs legs as explicit state machines (no actor per leg), as the router core will.

#include <chrono>
#include <map>
#include <set>
#include <memory>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include <caf/all.hpp>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/log.hpp"
#include "cafmesh/config/mesh_config.hpp"
#include "cafmesh/routing/io_pool.hpp"
#include "cafmesh/routing/leg_latch.hpp"
#include "cafmesh/actors/observer.hpp"
#include "cafmesh/routing/pool_teardown_participant.hpp"
#include "cafmesh/routing/routing_quiescence.hpp"
#include "cafmesh/actors/stage.hpp"
#include "cafmesh/testing/fixture.hpp"

#include "cafmesh/testing/ask.hpp"

using namespace std::chrono_literals;
using namespace cafmesh::lifecycle;
using namespace cafmesh::routing;
using cafmesh::testing::ask;
using cafmesh::log::level;

namespace {

using tq_go_atom = caf::atom_constant<caf::atom("tqgo")>;
using tq_done_atom = caf::atom_constant<caf::atom("tqdone")>;

struct event {
  uint64_t leg;
  std::string what; ///< landed, abandoned, leg_crashed, refused
  int64_t t_ms;
};

/// What the test owner saw; shared with the test body.
struct owner_log {
  std::vector<std::pair<uint64_t, int64_t>> admitted; ///< (leg, at)
  std::vector<event> terminals;                       ///< one per leg, via the latch
  std::vector<std::pair<uint64_t, caf::error>> refusals;
  std::vector<uint64_t> cancels_received;
  int nacks = 0;
  /// The NACK each cancelled leg handed over, by leg (owners with `nack_on_cancel`):
  /// `failed` when its call was in flight, `shutting_down` when it never started.
  std::map<uint64_t, std::string> cancel_nacks;

  size_t terminals_of(uint64_t leg) const {
    size_t n = 0;
    for (auto& e : terminals)
      n += e.leg == leg ? 1 : 0;
    return n;
  }
  const event* terminal(uint64_t leg) const {
    for (auto& e : terminals)
      if (e.leg == leg)
        return &e;
    return nullptr;
  }
};

struct owner_options {
  bool auto_start = true;     ///< report `started` as soon as admitted
  bool confirm_cancel = true; ///< confirm a cancel with `pool_ended` (else only abandon it)
  /// A cancelled leg hands one NACK over before its cancel is confirmed, as the router core
  /// does in a silo stop.
  bool nack_on_cancel = false;
};

struct owner_state {
  io_pool_actor pool;
  routing_quiescence_actor gauge;
  owner_options opts;
  std::shared_ptr<owner_log> out;
  leg_latch_table latch;
  std::map<uint64_t, int64_t> run_ms; ///< leg -> how long it runs once started; -1 never
  std::set<uint64_t> started;         ///< legs whose call was issued
};

/// A leg owner running legs as state machines: `tqgo(leg, run_ms)` accepts a leg (gauge slot
/// queued, latch armed) and asks the pool for a permit; the pool's answers drive the rest.
caf::behavior test_owner(caf::stateful_actor<owner_state>* self, io_pool_actor pool,
                         routing_quiescence_actor gauge, owner_options opts,
                         std::shared_ptr<owner_log> out, cafmesh::testing::fixture* fx) {
  self->state.pool = pool;
  self->state.gauge = gauge;
  self->state.opts = opts;
  self->state.out = out;
  auto me = caf::actor_cast<io_pool_owner_actor>(self);
  auto terminal = [=](uint64_t leg, std::string what) {
    auto& s = self->state;
    s.out->terminals.push_back(event{leg, std::move(what), fx->now_ms()});
    if (s.gauge)
      self->send(s.gauge, q_release_atom::value, leg);
  };
  return {
    [=](tq_go_atom, uint64_t leg, int64_t run_ms) {
      auto& s = self->state;
      s.latch.arm(leg);
      s.run_ms[leg] = run_ms;
      if (s.gauge)
        self->send(s.gauge, q_track_atom::value, leg,
                   "dispatch -> node/N" + std::to_string(leg) + " (delivery d"
                     + std::to_string(leg) + ")",
                   slot_state::queued);
      self->send(s.pool, pool_admit_atom::value, leg, me);
    },
    [=](pool_admitted_atom, uint64_t leg) {
      auto& s = self->state;
      s.out->admitted.emplace_back(leg, fx->now_ms());
      if (!s.opts.auto_start)
        return;
      if (s.gauge)
        self->send(s.gauge, q_mark_atom::value, leg);
      s.started.insert(leg);
      self->send(s.pool, pool_started_atom::value, leg);
      auto ms = s.run_ms[leg];
      if (ms >= 0)
        self->delayed_send(self, std::chrono::milliseconds(ms), tq_done_atom::value, leg);
    },
    [=](tq_done_atom, uint64_t leg) { // the leg's own leg_done (landed)
      auto& s = self->state;
      if (!s.latch.settle(leg, leg_terminal::done))
        return;
      terminal(leg, "landed");
      self->send(s.pool, pool_ended_atom::value, leg);
    },
    [=](pool_refused_atom, uint64_t leg, caf::error& err) {
      auto& s = self->state;
      s.out->refusals.emplace_back(leg, err);
      if (s.latch.settle(leg, leg_terminal::cancelled))
        terminal(leg, "refused");
    },
    [=](pool_cancel_atom, uint64_t leg) {
      auto& s = self->state;
      s.out->cancels_received.push_back(leg);
      if (s.latch.settle(leg, leg_terminal::cancelled)) {
        terminal(leg, "abandoned");
        if (s.opts.nack_on_cancel) {
          ++s.out->nacks;
          s.out->cancel_nacks[leg] = s.started.count(leg) != 0 ? "failed" : "shutting_down";
        }
      }
      if (s.opts.confirm_cancel)
        self->send(s.pool, pool_ended_atom::value, leg);
    },
    [=](pool_down_atom, uint64_t leg, caf::error&) {
      auto& s = self->state;
      if (!s.latch.settle(leg, leg_terminal::down))
        return;
      ++s.out->nacks; // the NACK arm runs for a crashed leg
      terminal(leg, "leg_crashed");
    },
  };
}

struct pool_bed {
  io_pool_actor pool;
  routing_quiescence_actor gauge;
  caf::actor owner;
  std::shared_ptr<owner_log> out = std::make_shared<owner_log>();
};

pool_bed make_pool_bed(cafmesh::testing::fixture& fx, io_pool_options popts = {},
                       owner_options oopts = {}) {
  pool_bed b;
  b.pool = fx.track(spawn_io_pool(fx.sys, popts));
  b.gauge = fx.track(spawn_routing_quiescence(fx.sys));
  b.owner = fx.track(fx.sys.spawn(test_owner, b.pool, b.gauge, oopts, b.out, &fx));
  return b;
}

void go(const pool_bed& b, uint64_t leg, int64_t run_ms) {
  caf::anon_send(b.owner, tq_go_atom::value, leg, run_ms);
}

std::vector<uint64_t> admitted_ids(const owner_log& out) {
  std::vector<uint64_t> ids;
  for (auto& a : out.admitted)
    ids.push_back(a.first);
  return ids;
}

} // namespace

// -- latch -----------------------------------------------------------------------------------

TEST_CASE("latch: the first terminal event of a leg wins and every later one is ignored") {
  leg_latch_table t;
  CHECK(t.arm(1));
  CHECK(t.arm(2));
  CHECK_FALSE(t.arm(1));
  CHECK(t.open_count() == 2);
  CHECK(t.settle(1, leg_terminal::cancelled));
  CHECK_FALSE(t.settle(1, leg_terminal::done));
  CHECK_FALSE(t.settle(1, leg_terminal::down));
  CHECK(t.settle(2, leg_terminal::done));
  CHECK_FALSE(t.settle(2, leg_terminal::cancelled));
  CHECK_FALSE(t.settle(3, leg_terminal::done)); // never armed
  CHECK(t.open_count() == 0);
  CHECK_FALSE(t.is_open(1));
  CHECK(to_string(leg_terminal::cancelled) == "cancelled");
}

TEST_CASE("pool: options follow the pool section of the configuration") {
  cafmesh::config::pool_section defaults;
  auto p = io_pool_options::from(defaults, "S1:1@1");
  CHECK(p.cap == 256);
  CHECK(p.drain_grace_ms == 8000);
  CHECK(p.cancel_wait_ms == 30000);
  CHECK(p.join_ms == 30000);
  CHECK(p.silo_name == "S1:1@1");
  CHECK(pool_teardown_options::from(defaults).teardown_join_ms == 30000);
  cafmesh::config::pool_section custom;
  custom.cap = 4;
  custom.teardown_join_ms = 500;
  CHECK(io_pool_options::from(custom).cap == 4);
  CHECK(pool_teardown_options::from(custom).teardown_join_ms == 500);
}

// -- admission -------------------------------------------------------------------------------

TEST_CASE_FIXTURE(cafmesh::testing::fixture,
                  "pool: beyond the cap admissions wait in FIFO order until a permit returns") {
  io_pool_options popts;
  popts.cap = 2;
  auto b = make_pool_bed(*this, popts, owner_options{false, true});
  for (uint64_t leg = 1; leg <= 4; ++leg)
    go(b, leg, -1);
  run();
  CHECK(admitted_ids(*b.out) == std::vector<uint64_t>{1, 2});
  auto s1 = ask<io_pool_stats>(*this, b.pool, pool_stats_atom::value);
  run();
  CHECK(s1->value.permits_out == 2);
  CHECK(s1->value.waiting == 2);
  CHECK(s1->value.running == 0);
  caf::anon_send(b.pool, pool_started_atom::value, uint64_t{2}); // permit returns
  run();
  CHECK(admitted_ids(*b.out) == std::vector<uint64_t>{1, 2, 3});
  caf::anon_send(b.pool, pool_ended_atom::value, uint64_t{1}); // ended before started
  run();
  CHECK(admitted_ids(*b.out) == std::vector<uint64_t>{1, 2, 3, 4});
  auto s2 = ask<io_pool_stats>(*this, b.pool, pool_stats_atom::value);
  run();
  CHECK(s2->value.permits_out == 2); // legs 3 and 4
  CHECK(s2->value.running == 1);     // leg 2: started, still tracked
  CHECK(s2->value.waiting == 0);
  CHECK(b.out->refusals.empty());
}

TEST_CASE_FIXTURE(cafmesh::testing::fixture,
                  "pool: the default cap admits 256 concurrent starts and the 257th waits") {
  auto b = make_pool_bed(*this, io_pool_options{}, owner_options{false, true});
  for (uint64_t leg = 1; leg <= 300; ++leg)
    go(b, leg, -1);
  run();
  CHECK(b.out->admitted.size() == 256);
  CHECK(b.out->admitted.back().first == 256);
  caf::anon_send(b.pool, pool_started_atom::value, uint64_t{17});
  run();
  REQUIRE(b.out->admitted.size() == 257);
  CHECK(b.out->admitted.back().first == 257);
  auto s = ask<io_pool_stats>(*this, b.pool, pool_stats_atom::value);
  run();
  CHECK(s->value.permits_out == 256);
  CHECK(s->value.running == 1);
  CHECK(s->value.waiting == 43);
}

TEST_CASE_FIXTURE(cafmesh::testing::fixture,
                  "pool: a leg id already admitted is refused invalid_operation by message") {
  auto b = make_pool_bed(*this, io_pool_options{}, owner_options{false, true});
  go(b, 1, -1);
  run();
  caf::anon_send(b.pool, pool_admit_atom::value, uint64_t{1},
                 caf::actor_cast<io_pool_owner_actor>(b.owner));
  run();
  REQUIRE(b.out->refusals.size() == 1);
  CHECK(cafmesh::to_fault(b.out->refusals[0].second).code == cafmesh::mesh_errc::invalid_operation);
  CHECK(b.out->admitted.size() == 1);
}

// -- drain -----------------------------------------------------------------------------------

TEST_CASE_FIXTURE(cafmesh::testing::fixture,
                  "pool: a drain with nothing alive answers 0 at once and is idempotent") {
  auto b = make_pool_bed(*this);
  auto d1 = ask<uint64_t>(*this, b.pool, pool_drain_atom::value);
  run();
  REQUIRE(d1->done);
  CHECK(d1->t_ms == 0);
  CHECK(d1->value == 0);
  run_to(100);
  auto d2 = ask<uint64_t>(*this, b.pool, pool_drain_atom::value);
  run();
  REQUIRE(d2->done);
  CHECK(d2->t_ms == 100);
  CHECK(d2->value == 0);
  CHECK(next_timeout_ms() == -1);
}

TEST_CASE_FIXTURE(cafmesh::testing::fixture, "S12.55 drain: grace until 23 s, 2 legs abandoned once each with one NACK failed each, residual 0, late admissions refused, gauge inert after teardown") {
  owner_options oopts;
  oopts.nack_on_cancel = true;
  auto b = make_pool_bed(*this, io_pool_options{}, oopts);
  go(b, 1, 5000);
  go(b, 2, 10000);
  go(b, 3, 15000);
  go(b, 4, -1);
  go(b, 5, -1);
  run();
  REQUIRE(b.out->admitted.size() == 5);
  auto drain = ask<uint64_t>(*this, b.pool, pool_drain_atom::value);
  run_to(1000);
  go(b, 6, 100); // after the drain began
  run();
  REQUIRE(b.out->refusals.size() == 1);
  CHECK(b.out->refusals[0].first == 6);
  auto f = cafmesh::to_fault(b.out->refusals[0].second);
  CHECK(f.code == cafmesh::mesh_errc::pool_refused);
  CHECK(f.text == "pool drained; leg will not run");
  run_to(22999);
  CHECK_FALSE(drain->done);
  CHECK(b.out->cancels_received.empty());
  run_to(23000);
  REQUIRE(drain->done);
  CHECK(drain->t_ms == 23000);
  CHECK(drain->value == 0);
  // Legs 1-3 landed on their own; 4 and 5 were cancelled when the grace ran out.
  for (uint64_t leg = 1; leg <= 5; ++leg)
    CHECK(b.out->terminals_of(leg) == 1);
  CHECK(b.out->terminal(1)->what == "landed");
  CHECK(b.out->terminal(1)->t_ms == 5000);
  CHECK(b.out->terminal(2)->t_ms == 10000);
  CHECK(b.out->terminal(3)->t_ms == 15000);
  CHECK(b.out->terminal(4)->what == "abandoned");
  CHECK(b.out->terminal(4)->t_ms == 23000);
  CHECK(b.out->terminal(5)->what == "abandoned");
  CHECK(b.out->terminal(5)->t_ms == 23000);
  // Each cancelled leg handed one NACK over before the join: `failed`, its call was in flight.
  CHECK(b.out->nacks == 2);
  CHECK(b.out->cancel_nacks == std::map<uint64_t, std::string>{{4, "failed"}, {5, "failed"}});
  // A late leg_done of an abandoned leg is ignored by the latch.
  caf::anon_send(b.owner, tq_done_atom::value, uint64_t{4});
  run_to(24000);
  CHECK(b.out->terminals_of(4) == 1);
  // Admission after the drain finished: refused by a separate message as well.
  go(b, 7, 100);
  run();
  REQUIRE(b.out->refusals.size() == 2);
  CHECK(b.out->refusals[1].first == 7);
  CHECK(cafmesh::to_fault(b.out->refusals[1].second).code == cafmesh::mesh_errc::pool_refused);
  auto count = ask<uint64_t>(*this, b.gauge, q_count_atom::value);
  run();
  CHECK(count->value == 0);
  // Runtime services torn down: stragglers do nothing and nothing faults.
  auto td = ask<caf::ok_atom>(*this, b.gauge, q_teardown_atom::value);
  run();
  REQUIRE(td->done);
  caf::anon_send(b.gauge, q_track_atom::value, uint64_t{8}, std::string("dispatch -> late"),
                 slot_state::dispatched);
  caf::anon_send(b.gauge, q_mark_atom::value, uint64_t{8});
  caf::anon_send(b.gauge, q_handover_atom::value, uint64_t{8}, std::string("NACK -> late"));
  caf::anon_send(b.gauge, q_release_atom::value, uint64_t{8});
  run();
  auto count2 = ask<uint64_t>(*this, b.gauge, q_count_atom::value);
  auto z = ask<caf::ok_atom>(*this, b.gauge, q_await_atom::value);
  run();
  CHECK(count2->done);
  CHECK_FALSE(count2->err);
  CHECK(count2->value == 0);
  CHECK(z->done);
  CHECK_FALSE(z->err);
  CHECK(logs.count_level(level::error) == 0);
}

TEST_CASE_FIXTURE(cafmesh::testing::fixture,
                  "pool: a drain refuses admissions still waiting for a permit, each by its own message") {
  io_pool_options popts;
  popts.cap = 1;
  auto b = make_pool_bed(*this, popts, owner_options{false, true});
  go(b, 1, -1);
  go(b, 2, -1);
  go(b, 3, -1);
  run();
  CHECK(admitted_ids(*b.out) == std::vector<uint64_t>{1});
  auto drain = ask<uint64_t>(*this, b.pool, pool_drain_atom::value);
  run();
  REQUIRE(b.out->refusals.size() == 2);
  CHECK(b.out->refusals[0].first == 2);
  CHECK(b.out->refusals[1].first == 3);
  CHECK(b.out->terminal(2)->what == "refused");
  run_to(2000);
  caf::anon_send(b.pool, pool_ended_atom::value, uint64_t{1}); // leg 1 ends during grace
  run();
  REQUIRE(drain->done);
  CHECK(drain->t_ms == 2000);
  CHECK(drain->value == 0);
  CHECK(admitted_ids(*b.out) == std::vector<uint64_t>{1}); // nothing admitted after the drain
}

TEST_CASE_FIXTURE(cafmesh::testing::fixture,
                  "pool: an unconfirmed cancel costs 1 and every leg left is counted after the join") {
  auto b = make_pool_bed(*this, io_pool_options{}, owner_options{false, false});
  go(b, 1, -1);
  go(b, 2, -1);
  run();
  caf::anon_send(b.pool, pool_started_atom::value, uint64_t{1}); // 1 runs, 2 holds its permit
  run();
  auto drain = ask<uint64_t>(*this, b.pool, pool_drain_atom::value);
  run_to(8000); // grace: 8 s without a termination
  CHECK(b.out->cancels_received.size() == 2);
  run_to(67999); // cancel wait 30 s, join 30 s
  CHECK_FALSE(drain->done);
  run_to(68000);
  REQUIRE(drain->done);
  CHECK(drain->value == 3); // 1 (cancel not confirmed) + 1 permit out + 1 leg alive
  auto s = ask<io_pool_stats>(*this, b.pool, pool_stats_atom::value);
  run();
  CHECK(s->value.phase == pool_phase::drained);
  CHECK(s->value.residual == 3);
}

TEST_CASE_FIXTURE(cafmesh::testing::fixture,
                  "pool: a watched leg actor is cancelled by an exit and its down confirms") {
  auto b = make_pool_bed(*this, io_pool_options{}, owner_options{true, false});
  go(b, 1, -1);
  run();
  auto leg_actor = track(sys.spawn([](caf::event_based_actor*) -> caf::behavior {
    return {[](int) {}};
  }));
  caf::anon_send(b.pool, pool_watch_atom::value, uint64_t{1}, leg_actor);
  run();
  auto drain = ask<uint64_t>(*this, b.pool, pool_drain_atom::value);
  run_to(8000);
  REQUIRE(drain->done);
  CHECK(drain->t_ms == 8000);
  CHECK(drain->value == 0); // the owner never confirmed, the down did
  CHECK(b.out->cancels_received == std::vector<uint64_t>{1});
  // The cancel settled the latch; the pool's down message that followed was ignored.
  REQUIRE(b.out->terminals_of(1) == 1);
  CHECK(b.out->terminal(1)->what == "abandoned");
  CHECK(b.out->nacks == 0);
}

TEST_CASE_FIXTURE(cafmesh::testing::fixture,
                  "pool: a crashed watched leg actor reaches its owner once as leg_crashed") {
  auto b = make_pool_bed(*this);
  go(b, 1, -1);
  run();
  auto leg_actor = track(sys.spawn([](caf::event_based_actor*) -> caf::behavior {
    return {[](int) {}};
  }));
  caf::anon_send(b.pool, pool_watch_atom::value, uint64_t{1}, leg_actor);
  run();
  caf::anon_send_exit(leg_actor, caf::exit_reason::unhandled_exception);
  run();
  REQUIRE(b.out->terminals_of(1) == 1);
  CHECK(b.out->terminal(1)->what == "leg_crashed");
  CHECK(b.out->nacks == 1);
  caf::anon_send(b.owner, tq_done_atom::value, uint64_t{1}); // late leg_done: ignored
  run();
  CHECK(b.out->terminals_of(1) == 1);
  auto s = ask<io_pool_stats>(*this, b.pool, pool_stats_atom::value);
  run();
  CHECK(s->value.running == 0);
  CHECK(s->value.permits_out == 0);
}

namespace {

/// A leg that is its own owner: it asks for a permit, reports started and then waits.
caf::behavior self_owned_leg(caf::event_based_actor* self, io_pool_actor pool, uint64_t leg,
                             std::shared_ptr<int> admitted) {
  self->send(pool, pool_admit_atom::value, leg, caf::actor_cast<io_pool_owner_actor>(self));
  return {
    [=](pool_admitted_atom, uint64_t id) {
      ++*admitted;
      self->send(pool, pool_watch_atom::value, id, caf::actor_cast<caf::actor>(self));
      self->send(pool, pool_started_atom::value, id);
    },
    [=](pool_refused_atom, uint64_t, caf::error&) {},
    [=](pool_cancel_atom, uint64_t) {},
    [=](pool_down_atom, uint64_t, caf::error&) {},
  };
}

} // namespace

TEST_CASE_FIXTURE(cafmesh::testing::fixture,
                  "pool: a leg that owns itself is cancelled by an exit and confirmed by its down") {
  auto pool = track(spawn_io_pool(sys));
  auto admitted = std::make_shared<int>(0);
  auto leg = track(sys.spawn(self_owned_leg, pool, uint64_t{1}, admitted));
  run();
  CHECK(*admitted == 1);
  auto drain = ask<uint64_t>(*this, pool, pool_drain_atom::value);
  run_to(8000);
  REQUIRE(drain->done);
  CHECK(drain->t_ms == 8000);
  CHECK(drain->value == 0);
  auto s = ask<io_pool_stats>(*this, pool, pool_stats_atom::value);
  run();
  CHECK(s->value.running == 0);
}

// -- pool teardown participant (stage First) ---------------------------------------------------

namespace {

/// Stand-in for the silo's runtime services: the lookup reads the pool from here.
struct services {
  io_pool_actor pool;
  int lookups = 0;
};

} // namespace

TEST_CASE_FIXTURE(cafmesh::testing::fixture, "S12.54 pool teardown drains through its captured handle, and a stop without start never claims joined") {
  auto svc = std::make_shared<services>();
  svc->pool = track(spawn_io_pool(sys));
  auto pool = svc->pool;
  auto p = track(spawn_pool_teardown_participant(sys, [svc] {
    ++svc->lookups;
    return svc->pool;
  }));
  auto st = ask<caf::ok_atom>(*this, p, start_stage_atom::value, stages::first);
  run();
  REQUIRE(st->done);
  CHECK_FALSE(st->err);
  svc->pool = io_pool_actor{}; // the aborted start tore the runtime services down
  auto sp = ask<caf::ok_atom>(*this, p, stop_stage_atom::value, stages::first, false);
  run();
  REQUIRE(sp->done);
  CHECK_FALSE(sp->err);
  CHECK(svc->lookups == 1);
  CHECK(logs.count("draining routing I/O pool", level::info) == 1);
  CHECK(logs.count("routing I/O pool joined", level::info) == 1);
  auto stats = ask<io_pool_stats>(*this, pool, pool_stats_atom::value);
  run();
  CHECK(stats->value.phase == pool_phase::drained);
  // Second half: a participant that was never started.
  logs.clear();
  auto pool2 = track(spawn_io_pool(sys));
  auto p2 = track(spawn_pool_teardown_participant(sys, pool2));
  auto sp2 = ask<caf::ok_atom>(*this, p2, stop_stage_atom::value, stages::first, true);
  run_for(60000ms);
  REQUIRE(sp2->done);
  CHECK(sp2->t_ms == 0);
  CHECK_FALSE(sp2->err);
  CHECK(logs.count("pool teardown stopped without start", level::error) == 1);
  CHECK(logs.count("stopped without start") == 1);
  CHECK(logs.count("joined") == 0);
  CHECK(logs.count("draining routing I/O pool") == 0);
  auto stats2 = ask<io_pool_stats>(*this, pool2, pool_stats_atom::value);
  run();
  CHECK(stats2->value.phase == pool_phase::open);
}

TEST_CASE_FIXTURE(cafmesh::testing::fixture,
                  "pool teardown: legs surviving the drain are reported as an error and the stop answers ok") {
  io_pool_options popts;
  popts.drain_grace_ms = 1000;
  popts.cancel_wait_ms = 1000;
  popts.join_ms = 1000;
  auto b = make_pool_bed(*this, popts, owner_options{true, false}); // never confirms a cancel
  go(b, 1, -1);
  run();
  auto p = track(spawn_pool_teardown_participant(sys, b.pool));
  auto st = ask<caf::ok_atom>(*this, p, start_stage_atom::value, stages::first);
  run();
  auto sp = ask<caf::ok_atom>(*this, p, stop_stage_atom::value, stages::first, true);
  run_to(2999);
  CHECK_FALSE(sp->done);
  run_to(3000);
  REQUIRE(sp->done);
  CHECK(sp->t_ms == 3000);
  CHECK_FALSE(sp->err);
  auto e = logs.find("survived", level::error);
  REQUIRE(e.size() == 1);
  CHECK(e[0].text == "2 leg(s) survived the routing I/O pool drain");
  CHECK(logs.count("joined") == 0);
  CHECK(logs.count("did not finish draining") == 0);
}

TEST_CASE_FIXTURE(cafmesh::testing::fixture,
                  "pool teardown: a drain outlasting 30 s is reported once at 30 s and the late residual ignored") {
  auto b = make_pool_bed(*this, io_pool_options{}, owner_options{true, false});
  go(b, 1, -1);
  run();
  auto p = track(spawn_pool_teardown_participant(sys, b.pool));
  auto st = ask<caf::ok_atom>(*this, p, start_stage_atom::value, stages::first);
  run();
  auto sp = ask<caf::ok_atom>(*this, p, stop_stage_atom::value, stages::first, true);
  run_to(29999);
  CHECK_FALSE(sp->done);
  run_to(30000);
  REQUIRE(sp->done);
  CHECK(sp->t_ms == 30000);
  CHECK(logs.count("routing I/O pool did not finish draining within 30 s", level::error) == 1);
  run_to(70000); // the pool's drain ends at 68 s with residual 2; nobody logs it as survivors
  CHECK(logs.count("survived") == 0);
  CHECK(logs.count("joined") == 0);
  auto sp2 = ask<caf::ok_atom>(*this, p, stop_stage_atom::value, stages::first, true);
  run();
  CHECK(sp2->done); // a stop after the stop completed answers at once
}

TEST_CASE_FIXTURE(cafmesh::testing::fixture,
                  "pool teardown: start without a pool to capture fails config_invalid") {
  auto p = track(spawn_pool_teardown_participant(sys, [] { return io_pool_actor{}; }));
  auto st = ask<caf::ok_atom>(*this, p, start_stage_atom::value, stages::first);
  run();
  REQUIRE(st->done);
  REQUIRE(st->err);
  CHECK(cafmesh::to_fault(st->err).code == cafmesh::mesh_errc::config_invalid);
}
