#pragma once

/// @file
/// Network mode of the message centre's seam (docs/architecture.md#the-seam-the-message-centre;
/// docs/behaviour/membership.md#leaving, #gateways-for-pure-clients): each process is its own CAF
/// actor system, and the frames between message centres travel over CAF's io middleman on
/// real sockets.
///
/// This is the substrate's only network mode: the link below keeps the centre exactly as
/// in simulation (the link is its `net`), adds heartbeats and silence detection (a frozen
/// or partitioned peer whose connection stays up), and learns the primary's oracle from
/// `network.primary_host`:`network.primary_port` alone (net_process.hpp wires a whole
/// process this way).
///
/// ## The link
/// One `net_link` actor per process stands where the `sim_network` stands in simulation:
/// it is the `net` handed to `spawn_message_center`, and it speaks the same link protocol
/// (`link_actor`, message_center.hpp: `sim_attach_atom`, `sim_frame_atom`, `sim_flush_atom`
/// from the centre; `mc_frame_atom`, `mc_bounce_atom`, `mc_gone_atom` to it), so the centre
/// cannot tell the two modes apart. Its handle, `net_link_actor`, adds the messages below.
///
/// - **Listening.** At spawn the link asks the middleman actor (`caf::io::middleman_actor`)
///   to publish it on `network.host`:`network.port` (0 = a port chosen by the OS).
///   `(nl_port_atom) -> uint16_t` answers the bound port once the publish succeeded, or the
///   middleman's error (`cannot_open_port`, ...). The process's silo address is
///   (`network.host`, that port, generation).
/// - **Peers.** A frame for a silo on an endpoint (host, port) the link has no connection
///   to makes the link connect asynchronously (`connect_atom` request to the middleman
///   actor; the link itself never blocks) and queue the frame. Once connected it introduces
///   itself with `(nl_hello_atom, silo_address self, caf::actor link) -> (silo_address peer,
///   caf::actor oracle)` and then sends the queued frames in order. A peer that connected
///   to us introduces itself the same way, so frames back to it use its connection. Frames
///   travel as `(nl_frame_atom, wire_frame)` link to link and are handed to the centre as
///   `(mc_frame_atom, wire_frame)`; per peer they keep their order (one CAF connection).
///   **Batches** (SPEC §14 B7): the frames of one turn for one peer (the centre hands over
///   what its own turns produced, `sim_frames_atom`) travel as one `(nl_frames_atom,
///   std::vector<wire_frame>)` message, at most `link_batch_max_frames`, and reach the peer's
///   centre as one `(mc_frames_atom, ...)`; order is kept. `(nl_wire_atom) -> link_wire_stats`
///   counts frames and messages each way.
/// - **Generations.** A frame for generation g of an endpoint whose connected peer has a
///   newer generation is bounced to the centre (`mc_bounce_atom`: g has departed). A peer
///   with an older generation than the frame's is stale: the link reports it gone and
///   reconnects. A connect that fails (nothing listens, or no answer within
///   `network.failure_detection_ms`) bounces every frame queued for that endpoint.
/// - **Departure.** Each peer's link is monitored. Its `down_msg` (`remote_link_unreachable`
///   when the process died or the connection broke, `user_shutdown` or any other reason when
///   the peer's link exited) makes the link tell the centre `(mc_gone_atom, peer)`: pending
///   calls to that generation fail `departed_silo` at once, later ones too. The link also
///   monitors its own centre and exits with the centre's reason, so peers see it go.
/// - **Heartbeats.** Every `network.heartbeat_interval_ms` the link sends `(nl_beat_atom,
///   silo_address self)` to every connected peer. Any frame or beat from a peer counts as
///   a sign of life. A peer silent for `suspect_ms(network)` (see below) is **suspected**;
///   a suspected peer that speaks again is cleared.
/// - **Failure detection.** The link of the primary process (the one hosting the oracle)
///   reports every suspicion to the oracle's failure-detector hook as `(sim_watch_atom,
///   silo, false)`, every clearing as `(sim_watch_atom, silo, true)`, and a dropped
///   connection as `(sim_watch_atom, silo, false)` at once. The oracle is spawned with
///   `oracle_detection_ms(network)` = `failure_detection_ms - suspect_ms`, so a silo that
///   falls silent is declared Dead `failure_detection_ms` after its last sign of life (its
///   silence is checked the moment it reaches `suspect_ms`, not on the next heartbeat tick),
///   and a silo whose connection drops `oracle_detection_ms` after the drop.
/// - **The oracle over the network** (docs/behaviour/membership.md, like Orleans' development
///   clustering): the primary process (`network.primary_port == 0`) passes its oracle to
///   `spawn_net_link`; every hello answer carries that handle (a remote proxy on the receiving
///   side). Any other process connects to `network.primary_host`:`network.primary_port` as soon
///   as its centre is attached (retrying every heartbeat interval until it succeeds) and learns
///   the oracle from the hello answer: `(nl_oracle_atom) -> caf::actor` answers it once
///   known. `spawn_oracle_relay` gives membership agents an actor to talk to from the start.
///   With membership on a shared table every process passes its own table oracle
///   (`link_oracle::own`): the link reports suspicions to it, and its hello answers carry
///   no oracle, so that the handle never leaves the process (docs/caf-notes.md "Shutdown":
///   a peer's proxy makes CAF's BASP broker monitor it, and the oracle's last down message
///   can then hold it alive in the stopped broker's mailbox). A process that takes such a
///   process for its primary learns no oracle: `nl_oracle_atom` answers `config_invalid`.
/// - `(nl_peers_atom) -> std::vector<silo_address>`: the connected peers, ordered.
/// - **Authentication** (docs/behaviour/peer-authentication.md). The link publishes and
///   connects through a middleman actor of its own (`nl_gate_atom`): on every connection,
///   accepted or opened, both ends prove `network.cluster_id` and the cluster secret
///   (`network.cluster_secret` or `network.cluster_secret_file`) before CAF's BASP broker
///   reads a byte, and an unauthenticated connection holds at most
///   `unauthenticated_bound_bytes`. A refused connection is logged (warning) and counted
///   (`nl_auth_atom`). When a connection this link opened is refused for its credentials,
///   the requests waiting for it are answered `config_invalid` (not bounced: retrying cannot
///   help), and if the refusing peer is the primary, `nl_oracle_atom` answers that error
///   from then on. A secret file that cannot be read fails the publish. With `network.tls_*`
///   every connection is mutual TLS and the proofs run inside it; a TLS failure before them
///   is a refusal (`tls`), and TLS files that cannot be used fail the publish.
///
/// Every type crossing the wire must be announced on both sides before the actor systems
/// are built: `cafmesh::register_types` (routing) announces `wire_frame` and
/// `silo_address`; the io middleman must be loaded (`cfg.load<caf::io::middleman>()`).
/// Shutdown: send the centre (or the link) an exit; the link exits with it, and with it its
/// published port closes (docs/caf-notes.md "Shutdown": a published actor left alive hangs the system).

#include <cstdint>
#include <vector>

#include <caf/actor.hpp>
#include <caf/atom.hpp>
#include <caf/fwd.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "cafmesh/actors/ids.hpp"
#include "cafmesh/actors/lifecycle_atoms.hpp"
#include "cafmesh/actors/membership.hpp"
#include "cafmesh/actors/message_center.hpp"
#include "cafmesh/actors/peer_auth.hpp"
#include "cafmesh/config/mesh_config.hpp"

namespace cafmesh {

// -- network link atoms (prefix `nl`) ----------------------------------------------
using nl_port_atom = caf::atom_constant<caf::atom("nlport")>;
using nl_hello_atom = caf::atom_constant<caf::atom("nlhello")>;
using nl_frame_atom = caf::atom_constant<caf::atom("nlframe")>;
/// `(nl_frames_atom, std::vector<wire_frame>)`: several frames of one peer in one message
/// (SPEC §14 B7).
using nl_frames_atom = caf::atom_constant<caf::atom("nlframes")>;
/// `(nl_wire_atom) -> link_wire_stats`: what this link carried so far.
using nl_wire_atom = caf::atom_constant<caf::atom("nlwire")>;
using nl_beat_atom = caf::atom_constant<caf::atom("nlbeat")>;
using nl_tick_atom = caf::atom_constant<caf::atom("nltick")>;
using nl_oracle_atom = caf::atom_constant<caf::atom("nloracle")>;
using nl_peers_atom = caf::atom_constant<caf::atom("nlpeers")>;
/// `(nl_stall_atom, bool on, bool detected) -> ok`: fault injection on the real network (the
/// docs/testing.md#the-simulation-harness `stall`, for demos and tests): while on, every frame the
/// centre sends and every frame a peer sends is held, in order, and handed on when the stall ends.
/// `detected`: the link also stops its heartbeats and ignores the peers', so the failure
/// detector declares the silo Dead after `failure_detection_ms`; otherwise heartbeats continue and
/// the stall goes undetected (S12.59).
using nl_stall_atom = caf::atom_constant<caf::atom("nlstall")>;
/// `(nl_gate_atom) -> caf::actor`: the middleman actor the link publishes and connects
/// through (invalid if it does not listen); it exits after the link.
using nl_gate_atom = caf::atom_constant<caf::atom("nlgate")>;
/// `(nl_auth_atom) -> peer_auth_stats` (peer_auth.hpp): this process's handshakes so far.
using nl_auth_atom = caf::atom_constant<caf::atom("nlauth")>;

/// What a network link carried (`nl_wire_atom`): frames, and the link-to-link messages (each
/// one BASP message) that carried them, each way (docs/delivery-costs.md#the-remote-frame-path).
struct link_wire_stats {
  uint64_t frames_out = 0;   ///< frames sent to peers
  uint64_t messages_out = 0; ///< `nl_frame` / `nl_frames` messages sent to peers
  uint64_t frames_in = 0;    ///< frames received from peers
  uint64_t messages_in = 0;  ///< `nl_frame` / `nl_frames` messages received from peers
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, link_wire_stats& x) {
  return f(caf::meta::type_name("cafmesh.link_wire_stats"), x.frames_out, x.messages_out,
           x.frames_in, x.messages_in);
}

/// The network link: the link protocol of the message centre (`link_actor`), what its peers'
/// links send it (`nl_hello_atom`, `nl_frame_atom`, `nl_beat_atom`), the oracle's snapshots,
/// the host's stopping signal, and the queries and fault injection above. The hello carries
/// plain handles: they cross the wire, where a peer sees a proxy without a static type.
using net_link_actor = link_actor::extend<
  caf::replies_to<nl_port_atom>::with<uint16_t>,
  caf::reacts_to<mb_snapshot_atom, membership_snapshot>,
  caf::replies_to<nl_hello_atom, silo_address, caf::actor>::with<silo_address, caf::actor>,
  caf::reacts_to<nl_frame_atom, wire_frame>,
  caf::reacts_to<nl_frames_atom, std::vector<wire_frame>>,
  caf::replies_to<nl_wire_atom>::with<link_wire_stats>, caf::reacts_to<nl_beat_atom, silo_address>,
  caf::replies_to<nl_stall_atom, bool, bool>::with<caf::ok_atom>,
  caf::replies_to<nl_oracle_atom>::with<caf::actor>,
  caf::replies_to<lifecycle::host_stopping_atom>::with<caf::ok_atom>,
  caf::replies_to<nl_gate_atom>::with<caf::actor>,
  caf::replies_to<nl_auth_atom>::with<peer_auth_stats>,
  caf::replies_to<nl_peers_atom>::with<std::vector<silo_address>>>;

/// Silence (ms) after which a peer is suspected: `min(2 * heartbeat_interval_ms,
/// failure_detection_ms / 2)`, at least 1.
int64_t suspect_ms(const config::network_section& net);

/// The failure-detection delay (ms) the primary's oracle must be configured with
/// (`membership_oracle_config::failure_detection_ms`): `failure_detection_ms - suspect_ms`.
int64_t oracle_detection_ms(const config::network_section& net);

/// Whose membership oracle a link is given (`spawn_net_link`).
enum class link_oracle : uint8_t {
  /// The cluster's: the development oracle of the primary, handed to every peer.
  cluster,
  /// This process's own (membership on a shared table): never handed to a peer.
  own,
};

/// Spawns the network link of this process and starts publishing it (see the file
/// comment). `oracle` is the membership oracle when this process is the primary
/// (`net.primary_port == 0`) or runs its own (`scope` `own`), else an invalid handle.
/// Requires the io middleman.
net_link_actor spawn_net_link(caf::actor_system& sys, const config::network_section& net,
                              const membership_oracle_actor& oracle = membership_oracle_actor{},
                              link_oracle scope = link_oracle::cluster);

/// Spawns a relay that stands for the cluster's oracle in this process: every message it
/// receives (requests keep their response path) is delegated to the oracle the link learns
/// (`nl_oracle_atom`); messages arriving earlier wait, in order, until it is known. Exits
/// when `link` exits (waiting requests then fail with the link's exit reason). Its own
/// `(nl_oracle_atom) -> caf::actor` answers the oracle, or `runtime_error` while unknown. When
/// the link answers an error instead of the oracle (the primary refused this process's
/// credentials), every request is answered with that error.
/// Pass it to `spawn_membership_agent` as the oracle. The relay monitors the oracle: once the
/// oracle's process is gone (CAF silently drops what is sent to a remote actor whose
/// connection broke), every request is answered at once with a `departed_silo` fault
/// ("the membership oracle cannot be reached: its process is gone (...)") and a warning is
/// logged, so that no membership step of this process waits on it.
membership_oracle_actor spawn_oracle_relay(caf::actor_system& sys, const net_link_actor& link);

} // namespace cafmesh
