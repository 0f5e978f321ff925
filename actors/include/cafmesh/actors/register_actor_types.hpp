#pragma once

/// @file
/// Announces the message types of the actors folder.

namespace caf {
class actor_system_config;
} // namespace caf

namespace cafmesh {

/// Announces every actors-folder type that crosses a process boundary (`add_message_type`):
/// the ids (`grain_id`, `silo_address`, `activation_tag`), the fault tree (`fault`,
/// `mesh_errc`, `tri_bool`, `probe_answer`) and the rendering of `mesh_error`, `component`,
/// `wire_frame`, `message_center_stats`, `drop_rule`, the membership and directory types.
/// Called by `cafmesh::register_types`; a process that links the actors library alone calls
/// it on both sides of every connection, before constructing the actor system.
void register_actor_types(caf::actor_system_config& cfg);

} // namespace cafmesh
