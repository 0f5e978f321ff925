#pragma once

// The quiescence participant the quiescence scenarios drive: the production one, or, in the
// S12.20 mutant binary (tests/CMakeLists.txt, built with CAFMESH_S12_20_NO_HOLD), the test
// double that answers every stop at once (cafmesh/testing/no_hold_participant.hpp).

#include <utility>

#include "cafmesh/lifecycle/quiescence_participant.hpp"
#include "cafmesh/testing/no_hold_participant.hpp"

namespace cafmesh::lifecycle::test {

/// `spawn_quiescence_participant`, or its no-hold double in the S12.20 mutant binary.
inline lifecycle_observer_actor
spawn_participant_under_test(caf::actor_system& sys, routing::routing_quiescence_actor gauge,
                             quiescence_participant_options opts = {},
                             routing::leg_release_actor legs = {}) {
#ifdef CAFMESH_S12_20_NO_HOLD
  return cafmesh::testing::spawn_no_hold_participant(sys, std::move(gauge), std::move(opts),
                                                     std::move(legs));
#else
  return spawn_quiescence_participant(sys, std::move(gauge), std::move(opts), std::move(legs));
#endif
}

} // namespace cafmesh::lifecycle::test
