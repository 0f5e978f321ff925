#pragma once

/// @file
/// The deterministic test bed (docs/testing.md#the-simulation-harness run loop): one CAF actor
/// system on CAF 0.17's
/// `test_coordinator` with a virtual clock, a log capture stamped with virtual time, and a
/// teardown that never hangs in `~actor_system` (docs/caf-notes.md "Shutdown").

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <caf/send.hpp>

#include "cafmesh/actors/log.hpp"

namespace cafmesh::testing {

/// An actor system configuration for deterministic tests: `scheduler.policy` = the atom
/// `testing`, every cafmesh type announced (`cafmesh::register_types`).
class test_config : public caf::actor_system_config {
public:
  test_config();
};

/// The fixture every deterministic test uses. Virtual time starts at 0 ms (`now_ms()`),
/// whatever offset the coordinator's clock carries.
class fixture {
public:
  fixture();
  virtual ~fixture();

  fixture(const fixture&) = delete;
  fixture& operator=(const fixture&) = delete;

  test_config cfg;
  caf::actor_system sys;
  caf::scheduler::test_coordinator& sched;
  log::capture logs;

  /// Virtual milliseconds since the fixture was built.
  int64_t now_ms() const;

  /// Runs every ready actor until none is ready; fires no timeout. Returns the number of
  /// messages handled.
  size_t run();

  /// Fires the earliest pending timeout or delayed message, advancing virtual time to its
  /// due time. Returns false if nothing is pending.
  bool fire_next_timeout();

  /// The due time (virtual ms) of the earliest pending timeout, or -1 if none.
  int64_t next_timeout_ms() const;

  /// The docs/testing.md#the-simulation-harness run loop: run ready actors; when none is ready and
  /// `pred` does not hold, fire the earliest timeout. Answers true once `pred` holds, false if it
  /// still does not hold when virtual time would pass `now + cap` or nothing is left to do
  /// (then the clock stays at or before the cap).
  [[nodiscard]] bool run_until(const std::function<bool()>& pred,
                               std::chrono::milliseconds cap = std::chrono::hours(1));

  /// Runs every ready actor and fires every timeout due within `cap` of now, and stops
  /// early when nothing is left to do: `run_until` with a predicate that never holds, for a
  /// step that waits on nothing in particular (the clock stays at or before `now + cap`).
  void run_up_to(std::chrono::milliseconds cap);

  /// Advances virtual time by exactly `d`, running every actor and firing every timeout
  /// that falls due on the way, in order.
  void run_for(std::chrono::milliseconds d);

  /// Runs until virtual time `t_ms` (absolute, since fixture start); see `run_for`.
  void run_to(int64_t t_ms);

  /// Registers an actor to receive an exit at teardown (`user_shutdown`). Returns `h`.
  template <class Handle>
  Handle track(Handle h) {
    tracked_.push_back(caf::actor_cast<caf::actor>(h));
    return h;
  }

  /// Test-only peek at a stateful actor's state: a `stateful_actor<State>` behind a
  /// `caf::actor`, or the typed stateful actor of a typed handle
  /// (docs/testing.md#reading-an-actors-state).
  template <class State, class Handle>
  static State& state_of(const Handle& h) {
    auto ptr = caf::actor_cast<caf::abstract_actor*>(h);
    if constexpr (!std::is_same<Handle, caf::actor>::value) {
      // A typed handle may also name an untyped actor (`actor_cast`): that one is found below.
      if (auto typed = dynamic_cast<typename Handle::template stateful_base<State>*>(ptr))
        return typed->state;
    }
    return dynamic_cast<caf::stateful_actor<State>&>(*ptr).state;
  }

  /// Sends an exit to every tracked actor and runs until idle. Idempotent; the destructor
  /// calls it.
  void shutdown();

private:
  std::vector<caf::actor> tracked_;
  caf::actor_clock::time_point t0_;
  bool shut_down_ = false;
};

} // namespace cafmesh::testing
