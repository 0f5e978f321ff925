#pragma once

/// @file
/// Wiring of one process in network mode (docs/behaviour/membership.md#snapshots, #leaving,
/// #gateways-for-pure-clients over CAF io): network link, message centre, membership agent, and —
/// on the primary — the membership oracle.
///
/// Setup code only: `start_net_process` waits (bounded by `bind_timeout`) for the link's
/// listening port with a `scoped_actor`, so call it from `main` or a test, never from an
/// actor handler.
///
/// What it builds, for `net` = the `network` section and `generation`
/// (docs/behaviour/envelope.md#silo-addresses-and-activations: production uses the start time in ms
/// since the epoch):
/// - on the primary (`net.primary_port == 0`) the oracle, with failure detection after
///   `oracle_detection_ms(net)` of reported silence (net_link.hpp), registered with the
///   centre as `component::oracle`;
/// - the link (`spawn_net_link`), listening on `net.host`:`net.port`;
/// - the centre for silo (`net.host`, bound port, `generation`);
/// - elsewhere an oracle relay (`spawn_oracle_relay`) standing for the remote oracle;
/// - the membership agent talking to the oracle (or the relay), registered with the centre
///   as `component::membership`, with the centre subscribed to it (departures in a
///   snapshot fail calls to the departed silo, message_center.hpp).
/// Joining (`mb_join_atom`) and status changes stay with the caller, through `agent`.

#include <chrono>
#include <cstdint>
#include <string>

#include <caf/actor.hpp>
#include <caf/actor_addr.hpp>
#include <caf/expected.hpp>
#include <caf/fwd.hpp>
#include <caf/timespan.hpp>

#include "cafmesh/actors/ids.hpp"
#include "cafmesh/actors/membership.hpp"
#include "cafmesh/actors/net_link.hpp"
#include "cafmesh/config/mesh_config.hpp"

namespace cafmesh {

/// The actors of one network-mode process.
struct net_process {
  silo_address addr; ///< (net.host, bound port, generation)
  net_link_actor link;
  caf::actor centre;
  membership_oracle_actor oracle; ///< the oracle (primary) or the relay standing for it
  membership_agent_actor agent;

  /// Sends every actor above an exit (`user_shutdown`): centre and link first, so peers
  /// see the link go; then agent and oracle. The actor system can then be destroyed.
  void stop() const;
};

/// The network endpoint of one process: its link, listening, and its view of the oracle.
struct net_endpoint {
  silo_address addr; ///< (net.host, bound port, generation)
  net_link_actor link;
  membership_oracle_actor oracle; ///< the oracle (primary) or the relay standing for it
  /// The link's middleman actor (`nl_gate_atom`), which exits after the link. Weak: a
  /// detached actor still referenced when the actor system ends would hang its destructor.
  caf::actor_addr gate;
};

/// The first half of `start_net_process`: the oracle (primary only), the link, the bound
/// port, and on other processes the oracle relay. Builders of whole silos
/// (`lifecycle::start_net_silo`) and pure clients spawn their own centre and agent on it.
/// Same errors as `start_net_process`.
caf::expected<net_endpoint> start_net_link(caf::actor_system& sys,
                                           const config::network_section& net, uint64_t generation,
                                           caf::timespan bind_timeout = std::chrono::seconds(10));

/// `start_net_link` with membership where `membership.provider` says: with `oracle` as
/// above; with `etcd` every process spawns its own table oracle
/// (membership_table_oracle.hpp) over the etcd table, which its link treats as a primary's
/// oracle (suspicions reported to it), and no process connects to a primary.
caf::expected<net_endpoint>
start_net_link(caf::actor_system& sys, const config::network_section& net,
               const config::membership_section& membership, uint64_t generation,
               caf::timespan bind_timeout = std::chrono::seconds(10));

/// Builds the process as described in the file comment. Fails with the link's publish
/// error (e.g. `cannot_open_port`) or `request_timeout` when the port is not bound within
/// `bind_timeout`; every actor spawned so far has then been sent an exit.
caf::expected<net_process>
start_net_process(caf::actor_system& sys, const config::network_section& net, uint64_t generation,
                  caf::timespan bind_timeout = std::chrono::seconds(10));

} // namespace cafmesh
