#pragma once

/// @file
/// The mesh-teardown protocol (docs/behaviour/lifecycle.md#the-host): disposing every hub hosted
/// in this process and draining their queues after the silo has stopped.

#include <cstdint>
#include <string>

#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "cafmesh/actors/lifecycle_atoms.hpp"

namespace cafmesh::lifecycle {

/// The process's mesh teardown (docs/behaviour/lifecycle.md#the-host):
/// `(host_teardown_atom, int64_t budget_ms) -> std::string residual`. The actor disposes
/// every hub hosted in this process and drains their queues, bounding its own work by
/// `budget_ms` (the host gives up after the same budget). The answer describes what was left
/// behind (e.g. "hub portal/a: 2 queued deliveries"); an empty string means clean. An error
/// answer is a fault of the teardown itself: the host logs and swallows it.
using mesh_teardown_actor
  = caf::typed_actor<caf::replies_to<host_teardown_atom, int64_t>::with<std::string>>;

} // namespace cafmesh::lifecycle
