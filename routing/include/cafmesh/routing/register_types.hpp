#pragma once

/// @file
/// Announces every cafmesh message type to a CAF actor system configuration.

namespace caf {
class actor_system_config;
} // namespace caf

namespace cafmesh {

/// Announces every cafmesh type that crosses a process boundary (`add_message_type`) and the
/// `mesh` error category's renderer (docs/architecture.md, docs/behaviour/envelope.md). Loads no
/// module (the caller loads
/// `caf::io::middleman` where it needs the network). Call it on both sides of every
/// connection, before constructing the actor system. Idempotent per configuration.
///
/// Names on the wire: `cafmesh.grain_id`, `cafmesh.silo_address`, `cafmesh.activation_tag`,
/// `cafmesh.mesh_errc`, `cafmesh.tri_bool`, `cafmesh.probe_answer`, `cafmesh.fault`,
/// `cafmesh.address`, `cafmesh.delivery_state`, `cafmesh.verdict`, `cafmesh.envelope`,
/// `cafmesh.delivery_failure`, each also as `std::vector<name>`. `sys.render(e)` of a `mesh`
/// error reads `mesh_error(<code>, <fault rendering>)`, e.g.
/// `mesh_error(departed_silo, connect failed <- socket closed)`.
void register_types(caf::actor_system_config& cfg);

} // namespace cafmesh
