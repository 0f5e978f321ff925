#pragma once

/// @file
/// The production membership table on an etcd v3 cluster
/// (docs/behaviour/membership.md#the-etcd-provider), spoken to over etcd's JSON gateway
/// (`/v3/kv/range`, `/v3/kv/txn`, `/v3/kv/deleterange`, `/v3/watch`) with libcurl.
///
/// Keys, under the configured prefix (`/cafmesh/{cluster id}/` by default):
/// - `version`: the table version, in decimal;
/// - `row/{silo}`: one row per silo incarnation, its stored part as `row_to_json` renders it;
///   the row's version is the key's `mod_revision`;
/// - `alive/{silo}`: the silo's last IAmAlive time in ms, in decimal.
/// A row write is one transaction that compares the `version` key's value (absent: the
/// table is at 0) and the row key's `mod_revision` (absent for an insert), and on success
/// puts both. A change reaches a watching silo through etcd's watch stream, resumed from the
/// last revision it saw, not by polling.
///
/// Endpoints are tried in order; a call that cannot reach one (or times out) tries the next
/// and, when none answered, returns `unavailable`. Safe to call from several threads.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cafmesh/actors/membership_table.hpp"

namespace cafmesh {

/// Where and how to reach etcd.
struct etcd_table_options {
  /// Client URLs of the etcd members, e.g. `http://127.0.0.1:2379`.
  std::vector<std::string> endpoints;
  /// Key prefix of this cluster's table; ends with `/`.
  std::string prefix = "/cafmesh/default/";
  /// Bound of one HTTP call to one endpoint (connection included).
  int64_t request_timeout_ms = 2000;
  /// Pause before a watch stream is opened again once every endpoint failed in a row (a
  /// broken stream moves to the next endpoint at once).
  int64_t watch_retry_ms = 200;
};

/// The etcd provider of `membership_table`.
class etcd_membership_table final : public membership_table {
public:
  explicit etcd_membership_table(etcd_table_options options);
  ~etcd_membership_table() override;

  table_outcome read_all(table_snapshot& out) override;
  table_outcome insert_row(const table_row& row, uint64_t table_version) override;
  table_outcome update_row(const table_row& row, uint64_t table_version) override;
  table_outcome update_i_am_alive(const silo_address& silo, int64_t at_ms) override;
  table_outcome cleanup_dead(int64_t before_ms, size_t& removed) override;
  std::unique_ptr<table_watch> watch(change_callback on_change) override;

  /// How many HTTP calls this table made (every endpoint tried counts), for measurements.
  uint64_t calls() const;

private:
  struct impl;
  class watch_stream;
  std::shared_ptr<impl> impl_;
};

} // namespace cafmesh
