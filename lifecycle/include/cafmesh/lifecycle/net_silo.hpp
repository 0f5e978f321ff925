#pragma once

/// @file
/// A whole silo in network mode (docs/behaviour/lifecycle.md#stages, docs/behaviour/membership.md
/// over CAF io; docs/architecture.md#the-seam-the-message-centre): the process's network endpoint
/// (`start_net_link`: link listening on `network.host`:
/// `network.port`, the oracle on the primary or the relay standing for it elsewhere) and the
/// silo `spawn_silo` builds on it. Setup code: it waits for the bound port with a
/// `scoped_actor`, so call it from `main` or a test, never from an actor handler.

#include <cstdint>

#include <caf/expected.hpp>
#include <caf/fwd.hpp>

#include "cafmesh/actors/net_process.hpp"
#include "cafmesh/lifecycle/silo_components.hpp"

namespace cafmesh::lifecycle {

/// A silo over the network: the silo and the endpoint it runs on.
struct net_silo {
  silo_components s;
  net_endpoint endpoint;

  /// Sends an exit (`user_shutdown`) to every actor of the silo and of its endpoint
  /// (after a host stop, or for a killed silo). Idempotent.
  void stop_all() const;
};

/// Starts the endpoint for `opts.cfg.network` with `generation`
/// (docs/behaviour/envelope.md#silo-addresses-and-activations: production uses the start time in ms
/// since the epoch) and spawns the silo on it: `opts.self`, `opts.link` and `opts.oracle` are set
/// here (values passed in are ignored). Nothing has started: send
/// `host_start_atom` to `s.host`. Fails with the link's publish error (e.g.
/// `cannot_open_port`) or `request_timeout` after `bind_timeout`.
caf::expected<net_silo> start_net_silo(caf::actor_system& sys, silo_options opts,
                                       uint64_t generation,
                                       caf::timespan bind_timeout = std::chrono::seconds(10));

} // namespace cafmesh::lifecycle
