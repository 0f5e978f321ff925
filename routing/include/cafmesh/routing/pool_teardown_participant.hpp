#pragma once

/// @file
/// The pool teardown participant (docs/behaviour/quiescence.md#the-routing-io-pool,
/// docs/behaviour/lifecycle.md#stages row First): a lifecycle observer at stage First (INT_MIN)
/// that drains and joins the silo's routing I/O pool when the silo stops.

#include <cstdint>
#include <functional>
#include <string>

#include "cafmesh/routing/io_pool_actor.hpp"
#include "cafmesh/actors/observer.hpp"

namespace caf {
class actor_system;
} // namespace caf

namespace cafmesh::config {
struct pool_section;
} // namespace cafmesh::config

namespace cafmesh::routing {

/// Options of the participant (examples/config/README.md#keys `pool.teardown_join_ms`).
struct pool_teardown_options {
  /// Rendered silo address (or any name) used as log context; may be empty.
  std::string silo_name;
  /// `pool.teardown_join_ms`: the participant's own budget for the drain; its rendering
  /// ("30 s") appears in the timeout line.
  int64_t teardown_join_ms = 30000;

  /// The options from a configuration's `pool` section.
  static pool_teardown_options from(const config::pool_section& cfg, std::string silo_name = {});
};

/// Looks the silo's pool up among its runtime services; called exactly once, at
/// `start_stage`, never during stop. An invalid handle means "no pool".
using pool_lookup = std::function<io_pool_actor()>;

/// Spawns the participant, an observer speaking `lifecycle::lifecycle_observer_actor`:
///
/// - `start_stage` captures the pool handle (`lookup()`) and answers ok; with no pool it
///   answers the error `config_invalid` ("pool teardown: no routing I/O pool to capture").
/// - `stop_stage` after a start: info "draining routing I/O pool", sends `drain` through the
///   captured handle (never looking anything up) and arms a one-shot `teardown_join_ms`
///   timer; then exactly one of: info "routing I/O pool joined" (residual 0); error
///   "{n} leg(s) survived the routing I/O pool drain" (residual n > 0); error "routing I/O
///   pool did not finish draining within 30 s" (the timer came first, or the pool is
///   unreachable, with the reason appended). Always answers ok, from its own turn.
/// - `stop_stage` without a prior start: error "pool teardown stopped without start"; answers
///   ok; never drains and never claims "joined".
/// - `budget_expired` is ignored: the drain is bounded by the participant's own timer.
/// A second `stop_stage` while one is open receives the same answer; one after the stop
/// completed answers ok at once.
lifecycle::lifecycle_observer_actor
spawn_pool_teardown_participant(caf::actor_system& sys, pool_lookup lookup,
                                pool_teardown_options opts = {});

/// Convenience: a participant whose lookup answers `pool`.
lifecycle::lifecycle_observer_actor
spawn_pool_teardown_participant(caf::actor_system& sys, io_pool_actor pool,
                                pool_teardown_options opts = {});

} // namespace cafmesh::routing
