// One table oracle per process over a shared membership table
// (docs/behaviour/membership.md#one-oracle-per-process), in virtual time on the in-process
// table: joins, transitions and their refusals, a restart superseding its predecessor, the
// views every process's subscribers receive, failure detection by votes, and an unreachable
// table that fails requests and declares nobody Dead.

#include <doctest/doctest.h>

#include <memory>
#include <vector>

#include <caf/all.hpp>

#include "cafmesh/actors/atoms.hpp"
#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/membership_table_oracle.hpp"
#include "cafmesh/testing/ask.hpp"
#include "cafmesh/testing/fixture.hpp"

using namespace cafmesh;
using namespace std::chrono_literals;
using cafmesh::testing::ask;

namespace {

/// Every view a subscriber received.
using views = std::vector<membership_snapshot>;

struct oracle_fixture : cafmesh::testing::fixture {
  std::shared_ptr<in_process_membership_table> table
    = std::make_shared<in_process_membership_table>();
  membership_table_oracle_config cfg;

  oracle_fixture() {
    cfg.detection_ms = 1000;
    cfg.i_am_alive_interval_ms = 60000;
  }

  membership_oracle_actor oracle() {
    return track(spawn_membership_table_oracle(sys, table, cfg));
  }

  /// A subscriber of `oracle` that records every view it receives.
  std::shared_ptr<views> subscribe(const membership_oracle_actor& oracle) {
    auto out = std::make_shared<views>();
    auto probe = track(sys.spawn([out](caf::event_based_actor*) -> caf::behavior {
      return {[out](mb_snapshot_atom, const membership_snapshot& s) { out->push_back(s); }};
    }));
    caf::anon_send(oracle, mb_subscribe_atom::value, probe);
    run();
    return out;
  }

  static membership_row row_of(uint16_t port, uint64_t generation) {
    membership_row r;
    r.silo = silo_address{"127.0.0.1", port, generation};
    r.gateway = true;
    return r;
  }

  /// Joins `row` through `oracle` and makes it Active; answers the table version.
  uint64_t join_active(const membership_oracle_actor& oracle, const membership_row& row) {
    auto j = ask<uint64_t>(*this, oracle, mb_join_atom::value, row);
    auto a = ask<uint64_t>(*this, oracle, mb_status_atom::value, row.silo, silo_status::active);
    REQUIRE(run_until([&] { return j->done && a->done; }));
    REQUIRE(j->ok());
    REQUIRE(a->ok());
    return a->value;
  }
};

/// The in-process table behind a switch: while `reachable` is false every call answers
/// `unavailable`, as an etcd cluster nobody can reach.
class switchable_table final : public membership_table {
public:
  bool reachable = true;
  /// The next insert is applied but answers `unavailable`, as an etcd call that timed out
  /// after etcd applied it.
  bool lose_next_insert_answer = false;

  table_outcome read_all(table_snapshot& t) override {
    return reachable ? inner_.read_all(t) : gone();
  }
  table_outcome insert_row(const table_row& r, uint64_t v) override {
    if (!reachable)
      return gone();
    auto res = inner_.insert_row(r, v);
    if (res.ok() && lose_next_insert_answer) {
      lose_next_insert_answer = false;
      return gone();
    }
    return res;
  }
  table_outcome update_row(const table_row& r, uint64_t v) override {
    return reachable ? inner_.update_row(r, v) : gone();
  }
  table_outcome update_i_am_alive(const silo_address& s, int64_t at) override {
    return reachable ? inner_.update_i_am_alive(s, at) : gone();
  }
  table_outcome cleanup_dead(int64_t before, size_t& n) override {
    return reachable ? inner_.cleanup_dead(before, n) : gone();
  }
  std::unique_ptr<table_watch> watch(change_callback f) override {
    return inner_.watch(std::move(f));
  }
  bool may_block() const override { return false; }

private:
  static table_outcome gone() {
    return table_outcome::failure(table_status::unavailable, "no etcd endpoint answered");
  }

  in_process_membership_table inner_;
};

} // namespace

TEST_CASE_FIXTURE(oracle_fixture, "table oracle: a join through one process's oracle reaches the subscribers of another's, with the table's versions") {
  auto a = oracle();
  auto b = oracle();
  auto seen_by_b = subscribe(b);
  CHECK(seen_by_b->empty()); // an empty table has no view to send
  auto s = row_of(7001, 1);
  auto j = ask<uint64_t>(*this, a, mb_join_atom::value, s);
  REQUIRE(run_until([&] { return j->done && seen_by_b->size() == 1; }));
  REQUIRE(j->ok());
  CHECK(j->value == 1);
  CHECK(seen_by_b->back().version == 1);
  REQUIRE(seen_by_b->back().rows.size() == 1);
  CHECK(seen_by_b->back().rows[0].status == silo_status::joining);
  CHECK(seen_by_b->back().rows[0].gateway);

  auto act = ask<uint64_t>(*this, a, mb_status_atom::value, s.silo, silo_status::active);
  REQUIRE(run_until([&] { return act->done && seen_by_b->size() == 2; }));
  CHECK(act->value == 2);
  CHECK(seen_by_b->back().version == 2);
  CHECK(seen_by_b->back().active_set() == std::vector<silo_address>{s.silo});
  auto late = subscribe(a); // a late subscriber gets the current view at once
  REQUIRE(late->size() == 1);
  CHECK(late->back().version == 2);
  auto got = ask<membership_snapshot>(*this, b, mb_get_atom::value);
  REQUIRE(run_until([&] { return got->done; }));
  CHECK(got->value.version == 2);
}

TEST_CASE_FIXTURE(oracle_fixture, "table oracle: transitions the table does not allow are refused, a repeated one changes nothing") {
  auto a = oracle();
  auto s = row_of(7001, 1);
  auto j = ask<uint64_t>(*this, a, mb_join_atom::value, s);
  auto bad = ask<uint64_t>(*this, a, mb_status_atom::value, s.silo, silo_status::stopping);
  auto same = ask<uint64_t>(*this, a, mb_status_atom::value, s.silo, silo_status::joining);
  auto nobody = ask<uint64_t>(*this, a, mb_status_atom::value, row_of(7009, 1).silo,
                              silo_status::active);
  REQUIRE(run_until([&] { return j->done && bad->done && same->done && nobody->done; }));
  CHECK(j->value == 1);
  CHECK(bad->code() == mesh_errc::invalid_operation);
  CHECK(to_fault(bad->err).text
        == "membership transition Joining -> Stopping of S127.0.0.1:7001@1 refused");
  REQUIRE(same->ok());
  CHECK(same->value == 1);
  CHECK(nobody->code() == mesh_errc::not_found);
  table_snapshot t;
  REQUIRE(table->read_all(t).ok());
  CHECK(t.version == 1);
}

TEST_CASE_FIXTURE(oracle_fixture, "table oracle: a restart supersedes its predecessor, the same generation is refused, Dead from Active takes Stopping first") {
  auto a = oracle();
  auto seen = subscribe(a);
  CHECK(join_active(a, row_of(7001, 1)) == 2);
  auto again = ask<uint64_t>(*this, a, mb_join_atom::value, row_of(7001, 1));
  REQUIRE(run_until([&] { return again->done; }));
  CHECK(again->code() == mesh_errc::invalid_operation);
  auto next = ask<uint64_t>(*this, a, mb_join_atom::value, row_of(7001, 2));
  REQUIRE(run_until([&] { return next->done; }));
  REQUIRE(next->ok());
  CHECK(next->value == 4); // gen 1 Dead (3), gen 2 inserted (4)
  table_snapshot t;
  REQUIRE(table->read_all(t).ok());
  REQUIRE(t.rows.size() == 2);
  CHECK(t.rows[0].entry.status == silo_status::dead);
  CHECK(t.rows[1].entry.status == silo_status::joining);
  REQUIRE(seen->size() >= 1);
  CHECK(seen->back().version == 4);
  CHECK(seen->back().departed(row_of(7001, 1).silo));

  auto other = row_of(7002, 1);
  CHECK(join_active(a, other) == 6);
  auto dead = ask<uint64_t>(*this, a, mb_dead_atom::value, other.silo);
  REQUIRE(run_until([&] { return dead->done; }));
  REQUIRE(dead->ok());
  CHECK(dead->value == 8); // Active -> Stopping (7) -> Dead (8)
  auto twice = ask<uint64_t>(*this, a, mb_dead_atom::value, other.silo);
  REQUIRE(run_until([&] { return twice->done; }));
  CHECK(twice->value == 8);
}

TEST_CASE_FIXTURE(oracle_fixture, "table oracle: a join whose insert was applied but whose answer was lost succeeds, not refused as already joined") {
  // Seen in the partition test (S15.07) on a loaded machine: etcd applied the join's insert,
  // the call timed out, and the retry found the row and refused the silo's own join.
  auto lossy = std::make_shared<switchable_table>();
  lossy->lose_next_insert_answer = true;
  auto a = track(spawn_membership_table_oracle(sys, lossy, cfg));
  auto j = ask<uint64_t>(*this, a, mb_join_atom::value, row_of(7001, 1));
  REQUIRE(run_until([&] { return j->done; }));
  REQUIRE(j->ok());
  CHECK(j->value == 1);
  table_snapshot t;
  REQUIRE(lossy->read_all(t).ok());
  REQUIRE(t.rows.size() == 1);
  CHECK(t.rows[0].entry.status == silo_status::joining);
  // Another join of the same generation is still refused.
  auto again = ask<uint64_t>(*this, a, mb_join_atom::value, row_of(7001, 1));
  REQUIRE(run_until([&] { return again->done; }));
  CHECK(again->code() == mesh_errc::invalid_operation);
}

TEST_CASE_FIXTURE(oracle_fixture, "table oracle: a suspicion lasting the detection delay is a vote, the second of three silos' votes declares Dead, a clearing cancels") {
  auto a = oracle();
  auto b = oracle();
  auto c = oracle();
  auto sa = row_of(7001, 1), sb = row_of(7002, 1), sc = row_of(7003, 1);
  join_active(a, sa);
  join_active(b, sb);
  CHECK(join_active(c, sc) == 6);
  auto seen = subscribe(c);

  // b's suspicion clears before the delay: no vote.
  caf::anon_send(b, sim_watch_atom::value, sc.silo, false);
  run_for(500ms);
  caf::anon_send(b, sim_watch_atom::value, sc.silo, true);
  run_for(1000ms);
  table_snapshot t;
  REQUIRE(table->read_all(t).ok());
  CHECK(t.version == 6);
  CHECK(t.find(sc.silo)->suspicions.empty());

  // a's lasting suspicion: one vote of the two that 3 Active silos need.
  caf::anon_send(a, sim_watch_atom::value, sc.silo, false);
  run_for(999ms);
  REQUIRE(table->read_all(t).ok());
  CHECK(t.version == 6);
  run_for(1ms);
  REQUIRE(table->read_all(t).ok());
  CHECK(t.version == 7);
  REQUIRE(t.find(sc.silo)->suspicions.size() == 1);
  CHECK(t.find(sc.silo)->suspicions[0].by == sa.silo);
  CHECK(t.find(sc.silo)->entry.status == silo_status::active);

  // b's lasting suspicion is the second vote: Dead, and every process's view shows it.
  caf::anon_send(b, sim_watch_atom::value, sc.silo, false);
  run_for(1000ms);
  REQUIRE(table->read_all(t).ok());
  CHECK(t.version == 8);
  CHECK(t.find(sc.silo)->entry.status == silo_status::dead);
  REQUIRE(run_until([&] { return !seen->empty() && seen->back().version == 8; }));
  CHECK(seen->back().departed(sc.silo));
  CHECK(logs.count("S127.0.0.1:7003@1 suspected for 1000 ms: this vote declared it Dead") == 1);

  // A later suspicion of the Dead silo (its connection broke when it stopped) writes nothing.
  caf::anon_send(a, sim_watch_atom::value, sc.silo, true);
  caf::anon_send(a, sim_watch_atom::value, sc.silo, false);
  run_for(1000ms);
  REQUIRE(table->read_all(t).ok());
  CHECK(t.version == 8);
  CHECK(logs.count("S127.0.0.1:7003@1 suspected for 1000 ms: no vote, it is Dead already") == 1);
}

TEST_CASE_FIXTURE(oracle_fixture, "S13.13 in virtual time: an unreachable membership table fails the table oracle's requests with departed_silo, its suspicions declare nobody Dead, and the last view stays") {
  cfg.unavailable_budget_ms = 0;
  auto flaky = std::make_shared<switchable_table>();
  auto a = track(spawn_membership_table_oracle(sys, flaky, cfg));
  auto b = track(spawn_membership_table_oracle(sys, flaky, cfg));
  auto sa = row_of(7001, 1), sb = row_of(7002, 1);
  join_active(a, sa);
  CHECK(join_active(b, sb) == 4);
  flaky->reachable = false;
  auto j = ask<uint64_t>(*this, a, mb_status_atom::value, sa.silo, silo_status::shutting_down);
  REQUIRE(run_until([&] { return j->done; }));
  CHECK(j->code() == mesh_errc::departed_silo);
  CHECK(to_fault(j->err).text
        == "the membership table cannot be reached: no etcd endpoint answered");
  // With 2 Active silos one vote would be enough: the vote is not written.
  caf::anon_send(a, sim_watch_atom::value, sb.silo, false);
  run_for(2000ms);
  CHECK(logs.count("vote against S127.0.0.1:7002@1 not written") == 1);
  auto got = ask<membership_snapshot>(*this, a, mb_get_atom::value);
  REQUIRE(run_until([&] { return got->done; }));
  CHECK(got->value.version == 4); // the last view stays
  CHECK(got->value.is_active(sb.silo));
  flaky->reachable = true;
  table_snapshot t;
  REQUIRE(flaky->read_all(t).ok());
  CHECK(t.version == 4);
  CHECK(t.find(sb.silo)->entry.status == silo_status::active);
  CHECK(t.find(sb.silo)->suspicions.empty());
}
