// The membership table (docs/behaviour/membership.md#the-membership-table): the in-process
// provider against the table's contract, rows as text, and the rules of failure detection.
// The etcd provider runs the same contract in tests/integration/etcd_membership_table_test.cpp.

#include <doctest/doctest.h>

#include "cafmesh/actors/membership_table.hpp"
#include "cafmesh/testing/membership_table_contract.hpp"

using namespace cafmesh;
using cafmesh::testing::make_table_row;

TEST_CASE("membership table: the in-process provider meets the table's contract") {
  in_process_membership_table table;
  cafmesh::testing::check_membership_table_contract(table);
}

TEST_CASE("membership table: the in-process provider notifies on the writer's thread, once per row write") {
  in_process_membership_table table;
  cafmesh::testing::change_counter changes;
  auto w = table.watch(changes.callback());
  REQUIRE(table.insert_row(make_table_row("h", 1, 1, silo_status::joining, 0), 0).ok());
  CHECK(changes.count() == 1);
  REQUIRE(table.update_i_am_alive(silo_address{"h", 1, 1}, 5).ok());
  CHECK(changes.count() == 1); // heartbeats are no row change
  CHECK(table.insert_row(make_table_row("h", 2, 1, silo_status::joining, 0), 0).status
        == table_status::conflict);
  CHECK(changes.count() == 1); // a refused write changes nothing
}

TEST_CASE("membership table: a row survives its text form, and damaged text is malformed") {
  auto row = make_table_row("10.1.2.3", 4242, 7, silo_status::shutting_down, 1700000000123);
  row.entry.manifest.push_back({"counter", placement_strategy::prefer_local, 3});
  row.suspicions = {{silo_address{"10.1.2.4", 1, 2}, 17}, {silo_address{"10.1.2.5", 9, 1}, 18}};
  table_row back;
  REQUIRE(row_from_json(row_to_json(row), back).ok());
  CHECK(back.entry.silo == row.entry.silo);
  CHECK(back.entry.status == silo_status::shutting_down);
  CHECK(back.entry.manifest == row.entry.manifest);
  CHECK(back.entry.gateway == row.entry.gateway);
  CHECK(back.start_time_ms == 1700000000123);
  CHECK(back.suspicions == row.suspicions);
  for (const char* bad : {"", "{", "[]", R"({"silo":{"host":"h","port":1,"generation":1}})",
                          R"({"silo":{"host":"h","port":70000,"generation":1},"status":"Active",)"
                          R"("gateway":false,"start_time_ms":0,"manifest":[],"suspicions":[]})",
                          R"({"silo":{"host":"h","port":1,"generation":1},"status":"Sleeping",)"
                          R"("gateway":false,"start_time_ms":0,"manifest":[],"suspicions":[]})"}) {
    std::string text = bad;
    CAPTURE(text);
    auto res = row_from_json(text, back);
    CHECK(res.status == table_status::malformed);
    CHECK(res.detail.rfind("unreadable membership row: ", 0) == 0);
  }
}

TEST_CASE("membership table: min(2, (active + 1) / 2) fresh votes declare a silo Dead") {
  CHECK(votes_to_declare_dead(0) == 1);
  CHECK(votes_to_declare_dead(1) == 1);
  CHECK(votes_to_declare_dead(2) == 1);
  CHECK(votes_to_declare_dead(3) == 2);
  CHECK(votes_to_declare_dead(4) == 2);
  CHECK(votes_to_declare_dead(10) == 2);
}

TEST_CASE("membership table: a silo that is not Active casts no vote, and the votes of silos no longer Active do not count") {
  // S15.07: silo C, cut off by a partition, suspected A and B; the others declared C Dead;
  // when the partition healed C's vote against B was written and, with 2 Active silos
  // left, declared the healthy B Dead on its own.
  table_snapshot t;
  t.version = 4;
  for (uint16_t p : {1, 2, 3})
    t.rows.push_back(make_table_row("h", p, 1, silo_status::active, 0));
  silo_address a{"h", 1, 1}, b{"h", 2, 1}, c{"h", 3, 1};
  t.rows[2].entry.status = silo_status::dead; // c, declared Dead
  auto by_dead = vote_suspicion(t, b, c, 1000, 5000);
  CHECK_FALSE(by_dead.voter_active);
  CHECK_FALSE(by_dead.declare_dead);
  CHECK(by_dead.row.entry.status == silo_status::active);
  CHECK(by_dead.row.suspicions.empty());
  auto by_stranger = vote_suspicion(t, b, silo_address{"h", 9, 1}, 1000, 5000);
  CHECK_FALSE(by_stranger.voter_active);
  CHECK_FALSE(by_stranger.declare_dead);
  // c's vote was written while c was Active; once c is Dead it no longer counts (a fourth
  // Active silo d makes 3 Active silos, so 2 votes are needed).
  t.rows[1].suspicions = {{c, 900}};
  t.rows.push_back(make_table_row("h", 4, 1, silo_status::active, 0)); // 3 Active: 2 votes
  silo_address d{"h", 4, 1};
  auto with_stale_voter = vote_suspicion(t, b, a, 1000, 5000);
  CHECK(with_stale_voter.voter_active);
  CHECK_FALSE(with_stale_voter.declare_dead); // c's vote is dropped: 1 of 2
  CHECK(with_stale_voter.row.suspicions == std::vector<suspicion_vote>{{a, 1000}});
  t.rows[1] = with_stale_voter.row;
  auto second = vote_suspicion(t, b, d, 1100, 5000);
  CHECK(second.declare_dead);
}

TEST_CASE("membership table: a vote drops stale votes, refreshes the voter's own and declares at the threshold") {
  table_snapshot t;
  t.version = 9;
  for (uint16_t p : {1, 2, 3})
    t.rows.push_back(make_table_row("h", p, 1, silo_status::active, 0));
  silo_address a{"h", 1, 1}, b{"h", 2, 1}, c{"h", 3, 1};
  t.rows[2].row_version = 77;

  auto first = vote_suspicion(t, c, a, 1000, 5000);
  CHECK_FALSE(first.declare_dead); // 3 Active silos need 2 votes
  CHECK(first.row.entry.status == silo_status::active);
  CHECK(first.row.row_version == 77);
  CHECK(first.row.suspicions == std::vector<suspicion_vote>{{a, 1000}});

  t.rows[2] = first.row;
  auto again = vote_suspicion(t, c, a, 2000, 5000);
  CHECK_FALSE(again.declare_dead); // one voter counts once
  CHECK(again.row.suspicions == std::vector<suspicion_vote>{{a, 2000}});

  auto second = vote_suspicion(t, c, b, 3000, 5000);
  CHECK(second.declare_dead);
  CHECK(second.row.entry.status == silo_status::dead);
  CHECK(second.row.suspicions == std::vector<suspicion_vote>{{a, 1000}, {b, 3000}});

  auto late = vote_suspicion(t, c, b, 6001, 5000); // a's vote of 1000 is stale by then
  CHECK_FALSE(late.declare_dead);
  CHECK(late.row.suspicions == std::vector<suspicion_vote>{{b, 6001}});

  t.rows[2].entry.status = silo_status::dead;
  auto on_dead = vote_suspicion(t, c, b, 3000, 5000);
  CHECK_FALSE(on_dead.declare_dead);
  CHECK(on_dead.row.suspicions == t.rows[2].suspicions);

  auto unknown = vote_suspicion(t, silo_address{"h", 9, 1}, b, 3000, 5000);
  CHECK_FALSE(unknown.declare_dead);
  CHECK(unknown.row.entry.silo.empty());
}

TEST_CASE("membership table: the view of a table is its version and its rows' entries") {
  table_snapshot t;
  t.version = 4;
  t.rows.push_back(make_table_row("h", 2, 1, silo_status::active, 0));
  t.rows.push_back(make_table_row("h", 1, 1, silo_status::joining, 0));
  auto v = t.view();
  CHECK(v.version == 4);
  REQUIRE(v.rows.size() == 2);
  CHECK(v.rows[0].silo == (silo_address{"h", 1, 1}));
  CHECK(v.rows[1].silo == (silo_address{"h", 2, 1}));
  CHECK(v.active_set() == std::vector<silo_address>{{"h", 2, 1}});
  CHECK(v.gateways() == std::vector<silo_address>{{"h", 2, 1}});
}
