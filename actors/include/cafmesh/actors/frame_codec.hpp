#pragma once

/// @file
/// The flat record of a link frame's payload (SPEC §14 B7, docs/behaviour/peer-authentication.md#frame-records):
/// a payload of a registered shape crosses the link as a one-byte shape id and its fields, with
/// no nested `caf::message` and no type names; any other payload as shape 0 and the
/// `caf::message` itself. The shapes are the few that carry deliveries (the routing layer
/// registers them); a record of an unknown shape, or whose fields do not decode, is refused
/// like a hostile peer's bytes.

#include <cstdint>

#include <caf/deserializer.hpp>
#include <caf/error.hpp>
#include <caf/message.hpp>
#include <caf/serializer.hpp>

namespace cafmesh {

/// How one payload shape crosses a link as a flat record.
struct frame_shape {
  /// True if `m` has this shape (its element types and leading atoms).
  bool (*matches)(const caf::message& m) = nullptr;
  /// Writes the fields of `m` (which `matches`).
  caf::error (*save)(caf::serializer& sink, const caf::message& m) = nullptr;
  /// Reads the fields written by `save` and rebuilds the payload into `m`.
  caf::error (*load)(caf::deserializer& source, caf::message& m) = nullptr;
};

/// The largest number of shapes a process may register.
inline constexpr uint8_t max_frame_shapes = 32;

/// Registers `shape` as shape `id` (1 to `max_frame_shapes`) for this process; answers false,
/// changing nothing, for an id out of range or already taken by other functions. Every
/// process of a mesh registers the same shapes under the same ids (`register_types` does) before
/// its links carry frames; registering the same shape again is a no-op.
bool register_frame_shape(uint8_t id, frame_shape shape);

/// Writes `m` as its flat record: the id of the first registered shape it matches and its
/// fields, or 0 and `m` itself.
caf::error save_frame_payload(caf::serializer& sink, const caf::message& m);

/// Reads a payload written by `save_frame_payload` into `m`; an unknown shape id is an error
/// (`caf::sec::malformed_basp_message`) and leaves `m` empty.
caf::error load_frame_payload(caf::deserializer& source, caf::message& m);

} // namespace cafmesh
