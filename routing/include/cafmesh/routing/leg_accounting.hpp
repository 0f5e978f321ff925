#pragma once

/// @file
/// The router core's own count of its units of routing work (legs and NACKs) and the delta
/// it publishes to the silo's quiescence gauge (docs/behaviour/quiescence.md#the-router-cores-own-count).
/// Plain bookkeeping, no actor: the router core sends what `take` answers as one `q_delta_atom` message.

#include <cstdint>
#include <string>
#include <vector>

#include "cafmesh/routing/routing_quiescence_actor.hpp"

namespace cafmesh::routing {

/// The router core's units and the changes the gauge has not seen yet.
///
/// Publication rule: the gauge must never read 0 while the core holds a unit, and must read
/// 0 as soon as the core holds none. So the delta is due in the current turn when it takes
/// the published count from 0 to above 0 or from above 0 to 0, and always once the silo
/// stops (`set_eager`); otherwise it may wait until the core's mailbox drained (the router
/// core then publishes it from a self-message queued behind its backlog).
class leg_accounting {
public:
  /// A unit takes slot `slot` at `now_ms`.
  void track(uint64_t slot, std::string label, slot_state st, int64_t now_ms);

  /// Slot `slot` turns dispatched at `now_ms`. A slot taken in the same unpublished delta
  /// is taken dispatched instead (one op, no mark).
  void mark(uint64_t slot, int64_t now_ms);

  /// Slot `slot` is handed over (count unchanged).
  void handover(uint64_t slot, std::string label);

  /// Slot `slot` is freed.
  void release(uint64_t slot);

  /// Units held now.
  uint64_t units() const noexcept { return units_; }

  /// True if some change has not been published.
  bool pending() const noexcept { return !ops_.empty(); }

  /// True if the pending delta must be published in this turn (see the class comment).
  bool due() const noexcept {
    if (ops_.empty())
      return false;
    return eager_ || (published_ == 0) != (units_ == 0);
  }

  /// From now on every delta is due in its turn (the silo's stopping signal).
  void set_eager() noexcept { eager_ = true; }

  bool eager() const noexcept { return eager_; }

  /// The pending delta, in order; the gauge's count equals `units()` once it applied it.
  std::vector<slot_op> take();

private:
  std::vector<slot_op> ops_;
  uint64_t units_ = 0;
  uint64_t published_ = 0;
  bool eager_ = false;
};

} // namespace cafmesh::routing
