#pragma once

/// @file
/// Message tags between a gateway silo and its pure clients
/// (docs/behaviour/membership.md#gateways-for-pure-clients, docs/behaviour/routing.md#the-entry
/// "Pure client inbound attach"). The gateway part is the silo's component `gateway` (silo.cpp);
/// the pure client's routing service is its component `client` (pure_client.hpp). CAF 0.17 atoms,
/// at most 10 characters, prefix `gw`.

#include <caf/atom.hpp>

namespace cafmesh::routing {

/// Gateway part: `(gw_open_atom) -> ok` opens it to pure clients (stage Active start).
using gw_open_atom = caf::atom_constant<caf::atom("gwopen")>;
/// Gateway part: `(gw_stop_send_atom, bool graceful) -> size_t` sends stop-send to every
/// connected pure client (graceful only) and answers how many were told. From then on the
/// gateway refuses new inbound attaches (`silo_unavailable`).
/// Pure client (component `client`): `(gw_stop_send_atom, silo_address gateway)` one-way:
/// the gateway is leaving; re-home (docs/behaviour/membership.md#gateways-for-pure-clients).
using gw_stop_send_atom = caf::atom_constant<caf::atom("gwstopsend")>;
/// Gateway part: `(gw_close_atom) -> ok`: no client message is accepted any more.
using gw_close_atom = caf::atom_constant<caf::atom("gwclose")>;
/// Gateway part: `(gw_connect_atom, silo_address client)` one-way from a pure client (via
/// `mc_send`, component `gateway`): the client is connected to this gateway
/// (docs/behaviour/membership.md#gateways-for-pure-clients).
using gw_connect_atom = caf::atom_constant<caf::atom("gwconnect")>;
/// Gateway part: `(gw_clients_atom) -> std::vector<silo_address>` (diagnostics).
using gw_clients_atom = caf::atom_constant<caf::atom("gwclients")>;
/// Gateway part: `(gw_attach_atom, silo_address client, address path) -> bool`: pure-client
/// inbound attach (docs/behaviour/routing.md#the-entry): the client is connected here, and
/// `podhub/{host path}` is called through this silo's placement service (cache bypassed;
/// prefer-local places a new activation on this silo) with `(ph_attach_client_atom, client)`; the
/// answer is the pod hub's. Refused `silo_unavailable` while the gateway is not open, after
/// stop-send, and after it stopped accepting client messages.
using gw_attach_atom = caf::atom_constant<caf::atom("gwattach")>;
/// Gateway part: `(gw_detach_atom, silo_address client, address path) -> ok`: the client
/// unregisters the hub: `(ph_detach_client_atom, client)` on its pod hub.
using gw_detach_atom = caf::atom_constant<caf::atom("gwdetach")>;

/// Gateway part: `(gw_lookup_atom, address path) -> silo_address`: the pure client that
/// attached `path` through this gateway last (empty if none). A pod hub of this silo with
/// neither a client nor a local route asks before answering `pod_hub_not_here`, so an
/// activation a delivery created here before the client's attach arrived still reaches it.
using gw_lookup_atom = caf::atom_constant<caf::atom("gwlookup")>;
/// Gateway part: `(gw_drained_atom, destination host path, ordering key) -> ok` from a pure
/// client that moves the channel (destination, key) to another gateway: answered once this
/// silo's router core holds no leg of that channel (`rc_drained_atom`), so that the
/// channel's next delivery, sent elsewhere, cannot land before the ones this gateway took
/// (docs/behaviour/routing.md#a-pure-clients-streams-across-a-re-homing).
using gw_drained_atom = caf::atom_constant<caf::atom("gwdrained")>;

} // namespace cafmesh::routing
