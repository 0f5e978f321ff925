#pragma once

/// @file
/// The membership table's contract as doctest checks
/// (docs/behaviour/membership.md#the-membership-table), run against every provider: the
/// in-process table in the unit suite, etcd in the integration suite. A user who writes a provider of their own runs it too:
/// `cafmesh::testing::check_membership_table_contract(my_table)` in a doctest case, on an
/// empty table.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

#include <doctest/doctest.h>

#include "cafmesh/actors/membership_table.hpp"

namespace cafmesh::testing {

/// Counts a watch's notifications; `wait_for_more` waits (bounded) for the count to pass a
/// value, for providers that notify from a thread of their own.
class change_counter {
public:
  membership_table::change_callback callback() {
    return [this] {
      std::lock_guard<std::mutex> guard{mtx_};
      ++count_;
      cv_.notify_all();
    };
  }

  size_t count() {
    std::lock_guard<std::mutex> guard{mtx_};
    return count_;
  }

  /// True once the count exceeds `seen`; false if `timeout` passed first.
  bool wait_for_more(size_t seen, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> guard{mtx_};
    return cv_.wait_for(guard, timeout, [&] { return count_ > seen; });
  }

private:
  std::mutex mtx_;
  std::condition_variable cv_;
  size_t count_ = 0;
};

/// A row of `host:port@generation` with status `status`, started at `start_ms`.
inline table_row make_table_row(const std::string& host, uint16_t port, uint64_t generation,
                                silo_status status, int64_t start_ms) {
  table_row r;
  r.entry.silo = silo_address{host, port, generation};
  r.entry.status = status;
  r.entry.gateway = port % 2 == 0;
  r.entry.manifest = {grain_type_info{"messagehub", placement_strategy::random, 1}};
  r.start_time_ms = start_ms;
  return r;
}

/// Checks every operation's outcome on `table`, which must be empty. `notify_timeout`
/// bounds the wait for a watch's notification.
inline void check_membership_table_contract(
  membership_table& table,
  std::chrono::milliseconds notify_timeout = std::chrono::milliseconds{5000}) {
  table_snapshot t;
  REQUIRE(table.read_all(t).ok());
  REQUIRE(t.version == 0);
  REQUIRE(t.rows.empty());

  // Insert: compare-and-set on the table version, one row per silo.
  auto a = make_table_row("10.0.0.1", 11111, 1, silo_status::joining, 100);
  auto b = make_table_row("10.0.0.2", 11112, 1, silo_status::joining, 150);
  REQUIRE(table.insert_row(a, 0).ok());
  CHECK(table.insert_row(b, 0).status == table_status::conflict);
  CHECK(table.insert_row(a, 1).status == table_status::conflict);
  REQUIRE(table.read_all(t).ok());
  REQUIRE(t.version == 1);
  REQUIRE(t.rows.size() == 1);
  CHECK(t.rows[0].entry.silo == a.entry.silo);
  CHECK(t.rows[0].entry.status == silo_status::joining);
  CHECK(t.rows[0].entry.manifest == a.entry.manifest);
  CHECK(t.rows[0].entry.gateway == a.entry.gateway);
  CHECK(t.rows[0].start_time_ms == 100);
  CHECK(t.rows[0].i_am_alive_ms == 0);
  CHECK(t.rows[0].row_version != 0);

  // Update: compare-and-set on the table version and the row's version.
  auto read_a = t.rows[0];
  auto active_a = read_a;
  active_a.entry.status = silo_status::active;
  REQUIRE(table.update_row(active_a, 1).ok());
  CHECK(table.update_row(active_a, 2).status == table_status::conflict); // stale row
  REQUIRE(table.read_all(t).ok());
  REQUIRE(t.version == 2);
  auto fresh_a = t.rows[0];
  CHECK(fresh_a.entry.status == silo_status::active);
  CHECK(fresh_a.row_version != read_a.row_version);
  CHECK(table.update_row(fresh_a, 1).status == table_status::conflict); // stale table
  auto ghost = make_table_row("10.0.0.9", 11119, 1, silo_status::active, 100);
  CHECK(table.update_row(ghost, 2).status == table_status::not_found);

  // Two writers that read the same table: exactly one wins.
  auto w1 = fresh_a;
  w1.suspicions = {{b.entry.silo, 500}};
  auto w2 = fresh_a;
  w2.entry.status = silo_status::shutting_down;
  CHECK(table.update_row(w1, 2).ok());
  CHECK(table.update_row(w2, 2).status == table_status::conflict);
  REQUIRE(table.read_all(t).ok());
  REQUIRE(t.version == 3);
  CHECK(t.rows[0].entry.status == silo_status::active);
  REQUIRE(t.rows[0].suspicions.size() == 1);
  CHECK(t.rows[0].suspicions[0] == (suspicion_vote{b.entry.silo, 500}));

  // IAmAlive: written apart, no table version change, only for silos with a row.
  REQUIRE(table.update_i_am_alive(a.entry.silo, 1234).ok());
  CHECK(table.update_i_am_alive(ghost.entry.silo, 1234).status == table_status::not_found);
  REQUIRE(table.read_all(t).ok());
  CHECK(t.version == 3);
  CHECK(t.rows[0].i_am_alive_ms == 1234);

  // Watch: a row write notifies; a destroyed watch never does again.
  change_counter changes;
  auto w = table.watch(changes.callback());
  auto before = changes.count();
  REQUIRE(table.insert_row(b, 3).ok());
  CHECK(changes.wait_for_more(before, notify_timeout));
  REQUIRE(table.read_all(t).ok());
  REQUIRE(t.version == 4);
  REQUIRE(t.rows.size() == 2);
  CHECK(t.rows[0].entry.silo == a.entry.silo); // ordered by rendered address
  CHECK(t.rows[1].entry.silo == b.entry.silo);
  CHECK(t.rows[0].i_am_alive_ms == 1234);      // a row update keeps the heartbeat
  w.reset();
  auto after = changes.count();

  // Cleanup: Dead rows that started before the bound go, with their heartbeats.
  auto dead_a = t.rows[0];
  dead_a.entry.status = silo_status::dead;
  REQUIRE(table.update_row(dead_a, 4).ok());
  size_t removed = 99;
  REQUIRE(table.cleanup_dead(100, removed).ok()); // started at 100: not before 100
  CHECK(removed == 0);
  REQUIRE(table.cleanup_dead(101, removed).ok());
  CHECK(removed == 1);
  REQUIRE(table.read_all(t).ok());
  REQUIRE(t.rows.size() == 1);
  CHECK(t.rows[0].entry.silo == b.entry.silo);
  CHECK(t.version == 5);
  CHECK(changes.count() == after);
}

} // namespace cafmesh::testing
