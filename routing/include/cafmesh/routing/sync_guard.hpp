#pragma once

/// @file
/// The delta-sync receiver guard (docs/behaviour/sync-guard.md): `delta_mirror`, a subscriber's
/// copy of state an owner hub streams as frames `full(v, state)` and `patch(v, ops)`. Plain class,
/// no actors: the mirror puts what it wants sent (fresh-Full requests, NACKs) into an outbox
/// that the caller drains with `take_requests()` after each call and carries out itself.
///
/// State model: an object of keys, each holding one JSON value as text (`{"a":1}` is
/// `{"a" -> "1"}`). A patch is a list of operations applied atomically, all or nothing:
/// - `set(key, value)`    sets `key` to the JSON text `value` (always applies);
/// - `remove(key)`        removes `key`; does not apply if `key` is absent;
/// - `test(key, value)`   does not apply unless `key` holds exactly the text `value`.
/// A frame is *malformed* (its processing fails, docs/behaviour/sync-guard.md last table row)
/// when a key is empty or a `set`/`test` value, or a Full's value, is not valid JSON text.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace cafmesh::routing {

/// The mirrored state: key -> JSON text of its value.
using sync_state = std::map<std::string, std::string>;

/// One patch operation (see the file comment).
struct sync_op {
  enum class kind : uint8_t { set, remove, test };
  kind op = kind::set;
  std::string key;
  std::string value_json; ///< `set`: the new value; `test`: the expected value; else unused

  static sync_op set(std::string key, std::string value_json);
  static sync_op remove(std::string key);
  static sync_op test(std::string key, std::string value_json);
};

/// A frame of one owned stream, stamped with the owner's hub version
/// (docs/behaviour/sync-guard.md).
struct sync_frame {
  enum class kind : uint8_t { full, patch };
  kind type = kind::full;
  uint64_t version = 0;
  sync_state state;         ///< `full` only
  std::vector<sync_op> ops; ///< `patch` only

  static sync_frame full(uint64_t version, sync_state state);
  static sync_frame patch(uint64_t version, std::vector<sync_op> ops);
};

/// Renders `full(v)` or `patch(v)`.
std::string to_string(const sync_frame& f);

/// Applies `ops` to `state` atomically: answers false (leaving `state` untouched) if an
/// operation does not apply. Does not validate JSON text (see `delta_mirror`).
bool apply_ops(sync_state& state, const std::vector<sync_op>& ops);

/// What `delta_mirror::on_frame` did with one frame.
enum class frame_outcome : uint8_t {
  applied,          ///< full replaced the state / patch applied; version adopted
  stale_dropped,    ///< v < C and no latch for it: dropped silently (debug line), never re-asked
  gap_dropped,      ///< a patch while a fresh Full is in flight: dropped, the Full will cover it
  resync_requested, ///< a patch without base, or one that did not apply: fresh Full requested
  nacked,           ///< malformed frame: its sender is NACKed, state unchanged
};

/// Renders the outcome's name.
std::string to_string(frame_outcome x);

/// Something the mirror wants sent; drained by the caller.
struct sync_request {
  enum class kind : uint8_t {
    fresh_full,  ///< subscribe again to get a fresh Full (at most one in flight)
    nack_sender, ///< NACK the sender of frame `frame_version` (processing failed)
  };
  kind what = kind::fresh_full;
  uint64_t frame_version = 0; ///< the frame that caused it (announced version for a resubscribe)
  std::string reason;         ///< human text, for logs and the NACK message

  friend bool operator==(const sync_request& x, const sync_request& y) {
    return x.what == y.what && x.frame_version == y.frame_version && x.reason == y.reason;
  }
};

/// Counters of one mirror.
struct sync_counters {
  uint64_t applied = 0;             ///< frames applied (fulls and patches)
  uint64_t stale_dropped = 0;       ///< frames dropped by the gate
  uint64_t fresh_full_requests = 0; ///< fresh-Full requests issued (resubscribes included)
  uint64_t gap_dropped = 0;         ///< patches dropped while a fresh Full was in flight
  uint64_t nacked = 0;              ///< malformed frames NACKed
};

/// A subscriber's mirror of one owned stream (docs/behaviour/sync-guard.md).
///
/// On frame v with mirror version C: the gate drops v < C silently (one debug line on the
/// `sync` logger, counted in `stale_dropped`, never re-requested) unless the frame is a Full
/// and the recycle latch is armed; v = C passes. Then:
/// - `full`: replace the state, C = v, cancel any pending resync, disarm the latch;
/// - `patch` while a fresh Full is in flight: dropped (`gap_dropped`) — at most one request
///   per gap (cafmesh also drops here after a patch that did not apply: the awaited Full
///   replaces everything anyway);
/// - `patch` with no base (no C or no state): request a fresh Full;
/// - `patch` that does not apply: request a fresh Full; its v is adopted when it arrives;
/// - `patch` that applies: C = v;
/// - a malformed frame: NACK its sender.
/// The recycle latch is armed by `resubscribe_behind` (and by `on_announce` when it detects
/// the mirror is behind); patches leave it armed; the first Full to pass disarms it.
class delta_mirror {
public:
  /// `name` (e.g. the stream id) prefixes the mirror's log lines.
  explicit delta_mirror(std::string name);

  /// Handles one frame (see the class comment).
  frame_outcome on_frame(const sync_frame& f);

  /// The change feed announced `announced_version` for the owner's node. When C is set and
  /// the announcement is above it, the mirror is behind: `resubscribe_behind` and answer
  /// true; otherwise nothing happens and the answer is false.
  bool on_announce(uint64_t announced_version);

  /// Subscribes again after detecting the mirror is behind: arms the recycle latch and
  /// requests a fresh Full unless one is already in flight.
  void resubscribe_behind(uint64_t announced_version);

  /// The caller's fresh-Full request failed or timed out: the next patch may request again.
  void request_failed();

  /// Takes (and clears) the outbox.
  std::vector<sync_request> take_requests();

  /// The outbox without clearing it.
  const std::vector<sync_request>& pending_requests() const { return outbox_; }

  /// C, when set.
  std::optional<uint64_t> version() const { return version_; }

  /// True once a Full has been applied (the mirror has a base).
  bool has_state() const { return has_state_; }

  /// The mirrored state (empty before the first Full).
  const sync_state& state() const { return state_; }

  /// True while a fresh-Full request is in flight.
  bool resync_in_flight() const { return resync_in_flight_; }

  /// True while the recycle latch is armed.
  bool latch_armed() const { return latch_; }

  const sync_counters& counters() const { return counters_; }

  const std::string& name() const { return name_; }

private:
  void request_full(uint64_t frame_version, std::string reason);
  bool malformed(const sync_frame& f, std::string& why) const;

  std::string name_;
  std::optional<uint64_t> version_;
  bool has_state_ = false;
  sync_state state_;
  bool resync_in_flight_ = false;
  bool latch_ = false;
  sync_counters counters_;
  std::vector<sync_request> outbox_;
};

} // namespace cafmesh::routing
