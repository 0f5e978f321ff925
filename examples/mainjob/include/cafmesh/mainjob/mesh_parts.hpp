#pragma once

/// @file
/// Actors every `mesh_port` implementation of the main job needs (the live in-process mesh,
/// net_mesh.hpp, and the simulated one of the S12.58 / S12.62 tests): a lifecycle probe that
/// reports a silo's stages, and a hub factory over a fixed map of application hubs.

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include <caf/actor.hpp>
#include <caf/atom.hpp>
#include <caf/fwd.hpp>

#include "cafmesh/lifecycle/host.hpp"
#include "cafmesh/lifecycle/observer.hpp"
#include "cafmesh/routing/hub_protocol.hpp"

namespace cafmesh::mainjob {

/// Probe -> sink, one-way: `(mp_stage_atom, std::string silo, uint64_t generation,
/// bool starting, int32_t stage)`: the probe saw that stage of that silo start or stop.
using mp_stage_atom = caf::atom_constant<caf::atom("mpstage")>;

/// Spawns a lifecycle observer (SPEC §3.2) that answers every start and stop at once and
/// tells `sink` about it. Subscribe it at the stages to watch (one actor may serve several).
lifecycle::lifecycle_observer_actor spawn_stage_probe(caf::actor_system& sys, caf::actor sink,
                                                      std::string silo, uint64_t generation);

/// The application's hubs by node prefix (`Org/N3` -> the hub of `node/Org/N3`).
using hub_map = std::map<std::string, caf::actor>;

/// Spawns a hub factory (`hf_build_atom`, SPEC §6.9) answering the hub of `hubs` for a key,
/// or `not_found` ("the application has no hub '{key}'"). The map is read when asked: fill
/// it before traffic starts, never change it after.
routing::hub_factory_actor spawn_hub_map_factory(caf::actor_system& sys,
                                                 std::shared_ptr<const hub_map> hubs);

/// Blocks the calling (non-actor) thread until `host` reports `torn_down`, asking its state
/// every `poll_ms` milliseconds (each ask bounded by 5 s): a process's main thread waiting
/// for a signal-triggered graceful stop (SPEC §3.7) to finish.
void wait_until_torn_down(caf::actor_system& sys, const lifecycle::host_actor& host,
                          int64_t poll_ms);

} // namespace cafmesh::mainjob
