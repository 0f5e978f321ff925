#pragma once

/// @file
/// The simplest application path resolver (docs/architecture.md#one-silo): a path `{type}/{prefix}`
/// names the mesh node `{prefix}` (e.g. `node/Org/N3` -> node prefix `Org/N3`, served by
/// `messagehub/Org/N3`); any other path is not found. For executables and demos whose node
/// hubs are addressed directly; real applications resolve against their own tree.

#include <string>

#include <caf/fwd.hpp>

#include "cafmesh/routing/router_ports.hpp"

namespace cafmesh::routing {

/// Spawns the resolver described in the file comment for address type `type`.
path_resolver_actor spawn_node_path_resolver(caf::actor_system& sys, std::string type = "node");

} // namespace cafmesh::routing
