#pragma once

/// @file
/// The message centre: the one seam every cross-process message passes (docs/architecture.md#the-seam-the-message-centre;
/// docs/behaviour/lifecycle.md#stages, stages 2000 and 4000; docs/testing.md#network).
///
/// No actor of one silo holds a handle to an actor of another silo. A component hands a
/// cross-process message to its **local** message centre as (destination silo, destination
/// component, payload); the centre wraps it into a `wire_frame` and passes it over a **link**
/// to the peer's centre, which dispatches it to the component registered under that name.
///
/// Links: the centre hands every outbound frame to its **link** `net` and receives inbound
/// frames, bounces and departures from it (the link protocol, `link_actor`). In simulation the
/// link is the `sim_network` actor (sim_network.hpp), which applies latency, per-link FIFO, the
/// serialisation round trip and fault injection on the virtual clock. In network mode it is
/// a `net_link` (net_link.hpp: CAF io sockets, heartbeats, silence detection; a whole
/// process is wired by `start_net_process`, net_process.hpp). The centre behaves the same
/// with either link.
///
/// ## Protocol (untyped `caf::actor`)
///
/// Component side (what silo components send to their own centre):
/// - `(mc_register_atom, component, caf::actor h) -> ok_atom`: `h` serves `component` on this
///   silo (replaces an earlier registration).
/// - `(mc_unregister_atom, component) -> ok_atom`.
/// - `(mc_call_atom, silo_address dst, component c, caf::message payload) -> <reply>`:
///   a request. The centre answers with exactly what the component `c` on silo `dst`
///   replied (the reply's elements, not wrapped), or with an error:
///   * `departed_silo` (a `to_error(fault)`, `fault.silo = dst`): the centre knows `dst` is
///     gone (told by `mc_gone_atom`, or a link could not deliver to it; the named
///     generation never answers again), or `dst` went away while the call was pending;
///   * `silo_unavailable`: no component `c` is registered on `dst`, or `dst` blocks
///     application messages (stage 4000 stop) and `c` is an application component;
///   * any error the component itself answered, unchanged (it crossed the wire intact);
///   * a serialiser error if the payload or reply holds a type that cannot cross a wire.
///   The centre sets **no timeout**: the caller bounds its own request to the centre
///   (`self->request(mc, timeout, mc_call_atom::value, ...)`). A pending call of a caller
///   that gave up stays in the centre until the reply, a bounce or a `mc_gone` frees it.
/// - `(mc_call_atom, silo_address dst, component c, caf::message payload, int64_t ttl_ms)`
///   (`make_bounded_call`): the same call with a **time-to-live**: the caller waits at most
///   `ttl_ms` milliseconds (its own request timeout). The frame never reaches `c` once that
///   time is up (docs/behaviour/classification.md#why-a-response-timeout-is-never-resent says a
///   timed-out callee "may hold" the delivery; cafmesh goes further, as Orleans does with expired
///   messages, and makes sure a remote callee never *starts* processing a call whose caller has
///   stopped waiting, so a response timeout's NACK stays the delivery's only outcome whenever the
///   call was still in transit):
///   * a link that hands the frame on converts what is left of the deadline into the
///     frame's `ttl_ms` (`refresh_ttl`); an expired request (`call_expiry_margin_ms` or less
///     left) is not sent but answered at once with `response_timeout` ("... expired before
///     it left ...");
///   * a link that receives a frame derives the local deadline from `ttl_ms`
///     (`arm_expiry`): time the frame spends held or queued in this process counts;
///   * the receiving centre answers an expired request `response_timeout` ("... expired in
///     transit ...") instead of dispatching it, counts it in `expired` and logs a warning.
///   Time spent inside a peer's kernel buffers is not counted (no clocks are compared across
///   processes). The local short-cut (`dst` == own silo) ignores the time-to-live.
///   `dst == own silo` short-cuts: the centre asks its local component directly (no frame,
///   no serialisation, never blocked); the reply comes back the same way.
/// - `(mc_send_atom, silo_address dst, component c, caf::message payload)`: one-way; the
///   payload reaches `c` on `dst` as a plain asynchronous message (its sender is that silo's
///   centre). Lost silently if `dst` is gone (as a one-way message to a dead peer is).
///
/// Inbound: a request frame's payload is sent to the registered component as a request
/// (`request(component, infinite, payload)`); its reply or error returns to the caller as a
/// response frame. The component sees the **centre** as the sender of every message, local
/// or remote: a component that needs the caller's silo carries it in the payload.
///
/// Control:
/// - `(mc_gone_atom, silo_address s)`: `s` has departed (Dead in membership, superseded by
///   a newer generation, or its link went down). Every pending call to `s` fails at once
///   with `departed_in_flight(s)`: its frame had left this process (the link bounces the
///   frames it never handed on before it reports the departure), so `s` may have processed
///   it and the call must not be sent again. A silo that was leaving (membership showed it
///   ShuttingDown or Stopping, or its centre's leaving notice arrived, below) answers the
///   calls it takes and refuses those that reach it after it blocked application messages,
///   so its pending calls fail with the plain, resendable `departed_silo` instead (SPEC C2;
///   not when the link lost a frame from `s`,
///   docs/behaviour/membership.md#departures-and-the-wire). Every later call to `s` fails
///   with a plain `departed_silo`, which is resendable: it never left.
/// - `(mc_watch_atom, caf::actor w)`: `w` is told `(mc_gone_atom, s)` once for every silo
///   `s` this centre knows or later learns has departed (link down, bounce, membership),
///   and `(mc_leaving_atom, s, graceful)` when it learns that `s` is leaving (`graceful`:
///   ShuttingDown; told again if a graceful leave follows a non-graceful one).
/// - `(mb_snapshot_atom, membership_snapshot)`: the centre subscribes to its membership
///   agent; every silo the snapshot shows departed (Dead, or superseded by a newer
///   generation of its endpoint) is handled as by `mc_gone_atom`, every other silo it shows
///   ShuttingDown or Stopping is leaving. A snapshot that shows this silo itself
///   ShuttingDown or Stopping makes the centre send its **leaving notice**: one one-way
///   frame `(mc_leaving_atom, graceful)` (component `none`) to every silo it exchanged a
///   frame with, once. It travels on each link ahead of this silo's later frames, so a peer
///   whose membership view jumps from Active to Dead (a table read that skipped the leaving
///   row) still takes the departure for a leave. The receiving centre handles the notice
///   itself.
/// - `(mc_block_atom, bool on) -> ok_atom`: block application messages
///   (docs/behaviour/lifecycle.md#stages stage 4000): an inbound request for an application
///   component (`is_application`) is answered with the resendable refusal
///   `silo_unavailable` "silo {S} is leaving; route elsewhere" (`fault.silo` = this silo)
///   for as long as the centre runs; an inbound one-way application message is dropped and
///   logged. System traffic still passes. Blocking sends the leaving notice too, if no
///   snapshot did.
/// - `(mc_whoami_atom) -> silo_address`.
/// - `(mc_stats_atom) -> message_center_stats`.
/// Link side (used by links, not by components):
/// - `(mc_frame_atom, wire_frame)`: a frame arriving from a link;
/// - `(mc_frames_atom, std::vector<wire_frame>)`: several frames arriving in one message,
///   handled in order as if each came alone;
/// - `(mc_bounce_atom, wire_frame)`: a frame this centre sent could not be delivered
///   (destination unknown or dead): a pending call fails `departed_silo` and the
///   destination is remembered as departed.

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_clock.hpp>
#include <caf/error.hpp>
#include <caf/expected.hpp>
#include <caf/fwd.hpp>
#include <caf/message.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "cafmesh/actors/atoms.hpp"
#include "cafmesh/actors/frame_codec.hpp"
#include "cafmesh/actors/ids.hpp"

namespace cafmesh {

/// `(mc_leaving_atom, bool graceful)`: the one-way frame (component `none`) a leaving silo's
/// centre sends its peers; `(mc_leaving_atom, silo_address s, bool graceful)`: what a centre
/// tells its watchers when it learns that `s` is leaving (see `mc_watch_atom` above).
using mc_leaving_atom = caf::atom_constant<caf::atom("mcleaving")>;

/// The name under which a silo component is reachable through the message centre.
/// Values are stable (they cross the wire); applications may use values >= `user_first`.
enum class component : uint8_t {
  none = 0,
  membership = 1, ///< the silo's membership agent
  oracle = 2,     ///< the cluster's membership oracle (hosted by the primary silo)
  /// the silo's directory partition (docs/behaviour/directory-and-placement.md#who-owns-a-grain-id)
  directory = 3,
  catalog = 4,    ///< the silo's catalog (activations)
  placement = 5,  ///< the silo's placement service
  activation = 6, ///< grain calls addressed to an activation (via the catalog)
  router = 7,     ///< the silo's router core
  routing = 8,    ///< the routing service / routing grain entry
  gateway = 9,    ///< a gateway's client-facing side
  client = 10,    ///< a pure client's inbound side
  pod_hub = 11,   ///< pod-hub claims and deliveries
  test = 12,      ///< test probes
  stream = 13,    ///< the process's stream transport (routing/stream_transport.hpp)
  user_first = 128,
};

/// Renders the component's name, e.g. `directory`, or `component(200)`.
std::string to_string(component x);

/// True for the components whose inbound traffic counts as application traffic, blocked
/// at the stage-4000 stop (docs/behaviour/lifecycle.md#stages): `catalog`, `activation`, `router`,
/// `routing`,
/// `gateway`, `pod_hub`, `stream` and every user component. Membership, oracle, directory, placement,
/// client and test traffic is system traffic and always passes.
bool is_application(component x);

/// A call with this many milliseconds or less left of its time-to-live counts as expired:
/// started that late, its work and its answer could not reach the caller in time (measured
/// on the live stalled-silo run: a call released with ~10 ms left landed 35 ms later, after
/// its caller's timeout).
inline constexpr int64_t call_expiry_margin_ms = 100;

/// One message between two message centres. `correlation_id` 0 marks a one-way message;
/// a response frame carries its request's id with `is_response = true` and either a
/// `payload` (the reply's elements) or an `error`.
struct wire_frame {
  silo_address src;
  silo_address dst;
  uint64_t correlation_id = 0;
  component target = component::none;
  bool is_response = false;
  caf::message payload;
  caf::error error;
  /// Requests only: milliseconds the caller still waited when the frame left its process;
  /// 0 = the frame never expires (see `mc_call_atom` with a time-to-live).
  int64_t ttl_ms = 0;
  /// Process-local deadline derived from `ttl_ms` (never serialized); the default value
  /// (the clock's epoch) means "no deadline".
  caf::actor_clock::time_point expires_at{};

  /// True for an expiring request with `call_expiry_margin_ms` or less left at `now`.
  bool expired(caf::actor_clock::time_point now) const;

  /// One line for traces: `{src} -> {dst} #{id} {component} {req|resp|send}`.
  std::string describe() const;
};

/// A frame's fields in order; on a link its payload is a flat record (frame_codec.hpp).
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, wire_frame& x) {
  constexpr bool saving = std::is_base_of<caf::serializer, Inspector>::value;
  constexpr bool loading = std::is_base_of<caf::deserializer, Inspector>::value;
  if constexpr (saving || loading) {
    if (auto err = f(caf::meta::type_name("cafmesh.wire_frame"), x.src, x.dst, x.correlation_id,
                     x.target, x.is_response))
      return err;
    caf::error err;
    if constexpr (saving)
      err = save_frame_payload(f, x.payload);
    else
      err = load_frame_payload(f, x.payload);
    if (err)
      return err;
    return f(x.error, x.ttl_ms);
  } else {
    return f(caf::meta::type_name("cafmesh.wire_frame"), x.src, x.dst, x.correlation_id, x.target,
             x.is_response, x.payload, x.error, x.ttl_ms);
  }
}

/// The header of the response to request `req`: from `req.dst` to `req.src`, same
/// correlation id and component, `is_response` set; payload and error empty.
wire_frame response_to(const wire_frame& req);

/// Link side of the time-to-live, on arrival: `f.expires_at = now + f.ttl_ms` when
/// `f.ttl_ms > 0`.
void arm_expiry(wire_frame& f, caf::actor_clock::time_point now);

/// Link side of the time-to-live, before a frame leaves the process: sets `f.ttl_ms` to the
/// whole milliseconds left until `f.expires_at`. Answers false, changing
/// nothing, when `f` is an expiring request that has expired (`wire_frame::expired`): the
/// link then hands `expired_response(f, ...)` to its own centre instead of sending `f`.
bool refresh_ttl(wire_frame& f, caf::actor_clock::time_point now);

/// The answer to the expiring request `req` that was dropped: a response frame from
/// `req.dst` to `req.src` carrying `response_timeout` with the text "call #{id} to
/// {component} on {dst} expired {where}: its caller stopped waiting after {ttl} ms".
wire_frame expired_response(const wire_frame& req, const std::string& where);

/// The fault of a call whose frame had left this process when its destination `s` departed:
/// `departed_silo` "silo {S} departed while the call was in flight; its outcome is unknown",
/// with a `response_timeout` cause (no answer can come any more, and the callee may hold the
/// call), so that classification makes it final and never resendable.
struct fault;
fault departed_in_flight(const silo_address& s);

/// Frames at most in one message from a centre to its link, and from a link to its peer
/// (SPEC §14 B7, docs/behaviour/peer-authentication.md#frames-on-the-link). A batch is one
/// BASP message: 32 grain calls at the default size limit (100 MiB each) stay under the 4 GiB
/// a BASP message can announce.
inline constexpr size_t link_batch_max_frames = 32;

/// Counters of one message centre (for tests and diagnostics).
struct message_center_stats {
  uint64_t frames_out = 0;      ///< frames handed to the link
  uint64_t frames_in = 0;       ///< frames received from the link
  uint64_t local_calls = 0;     ///< calls short-cut to a local component
  uint64_t pending_calls = 0;   ///< remote calls awaiting their response now
  uint64_t departed_fails = 0;  ///< calls failed `departed_silo`
  uint64_t blocked = 0;         ///< inbound application messages refused while blocking
  uint64_t expired = 0;         ///< inbound requests answered `response_timeout`, never dispatched
  uint64_t in_flight_fails = 0; ///< of `departed_fails`: calls that had left (outcome unknown)
  /// Messages that carried `frames_out` to the link: one per flush of a turn's frames
  /// (SPEC §14 B7).
  uint64_t batches_out = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, message_center_stats& x) {
  return f(caf::meta::type_name("cafmesh.message_center_stats"), x.frames_out, x.frames_in,
           x.local_calls, x.pending_calls, x.departed_fails, x.blocked, x.expired,
           x.in_flight_fails, x.batches_out);
}

/// The link protocol: what a message centre asks of its link, the one handle it holds of
/// the world outside its process. The simulated network (`sim_network_actor`) and the
/// network link (`net_link_actor`) both speak it, each extending it with its own messages,
/// so the centre cannot tell the two modes apart.
/// - `(sim_attach_atom, silo_address s, caf::actor centre)`: `centre` is the message centre
///   of silo `s`; the link hands it every frame for `s` (`mc_frame_atom`), every frame of its
///   own that cannot be delivered (`mc_bounce_atom`) and every departure it sees
///   (`mc_gone_atom`). Sent by `spawn_message_center`.
/// - `(sim_frame_atom, wire_frame)`: a frame to send.
/// - `(sim_frames_atom, std::vector<wire_frame>)`: several frames to send, in order, possibly
///   to several silos (SPEC §14 B7). The centre collects the frames its turns produce and
///   hands them over when its mailbox is empty, when `link_batch_max_frames` are waiting,
///   before it asks `sim_flush_atom`, and before it exits; never on a timer. A link keeps
///   their order per destination, and may carry the frames for one peer in one message.
/// - `(sim_flush_atom, silo_address src, silo_address dst) -> (ok_atom, bool frames_lost)`:
///   answered once every frame from `src` to `dst` already on its way has been handed to
///   `dst`'s centre; `frames_lost` says the link lost one of them
///   (docs/behaviour/membership.md#departures-and-the-wire).
using link_actor = caf::typed_actor<
  caf::reacts_to<sim_attach_atom, silo_address, caf::actor>,
  caf::reacts_to<sim_frame_atom, wire_frame>,
  caf::reacts_to<sim_frames_atom, std::vector<wire_frame>>,
  caf::replies_to<sim_flush_atom, silo_address, silo_address>::with<caf::ok_atom, bool>>;

/// Spawns the message centre of the process whose address is `self_addr`, using the link
/// `net`: a `spawn_sim_network` handle in simulation, a `spawn_net_link` handle in network
/// mode. The centre is attached to `net` before this function returns, so frames to it
/// never race its registration.
caf::actor spawn_message_center(caf::actor_system& sys, const silo_address& self_addr,
                                const link_actor& net);

/// Builds the request a component sends to its centre for a call:
/// `(mc_call_atom, dst, c, make_message(xs...))`.
template <class... Ts>
caf::message make_call(const silo_address& dst, component c, Ts&&... xs);

/// Builds a call with a time-to-live: `(mc_call_atom, dst, c, make_message(xs...),
/// ttl_ms)`. Pass the timeout (ms) the caller puts on its request to the centre.
template <class... Ts>
caf::message make_bounded_call(int64_t ttl_ms, const silo_address& dst, component c, Ts&&... xs);

} // namespace cafmesh

#include <caf/make_message.hpp>

namespace cafmesh {

template <class... Ts>
caf::message make_call(const silo_address& dst, component c, Ts&&... xs) {
  return caf::make_message(mc_call_atom::value, dst, c, caf::make_message(std::forward<Ts>(xs)...));
}

template <class... Ts>
caf::message make_bounded_call(int64_t ttl_ms, const silo_address& dst, component c, Ts&&... xs) {
  return caf::make_message(mc_call_atom::value, dst, c, caf::make_message(std::forward<Ts>(xs)...),
                           ttl_ms);
}

} // namespace cafmesh
