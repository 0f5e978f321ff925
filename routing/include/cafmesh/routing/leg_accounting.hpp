#pragma once

/// @file
/// The router core's own count of its units of routing work (legs and NACKs) and when it
/// publishes that count to the silo's quiescence gauge
/// (docs/behaviour/quiescence.md#the-router-cores-own-count). Plain bookkeeping, no actor:
/// the router core sends what `take` answers as one `q_units_atom` message.

#include <cstdint>

namespace cafmesh::routing {

/// The router core's units and the count the gauge has last seen.
///
/// Publication rule: the gauge must never read 0 while the core holds a unit, and must read
/// 0 as soon as the core holds none. So the count is due in the current turn when it takes
/// the published count from 0 to above 0 or from above 0 to 0, and always once the silo
/// stops (`set_eager`); otherwise it may wait until the core's mailbox drained. The units
/// themselves (label, state, times) stay with the core, which names them when asked.
class leg_accounting {
public:
  /// A unit is taken.
  void track() noexcept { ++units_; }

  /// A unit is freed.
  void release() noexcept {
    if (units_ > 0)
      --units_;
  }

  /// Units held now.
  uint64_t units() const noexcept { return units_; }

  /// True if the gauge has not seen the count held now.
  bool pending() const noexcept { return units_ != published_; }

  /// True if the count must be published in this turn (see the class comment).
  bool due() const noexcept {
    if (!pending())
      return false;
    return eager_ || (published_ == 0) != (units_ == 0);
  }

  /// From now on every change is due in its turn (the silo's stopping signal).
  void set_eager() noexcept { eager_ = true; }

  bool eager() const noexcept { return eager_; }

  /// The count to publish; the gauge's view equals `units()` once it applied it.
  uint64_t take() noexcept {
    published_ = units_;
    return units_;
  }

private:
  uint64_t units_ = 0;
  uint64_t published_ = 0;
  bool eager_ = false;
};

} // namespace cafmesh::routing
