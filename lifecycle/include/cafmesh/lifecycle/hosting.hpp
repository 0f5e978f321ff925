#pragma once

/// @file
/// Everything an application needs to embed cafmesh (docs/hosting.md): the three builders,
/// typed grains and references, grains that call grains (`grain_context`, `grain_factory`),
/// application hubs, `send` / `request` and their `delivery_error`, and `prepare` for the
/// actor system's configuration.

#include <caf/fwd.hpp>

#include "cafmesh/lifecycle/client_builder.hpp"
#include "cafmesh/lifecycle/grain_context.hpp"
#include "cafmesh/lifecycle/grain_ref.hpp"
#include "cafmesh/lifecycle/in_process_cluster.hpp"
#include "cafmesh/lifecycle/mesh_process.hpp"
#include "cafmesh/lifecycle/monolith_builder.hpp"
#include "cafmesh/lifecycle/silo_builder.hpp"
#include "cafmesh/lifecycle/typed_grain.hpp"
#include "cafmesh/routing/application_hub.hpp"
#include "cafmesh/routing/correlating_entry.hpp"
#include "cafmesh/routing/delivery_error.hpp"

namespace cafmesh::lifecycle {

/// Prepares an actor system's configuration for cafmesh: announces every cafmesh message
/// type and error category (`register_types`) and loads CAF's io middleman (network silos
/// and clients). Call it before constructing the `caf::actor_system`.
void prepare(caf::actor_system_config& cfg);

} // namespace cafmesh::lifecycle
