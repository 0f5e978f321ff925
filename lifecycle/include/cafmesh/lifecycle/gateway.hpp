#pragma once

/// @file
/// The gateway part: the silo's component `gateway`, which serves pure clients
/// (docs/behaviour/membership.md#gateways-for-pure-clients, docs/behaviour/routing.md#the-entry
/// "Pure client inbound attach"). `spawn_silo` spawns one per silo and drives it from the
/// stage observers (docs/behaviour/lifecycle.md#stages).
///
/// ## Protocol (tags in cafmesh/routing/gateway_atoms.hpp)
/// | message | answer | from |
/// |---|---|---|
/// | `(gw_open_atom)` | `ok` | stage Active start: opens the gateway to pure clients |
/// | `(pl_call_atom, grain_id, int32_t, message)` | the grain's answer | a pure client's grain call, handed to placement (admission control: `gateway.max_outstanding`) |
/// | `(gw_attach_atom, client, path)` | `bool` | a pure client's inbound attach of `podhub/{host path}` |
/// | `(gw_detach_atom, client, path)` | `ok` | a pure client unregisters the hub |
/// | `(gw_connect_atom, client)` | — | a pure client connected |
/// | `(gw_drained_atom, destination, key)` | `ok` | a re-homing client: once the router core holds no leg of the channel |
/// | `(gw_lookup_atom, path)` | `silo_address` | a pod hub: the client that attached `path` |
/// | `(gw_clients_atom)` | `std::vector<silo_address>` | diagnostics |
/// | `(gw_stop_send_atom, bool graceful)` | `size_t` | stage Active stop: stop-send to every client |
/// | `(gw_close_atom)` | `ok` | stage GrainDeactivation stop: no client message accepted any more |

#include <cstdint>

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include "cafmesh/actors/ids.hpp"
#include "cafmesh/config/mesh_config.hpp"
#include "cafmesh/routing/gateway_atoms.hpp"
#include "cafmesh/routing/router_core_actor.hpp"
#include "cafmesh/routing/stream_transport.hpp"

namespace cafmesh::lifecycle {

/// What a gateway part is built from.
struct gateway_options {
  /// The silo this gateway belongs to.
  silo_address self;
  /// The silo's placement service: client grain calls and attaches go through it.
  caf::actor placement;
  /// The silo's message centre: stop-send reaches the clients through it.
  caf::actor centre;
  /// Told every client as a stream peer; may be null.
  routing::stream_transport_actor streams;
  /// Answers a client's `gw_drained_atom`; null: answered at once.
  routing::router_core_actor core;
  /// Admission control: most client dispatches outstanding at once (0: no bound).
  int64_t max_outstanding = 0;
  /// The `retry_after_ms` an overload refusal carries.
  int64_t retry_after_ms = 500;

  /// The options for silo `self` from `cfg` (`gateway.max_outstanding`,
  /// `routing.overload_retry_after_ms`); the actor handles are left empty.
  static gateway_options from(const config::mesh_config& cfg, silo_address self);
};

/// Spawns the gateway part of silo `opts.self`, closed until `gw_open_atom`.
caf::actor spawn_gateway(caf::actor_system& sys, gateway_options opts);

} // namespace cafmesh::lifecycle
