#pragma once

/// @file
/// The exactly-one-terminal-event latch of docs/behaviour/quiescence.md#the-routing-io-pool: per
/// leg, whichever of the leg's own
/// `leg_done`, the pool's cancel and the pool's down message arrives first wins; every later
/// one is ignored. A plain C++ helper (no CAF) an owner of legs keeps in its state;
/// single-threaded like the actor that owns it. (The router core keeps the same latch as a
/// flag in each leg's record, `leg_rec::latch_open`, routing/src/router_core_state.hpp.)

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_set>

namespace cafmesh::routing {

/// What ended a leg, as the owner learned it.
enum class leg_terminal : uint8_t {
  done = 0,  ///< the leg reported `leg_done` itself (landed or NACK handed over)
  cancelled, ///< the pool cancelled it during a drain (`pool_cancel_atom`): outcome `abandoned`
  down,      ///< the leg's actor went down first (`pool_down_atom`): outcome `leg_crashed`
};

/// Renders `done`, `cancelled` or `down`.
std::string to_string(leg_terminal x);

/// A table of per-leg latches keyed by leg id. Usage by an owner:
/// `arm(id)` when the leg is accepted; on each of `leg_done`, `pool_cancel(id)` and
/// `pool_down(id, reason)` call `settle(id, cause)` and act only if it answers true.
/// A settled leg's entry is erased, so memory stays proportional to the legs alive; leg ids
/// must therefore never be reused (draw them from a counter).
class leg_latch_table {
public:
  /// Opens the latch of `leg_id`. Answers false (and changes nothing) if it is already open.
  bool arm(uint64_t leg_id) { return open_.insert(leg_id).second; }

  /// Closes the latch of `leg_id` for `cause`: true exactly once per armed leg (the caller
  /// now emits the leg's one terminal event), false for an unknown or already settled leg
  /// (the caller ignores the event).
  bool settle(uint64_t leg_id, leg_terminal cause) {
    (void) cause;
    return open_.erase(leg_id) != 0;
  }

  /// True while `leg_id` is armed and not settled.
  bool is_open(uint64_t leg_id) const { return open_.count(leg_id) != 0; }

  /// Number of armed, unsettled legs.
  size_t open_count() const { return open_.size(); }

private:
  std::unordered_set<uint64_t> open_;
};

} // namespace cafmesh::routing
