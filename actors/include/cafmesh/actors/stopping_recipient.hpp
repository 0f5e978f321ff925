#pragma once

/// @file
/// The host's stopping-signal protocol (docs/behaviour/lifecycle.md#the-host): every process-level
/// actor that must stop accepting new work before the silo stops (routing service, router
/// core, pod-hub claimer) implements it.

#include <caf/atom.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "cafmesh/actors/lifecycle_atoms.hpp"

namespace cafmesh::lifecycle {

/// A recipient of the host's stopping signal (docs/behaviour/lifecycle.md#the-host):
/// `(host_stopping_atom) -> ok_atom`. The recipient answers once it has switched to its
/// stopping behaviour (new deliveries refused or NACKed `shutting_down`, claims stopped); the
/// host sends nothing else to the silo before every recipient acknowledged.
using stopping_recipient_actor
  = caf::typed_actor<caf::replies_to<host_stopping_atom>::with<caf::ok_atom>>;

} // namespace cafmesh::lifecycle
