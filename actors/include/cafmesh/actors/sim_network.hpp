#pragma once

/// @file
/// The simulated network (docs/testing.md#the-simulation-harness "Network", "Fault injection",
/// "Trace"): the link every frame between simulated processes' message centres passes through.
///
/// - **Latency**: each message draws `min + next() % (max - min + 1)` ms from a
///   `std::mt19937_64` seeded `seed ^ fnv1a64("sim_network")`, with [min, max] the link's
///   override (`sim_delay_atom`) or [`link_latency_min_ms`, `link_latency_max_ms`].
///   A latency of 0 delivers without touching the clock (a plain message to itself).
/// - **Batches** (SPEC §14 B7): the frames a centre hands over in one `sim_frames_atom`
///   message travel as one message per link (one latency draw, counted once in
///   `messages_by_link`); frames a link delivers together reach the destination's centre as
///   one `(mc_frames_atom, [frames])`. Rules, serialisation and trace lines stay per frame.
/// - **FIFO per link** (ordered pair src -> dst): a frame is never delivered before an
///   earlier frame of the same link; its due time is max(now + latency, previous due time).
/// - **Serialisation round trip**: every frame is written with `caf::binary_serializer` when
///   it enters and read back with `caf::binary_deserializer` when it is delivered, so a
///   type that is not announced fails here as it would on a real wire. A request whose
///   frame cannot be written is answered with the serialiser's error (response frame to
///   its source); any other frame that cannot cross is recorded `lost`.
/// - **Faults**: `stall(s)` holds every frame to and from `s` until `unstall(s)` (a stall is
///   detectable by membership's failure detector unless made with `detectable = false`);
///   `partition(a, b)` holds every frame between a and b (both directions) until
///   `heal(a, b)`; held frames keep their link order and are delivered at the release
///   instant. A stall acts on the network only: the stalled silo's actors still run and
///   still reach each other locally. `drop(rule)` or `drop(predicate)` discards the next `count` frames matching the rule (the caller of
///   a dropped request sees only its own timeout). `delay(src, dst, min, max)` overrides a
///   link's latency range. `kill(s)`: from now on frames from `s` are discarded (`lost`),
///   those already on the wire included, requests to `s` bounce (their callers fail
///   `departed_silo`), other frames to `s` are `lost`; the world makes `s`'s actors exit.
/// - **Departure**: the network monitors every attached centre. When one exits, every
///   other attached centre receives `(mc_gone_atom, silo)`, as a real peer sees its
///   connection drop; a request frame for a silo that is not attached (or dead) is
///   bounced to its source centre (`mc_bounce_atom`), which fails it `departed_silo`.
///   A centre that exits without a `kill` (a graceful stop) closes its links as TCP does:
///   the frames it sent before exiting are still delivered in link order, and each peer
///   is told `mc_gone_atom` only after the last of them on its link, so an answer sent
///   before the exit is never overtaken by the departure (a pending call would fail
///   `departed_silo` and be retried although its target already processed it).
/// - **Trace**: every event is one line `"{t_ms} {event} {frame or subject}"`, a frame
///   written `n{seq} {src} -> {dst} #{correlation id} {component} {req|resp|send}` (seq numbers
///   frames in order of arrival at the network; a `send` line ends ` +{latency}ms`), with t_ms the
///   virtual ms since the network was spawned; events: `send` (accepted, with latency),
///   `deliver`, `hold` (first time a frame waits on a stall or partition), `drop`, `bounce`,
///   `lost`, `stall`, `unstall`, `partition`, `heal`, `kill`, `delay`, `gone`, and `note`
///   lines added by anyone (`sim_note_atom`). `trace_digest()` = FNV-1a 64 over the lines
///   joined with '\n' (each line followed by '\n').
///
/// ## Protocol (`sim_network_actor`)
/// The link protocol of the message centre (`link_actor`, message_center.hpp):
/// `(sim_attach_atom, silo_address, caf::actor centre)`, done by `spawn_message_center`;
/// `(sim_frame_atom, wire_frame)` and `(sim_frames_atom, std::vector<wire_frame>)` from a
/// centre; `sim_flush_atom` (below). Its own:
/// - `(sim_stall_atom, silo_address)` (detectable), `(sim_stall_atom, silo_address, bool
///   detectable)`, `(sim_unstall_atom, silo_address)`,
///   `(sim_partition_atom, silo_address a, silo_address b)`,
///   `(sim_heal_atom, silo_address a, silo_address b)`, `(sim_drop_atom, drop_rule)`,
///   `(sim_drop_atom, drop_predicate)`,
///   `(sim_delay_atom, silo_address src, silo_address dst, int64_t min_ms, int64_t max_ms)`,
///   `(sim_kill_atom, silo_address)`: each answers `ok_atom` once applied;
/// - `(sim_note_atom, std::string)`: appends a `note` line to the trace;
/// - `(sim_watch_atom, caf::actor w)`: `w` receives `(sim_watch_atom, silo_address, false)`
///   when a silo falls silent (killed, its centre exited, or a detectable stall began) and
///   `(sim_watch_atom, silo_address, true)` when a detectable stall ends on a live silo —
///   membership's failure detector (membership.hpp) watches these;
/// - `(sim_flush_atom, silo_address src, silo_address dst) -> (ok_atom, bool frames_lost)`:
///   answered once every frame already on the wire from `src` to `dst` has been delivered
///   (at once when there is none or when `src` was killed). A link held by a stall or
///   partition holds the answer too: what is held is delivered once the link opens, as TCP
///   delivers what was sent before a connection ends. A message centre that learns from a
///   membership snapshot that `src` departed asks this before failing its calls to `src`,
///   so an answer already sent is not overtaken
///   (docs/behaviour/membership.md#departures-and-the-wire). `frames_lost` is true when a
///   `drop` discarded a frame from `src` to `dst`: a real connection that loses a frame
///   breaks, this wire loses it silently, so it says so here and the centre does not take
///   a missing answer for a call never carried out.
/// - `(sim_trace_atom) -> std::vector<std::string>`; `(sim_digest_atom) -> uint64_t`.

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_clock.hpp>
#include <caf/response_promise.hpp>
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/fwd.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/optional.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "cafmesh/actors/ids.hpp"
#include "cafmesh/actors/membership.hpp"
#include "cafmesh/actors/message_center.hpp"
#include "cafmesh/config/mesh_config.hpp"

namespace cafmesh {

/// Configuration of the simulated network (examples/config/README.md#keys `simulation.*`).
struct sim_network_config {
  uint64_t seed = 1;
  int64_t link_latency_min_ms = 1;
  int64_t link_latency_max_ms = 5;
};

/// Which frames a drop rule matches: every set field must equal the frame's.
struct drop_rule {
  caf::optional<silo_address> src;
  caf::optional<silo_address> dst;
  caf::optional<component> target;
  caf::optional<bool> is_response;
  uint64_t count = 1; ///< frames still to drop
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, drop_rule& x) {
  return f(caf::meta::type_name("cafmesh.drop_rule"), x.src, x.dst, x.target, x.is_response,
           x.count);
}

/// True if `r` matches the frame header.
bool matches(const drop_rule& r, const wire_frame& f);

/// A drop by predicate (docs/testing.md#the-simulation-harness `drop(predicate, count)`): the next
/// `count` frames for which `pred` holds are dropped. The predicate sees the whole frame, payload
/// included. Local only (never serialised): `(sim_drop_atom, drop_predicate)`.
struct drop_predicate {
  std::function<bool(const wire_frame&)> pred;
  uint64_t count = 1;
};

} // namespace cafmesh

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(cafmesh::drop_predicate)

namespace cafmesh {

/// The network configuration of examples/config/README.md#keys `simulation.*`.
sim_network_config make_sim_network_config(const config::simulation_section& sim);

/// The simulated network: the link protocol of the message centre, fault injection, the
/// trace, and what membership's failure detector watches (`network_watch_actor`); see the
/// file comment.
using sim_network_actor = link_actor::extend_with<network_watch_actor>::extend<
  caf::replies_to<sim_stall_atom, silo_address>::with<caf::ok_atom>,
  caf::replies_to<sim_stall_atom, silo_address, bool>::with<caf::ok_atom>,
  caf::replies_to<sim_unstall_atom, silo_address>::with<caf::ok_atom>,
  caf::replies_to<sim_partition_atom, silo_address, silo_address>::with<caf::ok_atom>,
  caf::replies_to<sim_heal_atom, silo_address, silo_address>::with<caf::ok_atom>,
  caf::replies_to<sim_drop_atom, drop_rule>::with<caf::ok_atom>,
  caf::replies_to<sim_drop_atom, drop_predicate>::with<caf::ok_atom>,
  caf::replies_to<sim_delay_atom, silo_address, silo_address, int64_t, int64_t>::with<caf::ok_atom>,
  caf::replies_to<sim_kill_atom, silo_address>::with<caf::ok_atom>,
  caf::replies_to<sim_trace_atom>::with<std::vector<std::string>>,
  caf::replies_to<sim_digest_atom>::with<uint64_t>>;

/// Spawns the simulated network.
sim_network_actor spawn_sim_network(caf::actor_system& sys, sim_network_config cfg);

/// FNV-1a 64 over `lines`, each followed by '\n'.
uint64_t trace_digest(const std::vector<std::string>& lines);

} // namespace cafmesh
