#include "cafmesh/testing/no_hold_participant.hpp"

#include <caf/actor_system.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "cafmesh/actors/lifecycle_atoms.hpp"

namespace cafmesh::testing {

namespace {

lifecycle::lifecycle_observer_actor::behavior_type no_hold_participant() {
  return {
    [](lifecycle::start_stage_atom, lifecycle::stage) { return caf::ok_atom::value; },
    [](lifecycle::stop_stage_atom, lifecycle::stage, bool) { return caf::ok_atom::value; },
    [](lifecycle::budget_expired_atom) {
      // nop: nothing is held
    },
  };
}

} // namespace

lifecycle::lifecycle_observer_actor
spawn_no_hold_participant(caf::actor_system& sys, routing::routing_quiescence_actor,
                          lifecycle::quiescence_participant_options,
                          routing::leg_release_actor) {
  return sys.spawn(no_hold_participant);
}

} // namespace cafmesh::testing
