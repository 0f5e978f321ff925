// The etcd membership table against real etcd servers
// (docs/behaviour/membership.md#the-etcd-provider): single-member and 3-member clusters started
// as child processes on free loopback ports. The table's contract, a watch's delivery after every write, the failover to the next
// member when one is killed, and `unavailable` (within the call bound) when none is reachable.

#include <doctest/doctest.h>

#include <chrono>
#include <csignal>
#include <string>
#include <thread>
#include <vector>

#include "cafmesh/actors/etcd_membership_table.hpp"
#include "cafmesh/testing/etcd_cluster.hpp"
#include "cafmesh/testing/membership_table_contract.hpp"

using namespace cafmesh;
using namespace std::chrono_literals;
using cafmesh::testing::change_counter;
using cafmesh::testing::make_table_row;

namespace {

using cafmesh::testing::etcd_cluster;

/// Retries `call` while it answers `unavailable`, for at most 10 s; true once it is `ok`.
template <class Call>
bool eventually_ok(Call call) {
  for (int k = 0; k < 100; ++k) {
    auto res = call();
    if (res.ok())
      return true;
    if (res.status != table_status::unavailable) {
      MESSAGE("table call failed: " << to_string(res.status) << ": " << res.detail);
      return false;
    }
    std::this_thread::sleep_for(100ms);
  }
  return false;
}

etcd_table_options options_for(const etcd_cluster& cluster, const std::string& prefix) {
  etcd_table_options opts;
  opts.endpoints = cluster.endpoints();
  opts.prefix = prefix;
  opts.request_timeout_ms = 1000;
  return opts;
}

} // namespace

TEST_CASE("etcd membership table: a single-member cluster meets the table's contract") {
  etcd_cluster cluster{1};
  etcd_membership_table table{options_for(cluster, "/cafmesh/contract/")};
  REQUIRE(cluster.wait_healthy());
  cafmesh::testing::check_membership_table_contract(table);
}

TEST_CASE("etcd membership table: tables of two prefixes do not see each other") {
  etcd_cluster cluster{1};
  etcd_membership_table red{options_for(cluster, "/cafmesh/red/")};
  etcd_membership_table blue{options_for(cluster, "/cafmesh/blue/")};
  REQUIRE(cluster.wait_healthy());
  REQUIRE(red.insert_row(make_table_row("h", 1, 1, silo_status::joining, 0), 0).ok());
  table_snapshot t;
  REQUIRE(blue.read_all(t).ok());
  CHECK(t.version == 0);
  CHECK(t.rows.empty());
  REQUIRE(blue.insert_row(make_table_row("h", 2, 1, silo_status::joining, 0), 0).ok());
  REQUIRE(red.read_all(t).ok());
  CHECK(t.version == 1);
  REQUIRE(t.rows.size() == 1);
  CHECK(t.rows[0].entry.silo == (silo_address{"h", 1, 1}));
}

TEST_CASE("etcd membership table: a watch of a 3-member cluster is notified of every status change, also after the member it used is killed") {
  etcd_cluster cluster{3};
  etcd_membership_table writer{options_for(cluster, "/cafmesh/roll/")};
  REQUIRE(cluster.wait_healthy());
  // The watcher prefers the first member; the writer goes through the others when it dies.
  etcd_membership_table watcher{options_for(cluster, "/cafmesh/roll/")};
  change_counter changes;
  auto w = watcher.watch(changes.callback());
  auto row = make_table_row("10.0.0.1", 4000, 1, silo_status::joining, 0);
  REQUIRE(writer.insert_row(row, 0).ok());
  uint64_t version = 1;
  auto change_status = [&](silo_status to) {
    table_snapshot t;
    // A killed leader leaves the others without one until they elect one (about a second).
    REQUIRE(eventually_ok([&] { return writer.read_all(t); }));
    REQUIRE(t.version == version);
    auto r = t.rows.at(0);
    r.entry.status = to;
    auto seen = changes.count();
    auto t0 = std::chrono::steady_clock::now();
    REQUIRE(eventually_ok([&] { return writer.update_row(r, version); }));
    ++version;
    REQUIRE(changes.wait_for_more(seen, 5s));
    auto ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0);
    MESSAGE("status " << to_string(to) << " reached the watch " << ms.count()
                      << " ms after its write returned");
  };
  change_status(silo_status::active);
  cluster.signal(0, SIGKILL);
  change_status(silo_status::shutting_down);
  change_status(silo_status::stopping);
  table_snapshot t;
  REQUIRE(watcher.read_all(t).ok());
  CHECK(t.version == 4);
  REQUIRE(t.rows.size() == 1);
  CHECK(t.rows[0].entry.status == silo_status::stopping);
  MESSAGE("HTTP calls: writer " << writer.calls() << ", watcher " << watcher.calls());
}

TEST_CASE("etcd membership table: with no member reachable every call is unavailable within its bound") {
  etcd_cluster cluster{1};
  auto opts = options_for(cluster, "/cafmesh/gone/");
  etcd_membership_table table{opts};
  REQUIRE(cluster.wait_healthy());
  REQUIRE(table.insert_row(make_table_row("h", 1, 1, silo_status::joining, 0), 0).ok());
  cluster.signal(0, SIGKILL);
  table_snapshot t;
  auto t0 = std::chrono::steady_clock::now();
  auto res = table.read_all(t);
  auto took = std::chrono::steady_clock::now() - t0;
  CHECK(res.status == table_status::unavailable);
  CHECK(res.detail.find("no etcd endpoint answered") == 0);
  CHECK(took < std::chrono::milliseconds{opts.request_timeout_ms * 3});
  CHECK(table.update_i_am_alive(silo_address{"h", 1, 1}, 1).status == table_status::unavailable);
}
