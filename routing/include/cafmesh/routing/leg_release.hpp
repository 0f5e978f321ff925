#pragma once

/// @file
/// Ending the legs that will not land: the message the quiescence participant sends to the
/// owner of a silo's legs (the router core) when it lets go of the stop without the gauge
/// at 0 (non-graceful stop, hold budget, host budget), and the rendering of a residual as
/// delivery ids that every such line shares.

#include <cstdint>
#include <string>
#include <vector>

#include <caf/atom.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

namespace cafmesh::routing {

/// `(q_end_legs_atom, why) -> std::vector<std::string>`: end every accepted leg that has not
/// landed with exactly one NACK now, while the NACK transports still exist, and answer at
/// once with the delivery ids of the residual (the legs ended now, in acceptance order, then
/// the NACKs that were already on their ladder). `why` names the release in log lines
/// ("non-graceful stop", ...).
using q_end_legs_atom = caf::atom_constant<caf::atom("qendlegs")>;

/// `(q_nacks_out_atom) -> ok`: answered once no NACK is left on the owner's ladder, or once
/// the owner's own bound for them passed (the owner then logs the ones that could not leave).
using q_nacks_out_atom = caf::atom_constant<caf::atom("qnacksout")>;

/// The owner of a silo's legs as the participant sees it.
using leg_release_actor
  = caf::typed_actor<caf::replies_to<q_end_legs_atom, std::string>::with<std::vector<std::string>>,
                     caf::replies_to<q_nacks_out_atom>::with<caf::ok_atom>>;

/// Most delivery ids a residual line lists before "+N more".
inline constexpr size_t residual_ids_listed = 20;

/// `id1, id2, ...` with at most `residual_ids_listed` ids, then ", +N more" for the rest
/// (`total` counts every delivery of the residual, listed or not; `total` below
/// `ids.size()` counts as `ids.size()`); "none" for an empty residual.
std::string render_delivery_ids(const std::vector<std::string>& ids, uint64_t total);

} // namespace cafmesh::routing
