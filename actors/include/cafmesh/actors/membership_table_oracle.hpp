#pragma once

/// @file
/// The membership oracle's protocol over a membership table
/// (docs/behaviour/membership.md#one-oracle-per-process): every process spawns one, talking
/// to the shared table, so no process is special and any may stop first.
///
/// It answers what the development oracle answers (`membership_oracle_actor`, membership.hpp),
/// so a membership agent, a network link and the admin endpoint cannot tell the two apart:
/// - `(mb_join_atom, membership_row row) -> uint64_t version`: inserts `row` as Joining,
///   started now. Rows of the same endpoint with an older generation that are not Dead are
///   updated to Dead first (a restart supersedes its predecessor). Refused with
///   `invalid_operation` if the endpoint has a row of the same or a newer generation. The
///   joined silo is this process's: it heartbeats (IAmAlive every
///   `i_am_alive_interval_ms`) and votes.
/// - `(mb_status_atom, silo_address s, silo_status to) -> uint64_t version`: one allowed
///   transition, as the development oracle; no change if `s` already has `to`.
/// - `(mb_dead_atom, silo_address s) -> uint64_t version`: Active -> Stopping -> Dead (two
///   writes), one write from Joining, ShuttingDown or Stopping; no change if Dead.
/// - `(mb_subscribe_atom, caf::actor sub)`, `(mb_get_atom) -> membership_snapshot`: the
///   table's view; every subscriber receives the view at once (if the table has a row) and
///   after every change the table's watch reports, as `(mb_snapshot_atom,
///   membership_snapshot)` with the table version as its version. A subscriber may not see
///   every version (changes in quick succession arrive as one), but always the latest.
/// - `(sim_watch_atom, silo_address s, bool alive)`: the network link's suspicion (false)
///   or clearing (true) of a peer. A suspicion that lasts `detection_ms` becomes this
///   silo's vote against `s` in the table (`vote_suspicion`), and the vote that reaches
///   `votes_to_declare_dead` declares `s` Dead. Only a process that joined votes.
///
/// Every write is a compare-and-set that, on `conflict`, reads again and tries again (at
/// most `max_write_attempts` times); while the table is unavailable it tries again every
/// 100 ms for `unavailable_budget_ms`. If the table cannot be reached, requests fail with a
/// `departed_silo` fault ("the membership table cannot be reached: ...") so that a bounded
/// membership step moves on, and the process keeps routing on its last view: its own failure
/// to reach the table never declares anybody Dead.
///
/// A table whose calls may block (etcd) gets a detached actor (a thread of its own);
/// the in-process table an ordinary one, so that it runs in virtual time in tests.

#include <cstdint>
#include <memory>

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include "cafmesh/actors/membership.hpp"
#include "cafmesh/actors/membership_table.hpp"

namespace cafmesh {

/// Settings of one process's table oracle.
struct membership_table_oracle_config {
  /// How long the link's suspicion of a peer must last before this silo votes.
  int64_t detection_ms = 10000;
  /// Votes older than this no longer count.
  int64_t vote_expiry_ms = 60000;
  /// Heartbeat period of the joined silo's IAmAlive.
  int64_t i_am_alive_interval_ms = 5000;
  /// Compare-and-set attempts of one write before it gives up.
  int64_t max_write_attempts = 8;
  /// How long one request keeps trying while the table is unavailable (an etcd election).
  int64_t unavailable_budget_ms = 3000;
};

/// Spawns the table oracle of this process over `table` (see the file comment).
membership_oracle_actor spawn_membership_table_oracle(caf::actor_system& sys,
                                                      std::shared_ptr<membership_table> table,
                                                      membership_table_oracle_config cfg);

} // namespace cafmesh
