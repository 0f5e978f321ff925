#pragma once

/// @file
/// The stream transport (docs/behaviour/routing.md#legs stream leg, docs/behaviour/routing.md#nacks
/// rung d, docs/behaviour/routing.md#the-entry inbound stream): one actor per process through which
/// a hub living in some process can be reached by address, without a grain. A hub **subscribes**
/// its address at its own process's transport; any process's transport can then **probe** for a
/// live subscriber and **publish** an envelope to it.
///
/// ## Shape
/// Subscriptions are held where the subscriber lives (no central registry that could be
/// stale): the transport keeps `address -> live subscriber actors` for its own process and
/// monitors each subscriber (a subscriber that exits is gone at once). Other processes are
/// reached through the process's message centre (component `stream`), so in simulation every
/// frame crosses `sim_network` and runs on the virtual clock, deterministic under the test
/// coordinator. The transport knows its **peers** (the processes whose transports it asks):
/// the silos of the latest membership snapshot that have not departed (subscribe the
/// transport to the process's membership agent; docs/behaviour/membership.md#snapshots), plus
/// processes named at spawn or with `st_peer_atom` (a gateway names its pure clients) until
/// `st_unpeer_atom`.
///
/// - **Probe** `(sp_probe_atom, address) -> bool` (router_ports.hpp): `true` at once if a
///   local subscriber of the address is alive; otherwise every peer is asked
///   `(st_has_atom, address) -> bool` through the centre, each call bounded by
///   `stream_transport_timeout_ms` (30,000): the first `true` answers `true`; all peers
///   answering `false` (a departed peer counts as `false`: it serves nobody) answers
///   `false`, a definite "none"; a peer that could not answer within the bound leaves the
///   answer open, and the probe then fails `response_timeout` (the router counts that, like
///   its own 10 s bound, as "yes", docs/behaviour/routing.md#legs).
/// - **Publish** `(sp_publish_atom, address, envelope) -> ok_atom`: the envelope goes to
///   every live subscriber of the address: local subscribers get `(hb_in_atom, envelope)`
///   (entry_atoms.hpp) at once, every peer gets `(st_deliver_atom, address, envelope) ->
///   bool` ("did a subscriber of yours take it?") through the centre, each bounded by
///   `stream_transport_timeout_ms`. The publish answers `ok` as soon as one subscriber took
///   the envelope; once every peer answered without one, it fails `not_found` ("no live
///   subscriber for '{addr}': nothing was published") — a post that reached nobody is never
///   reported as done; if some peer did not answer within the bound it fails
///   `response_timeout` ("stream post to '{addr}' was not confirmed within 30 s"). The
///   transport never answers later than its bound (docs/behaviour/routing.md#legs: "bounded by the
///   transport's own 30,000 ms"); the router's 60 s guard sits on top.
/// - **Not started**: before `st_start_atom` the transport answers every probe and publish
///   with `lifecycle_misuse` "the stream transport has not started"; the router core turns
///   that into the composition fault of docs/behaviour/routing.md#legs (NACK `failed` "Routing to
///   '{addr}' failed before the delivery could be attempted: the stream transport has not
///   started"). Subscriptions are accepted before the start.
///
/// Addresses are compared by their rendered string (docs/behaviour/envelope.md#addresses); the
/// router probes and publishes on the target's host address, so a hub subscribes its own
/// (host) address.
///
/// ## Protocol (`stream_transport_actor`)
/// | message | answer | who |
/// |---|---|---|
/// | `(sp_probe_atom, address)` | `bool` | router core (stream leg step 1, NACK rung d) |
/// | `(sp_publish_atom, address, envelope)` | `ok_atom` or a fault | router core (stream leg step 3, NACK rung d), applications |
/// | `(st_start_atom)` | `ok_atom` | the process (silo: with its routing actors; client: at once); registers component `stream` at the centre; idempotent |
/// | `(st_sub_atom, address, caf::actor subscriber)` | `ok_atom` | a hub or its owner; idempotent per (address, subscriber) |
/// | `(st_unsub_atom, address, caf::actor subscriber)` | `ok_atom` | the same |
/// | `(st_peer_atom, silo_address)` / `(st_unpeer_atom, silo_address)` | none | the process (e.g. a gateway for its pure clients); the own address is ignored |
/// | `(mb_snapshot_atom, membership_snapshot)` | none | the membership agent: the silos not departed become peers |
/// | `(st_has_atom, address)` | `bool` | peers, through the centre |
/// | `(st_deliver_atom, address, envelope)` | `bool` | peers, through the centre |
/// | `(st_stats_atom)` | `stream_transport_stats` | tests, diagnostics |

#include <cstdint>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/atom.hpp>
#include <caf/fwd.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "cafmesh/actors/ids.hpp"
#include "cafmesh/actors/membership.hpp"
#include "cafmesh/routing/address.hpp"
#include "cafmesh/routing/envelope.hpp"
#include "cafmesh/routing/router_ports.hpp"

namespace cafmesh::routing {

// -- atoms (prefix `st`: stream transport) ---------------------------------------------------
using st_start_atom = caf::atom_constant<caf::atom("ststart")>;
using st_sub_atom = caf::atom_constant<caf::atom("stsub")>;
using st_unsub_atom = caf::atom_constant<caf::atom("stunsub")>;
using st_peer_atom = caf::atom_constant<caf::atom("stpeer")>;
using st_unpeer_atom = caf::atom_constant<caf::atom("stunpeer")>;
using st_has_atom = caf::atom_constant<caf::atom("sthas")>;
using st_deliver_atom = caf::atom_constant<caf::atom("stdeliver")>;
using st_stats_atom = caf::atom_constant<caf::atom("ststats")>;

/// The text of the not-started fault (`lifecycle_misuse`).
inline constexpr const char* stream_transport_not_started = "the stream transport has not started";

/// Counters of one stream transport.
struct stream_transport_stats {
  bool started = false;
  uint64_t subscriptions = 0;    ///< live (address, subscriber) pairs of this process
  uint64_t probes = 0;           ///< probes asked of this transport
  uint64_t probes_none = 0;      ///< probes answered "definitely none"
  uint64_t publishes = 0;        ///< publishes asked of this transport (after the start)
  uint64_t published = 0;        ///< publishes answered ok (some subscriber took it)
  uint64_t publish_faults = 0;   ///< publishes answered with a fault
  uint64_t local_deliveries = 0; ///< envelopes handed to subscribers of this process
  uint64_t not_started = 0;      ///< probes and publishes refused before the start
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, stream_transport_stats& x) {
  return f(caf::meta::type_name("cafmesh.stream_transport_stats"), x.started, x.subscriptions,
           x.probes, x.probes_none, x.publishes, x.published, x.publish_faults, x.local_deliveries,
           x.not_started);
}

/// The stream transport's protocol (see the file comment). It is a `stream_port_actor`:
/// `caf::actor_cast<stream_port_actor>(t)` for `router_core_options::streams`.
using stream_transport_actor = stream_port_actor::extend<
  caf::replies_to<st_start_atom>::with<caf::ok_atom>,
  caf::replies_to<st_sub_atom, address, caf::actor>::with<caf::ok_atom>,
  caf::replies_to<st_unsub_atom, address, caf::actor>::with<caf::ok_atom>,
  caf::reacts_to<st_peer_atom, silo_address>, caf::reacts_to<st_unpeer_atom, silo_address>,
  caf::reacts_to<mb_snapshot_atom, membership_snapshot>,
  caf::replies_to<st_has_atom, address>::with<bool>,
  caf::replies_to<st_deliver_atom, address, envelope>::with<bool>,
  caf::replies_to<st_stats_atom>::with<stream_transport_stats>>;

/// What one stream transport is built from.
struct stream_transport_options {
  /// This process (log context; skipped in `peers`).
  silo_address self;
  /// The process's message centre; null: local subscribers only (no peers are asked).
  caf::actor centre;
  /// `routing.stream_transport_timeout_ms` (examples/config/README.md#keys): the bound of every
  /// call to a peer, hence of every probe and publish this transport answers.
  int64_t transport_timeout_ms = 30000;
  /// The processes whose transports are asked (more via `st_peer_atom`).
  std::vector<silo_address> peers;
};

/// Spawns a stream transport (not started: send `st_start_atom`). The caller owns it; it
/// holds no self-re-arming timer.
stream_transport_actor spawn_stream_transport(caf::actor_system& sys,
                                              stream_transport_options opts);

} // namespace cafmesh::routing
