#pragma once

/// @file
/// The lifecycle subject of one silo as a CAF supervisor actor
/// (docs/behaviour/lifecycle.md#the-lifecycle-subject).

#include <chrono>
#include <cstdint>
#include <string>

#include <caf/timespan.hpp>

#include "cafmesh/actors/observer.hpp"

namespace caf {
class actor_system;
} // namespace caf

namespace cafmesh::lifecycle {

/// Options of one lifecycle subject.
struct silo_lifecycle_options {
  /// Rendered silo address (or any name) used as log context.
  std::string silo_name;
  /// An observer whose stop takes longer is logged at info
  /// (docs/behaviour/lifecycle.md#the-lifecycle-subject, examples/config/README.md#keys
  /// `lifecycle.slow_observer_log_ms`).
  caf::timespan slow_observer_log = std::chrono::seconds(1);
};

/// Spawns a lifecycle subject (docs/behaviour/lifecycle.md#the-lifecycle-subject): observers
/// subscribe with (stage, name);
/// `run_start` starts stages ascending, same stage together, fail fast; `run_stop(graceful)`
/// stops every started stage descending, same stage in parallel, with no subject deadline.
silo_lifecycle_actor spawn_silo_lifecycle(caf::actor_system& sys, silo_lifecycle_options opts);

} // namespace cafmesh::lifecycle
