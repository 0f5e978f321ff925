#pragma once

/// @file
/// The payload shapes that carry deliveries across links as flat records (SPEC §14 B7,
/// docs/behaviour/peer-authentication.md#frame-records): a grain call to a hub activation, a
/// pure client's dispatch to its gateway, a hand-over to a pure client, and their answers.

namespace cafmesh::routing {

/// Registers the routing layer's frame shapes (frame_codec.hpp) under their fixed ids; true
/// if every one is registered. Called by `register_types`; once per process is enough.
bool register_frame_shapes();

} // namespace cafmesh::routing
