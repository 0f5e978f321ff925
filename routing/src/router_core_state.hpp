#pragma once

/// @file
/// The router core's private state, shared by its sources: the actor's interface and
/// state, its legs and NACKs, the work a turn leaves for its end, and the functions one
/// part of the core calls in another, each part in the source its section names
/// (docs/behaviour/routing.md#the-router-core).

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/catalog.hpp"
#include "cafmesh/actors/placement_atoms.hpp"
#include "cafmesh/actors/log.hpp"
#include "cafmesh/actors/membership.hpp"
#include "cafmesh/actors/remote_call.hpp"
#include "cafmesh/routing/classify.hpp"
#include "cafmesh/routing/leg_accounting.hpp"
#include "cafmesh/routing/ordered_route_dispatcher.hpp"
#include "cafmesh/routing/refusal_log.hpp"
#include "cafmesh/routing/resolution_cache.hpp"
#include "cafmesh/routing/retry_policy.hpp"
#include "cafmesh/routing/router_core.hpp"
#include "cafmesh/routing/routing_quiescence.hpp"
#include "cafmesh/routing/saturation_report.hpp"
#include "slot_table.hpp"

/// The router core's internals (router_core.cpp and the router_core_*.cpp beside it).
namespace cafmesh::routing::router_core_detail {

using ms = std::chrono::milliseconds;

/// Internal: a saturation report's "does it last" check is due (saturation_report.hpp).
using rc_sat_lasting_atom = caf::atom_constant<caf::atom("rcsatlast")>;

/// The router core's full interface: the public protocol, the pool-owner protocol and its
/// own completion and timer messages.
using impl_actor = router_core_actor::extend<
  caf::reacts_to<rc_flush_atom>, caf::reacts_to<gp_result_atom, uint64_t, envelope>,
  caf::reacts_to<gp_result_atom, uint64_t, caf::error>,
  caf::reacts_to<rc_timer_atom, uint64_t, uint64_t>, caf::reacts_to<rc_deadline_atom, int64_t>,
  caf::reacts_to<rc_release_atom, uint64_t>, caf::reacts_to<rc_sat_lasting_atom>,
  caf::reacts_to<ct_results_atom, std::vector<ct_result_item>>>::
  extend_with<routing::io_pool_owner_actor>::extend_with<routing::quiescence_source_actor>;

/// How a leg ended (its one terminal event, docs/behaviour/routing.md#legs,
/// docs/behaviour/quiescence.md#the-routing-io-pool).
enum class leg_outcome : uint8_t { landed = 0, nacked, abandoned, crashed, refused };

/// What a leg does (docs/behaviour/routing.md#legs).
enum class leg_kind : uint8_t { node, pod_hub, stream };

/// What a leg needs once it attempts its hub: kept apart from `leg_rec` so that a queued
/// delivery does not carry it (docs/delivery-costs.md#what-a-delivery-holds).
struct leg_attempts {
  grain_id grain; ///< the hub grain the retry loop calls
  /// The retry loop's state, from the first failed attempt on (a leg whose first attempt
  /// lands never needs one).
  std::unique_ptr<retry_state> retry;
};

/// `x` ms within [`lo`, the largest int32]: the 32-bit durations of a leg's and a call's
/// record.
inline int32_t clamp_ms(int64_t x, int32_t lo) {
  return static_cast<int32_t>(std::clamp<int64_t>(x, lo, INT32_MAX));
}

/// A host path and the number of legs that hold it (`core_state::host_paths`).
using host_path_entry = std::pair<const std::string, uint64_t>;

/// One accepted delivery's leg: an explicit state machine owned by the router core, kept
/// lean (docs/delivery-costs.md#what-a-delivery-holds): what can be derived from the
/// envelope (the host address, the gauge label) is rendered when needed, what only an
/// attempt needs lives in `att`, and the rare pure-client entry in `entry_clients`.
struct leg_rec {
  /// As accepted: the router's address joins the routing_path of what leaves the core
  /// (`routed_env`), so the leg does not hold it.
  envelope env;
  /// `type/id` of the target's host address, shared by the legs to that host: its entry in
  /// `core_state::host_paths` (`host_path()`).
  host_path_entry* path = nullptr;
  uint64_t id = 0;         ///< its slot in `core_state::legs` and its acceptance order
  int64_t accepted_ms = 0; ///< actor-clock ms at acceptance (delivery latency histogram)
  /// The hub grain and retry loop, from the leg's first grain attempt on; null before.
  std::unique_ptr<leg_attempts> att;
  /// Ms from acceptance to its start (dispatched); -1: queued (`started_ms()`).
  int32_t started_after_ms = -1;
  /// Ms from acceptance until the requester stops waiting, less the margin for the NACK's
  /// way back (docs/behaviour/routing.md#a-requests-remaining-time); 0: no such bound
  /// (`answer_by_ms()`). Bounds beyond 24 days count as 24 days.
  int32_t answer_within_ms = 0;
  uint32_t token = 0; ///< step token; answers carrying an older one are ignored
  leg_kind kind = leg_kind::node;
  /// Its place in the saturation monitor's count (`core_state::sat`); its ages are
  /// `accepted_ms` and `started_ms` (`oldest_times_of`).
  counted_leg sat_link;
  bool ordered : 1; ///< on the ordered dispatcher (stream-routed branch)
  bool started : 1;
  bool finished : 1;   ///< landed or NACK handed over; `leg_done` is on its way
  bool slot_owned : 1; ///< false once the slot was handed to a NACK
  bool pooled : 1;     ///< admitted (in the core's own count or through the pool)
  /// A grain call or publish of this leg is outstanding, or one ended without telling
  /// whether the target holds the delivery (a response timeout): its outcome is unknown.
  bool in_flight : 1;
  /// Waiting for its next attempt because its destination silo departed (its connection
  /// was lost, membership has not declared it Dead yet): not counted by admission control.
  bool parked : 1;
  /// The exactly-one-terminal-event latch (docs/behaviour/quiescence.md#the-routing-io-pool):
  /// open from acceptance until the first of `leg_done`, the pool's cancel or its down
  /// message settles it.
  bool latch_open : 1;
  /// A pure client handed the delivery to the routing grain: its address is in
  /// `core_state::entry_clients`.
  bool has_entry_client : 1;
  /// It leads or rides a channel batch: the batch's head is in `core_state::batch_of`
  /// (docs/behaviour/routing.md#channel-batches).
  bool batched : 1;

  /// `type/id` of the target's host address.
  const std::string& host_path() const { return path->first; }

  /// Actor-clock ms at its start (dispatched); -1: queued.
  int64_t started_ms() const { return started_after_ms < 0 ? -1 : accepted_ms + started_after_ms; }

  /// Marks its start at actor-clock ms `t`.
  void set_started_ms(int64_t t) { started_after_ms = clamp_ms(t - accepted_ms, 0); }

  /// Actor-clock ms by which the requester stops waiting (less the NACK's margin); 0: none.
  int64_t answer_by_ms() const {
    return answer_within_ms == 0 ? 0 : accepted_ms + answer_within_ms;
  }

  /// Bounds the answer at actor-clock ms `t` (after acceptance).
  void set_answer_by_ms(int64_t t) { answer_within_ms = clamp_ms(t - accepted_ms, 1); }

  leg_rec()
    : ordered(false),
      started(false),
      finished(false),
      slot_owned(true),
      pooled(false),
      in_flight(false),
      parked(false),
      latch_open(true),
      has_entry_client(false),
      batched(false) {
    // nop
  }
};

/// The ladder rung a NACK is on (docs/behaviour/routing.md#nacks).
enum class rung : uint8_t { entry_client, local, resolve, node_hub, pod_hub, stream };

/// One NACK in flight: tracked work of its own (docs/behaviour/routing.md#nacks).
struct nack_job {
  uint64_t id = 0;   ///< pool id
  uint64_t slot = 0; ///< gauge slot (the leg's after a hand-over)
  /// The unit's times as the gauge's `oldest(n)` reports them (a leg's, after a hand-over);
  /// `dispatched_ms` -1: queued.
  int64_t taken_ms = 0;
  int64_t dispatched_ms = -1;
  envelope nack; ///< the NACK envelope
  std::string delivery_id;
  std::string sender; ///< rendered sender
  address sender_host;
  bool started = false;
  bool quiet = false; ///< runtime torn down: transport failures log at info
  /// The pool entry of a cancelled leg whose NACK this is: ended in the pool once the NACK
  /// is through, so the drain's cancel wait covers the NACK. 0: none.
  uint64_t pool_leg_id = 0;
  bool pooled = false; ///< admitted (not started without a permit)
  /// The pure client that handed the failed delivery to the routing grain: its local route
  /// is tried first. Empty: none.
  silo_address entry_client;
  rung at = rung::local;
  uint32_t token = 0; ///< step token, as a leg's
  grain_id grain;
  std::optional<retry_state> retry;
};

/// Orders the router core's own request deadlines: (due ms, sequence number).
using deadline_key = std::pair<int64_t, uint64_t>;

/// What a deadline bounds: a CAF request (`bounded_request`, by its response id) or a
/// grain-port call (`port_call`, by its call id; 0: none).
struct deadline_target {
  caf::message_id rid;
  uint64_t call = 0;
};

/// Whose step a grain-port call's result continues (router_core_calls.cpp).
enum class call_for : uint8_t {
  leg_attempt,   ///< a leg's grain attempt (router_core_legs.cpp)
  nack_node_hub, ///< a NACK's attempt at the sender's node hub (router_core_nacks.cpp)
  nack_pod_hub,  ///< a NACK's attempt at the sender's pod hub (router_core_nacks.cpp)
};

/// A grain-port call in flight (docs/behaviour/routing.md#grain-port-calls): a record of
/// `core_state::calls`, kept lean (docs/delivery-costs.md#what-a-delivery-holds).
struct port_call {
  uint64_t id = 0;    ///< its slot in `core_state::calls`, sent with the call
  uint64_t owner = 0; ///< the leg or NACK id
  deadline_key due;
  /// Its neighbours on `core_state::timed_calls`, when `listed`.
  port_call* prev = nullptr;
  port_call* next = nullptr;
  caf::actor_addr catalog; ///< its catalog, when `direct`
  uint32_t token = 0;      ///< the owner's step token when the call left
  /// The destination silo the call waits on (`destinations`, 1-based); 0: not known.
  uint32_t destination = 0;
  int32_t bound_ms = 0; ///< its bound, for the timeout's text
  /// The activation called, when `direct` or `remote`; its route's key is the owner leg's
  /// hub grain's (`remote_route_key`).
  activation_tag tag;
  call_for kind = call_for::leg_attempt;
  bool urgent = false; ///< sent at high priority: its timeout comes at that priority too
  /// Sent to a local activation's catalog directly (`local_route`): a fault drops the route.
  bool direct = false;
  /// Sent to an activation of another silo through the message centre directly
  /// (`remote_route`): a fault drops the route.
  bool remote = false;
  /// Its deadline is on `core_state::timed_calls` (through `prev` and `next`), not in
  /// `core_state::deadlines`.
  bool listed = false;
};

/// A grain-port call in `core_state::calls`.
using call_node = port_call;

/// Grain-port calls in deadline order, oldest first: an intrusive list through `calls`.
struct call_list {
  call_node* head = nullptr;
  call_node* tail = nullptr;
};

/// A destination silo of grain attempts and how many wait on it now (SPEC C4,
/// docs/behaviour/admission-control.md#a-slow-destination).
struct destination_load {
  silo_address silo;
  uint64_t waiting = 0;
};

/// A hub grain activation of this silo that the router core calls through its catalog
/// directly (`rc_local_atom`, docs/delivery-costs.md).
struct local_route {
  caf::actor catalog;
  activation_tag tag;
};

/// An activation of another silo, as placement resolved it for a leg's attempt, that the
/// router core calls through its own silo's message centre directly (SPEC B3 extended to
/// remote activations, docs/delivery-costs.md#the-remote-frame-path).
struct remote_route {
  silo_address silo;
  activation_tag tag;
};

/// A channel batch (SPEC §14 B2, docs/behaviour/routing.md#channel-batches): the one-way
/// deliveries queued behind a channel's head that ride with the head's attempts, in channel
/// order. While an attempt is out, the answers of its items are collected, then judged
/// together in channel order.
struct channel_batch {
  /// One item's answer to the attempt out: the hub's result or the call's fault.
  struct answer {
    uint64_t token = 0;               ///< the item's step token when its call left
    bool in = false;                  ///< answered (or the item ended meanwhile)
    std::unique_ptr<envelope> result; ///< the hub's result, once in
    caf::error failure;               ///< the call's fault, once in
  };
  std::vector<uint64_t> riders; ///< the legs behind the head, in channel order
  std::vector<answer> answers;  ///< head first, then the riders; empty between attempts
  size_t waiting = 0;           ///< answers still out
  /// The items are continuations (responses and NACKs), which never share a batch with
  /// one-way deliveries.
  bool continuations = false;
};

/// Work a turn leaves for its end (docs/behaviour/routing.md#one-turn-per-step): a start
/// permit granted by the core's own count, or a leg's terminal event.
struct turn_work {
  enum kind_t : uint8_t { admitted, done } kind = admitted;
  uint64_t id = 0;
  uint8_t outcome = 0;
};

/// The router core's actor state.
struct core_state {
  static const char* name;
  router_core_options opts;
  log::logger log;
  std::string silo_name;
  retry_policy policy;
  ordered_route_dispatcher disp;
  saturation_monitor sat;
  /// Legs `parked` (see leg_rec): admission control bounds the others.
  uint64_t parked_legs = 0;
  refusal_log refusals;
  std::set<std::string> stream_routed;
  std::set<std::string> client_hosted;
  /// Accepted legs in a slab, by an id that carries the leg's slot and `next_id`'s count
  /// (ids order as the legs were accepted; what lists legs in that order sorts them).
  slot_table<leg_rec> legs;
  /// The legs' host paths, each with the number of legs that hold it: one string per host
  /// with legs, none once its last leg ended.
  std::unordered_map<std::string, uint64_t> host_paths;
  /// The pure client that handed a leg's delivery to the routing grain (its process hosts
  /// the sender), for the legs that have one (`leg_rec::has_entry_client`).
  std::unordered_map<uint64_t, silo_address> entry_clients;
  std::map<uint64_t, nack_job> nacks;
  uint64_t next_id = 1;
  bool stopping = false;
  router_core_stats stats;
  /// Requests and calls bounded by the router core itself (`bounded_request`, `port_call`).
  std::map<deadline_key, deadline_target> deadlines;
  /// Grain-port calls in flight by call id (docs/behaviour/routing.md#grain-port-calls).
  slot_table<port_call> calls;
  /// The calls whose deadline was not earlier than any listed before (the common case: one
  /// bound), in deadline order; the others' deadlines are in `deadlines`. Expiry merges both
  /// in (due, sequence) order.
  call_list timed_calls;
  uint64_t next_call = 0;
  uint64_t next_deadline_seq = 0;
  int64_t deadline_timer_ms = -1; ///< due time of the armed `rc_deadline` timer; -1: none
  // -- a stop letting go of legs that will not land --
  /// `q_nacks_out` requests waiting until no NACK is left on the ladder.
  std::vector<caf::typed_response_promise<caf::ok_atom>> release_waiters;
  /// Generation of the armed release bound (`rc_release`); 0: none armed.
  uint64_t release_gen = 0;
  uint64_t release_gen_seq = 0;
  /// `rc_drained` requests waiting until their channel holds no leg.
  std::map<ordering_channel, std::vector<caf::typed_response_promise<caf::ok_atom>>> drain_waiters;
  // -- the hot path (docs/behaviour/routing.md#the-co-hosted-hot-path) --
  /// Units of work and the gauge delta not yet published.
  leg_accounting acct;
  /// Resolutions the resolver marked cacheable.
  resolution_cache resolved;
  /// Channel batches by the id of the leg that leads them (SPEC §14 B2).
  std::unordered_map<uint64_t, channel_batch> batches;
  /// The head of the batch of each `leg_rec::batched` leg (its own id for a head).
  std::unordered_map<uint64_t, uint64_t> batch_of;
  /// Node-hub and pod-hub grain activations of this silo by `remote_route_key` (SPEC B3):
  /// dropped when the activation goes, a call to it fails, membership changes or the silo
  /// stops.
  std::unordered_map<std::string, local_route> local_routes;
  /// Catalogs of `local_routes`, monitored (`catalog_down`).
  std::set<caf::actor_addr> watched_catalogs;
  /// Direct calls not sent yet, by catalog: they leave in one `ct_calls` per catalog at the
  /// end of a turn that finds the mailbox empty, or once 64 wait (SPEC B1).
  std::vector<std::pair<caf::actor, std::vector<ct_call_item>>> direct_out;
  /// Pod-hub grain activations of other silos by `remote_route_key`: dropped
  /// when a call over the route fails, the retry policy invalidates the grain, its silo is no
  /// longer Active in membership or departs, this silo stops, or the message centre goes.
  std::unordered_map<std::string, remote_route> remote_routes;
  /// Calls over `remote_routes` not sent yet: they leave in one `mc_calls` to the message
  /// centre with the direct calls (`flush_direct_calls`).
  std::vector<remote_call_item> remote_out;
  bool centre_watched = false; ///< the message centre is monitored (`centre_down`)
  // -- admission per destination (SPEC C4) --
  /// Destination silos seen, each with the grain attempts outstanding to it; a call's
  /// `destination` indexes it from 1. Few entries: one per silo that answered.
  std::vector<destination_load> destinations;
  /// The destination the hub of a host path (`leg_rec::host_path`) last answered from:
  /// learned from the landing silo its answers carry.
  std::unordered_map<std::string, uint32_t> path_destination;
  size_t direct_waiting = 0;
  uint64_t membership_version = 0;
  /// True until the pool's drain took the core's legs over: the core admits itself.
  bool admits_itself = true;
  /// Nesting of `turn_scope`s; work and the gauge delta settle when the outermost ends.
  int turn_depth = 0;
  std::deque<turn_work> work;
  bool flush_armed = false;
};

using pointer = impl_actor::stateful_pointer<core_state>;

/// The actor clock in milliseconds.
inline int64_t now_ms(pointer self) {
  return std::chrono::duration_cast<ms>(self->clock().now().time_since_epoch()).count();
}

/// The router core as the pool sees it.
inline routing::io_pool_owner_actor owner_of(pointer self) {
  return routing::io_pool_owner_actor{self};
}

// -- lean legs (router_core_legs.cpp) -------------------------------------------------------------

/// The accepted legs, in acceptance order (ids ascending): a walk of the slab, sorted.
std::vector<std::pair<uint64_t, leg_rec*>> legs_in_order(core_state& s);

/// `leg {n}`, n the leg's number in acceptance order (for log lines).
inline std::string leg_name(uint64_t id) {
  return "leg " + std::to_string(slot_table<leg_rec>::seq_of(id));
}

/// The ordering channel of `leg`, an ordered leg (docs/behaviour/routing.md#the-ordered-dispatcher).
ordering_channel leg_channel(const leg_rec& leg);

/// The target's host address of `leg` (docs/behaviour/envelope.md#addresses).
address leg_host_address(pointer self, const leg_rec& leg);

/// The gauge label of `leg`, rendered (the unit's label in the gauge's `oldest(n)`).
std::string leg_label(const leg_rec& leg);

/// The pure client that handed `leg`'s delivery to the routing grain; empty: none.
const silo_address& entry_client_of(pointer self, const leg_rec& leg);

/// Closes the latch of leg `id`: true exactly once per accepted leg (the caller emits its one
/// terminal event), false for an unknown or already settled leg.
bool settle_latch(pointer self, uint64_t id);

/// `leg`'s envelope as routed: the router's address appended to its routing_path, for what
/// leaves the core (a grain call, a stream publish, a NACK's original)
/// (docs/delivery-costs.md#what-a-delivery-holds).
envelope routed_env(pointer self, const leg_rec& leg);

/// The hub grain and retry loop of `leg`, created on first use.
leg_attempts& attempts_of(leg_rec& leg);

// -- shared helpers (router_core.cpp) ------------------------------------------------------------

/// Logs saturation event `ev`, if any; a report below critical arms the check whether
/// the saturation lasts (saturation_report.hpp).
void log_sat(pointer self, const std::optional<saturation_event>& ev);

/// The bound on one grain attempt: placement plus grain response timeout.
ms attempt_timeout(pointer self);

/// True if `e` is the error of a request whose bound passed.
bool is_request_timeout(const caf::error& e);

// -- pool and gauge helpers (router_core_accounting.cpp) -----------------------------------------

/// Sends the gauge the count of units it has not seen, if any.
void publish_delta(pointer self);

/// Publishes the count if it is due in this turn or the mailbox has drained; else a later
/// turn's end publishes it (the last turn before the core idles finds the mailbox empty).
void settle_gauge(pointer self);

/// The core's `n` oldest units (legs and NACKs holding a gauge slot) as the gauge reports
/// them, and their count (docs/behaviour/quiescence.md#the-router-cores-own-count).
routing::quiescence_sample oldest_units(pointer self, uint64_t n);

/// Leaves `w` for the end of the turn; outside any turn, for one `rc_flush`.
void push_work(pointer self, turn_work w);

/// Asks a start permit for leg or NACK `id`: from the pool once its drain took the
/// core's legs over, else the core's own, granted at the end of the turn.
void admit(pointer self, uint64_t id);

/// Tells the pool that `id` started, once the pool grants the start permits.
void pool_started(pointer self, uint64_t id);

/// Tells the pool that `id` ended, once the pool grants the start permits.
void pool_ended(pointer self, uint64_t id);

/// A unit is taken: the core's count rises (its label, state and times stay with the leg or
/// NACK that holds it).
void gauge_track(pointer self);

/// A unit's gauge slot is freed.
void gauge_release(pointer self);

// -- the end of a turn (router_core_turn_end.cpp) ------------------------------------------------

/// A start permit for `id` (granted by the core itself or by the pool).
void on_admitted(pointer self, uint64_t id);

/// Runs the work the turn left, first in first out; what it leaves in turn joins the queue
/// (no recursion: S12.41, docs/behaviour/routing.md#one-turn-per-step).
void run_work(pointer self);

/// Sends the direct calls waiting (`direct_out`): at once with `now`, else if the mailbox
/// is empty or 64 wait.
void flush_direct_calls(pointer self, bool now = false);

/// Marks one turn of the router core (a message handler or a response handler): when the
/// outermost ends, the work it left runs, in order and without recursion, then the gauge
/// delta settles.
struct turn_scope {
  pointer self;
  explicit turn_scope(pointer ptr) : self(ptr) { ++self->state.turn_depth; }
  turn_scope(const turn_scope&) = delete;
  turn_scope& operator=(const turn_scope&) = delete;
  ~turn_scope() {
    auto& s = self->state;
    if (s.turn_depth == 1) {
      run_work(self);
      flush_direct_calls(self);
      settle_gauge(self);
    }
    --s.turn_depth;
  }
};

// -- request deadlines (router_core_deadlines.cpp) -----------------------------------------------

/// Bounds the request whose response id is `rid` by `bound` from now.
deadline_key add_deadline(pointer self, deadline_target what, ms bound);

/// The request of `k` was answered (or failed) before its bound.
void drop_deadline(pointer self, const deadline_key& k);

/// The key of a deadline `bound` from now.
deadline_key next_deadline_key(pointer self, ms bound);

/// Bounds call `x` (in `calls`) by `x.due`: at the tail of `timed_calls` in O(1)
/// when no listed call is due later, else in `deadlines`.
void add_call_deadline(pointer self, call_node& x);

/// Call `x` ended (or its bound passed): its deadline goes.
void drop_call_deadline(pointer self, call_node& x);

/// The `rc_deadline` timer for `fired_due` fired: every request whose bound has passed gets
/// its `request_timeout`, then the timer is armed for the next deadline.
void expire_deadlines(pointer self, int64_t fired_due);

// -- grain-port calls (router_core_calls.cpp) ----------------------------------------------------

/// Sends `(gp_call_atom, id, grain, env, bound)` to the grain port, bounded by the router
/// core's own deadline of `bound`; its result continues `kind`'s step of `owner` if `owner`'s token is
/// still `token` (docs/behaviour/routing.md#grain-port-calls).
void port_call_send(pointer self, call_for kind, uint64_t owner, uint64_t token,
                    const grain_id& grain, envelope env, ms bound, bool urgent,
                    uint32_t destination = 0);

/// Drops the direct route (by `remote_route_key`) to activation `tag`, if it is the route
/// held.
void forget_local_route(pointer self, const std::string& key, activation_tag tag);

/// Drops every direct route.
void drop_local_routes(pointer self);

/// The key of `grain` in `remote_routes`: its type and key.
std::string remote_route_key(const grain_id& grain);

/// Remembers the activation `tag` on `silo` that answered a leg's attempt at `grain` through
/// placement (the answer carries both, landing_report.hpp), if it is a pod-hub grain of
/// another silo and this silo is not stopping.
void learn_remote_route(pointer self, const grain_id& grain, const silo_address& silo,
                        activation_tag tag);

/// Drops the remote route of `grain`, if any.
void forget_remote_route(pointer self, const grain_id& grain);

/// Drops the remote routes to `silo`; every remote route when `silo` is empty.
void drop_remote_routes(pointer self, const silo_address& silo);

/// Drops the remote routes whose silo `v` does not show Active.
void drop_inactive_remote_routes(pointer self, const membership_snapshot& v);

/// The message centre went down: the remote calls it held fail, the remote routes go.
void centre_down(pointer self);

/// Catalog `source` went down: the direct calls it held fail, its routes go.
void catalog_down(pointer self, const caf::actor_addr& source);

/// The grain port answered call `id` (or its deadline passed: `request_timeout`).
void port_call_result(pointer self, uint64_t id, envelope& result);
void port_call_fault(pointer self, uint64_t id, caf::error& failure);

/// The continuations of a leg's grain attempt (router_core_legs.cpp).
void leg_attempt_result(pointer self, uint64_t id, uint64_t tok, envelope& r);
void leg_attempt_fault(pointer self, uint64_t id, uint64_t tok, caf::error& e);

/// The continuations of a NACK's hub attempts (router_core_nacks.cpp).
void nack_node_result(pointer self, uint64_t id, uint64_t tok);
void nack_node_fault(pointer self, uint64_t id, uint64_t tok, caf::error& e);
void nack_pod_hub_result(pointer self, uint64_t id, uint64_t tok);
void nack_pod_hub_fault(pointer self, uint64_t id, uint64_t tok, caf::error& e);

/// Sends a request bounded by the router core's own deadline of `bound`
/// (router_core_deadlines.cpp); `on_value(T&)` and `on_error(caf::error&)` are the
/// response handlers, called as with `request(...).then`.
template <class T, class Dest, class OnValue, class OnError, class... Ts>
void bounded_request(pointer self, const Dest& dest, ms bound, OnValue on_value, OnError on_error,
                     Ts&&... xs) {
  auto h = self->template request<caf::message_priority::high>(dest, caf::infinite,
                                                               std::forward<Ts>(xs)...);
  auto k = add_deadline(self, deadline_target{h.id(), 0}, bound);
  h.then(
    [=](T& y) mutable {
      turn_scope turn{self};
      drop_deadline(self, k);
      on_value(y);
    },
    [=](caf::error& e) mutable {
      turn_scope turn{self};
      drop_deadline(self, k);
      on_error(e);
    });
}

// -- the NACK machinery (router_core_nacks.cpp) --------------------------------------------------

/// Posts a NACK for `original` (docs/behaviour/routing.md#nacks). `handover_slot`: the
/// failing leg's gauge slot, which the NACK takes over (count unchanged); none: a fresh slot.
/// Answers true if a NACK was handed to the machinery. When no NACK may be sent, the hand-over
/// slot is released and the failure is logged windowed and counted as suppressed.
uint64_t post_nack(pointer self, const envelope& original, verdict v, const std::string& text,
                   bool target_unserved, caf::optional<silo_address> responding,
                   std::optional<uint64_t> handover_slot, bool quiet = false, bool direct = false);

/// Answers every waiting `q_nacks_out` and disarms the release bound.
void answer_release(pointer self);

/// NACK `id` is through or given up: its gauge slot and pool entries end.
void nack_done(pointer self, uint64_t id);

/// NACK `id` if `token` is its current step token, else null.
nack_job* find_nack(pointer self, uint64_t id, uint64_t token);

/// Rung b: one attempt at the sender's node hub (docs/behaviour/routing.md#nacks).
void nack_node_attempt(pointer self, uint64_t id);

/// The pool admitted a NACK: climb the ladder from its first rung.
void nack_start(pointer self, uint64_t id);

// -- legs (router_core_legs.cpp) -----------------------------------------------------------------

/// Leg `id` if it has not finished and `token` is its current step token, else null.
leg_rec* find_leg(pointer self, uint64_t id, uint64_t token);

/// A leg no longer waits for a departed silo.
void unpark(pointer self, leg_rec& leg);

/// Its terminal event runs at the end of this turn (docs/behaviour/routing.md#one-turn-per-step).
void finish_leg(pointer self, leg_rec& leg, leg_outcome outcome);

/// The NACK `nack_id` (0: none was posted) answers `leg`'s own sender: it tries first the
/// pure client that handed the delivery to the routing grain, if one did. Answers `nack_id`.
uint64_t via_entry_client(pointer self, uint64_t nack_id, const leg_rec& leg);

/// Ends `leg` with a NACK that takes over its gauge slot (and gives the riders waiting for
/// its next attempt the same NACK, `batch_nack_riders`).
void leg_nack(pointer self, leg_rec& leg, verdict v, const std::string& text,
              bool target_unserved = false, caf::optional<silo_address> responding = caf::none,
              bool quiet = false);

/// The NACK text of a leg that failed before its delivery could be attempted.
std::string before_attempt_text(const leg_rec& leg, const std::string& what);

/// One grain attempt (docs/behaviour/routing.md#legs,
/// docs/behaviour/classification.md#retry-policies).
void leg_attempt(pointer self, uint64_t id);

/// The pool admitted `leg`: it starts now (its timers start here, docs/behaviour/routing.md#legs).
void leg_start(pointer self, leg_rec& leg);

/// The one terminal event of `id` (the latch already settled): accounting, channel advance.
void leg_terminal(pointer self, uint64_t id, leg_outcome outcome, bool end_in_pool = true);

// -- channel batches (router_core_batches.cpp) ---------------------------------------------------

/// The head of the channel batch `leg` belongs to; 0: none.
inline uint64_t batch_of(const core_state& s, const leg_rec& leg) {
  if (!leg.batched)
    return 0;
  auto i = s.batch_of.find(leg.id);
  return i != s.batch_of.end() ? i->second : 0;
}

/// Puts `leg` into the batch led by `head`; 0: out of any batch.
inline void set_batch(core_state& s, leg_rec& leg, uint64_t head) {
  if (head == 0) {
    if (leg.batched)
      s.batch_of.erase(leg.id);
    leg.batched = false;
    return;
  }
  s.batch_of[leg.id] = head;
  leg.batched = true;
}

/// Forms a channel batch behind `head` if its channel allows one, else does nothing
/// (docs/behaviour/routing.md#channel-batches).
void batch_form(pointer self, leg_rec& head);

/// Sends the riders of `head`'s batch, if any, behind the head's attempt just sent, with the
/// same `bound`.
void batch_send_riders(pointer self, leg_rec& head, ms bound);

/// Takes `leg`'s answer to its attempt into its batch: true if the batch took it (and judged
/// the batch once every answer was in), false if `leg` rides no batch collecting answers.
bool batch_take_result(pointer self, leg_rec& leg, uint64_t token, envelope& result);
bool batch_take_fault(pointer self, leg_rec& leg, uint64_t token, caf::error& failure);

/// `leg` is NACKed (`v`, `text`): the riders waiting for its next attempt get the same
/// NACK, each its own.
void batch_nack_riders(pointer self, leg_rec& leg, verdict v, const std::string& text,
                       bool target_unserved, const caf::optional<silo_address>& responding,
                       bool quiet);

/// `leg` ends (its terminal event): its place in a batch goes; the riders that waited for
/// its next attempt form the next batch and attempt now.
void batch_leave(pointer self, leg_rec& leg);

// -- ending legs that will not land (router_core_unlanded_legs.cpp) ------------------------------

/// The one NACK of a leg that ends without landing because its silo stops (`finished`
/// false): nothing of it outstanding -> `shutting_down`, resendable; a call or publish in
/// flight -> `failed`, its outcome unknown. Answers the NACK's id (0: none was sent, the
/// delivery is answer-suppressed).
uint64_t stop_nack(pointer self, leg_rec& leg, bool direct);

/// Arms the bound within which the NACKs of a stop must leave (unless one is armed).
void arm_release_bound(pointer self);

/// The release bound passed: the NACKs still on the ladder could not leave. One error line
/// names their deliveries; they are dropped so the pool's join does not wait for them.
void release_bound_passed(pointer self);

/// Ends every accepted leg that has not landed with its one NACK (`q_end_legs`); answers the
/// residual's delivery ids: those legs, then the NACKs already on their ladder.
std::vector<std::string> end_unlanded_legs(pointer self, const std::string& why);

// -- accepting (router_core_accepting.cpp) -------------------------------------------------------

/// Admission control: true if `env` is new work and the core already holds
/// `routing.max_in_flight` legs; continuations are always admitted, unless the legs' slab
/// is full.
bool over_bound(pointer self, const envelope& env);

/// The text of a refusal at the admission bound.
std::string overload_text(pointer self);

/// Admission per destination (SPEC C4): the refusal text if `env` is new work for a grain
/// last answered from a silo that already holds `routing.max_in_flight_per_destination`
/// grain attempts of this core; none otherwise.
std::optional<std::string> destination_refusal(pointer self, const envelope& env,
                                               const std::string& host_path);

/// Where new work goes: the target's host address and its `type/id` path, computed once per
/// delivery for the admission checks and the leg.
struct leg_host {
  address host;
  std::string path;
};

/// The `leg_host` of `env`'s target.
leg_host leg_host_of(pointer self, const envelope& env);

/// Refuses a co-hosted delivery for a destination that is not keeping up: one NACK
/// `unavailable` with `retry_after_ms`, as `refuse_overloaded`.
void refuse_for_destination(pointer self, const envelope& env, const std::string& text);

/// The destination (1-based index into `destinations`) the hub of `host_path` last answered
/// from; 0: none known, or the bound is off.
uint32_t destination_of(pointer self, const std::string& host_path);

/// The hub of `host_path` answered from `silo`: later attempts count against that
/// destination.
void learn_destination(pointer self, const std::string& host_path, const silo_address& silo);

/// Refuses a co-hosted delivery at the bound, before acceptance: one NACK `unavailable`
/// whose envelope carries `retry_after_ms`; no leg, no channel, nothing shed.
void refuse_overloaded(pointer self, const envelope& env);

/// Accepts `env`, which `entry_client` handed to the routing grain (empty: co-hosted or
/// unknown) saying its requester waits `answer_within` more (0: no bound); answers the leg id, or none when it was NACKed as a loop (`loop_nack_posted`
/// tells whether the loop NACK was posted).
std::optional<uint64_t> accept(pointer self, envelope env, leg_host host, bool& loop_nack_posted,
                               const silo_address& entry_client = silo_address{},
                               caf::timespan answer_within = caf::timespan{0});

} // namespace cafmesh::routing::router_core_detail
