#pragma once

/// @file
/// Message tags of the router core (docs/behaviour/routing.md#the-router-core, #legs,
/// docs/behaviour/classification.md#retry-policies, docs/behaviour/routing.md#nacks) and of the
/// ports it talks to (router_ports.hpp). CAF 0.17 atoms, at most 10 characters, with prefixes
/// unique to this component: `rc` router core, `gp` grain-delivery port, `pr` path resolver, `sp`
/// stream transport port, `lr` local-route port.

#include <caf/atom.hpp>

namespace cafmesh::routing {

// -- router core: public protocol (router_core_actor.hpp) -----------------------------
/// Co-hosted hand-over from the routing service (one-way).
using rc_route_atom = caf::atom_constant<caf::atom("rcroute")>;
/// Routing-grain path: a batch of a pure client's dispatches (request, answered per item).
using rc_grains_atom = caf::atom_constant<caf::atom("rcgrains")>;
/// Late wiring of the local-route port (one-way), for the routing service <-> router core
/// cycle.
using rc_locals_atom = caf::atom_constant<caf::atom("rclocals")>;
/// Diagnostics snapshot (request).
using rc_stats_atom = caf::atom_constant<caf::atom("rcstats")>;
/// Barrier (request): answered after everything the router core was sent before it.
using rc_sync_atom = caf::atom_constant<caf::atom("rcsync")>;
/// `(rc_drained_atom, destination host path, ordering key) -> ok` (request): answered once
/// the channel (destination, key) holds no leg, at once if it holds none now
/// (docs/behaviour/routing.md#a-pure-clients-streams-across-a-re-homing).
using rc_drained_atom = caf::atom_constant<caf::atom("rcdrained")>;

/// `(rc_local_atom, grain_id, activation_tag, caf::actor catalog)` one-way: a node-hub grain
/// activation of this silo (that tag, in that catalog) serves its hub; the router core may
/// call it through the catalog directly (docs/delivery-costs.md, SPEC B3).
/// `(rc_local_atom, grain_id, activation_tag)` one-way: that activation is gone.
using rc_local_atom = caf::atom_constant<caf::atom("rclocal")>;

/// `(rc_forget_atom, host path)` one-way: drop the cached resolution of that path (empty:
/// every cached resolution), docs/behaviour/routing.md#cacheable-resolutions.
using rc_forget_atom = caf::atom_constant<caf::atom("rcforget")>;

// -- router core: internal messages to itself ------------------------------------------
/// `(rc_flush_atom)`: the router core's mailbox drained up to this point: publish the gauge
/// delta and run what the last turns left (docs/behaviour/quiescence.md#the-router-cores-own-count).
using rc_flush_atom = caf::atom_constant<caf::atom("rcflush")>;
/// `(rc_timer_atom, work id, step token)`: a leg's or NACK's retry delay elapsed.
using rc_timer_atom = caf::atom_constant<caf::atom("rctimer")>;
/// `(rc_deadline_atom, due ms)`: the earliest bound of the router core's own request
/// deadlines (the node leg's resolve and grain calls) may have passed.
using rc_deadline_atom = caf::atom_constant<caf::atom("rcdeadline")>;
/// `(rc_release_atom, generation)`: the bound within which the NACKs of legs ended by a
/// stop must leave has passed.
using rc_release_atom = caf::atom_constant<caf::atom("rcrelease")>;

// -- grain-delivery port (router_ports.hpp) ------------------------------------------------
using gp_call_atom = caf::atom_constant<caf::atom("gpcall")>;
using gp_result_atom = caf::atom_constant<caf::atom("gpresult")>;
using gp_invalidate_atom = caf::atom_constant<caf::atom("gpinval")>;
using gp_inval_silo_atom = caf::atom_constant<caf::atom("gpinvsilo")>;
using gp_act_error_atom = caf::atom_constant<caf::atom("gpacterr")>;

// -- path resolver (router_ports.hpp) ------------------------------------------------------
using pr_resolve_atom = caf::atom_constant<caf::atom("prresolve")>;

// -- stream transport port (router_ports.hpp) ----------------------------------------------
using sp_probe_atom = caf::atom_constant<caf::atom("spprobe")>;
using sp_publish_atom = caf::atom_constant<caf::atom("sppublish")>;

// -- local-route port (router_ports.hpp) ---------------------------------------------------
using lr_deliver_atom = caf::atom_constant<caf::atom("lrdeliver")>;
/// `(lr_land_atom, envelope, silo_address, activation_tag, caf::actor) -> envelope`: a pod hub
/// activation's hand-over to its silo's routing service, delegated (routing_service.hpp).
using lr_land_atom = caf::atom_constant<caf::atom("lrland")>;

} // namespace cafmesh::routing
