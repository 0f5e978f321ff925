#pragma once

/// @file
/// The simplest application path resolver (docs/architecture.md#one-silo): a path `{type}/{prefix}`
/// names the mesh node `{prefix}` (e.g. `node/Org/N3` -> node prefix `Org/N3`, served by
/// `messagehub/Org/N3`); any other path is not found. For executables and demos whose node
/// hubs are addressed directly; real applications resolve against their own tree.

#include <optional>
#include <string>
#include <string_view>

#include <caf/fwd.hpp>

#include "cafmesh/routing/router_ports.hpp"

namespace cafmesh::routing {

/// The node prefix that `path` names under the `{type}/{prefix}` rule, or nothing: a path of
/// another type, and `{type}/` with an empty prefix, name no node. The one implementation of
/// the rule: the resolver below and every test resolver use it.
std::optional<std::string> node_prefix_of(std::string_view type, std::string_view path);

/// Spawns the resolver described in the file comment for address type `type`.
path_resolver_actor spawn_node_path_resolver(caf::actor_system& sys, std::string type = "node");

} // namespace cafmesh::routing
