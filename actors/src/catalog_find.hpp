#pragma once

// The question placement asks its own silo's catalog before the directory (not installed):
// which live activation of a grain this silo holds
// (docs/behaviour/directory-and-placement.md#own-catalog-first). Placement (placement.cpp)
// asks, the catalog (catalog.cpp) answers; no other actor sends it, and it never crosses the
// network.

#include <caf/atom.hpp>

namespace cafmesh {

/// `(ct_find_atom, grain_id g) -> activation_tag`: the live single-activation activation of
/// `g` in this catalog, tag 0 if none. Live is what `ct_activate` would answer without
/// activating: not deactivating (a deactivating one holds its messages and reroutes them, so
/// it is no answer), its first registration answered or still running. On a silo Active in
/// its catalog's view, an answer whose registration has been answered also registers it
/// again in the background (first wins, as `ct_activate` does for a grain already active
/// here), so a directory entry a ring change lost comes back without the caller waiting for
/// the directory; losing to another activation makes this one deactivate and reroute what it
/// holds. A silo that is not Active does not contend for the entry.
using ct_find_atom = caf::atom_constant<caf::atom("ctfind")>;

} // namespace cafmesh
