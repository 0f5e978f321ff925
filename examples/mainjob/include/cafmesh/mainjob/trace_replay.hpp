#pragma once

/// @file
/// Trace files for cafmesh-client: JSON lines, one delivery
/// per line, replayed at their times. Every line is an object with exactly these keys:
///
/// | key | value |
/// |---|---|
/// | `t_ms` | integer >= 0, ms since the replay started; never less than the line before |
/// | `sender` | address `type/id` (docs/behaviour/envelope.md#addresses) of the sending hub |
/// | `target` | address of the target |
/// | `stream` | ordering key: non-empty for `frame`, `""` for every other kind |
/// | `payload_bytes` | integer 0 .. 1048575: least payload size |
/// | `kind` | `request`, `post` (one-way, may be NACKed), `heartbeat` (one-way, answer-suppressed) or `frame` |
///
/// Blank lines are skipped (and still counted). Every problem is one line
/// `line {n}: {pointer}: expected {what}, got {found}` (or the unknown/duplicate-key forms of
/// the config loader), n from 1; all errors of the file are collected in order.
///
/// Frames get owner-stamped versions on replay: each frame line steps the clock of
/// (sender, stream) (`owner_streams`); the first frame of that stream to a target is sent as a
/// Full at the new version, later ones as patches. Reactions to outcomes are the traffic
/// generator's (`reactor`).

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "cafmesh/mainjob/traffic.hpp"

namespace cafmesh::mainjob {

/// One valid trace line.
struct trace_entry {
  int64_t line = 0; ///< 1-based line number in the file
  int64_t t_ms = 0;
  std::string sender;
  std::string target;
  std::string stream;
  int64_t payload_bytes = 0;
  std::string kind; ///< request, post, heartbeat or frame

  friend bool operator==(const trace_entry& x, const trace_entry& y) {
    return x.line == y.line && x.t_ms == y.t_ms && x.sender == y.sender && x.target == y.target
           && x.stream == y.stream && x.payload_bytes == y.payload_bytes && x.kind == y.kind;
  }
};

/// The outcome of reading a trace: `ok` with `entries`, or `errors` (entries left empty).
struct trace_result {
  bool ok = false;
  std::vector<trace_entry> entries;
  std::vector<std::string> errors;

  /// All errors joined by newlines.
  std::string message() const;
};

/// Parses trace text (see the file comment).
trace_result parse_trace(const std::string& text);

/// Reads `path` and parses it; an unreadable file gives the single error
/// `cannot read trace file "{path}": {strerror text}`.
trace_result load_trace_file(const std::string& path);

/// Renders one delivery as a trace line (no newline); `parse_trace` reads it back. Heartbeats
/// (answer-suppressed posts) are written as kind `heartbeat`.
std::string to_trace_line(const planned_delivery& d);

/// Replays trace entries as planned deliveries. Ids are `{id_prefix}-{n}` (paced, n from 1)
/// and `{id_prefix}-r{n}` (reactions); every delivery's origin is `origin`.
class trace_replay {
public:
  trace_replay(std::vector<trace_entry> entries, std::string id_prefix, std::string origin,
               int64_t request_max_resends = 5);

  /// Due time of the next entry, none when all were taken.
  std::optional<int64_t> next_due_ms() const;

  /// Takes every entry due at or before `now_ms`, in file order.
  std::vector<planned_delivery> take_due(int64_t now_ms);

  /// The reaction to the terminal outcome of delivery `d` (as the traffic generator's).
  std::vector<planned_delivery> on_outcome(const planned_delivery& d, const observed_outcome& o,
                                           int64_t now_ms) {
    return reactor_.on_outcome(d, o, now_ms);
  }

  const owner_streams& streams() const { return reactor_.streams(); }
  const traffic_counters& counters() const { return reactor_.counters(); }

private:
  std::vector<trace_entry> entries_;
  size_t pos_ = 0;
  std::string prefix_;
  std::string origin_;
  uint64_t next_id_ = 1;
  std::set<std::tuple<std::string, std::string, std::string>> subscribed_;
  reactor reactor_;
};

} // namespace cafmesh::mainjob
