#pragma once

/// @file
/// The run as a per-second timeline (the charts of `cafmesh-demo --html`, html_report.hpp),
/// read from the outcome ledger's per-second bins of accept and terminal times. Second s covers the times
/// [s * 1000, (s + 1) * 1000) ms since the traffic started; the timeline runs from second 0
/// to the last second with an accept or a terminal outcome (the drain after the paced
/// traffic included), at least `duration_s` seconds. Per second:
/// - `accepted`: deliveries handed to the mesh (re-sends and refused ones included);
/// - `landed`: deliveries whose first terminal outcome (a landing, or a request's response)
///   came in that second;
/// - `nacked[v]`: deliveries whose first terminal outcome was a NACK with verdict v, except
///   overload refusals;
/// - `refusals`: deliveries refused as overloaded before acceptance (a NACK or suppressed
///   failure that `overload_refusal` classifies as such);
/// - `deadlines`: requests ended by their deadline; `suppressed`: answer-suppressed
///   deliveries whose router failure was recorded (not overload refusals);
/// - `in_flight`: deliveries accepted before the end of the second minus those whose first
///   terminal outcome came before it;
/// - `p99_ms`: the nearest-rank p99 of (first landing - accepted) over the deliveries
///   accepted in that second that landed; none when none of them landed.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cafmesh/mainjob/ledger.hpp"
#include "cafmesh/routing/verdict.hpp"

namespace cafmesh::mainjob {

/// A fault the driver injected, for the timeline's marker lines.
struct fault_mark {
  std::string kind;   ///< `kill`, `restart` (a killed silo started again), `stall`,
                      ///< `unstall` or `second_signal`
  std::string silo;
  int64_t at_ms = 0;  ///< since the traffic started
  bool injected = true; ///< false: the mesh could not inject it

  friend bool operator==(const fault_mark& x, const fault_mark& y) {
    return x.kind == y.kind && x.silo == y.silo && x.at_ms == y.at_ms
           && x.injected == y.injected;
  }
};

/// The per-second series (see the file comment); every vector has `seconds()` entries.
struct timeline {
  std::vector<uint64_t> accepted;
  std::vector<uint64_t> landed;
  std::map<routing::verdict, std::vector<uint64_t>> nacked; ///< only verdicts seen
  std::vector<uint64_t> refusals;
  std::vector<uint64_t> deadlines;
  std::vector<uint64_t> suppressed;
  std::vector<uint64_t> in_flight;
  std::vector<std::optional<int64_t>> p99_ms;

  size_t seconds() const { return landed.size(); }
};

/// The series of every delivery of `ledger` (from its per-second bins,
/// `outcome_ledger::seconds`; see the file comment); at least `duration_s` seconds.
timeline build_timeline(const outcome_ledger& ledger, int64_t duration_s);

} // namespace cafmesh::mainjob
