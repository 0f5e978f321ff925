#pragma once

/// @file
/// The membership table (docs/behaviour/membership.md#the-membership-table): the cluster's
/// shared record of silo incarnations, read and written by every silo through one interface
/// whatever stores it, plus the in-process provider and the pure rules of failure detection.
///
/// The shape is the one of Orleans' membership table. The table has one version, a counter
/// that every row insert and row update advances by one; each row has its own version, an
/// opaque number the provider assigns when it stores the row. Both writes are
/// compare-and-set: `insert_row` succeeds only if the table is still at the version the
/// writer read and the silo has no row yet; `update_row` only if the table is still at the
/// version the writer read and the row still has the version the writer read. A writer that
/// loses a race gets `table_status::conflict`, reads again and decides again. IAmAlive
/// heartbeats are written apart from the rows and do not advance the table version, so that
/// liveness traffic never makes membership writes conflict.
///
/// Calls block the calling thread (an etcd provider waits for the network): call them from a
/// detached actor or a thread of your own, never from a cooperatively scheduled actor.
/// Every provider is safe to call from several threads at once.

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <map>
#include <string>
#include <vector>

#include "cafmesh/actors/ids.hpp"
#include "cafmesh/actors/membership.hpp"

namespace cafmesh {

/// A suspicion vote: silo `by` found the row's silo unresponsive at `at_ms` (wall clock,
/// milliseconds since the Unix epoch).
struct suspicion_vote {
  silo_address by;
  int64_t at_ms = 0;

  friend bool operator==(const suspicion_vote& x, const suspicion_vote& y) {
    return x.by == y.by && x.at_ms == y.at_ms;
  }
};

/// One silo incarnation's row in the membership table.
struct table_row {
  /// The silo, its status, its grain manifest and its gateway flag, as membership views
  /// carry them.
  membership_row entry;
  /// When the incarnation started (wall clock, ms since the Unix epoch).
  int64_t start_time_ms = 0;
  /// The votes of silos that suspect this one, at most one per voter.
  std::vector<suspicion_vote> suspicions;
  /// The last IAmAlive heartbeat written for this silo (0: none yet). Read-only here:
  /// `membership_table::update_i_am_alive` writes it.
  int64_t i_am_alive_ms = 0;
  /// The row's version as the provider stored it (0: not stored). `update_row` compares it.
  uint64_t row_version = 0;
};

/// The whole table as read at one table version. Rows are ordered by rendered silo address.
struct table_snapshot {
  uint64_t version = 0;
  std::vector<table_row> rows;

  /// The row of `s`, or nullptr.
  const table_row* find(const silo_address& s) const;

  /// The membership view of this table: its version and its rows' entries, in order.
  membership_snapshot view() const;
};

/// What a table call came to.
enum class table_status : uint8_t {
  /// Applied (a write) or read.
  ok,
  /// A compare-and-set lost: the table or the row changed since the caller read it.
  conflict,
  /// The row to update does not exist.
  not_found,
  /// The store could not be reached or did not answer in time; nothing is known about a
  /// write's fate beyond "not confirmed".
  unavailable,
  /// The store answered something this provider cannot read (a foreign key layout, a
  /// damaged row).
  malformed,
};

/// Renders `ok`, `conflict`, `not_found`, `unavailable` or `malformed`.
const char* to_string(table_status x);

/// The outcome of a table call: a status and, unless `ok`, a sentence saying what happened.
struct table_outcome {
  table_status status = table_status::ok;
  std::string detail;

  /// True iff the call succeeded.
  bool ok() const { return status == table_status::ok; }

  static table_outcome success() { return {}; }
  static table_outcome failure(table_status s, std::string what) { return {s, std::move(what)}; }
};

/// A registration for change notifications; the notifications end when it is destroyed.
class table_watch {
public:
  virtual ~table_watch();
};

/// The membership table's interface (see the file's documentation for its semantics).
class membership_table {
public:
  /// Called after the table changed, from a thread of the provider's; takes no data: read
  /// the table again. Must not block for long and must not call `watch` or destroy a watch.
  using change_callback = std::function<void()>;

  virtual ~membership_table();

  /// Reads every row and the table version into `out` (left unchanged unless `ok`).
  virtual table_outcome read_all(table_snapshot& out) = 0;

  /// Inserts `row` if the table is at `table_version` and has no row of `row.entry.silo`;
  /// the table then is at `table_version + 1`. `row.row_version` and `row.i_am_alive_ms`
  /// are ignored.
  virtual table_outcome insert_row(const table_row& row, uint64_t table_version) = 0;

  /// Replaces the row of `row.entry.silo` if the table is at `table_version` and the
  /// stored row still has version `row.row_version`; the table then is at
  /// `table_version + 1`. `not_found` if the silo has no row.
  virtual table_outcome update_row(const table_row& row, uint64_t table_version) = 0;

  /// Records an IAmAlive heartbeat of `silo` at `at_ms`, unconditionally. The table
  /// version does not change.
  virtual table_outcome update_i_am_alive(const silo_address& silo, int64_t at_ms) = 0;

  /// Deletes the Dead rows (and their heartbeats) whose silo started before `before_ms`;
  /// `removed` receives how many. The table version does not change.
  virtual table_outcome cleanup_dead(int64_t before_ms, size_t& removed) = 0;

  /// Calls `on_change` after every later change of a row's content (not of heartbeats)
  /// until the returned watch is destroyed. A provider whose notifications may have missed
  /// changes (a reconnection) calls it once more, so a reader that re-reads on every call
  /// never misses the latest state.
  virtual std::unique_ptr<table_watch> watch(change_callback on_change) = 0;

  /// True if calls may wait for I/O (the default); false for a table in memory.
  virtual bool may_block() const;
};

/// The development provider: the table in this process's memory, shared by every silo that
/// holds the same object (an in-process cluster, tests). Watches are called synchronously,
/// on the writer's thread, after the write.
class in_process_membership_table final : public membership_table {
public:
  in_process_membership_table();
  ~in_process_membership_table() override;

  table_outcome read_all(table_snapshot& out) override;
  table_outcome insert_row(const table_row& row, uint64_t table_version) override;
  table_outcome update_row(const table_row& row, uint64_t table_version) override;
  table_outcome update_i_am_alive(const silo_address& silo, int64_t at_ms) override;
  table_outcome cleanup_dead(int64_t before_ms, size_t& removed) override;
  std::unique_ptr<table_watch> watch(change_callback on_change) override;
  bool may_block() const override;

private:
  struct watchers;
  class registration;

  void notify();

  std::mutex mtx_;
  uint64_t version_ = 0;
  uint64_t next_row_version_ = 1;
  std::map<std::string, table_row> rows_; ///< rendered silo address -> row
  std::shared_ptr<watchers> watchers_;
};

// -- rows as text ---------------------------------------------------------------------------

/// Renders a row's stored part (entry, start time, suspicions; not its heartbeat or
/// version) as a JSON object text, the format providers that store text use.
std::string row_to_json(const table_row& row);

/// Reads a text made by `row_to_json` into `out`; `malformed` with the reason otherwise.
table_outcome row_from_json(const std::string& text, table_row& out);

// -- failure detection ----------------------------------------------------------------------

/// How many fresh suspicion votes declare a silo Dead among `active` Active silos:
/// `min(2, (active + 1) / 2)`, and at least 1.
size_t votes_to_declare_dead(size_t active);

/// What a vote comes to (`vote_suspicion`).
struct suspicion_decision {
  /// The suspect's row with the vote applied: stale votes (older than the expiry) dropped,
  /// the voter's vote added or refreshed; status Dead if `declare_dead`.
  table_row row;
  /// True if the fresh votes, the new one included, reach `votes_to_declare_dead`.
  bool declare_dead = false;
  /// False if the voter's own row is not Active in `table` (missing, Joining, leaving or
  /// Dead): it casts no vote, the row is a copy and nothing is written.
  bool voter_active = true;
};

/// Applies the vote of `voter` against `suspect` at `now_ms` to the table `table` read:
/// votes older than `vote_expiry_ms` no longer count, nor do votes of silos that are not
/// Active in `table` (a silo cut off by a partition and declared Dead meanwhile would
/// otherwise declare a healthy silo Dead with its vote once the partition heals: with 2
/// Active silos left, one vote is enough). A voter that is not Active itself casts no vote.
/// `suspect` must have a row that is not Dead (otherwise the result's row is a copy and
/// nothing is declared). The caller writes the result with `update_row(result.row,
/// table.version)`.
suspicion_decision vote_suspicion(const table_snapshot& table, const silo_address& suspect,
                                  const silo_address& voter, int64_t now_ms,
                                  int64_t vote_expiry_ms);

} // namespace cafmesh
