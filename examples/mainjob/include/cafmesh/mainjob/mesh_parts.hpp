#pragma once

/// @file
/// Actors every `mesh_port` implementation of the main job needs (the live in-process mesh,
/// net_mesh.hpp, and the simulated one of the S12.58 / S12.62 tests): a lifecycle probe that
/// reports a silo's stages, a hub factory over a fixed map of application hubs, and the
/// echo application of `cafmesh-node --app echo`.

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include <caf/actor.hpp>
#include <caf/atom.hpp>
#include <caf/fwd.hpp>

#include "cafmesh/actors/net_process.hpp"
#include "cafmesh/config/mesh_config.hpp"
#include "cafmesh/lifecycle/host.hpp"
#include "cafmesh/mainjob/driver.hpp"
#include "cafmesh/actors/observer.hpp"
#include "cafmesh/routing/address.hpp"
#include "cafmesh/routing/entry_atoms.hpp"
#include "cafmesh/routing/hub_protocol.hpp"

namespace cafmesh::mainjob {

/// Probe -> sink, one-way: `(mp_stage_atom, std::string silo, uint64_t generation,
/// bool starting, int32_t stage)`: the probe saw that stage of that silo start or stop.
using mp_stage_atom = caf::atom_constant<caf::atom("mpstage")>;

/// Spawns a lifecycle observer (docs/behaviour/lifecycle.md#the-lifecycle-subject) that answers
/// every start and stop at once and tells `sink` about it. Subscribe it at the stages to watch (one
/// actor may serve several).
lifecycle::lifecycle_observer_actor spawn_stage_probe(caf::actor_system& sys, caf::actor sink,
                                                      std::string silo, uint64_t generation);

/// Spawns a hub endpoint of the demo's applications (`routing::spawn_hub_endpoint`) that keeps
/// no records of its own (`routing.endpoint_record_max` 0, whatever `cfg` says): the demo
/// takes every event through `observer`, so the records would only hold memory
/// (docs/operations.md#memory).
caf::actor spawn_app_hub(caf::actor_system& sys, routing::address self_address,
                         caf::actor routing, config::routing_section cfg, bool respond,
                         caf::actor observer);

/// The application's hubs by node prefix (`Org/N3` -> the hub of `node/Org/N3`).
using hub_map = std::map<std::string, caf::actor>;

/// Spawns a hub factory (`hf_build_atom`, docs/behaviour/routing.md#hubs) answering the hub of
/// `hubs` for a key, or `not_found` ("the application has no hub '{key}'"). The map is read when
/// asked: fill it before traffic starts, never change it after.
routing::hub_factory_actor spawn_hub_map_factory(caf::actor_system& sys,
                                                 std::shared_ptr<const hub_map> hubs);

/// `(mp_routing_atom, caf::actor routing)` one-way, to an echo hub factory: the silo's
/// routing service (set it before the silo starts).
using mp_routing_atom = caf::atom_constant<caf::atom("mprouting")>;

/// Spawns the hub factory of `cafmesh-node --app echo` (docs/behaviour/routing.md#hubs): for every
/// key it is asked for (`node/{key}`), on the first request, a `routing::hub_endpoint` with
/// `respond` on (a delivery handed over that may be answered, e.g. a request, is answered with a
/// response envelope sent to its sender through the routing service), registered as a
/// local route of the routing service given by `mp_routing_atom`; later requests for the
/// key answer the same hub. Before the routing
/// service is known it answers `silo_unavailable`. The hubs are linked to the factory and
/// exit with it: kill the factory when the silo's process ends and its hubs end too. The
/// result is an untyped actor; `caf::actor_cast` it to `routing::hub_factory_actor` for
/// `silo_options::hubs`.
///
/// `fixed` (may be null): keys answered with these hubs instead (hubs that live elsewhere
/// and are shared by every silo, e.g. the demo's owner hubs). `observer` (may be null):
/// every hub it creates tells it its events (`routing::spawn_hub_endpoint`), so a driver
/// sees the landings at the silo's own answering hubs.
caf::actor spawn_echo_hub_factory(caf::actor_system& sys, const config::routing_section& cfg,
                                  std::shared_ptr<const hub_map> fixed = nullptr,
                                  caf::actor observer = caf::actor{});

/// A `receive` handler for a live run loop: passes each hub endpoint event
/// (`routing::ep_event_atom`, entry_atoms.hpp) to `driver.on_hub_event` at `now_ms()`,
/// answer-suppressed as `suppressed(id)` says, and sets `got`.
template <class Suppressed, class Now>
auto hub_event_handler(demo_driver& driver, Suppressed suppressed, Now now_ms, bool& got) {
  return [&driver, suppressed, now_ms, &got](routing::ep_event_atom, const std::string& kind,
                                             const std::string& id, uint8_t v,
                                             const std::string& text) {
    got = true;
    driver.on_hub_event(kind, id, static_cast<routing::verdict>(v), text, suppressed(id),
                        now_ms());
  };
}

} // namespace cafmesh::mainjob
