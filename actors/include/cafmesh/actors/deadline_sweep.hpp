#pragma once

/// @file
/// The deadlines of an actor's calls in progress under one timer (SPEC §14 B6,
/// docs/delivery-costs.md#a-pure-clients-request): CAF 0.17 never cancels a request's finite timeout, so an
/// actor that bounds many calls keeps their deadlines here, earliest first, and arms one
/// `delayed_send` to itself for the earliest. A timer that fires for a deadline it no longer
/// leads (an earlier one was armed after it) does nothing.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <set>
#include <utility>

namespace cafmesh {

/// Deadlines (actor-clock ms) of calls keyed by `Key`, and the one timer that ends them.
template <class Key>
class deadline_sweep {
public:
  /// Adds call `key`, due at `due_ms`.
  void add(int64_t due_ms, Key key) { deadlines_.emplace(due_ms, std::move(key)); }

  /// Removes call `key` due at `due_ms` (it ended before its deadline).
  void remove(int64_t due_ms, const Key& key) { deadlines_.erase({due_ms, key}); }

  /// True if no deadline is kept.
  bool empty() const noexcept { return deadlines_.empty(); }

  /// Arms the timer for the earliest deadline unless it is armed for that one or an earlier
  /// one: `self` gets `(atom, due_ms)` when it is due. `now_ms` is the owner's clock, in the
  /// unit and origin of its deadlines.
  template <class Self, class Atom>
  void arm(Self* self, Atom atom, int64_t now_ms) {
    if (deadlines_.empty())
      return;
    auto due = deadlines_.begin()->first;
    if (armed_ms_ >= 0 && armed_ms_ <= due)
      return;
    armed_ms_ = due;
    auto wait = std::max<int64_t>(0, due - now_ms);
    self->delayed_send(self, std::chrono::milliseconds(wait), atom, due);
  }

  /// The timer armed for `fired_ms` fired at `now_ms`: calls `expired(due_ms, key)` for
  /// every call due by then, earliest first (each taken out before its call; `expired` may
  /// add deadlines), then arms the timer again. Does nothing if the timer was re-armed for
  /// an earlier deadline since.
  template <class Self, class Atom, class F>
  void fire(Self* self, Atom atom, int64_t fired_ms, int64_t now_ms, F&& expired) {
    if (fired_ms != armed_ms_)
      return;
    armed_ms_ = -1;
    while (!deadlines_.empty() && deadlines_.begin()->first <= now_ms) {
      auto [due, key] = *deadlines_.begin();
      deadlines_.erase(deadlines_.begin());
      expired(due, std::move(key));
    }
    arm(self, atom, now_ms);
  }

private:
  std::set<std::pair<int64_t, Key>> deadlines_;
  int64_t armed_ms_ = -1; ///< the due ms the timer is armed for; -1: none
};

} // namespace cafmesh
