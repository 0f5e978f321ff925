#pragma once

/// @file
/// Message tags of the routing entry layer (docs/behaviour/routing.md#the-entry,
/// #the-routing-grain, #hubs, #nacks): CAF 0.17 atoms, at most 10 characters, prefixed per
/// component: `rs` routing service, `hb` hub (local handlers and application hubs), `hf` hub
/// factory, `hg` hub grains (routing grain, node hub, pod hub), `ph` pod hub, `pc` pod-hub claimer,
/// `ep` hub endpoint.

#include <caf/atom.hpp>

namespace cafmesh::routing {

// -- routing service (routing_service.hpp) ---------------------------------------------
using rs_deliver_atom = caf::atom_constant<caf::atom("rsdeliver")>;
using rs_request_atom = caf::atom_constant<caf::atom("rsrequest")>;
/// `(rs_post_atom, envelope)` one-way: the entry without an answer, for posts, frames and
/// heartbeats (docs/behaviour/routing.md#the-co-hosted-hot-path).
using rs_post_atom = caf::atom_constant<caf::atom("rspost")>;
using rs_register_atom = caf::atom_constant<caf::atom("rsreg")>;
using rs_unregister_atom = caf::atom_constant<caf::atom("rsunreg")>;
using rs_has_route_atom = caf::atom_constant<caf::atom("rshasroute")>;
using rs_core_atom = caf::atom_constant<caf::atom("rscore")>;
using rs_role_atom = caf::atom_constant<caf::atom("rsrole")>;
using rs_retry_atom = caf::atom_constant<caf::atom("rsretry")>;
/// `(rs_attach_retry_atom, std::string host_path, uint64_t token)`: pure-client inbound
/// attach retry timer (docs/behaviour/routing.md#the-entry,
/// docs/behaviour/classification.md#retry-policies attach policy).
using rs_attach_retry_atom = caf::atom_constant<caf::atom("rsattretry")>;
/// `(rs_reattach_atom, address path)` one-way, on a pure client's component `client`: the
/// pod hub of `path` was deactivated on its silo; assert the attach again.
using rs_reattach_atom = caf::atom_constant<caf::atom("rsreattach")>;
/// `(rs_home_atom, silo_address gateway) -> ok`: a pure client homes on `gateway` (connects
/// there and re-attaches its inbound paths) until it re-homes
/// (docs/behaviour/membership.md#gateways-for-pure-clients).
using rs_home_atom = caf::atom_constant<caf::atom("rshome")>;
/// `(rs_stats_atom) -> routing_service_stats`: the routing service's counters (diagnostics).
using rs_stats_atom = caf::atom_constant<caf::atom("rsstats")>;
/// `(rs_landed_atom, std::string delivery_id, silo_address at)` one-way, from the router core
/// whose leg landed the delivery (a pure client's component `client`, or the co-hosted
/// routing service): a hub of silo `at` took it (held_requests.hpp).
using rs_landed_atom = caf::atom_constant<caf::atom("rslanded")>;

// -- hubs (hub_protocol.hpp) ---------------------------------------------------------------
/// `(hb_in_atom, envelope)` one-way: an envelope handed to an in-process handler.
using hb_in_atom = caf::atom_constant<caf::atom("hbin")>;
/// `(hb_deliver_atom, envelope) -> envelope`: a node hub's delivery to its application hub.
using hb_deliver_atom = caf::atom_constant<caf::atom("hbdeliver")>;
/// `(hf_build_atom, std::string key) -> caf::actor`: build a hub (hub factory).
using hf_build_atom = caf::atom_constant<caf::atom("hfbuild")>;

// -- hub grains (hub_grains.hpp) -----------------------------------------------------------
/// `(hg_routes_atom, std::vector<dispatch_item>, silo_address client) -> dispatch_verdicts`:
/// the routing grain's turn for a batch of a pure client's dispatches
/// (docs/behaviour/routing.md#the-routing-grain, dispatch_batch.hpp); `client` is the calling
/// pure client (empty: unknown).
using hg_routes_atom = caf::atom_constant<caf::atom("hgroutes")>;
/// `(hg_deliver_atom, envelope) -> envelope`: `deliver` on a node hub or pod hub grain.
using hg_deliver_atom = caf::atom_constant<caf::atom("hgdeliver")>;
using ph_attach_atom = caf::atom_constant<caf::atom("phattach")>;
/// `(ph_no_route_atom, envelope) -> envelope`: the routing service hands a pod hub's delegated
/// delivery back when this process has no local route for it (routing_service.hpp).
using ph_no_route_atom = caf::atom_constant<caf::atom("phnoroute")>;
using ph_detach_atom = caf::atom_constant<caf::atom("phdetach")>;
/// `(ph_attach_client_atom, silo_address client) -> bool`: the pod hub serves a hub hosted
/// in pure client `client` (docs/behaviour/routing.md#the-entry "Pure client inbound attach"); pins
/// the activation.
using ph_attach_client_atom = caf::atom_constant<caf::atom("phattachcl")>;
/// `(ph_detach_client_atom, silo_address client) -> ok`: the client unregistered the hub;
/// the activation deactivates if `client` is the one it serves.
using ph_detach_client_atom = caf::atom_constant<caf::atom("phdetachcl")>;

// -- pod-hub claimer (hub_grains.hpp) ------------------------------------------------------
using pc_claim_atom = caf::atom_constant<caf::atom("pcclaim")>;
using pc_release_atom = caf::atom_constant<caf::atom("pcrelease")>;
using pc_retry_atom = caf::atom_constant<caf::atom("pcretry")>;
/// `(pc_lost_atom, std::string path)` one-way, from a pod hub activation that a claim
/// attached: it is deactivating while its silo is not stopping (it lost its directory
/// registration, or was collected), so the claim must be asserted again.
using pc_lost_atom = caf::atom_constant<caf::atom("pclost")>;

// -- hub endpoint (hub_endpoint.hpp) -------------------------------------------------------
using ep_request_atom = caf::atom_constant<caf::atom("eprequest")>;
using ep_post_atom = caf::atom_constant<caf::atom("eppost")>;
using ep_tick_atom = caf::atom_constant<caf::atom("eptick")>;
/// Hub endpoint -> its observer, one-way: `(ep_event_atom, std::string kind, std::string id,
/// uint8_t verdict, std::string text)`; kind `received` (a delivery landed here), `response`,
/// `nack`, `deadline`, `entry_failed` (terminal outcomes passed to the application) or
/// `duplicate` (a later outcome the tracker dropped). `verdict`: `routing::verdict` as an
/// integer, meaningful for `nack`.
using ep_event_atom = caf::atom_constant<caf::atom("epevent")>;
/// `(ep_rehome_atom, caf::actor routing)` one-way: the hub endpoint sends through `routing`
/// from now on (its process moved the hub to another routing service).
using ep_rehome_atom = caf::atom_constant<caf::atom("eprehome")>;

} // namespace cafmesh::routing
