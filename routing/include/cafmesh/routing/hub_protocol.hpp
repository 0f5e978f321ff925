#pragma once

/// @file
/// What the routing layer expects from application hubs (docs/behaviour/routing.md#the-entry local
/// routes, docs/behaviour/routing.md#hubs node hubs, docs/behaviour/routing.md#monolith monolith):
/// two messages a hub understands and the application-supplied hub factory.
///
/// | message | who sends it | meaning |
/// |---|---|---|
/// | `(hb_in_atom, envelope)` one-way | routing service (local route hit, NACK rung a, pod hub hand-over, monolith) | an envelope for this in-process handler: a delivery, a response (`request_id` set) or a NACK (`payload_type` = `delivery_failure`) |
/// | `(hb_deliver_atom, envelope) -> envelope` | node hub grain (docs/behaviour/routing.md#hubs) |
/// a delivery to a node's hub; the answer is the hub's own result (state `processed`, `ignored`,
/// `failed` with `properties["error"]` and maybe `properties["verdict"]`, ...) |
///
/// The **hub factory** builds a hub for a key, possibly asynchronously:
/// `(hf_build_atom, std::string key) -> caf::actor`. The key is a node prefix (e.g.
/// `Org/Acme`, for `messagehub/{prefix}`, docs/behaviour/routing.md#hubs) or, in monolith mode, the
/// rendered host path of the target (docs/behaviour/routing.md#monolith). An error answer (a
/// `to_error(fault)`) means the build failed: the node hub NACKs what it parked `unavailable`
/// (activation faulted), or `not_found` when the fault's code is `not_found` (no live process
/// serves the key: docs/behaviour/routing.md#unserved-addresses); in monolith mode the delivery is NACKed with `classify(fault)` (`failed`
/// for a non-transient fault, so a factory that knows no such hub should answer `not_found`: NACK
/// `not_found`). The caller bounds the build by its own timeout.

#include <string>

#include <caf/actor.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "cafmesh/routing/entry_atoms.hpp"

namespace cafmesh::routing {

/// The application-supplied hub factory (see the file comment).
using hub_factory_actor
  = caf::typed_actor<caf::replies_to<hf_build_atom, std::string>::with<caf::actor>>;

} // namespace cafmesh::routing
