#pragma once

/// @file
/// The sender's outcome tracker (docs/behaviour/routing.md#nacks, sender side): exactly one
/// terminal outcome per delivery id reaches the application. A plain single-threaded class owned
/// by a hub endpoint actor, which passes the virtual time in and arms its own timer for
/// `next_deadline_ms()`.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cafmesh/actors/log.hpp"
#include "cafmesh/config/mesh_config.hpp"

namespace cafmesh::routing {

/// Name of the counter of dropped duplicate outcomes (docs/behaviour/routing.md#nacks).
inline constexpr const char* duplicate_outcomes_dropped_metric
  = "cafmesh.routing.duplicate_outcomes_dropped";

/// What the owner does with an incoming outcome.
enum class outcome_action : uint8_t {
  deliver,   ///< the terminal outcome: pass it to the application
  duplicate, ///< a later outcome for a terminated id: dropped, logged at debug, counted
  unmatched, ///< a response for an id the tracker never held: dropped, logged at debug
};

/// Renders `deliver`, `duplicate` or `unmatched`.
std::string to_string(outcome_action x);

/// The outcome tracker (docs/behaviour/routing.md#nacks).
///
/// - Requests: `track_request(id, deadline_ms)` records a pending entry. The first of
///   {`on_response`, `on_nack`, `expire` reaching the deadline} is the terminal outcome
///   (`deliver`); later ones are `duplicate`: dropped with the debug line
///   "duplicate outcome for delivery {id} dropped" and counted.
/// - One-way posts: not tracked. The first `on_nack` for an id the tracker does not hold is
///   `deliver` and the id is remembered; later NACKs are `duplicate`.
/// - A response for an id that is neither pending nor remembered is `unmatched` (a
///   response answers a request, and every request is tracked; such a response is a very
///   late duplicate whose id was already forgotten). Debug line
///   "outcome for unknown delivery {id} dropped"; counted in `unmatched_dropped()`.
/// - Memory: a terminated id is remembered `outcome_dedup_window_ms` (it is forgotten once
///   `now - terminated_at >= window`), at most `outcome_dedup_max_ids` ids, oldest first.
///
/// Costs: O(log n) per call plus the forgetting, amortised O(1). Time must not run
/// backwards between calls.
class outcome_tracker {
public:
  /// Window and bound from `cfg` (`outcome_dedup_window_ms`, `outcome_dedup_max_ids`);
  /// debug lines go to `out` (default component `outcome_tracker`).
  explicit outcome_tracker(const config::routing_section& cfg = {});
  outcome_tracker(const config::routing_section& cfg, log::logger out);

  /// Records request `id` as pending until `deadline_ms` (absolute virtual ms). Answers
  /// false and changes nothing if `id` is already pending or remembered (ids are unique:
  /// a re-send is a new delivery with a new id).
  bool track_request(const std::string& id, int64_t deadline_ms, int64_t now_ms);

  /// A response for `id` arrived at `now_ms`.
  outcome_action on_response(const std::string& id, int64_t now_ms);

  /// A NACK for `id` arrived at `now_ms` (any transport).
  outcome_action on_nack(const std::string& id, int64_t now_ms);

  /// The request timeout of `id` fired at `now_ms` (for an owner that uses one CAF request
  /// timeout per request instead of `expire`): `deliver` if `id` was pending (the deadline
  /// is its terminal outcome), else `duplicate` if remembered, else `unmatched`; dropped
  /// outcomes are logged and counted as for `on_response`.
  outcome_action on_deadline(const std::string& id, int64_t now_ms);

  /// Terminates every pending request whose deadline is at or before `now_ms` and answers
  /// their ids, earliest deadline first (ties in tracking order): each is that request's
  /// terminal outcome (deadline), to pass to the application.
  std::vector<std::string> expire(int64_t now_ms);

  /// The earliest pending deadline, for the owner's timer; none if nothing is pending.
  std::optional<int64_t> next_deadline_ms() const;

  /// True if `id` is pending.
  bool pending(const std::string& id) const { return pending_.count(id) > 0; }

  /// True if `id` is terminated and still remembered (as of the last call).
  bool remembered(const std::string& id) const { return remembered_.count(id) > 0; }

  size_t pending_count() const { return pending_.size(); }
  size_t remembered_count() const { return remembered_.size(); }

  /// `cafmesh.routing.duplicate_outcomes_dropped`.
  uint64_t duplicates_dropped() const { return duplicates_dropped_; }

  /// Responses dropped as `unmatched`.
  uint64_t unmatched_dropped() const { return unmatched_dropped_; }

private:
  void forget_expired(int64_t now_ms);
  void remember(const std::string& id, int64_t now_ms);
  outcome_action drop_duplicate(const std::string& id);

  int64_t window_ms_;
  size_t max_ids_;
  log::logger log_;
  std::multimap<int64_t, std::string> deadlines_; ///< deadline -> id
  std::unordered_map<std::string, std::multimap<int64_t, std::string>::iterator> pending_;
  std::deque<std::pair<int64_t, std::string>> order_; ///< (terminated_ms, id), oldest first
  std::unordered_map<std::string, int64_t> remembered_;
  uint64_t duplicates_dropped_ = 0;
  uint64_t unmatched_dropped_ = 0;
};

} // namespace cafmesh::routing
