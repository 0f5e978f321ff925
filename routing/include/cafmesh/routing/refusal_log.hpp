#pragma once

/// @file
/// Refusal log windowing (docs/behaviour/routing.md#saturation-report-and-refusal-log): repeated
/// refusals for the same (dead target, sender) pair produce one log line per window, with a repeat
/// count. Only log lines are windowed: the caller still refuses and NACKs every time. A plain
/// single-threaded class; the owner passes the virtual time in and writes the line itself.

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "cafmesh/config/mesh_config.hpp"

namespace cafmesh::routing {

/// The answer for one refusal.
struct refusal_log_decision {
  bool log = false;     ///< write the line now
  uint64_t repeats = 0; ///< when `log`: refusals of this pair not logged since its last line
};

/// Appends ` (repeated {n} time(s) since the last line)` to `line` when `d.repeats` > 0,
/// else answers `line` unchanged.
std::string with_repeats(const std::string& line, const refusal_log_decision& d);

/// The windowed refusal log table (docs/behaviour/routing.md#saturation-report-and-refusal-log).
///
/// - The first refusal of a pair is logged. Further refusals of that pair within
///   `refusal_log_window_ms` of its last logged line are not; the first one at or after the
///   window's end is logged with the count of those in between (`repeats`).
/// - The table is swept when it holds more than `refusal_log_sweep_entries` pairs: every
///   pair whose last refusal is `refusal_log_idle_windows` windows old or older is evicted.
///   After a sweep, the next one runs when the table exceeds max(sweep entries, 2 × its
///   size after the sweep), so sweeps stay amortised O(1) even when every pair is busy.
///
/// Keys are compared byte-wise on the rendered addresses (docs/behaviour/envelope.md#addresses),
/// as a pair.
class refusal_log {
public:
  /// Window, sweep size and idle windows from `cfg`.
  explicit refusal_log(const config::routing_section& cfg = {});

  /// One refusal of `target` for `sender` at `now_ms`; answers whether to log it.
  refusal_log_decision record(const std::string& target, const std::string& sender, int64_t now_ms);

  /// Pairs in the table.
  size_t size() const { return entries_.size(); }

  /// True if the pair is in the table.
  bool contains(const std::string& target, const std::string& sender) const {
    return entries_.count({target, sender}) > 0;
  }

  /// Sweeps run so far.
  uint64_t sweeps() const { return sweeps_; }

  /// Pairs evicted so far.
  uint64_t evicted() const { return evicted_; }

private:
  struct entry {
    int64_t last_logged_ms = 0;
    int64_t last_seen_ms = 0;
    uint64_t suppressed = 0;
  };

  void sweep(int64_t now_ms);

  int64_t window_ms_;
  size_t sweep_entries_;
  int64_t idle_ms_;
  size_t next_sweep_above_;
  std::map<std::pair<std::string, std::string>, entry> entries_;
  uint64_t sweeps_ = 0;
  uint64_t evicted_ = 0;
};

} // namespace cafmesh::routing
