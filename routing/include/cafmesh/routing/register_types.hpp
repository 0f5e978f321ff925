#pragma once

/// @file
/// Announces every cafmesh message type to a CAF actor system configuration.

namespace caf {
class actor_system_config;
} // namespace caf

namespace cafmesh {

/// Announces every cafmesh type that crosses a process boundary (`add_message_type`), the
/// `mesh` error category's renderer, and loads nothing else. Call it on both sides of every
/// connection, before constructing the actor system. Idempotent per configuration.
void register_types(caf::actor_system_config& cfg);

} // namespace cafmesh
