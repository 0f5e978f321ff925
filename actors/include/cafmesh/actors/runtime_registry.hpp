#pragma once

/// @file
/// The runtime probe (docs/behaviour/lifecycle.md#the-host,
/// docs/behaviour/classification.md#codes): a process-level registry actor that outlives every silo
/// of the process and says whether a silo's runtime services still answer.

#include <string>

#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/lifecycle_atoms.hpp"

namespace caf {
class actor_system;
} // namespace caf

namespace cafmesh::lifecycle {

/// The runtime registry (docs/behaviour/lifecycle.md#the-host), keyed by rendered silo address (or
/// process name):
/// - `(host_register_atom, silo) -> ok_atom`: the silo's runtime is up; probes answer `alive`;
/// - `(host_torn_down_atom, silo) -> ok_atom`: its runtime services are torn down; from now
///   on probes answer `torn_down` (the host sends this after its teardown step);
/// - `(probe_runtime_atom, silo) -> probe_answer`: `alive`, `torn_down`, or `no_answer` for a
///   name the registry has never heard of (it cannot tell).
/// Probing is asynchronous: classification receives the answer as a fault attribute
/// (`fault::probe`) and never blocks on it.
using runtime_registry_actor
  = caf::typed_actor<caf::replies_to<host_register_atom, std::string>::with<caf::ok_atom>,
                     caf::replies_to<host_torn_down_atom, std::string>::with<caf::ok_atom>,
                     caf::replies_to<probe_runtime_atom, std::string>::with<probe_answer>>;

/// Spawns the process-level runtime registry. One per process (one per simulated process in
/// the simulation); it must outlive every host that reports to it.
runtime_registry_actor spawn_runtime_registry(caf::actor_system& sys);

} // namespace cafmesh::lifecycle
