#include "cafmesh/routing/router_core.hpp"

#include <algorithm>
#include <chrono>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/sec.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/log.hpp"
#include "cafmesh/actors/message_center.hpp"
#include "cafmesh/routing/leg_accounting.hpp"
#include "cafmesh/routing/leg_latch.hpp"
#include "cafmesh/routing/resolution_cache.hpp"
#include "cafmesh/routing/routing_quiescence.hpp"
#include "cafmesh/routing/classify.hpp"
#include "cafmesh/routing/entry_atoms.hpp"
#include "cafmesh/routing/ordered_route_dispatcher.hpp"
#include "cafmesh/routing/refusal_log.hpp"
#include "cafmesh/routing/retry_policy.hpp"
#include "cafmesh/routing/saturation_report.hpp"
#include "cafmesh/routing/size_guard.hpp"
#include "landing_report.hpp"

namespace cafmesh::routing {

router_core_options router_core_options::from(const config::mesh_config& cfg,
                                              silo_address silo) {
  router_core_options out;
  out.silo = std::move(silo);
  out.routing = cfg.routing;
  out.size = cfg.size;
  out.placement_timeout_ms = cfg.placement.timeout_ms;
  out.grain_response_timeout_ms = cfg.grain_call.response_timeout_ms;
  out.release_bound_ms = cfg.pool.drain_grace_ms;
  return out;
}

address default_router_address(const silo_address& silo) {
  address out;
  out.type = "router";
  out.id = silo.to_string();
  return out;
}

namespace {

using ms = std::chrono::milliseconds;

/// Internal: a saturation report's "does it last" check is due (saturation_report.hpp).
using rc_sat_lasting_atom = caf::atom_constant<caf::atom("rcsatlast")>;

/// The router core's full interface: the public protocol, the pool-owner protocol and its
/// own completion and timer messages.
using impl_actor = router_core_actor::extend<caf::reacts_to<rc_flush_atom>,
                                             caf::reacts_to<rc_timer_atom, uint64_t, uint64_t>,
                                             caf::reacts_to<rc_deadline_atom, int64_t>,
                                             caf::reacts_to<rc_release_atom, uint64_t>,
                                             caf::reacts_to<rc_sat_lasting_atom>>::
  extend_with<routing::io_pool_owner_actor>;

/// How a leg ended (its one terminal event, docs/behaviour/routing.md#legs,
/// docs/behaviour/quiescence.md#the-routing-io-pool).
enum class leg_outcome : uint8_t { landed = 0, nacked, abandoned, crashed, refused };

const char* outcome_name(leg_outcome x) {
  switch (x) {
    case leg_outcome::landed: return "landed";
    case leg_outcome::nacked: return "nacked";
    case leg_outcome::abandoned: return "abandoned";
    case leg_outcome::crashed: return "leg_crashed";
    default: return "pool_refused";
  }
}

/// What a leg does (docs/behaviour/routing.md#legs).
enum class leg_kind : uint8_t { node, pod_hub, stream };

/// One accepted delivery's leg: an explicit state machine owned by the router core.
struct leg_rec {
  uint64_t id = 0;
  envelope env;          ///< as routed (router appended to routing_path)
  address host;          ///< host address of the target (docs/behaviour/envelope.md#addresses)
  std::string host_path; ///< `type/id` of `host`
  std::string label;     ///< gauge label
  leg_kind kind = leg_kind::node;
  bool ordered = false;  ///< on the ordered dispatcher (stream-routed branch)
  bool started = false;
  bool finished = false; ///< landed or NACK handed over; `leg_done` is on its way
  bool slot_owned = true; ///< false once the slot was handed to a NACK
  bool pooled = false;    ///< admitted (in the core's own count or through the pool)
  /// A grain call or publish of this leg is outstanding, or one ended without telling
  /// whether the target holds the delivery (a response timeout): its outcome is unknown.
  bool in_flight = false;
  /// Waiting for its next attempt because its destination silo departed (its connection
  /// was lost, membership has not declared it Dead yet): not counted by admission control.
  bool parked = false;
  uint64_t token = 0;    ///< step token; answers carrying an older one are ignored
  int64_t accepted_ms = 0; ///< actor-clock ms at acceptance (delivery latency histogram)
  grain_id grain;        ///< the hub grain the retry loop calls
  std::optional<retry_state> retry;
  /// The pure client that handed the delivery to the routing grain (its process hosts the
  /// sender); empty: a co-hosted delivery, or a caller that did not say.
  silo_address entry_client;
};

/// The ladder rung a NACK is on (docs/behaviour/routing.md#nacks).
enum class rung : uint8_t { entry_client, local, resolve, node_hub, pod_hub, stream };

/// One NACK in flight: tracked work of its own (docs/behaviour/routing.md#nacks).
struct nack_job {
  uint64_t id = 0;   ///< pool id
  uint64_t slot = 0; ///< gauge slot (the leg's after a hand-over)
  envelope nack;     ///< the NACK envelope
  std::string delivery_id;
  std::string sender;      ///< rendered sender
  address sender_host;
  bool started = false;
  bool quiet = false;      ///< runtime torn down: transport failures log at info
  /// The pool entry of a cancelled leg whose NACK this is: ended in the pool once the NACK
  /// is through, so the drain's cancel wait covers the NACK. 0: none.
  uint64_t pool_leg_id = 0;
  bool pooled = false; ///< admitted (not started without a permit)
  /// The pure client that handed the failed delivery to the routing grain: its local route
  /// is tried first. Empty: none.
  silo_address entry_client;
  rung at = rung::local;
  uint64_t token = 0;
  grain_id grain;
  std::optional<retry_state> retry;
};

/// Orders the router core's own request deadlines: (due ms, sequence number).
using deadline_key = std::pair<int64_t, uint64_t>;

/// Work a turn leaves for its end (docs/behaviour/routing.md#one-turn-per-step): a start
/// permit granted by the core's own count, or a leg's terminal event.
struct turn_work {
  enum kind_t : uint8_t { admitted, done } kind = admitted;
  uint64_t id = 0;
  uint8_t outcome = 0;
};

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
  routing::leg_latch_table latch;
  std::set<std::string> stream_routed;
  std::set<std::string> client_hosted;
  std::map<uint64_t, leg_rec> legs;
  std::map<uint64_t, nack_job> nacks;
  uint64_t next_id = 1;
  bool stopping = false;
  router_core_stats stats;
  /// Requests bounded by the router core itself (`bounded_request`): due -> response id.
  std::map<deadline_key, caf::message_id> deadlines;
  uint64_t next_deadline_seq = 0;
  int64_t deadline_timer_ms = -1; ///< due time of the armed `rc_deadline` timer; -1: none
  // -- a stop letting go of legs that will not land --
  /// `q_nacks_out` requests waiting until no NACK is left on the ladder.
  std::vector<caf::typed_response_promise<caf::ok_atom>> release_waiters;
  /// Generation of the armed release bound (`rc_release`); 0: none armed.
  uint64_t release_gen = 0;
  uint64_t release_gen_seq = 0;
  /// `rc_drained` requests waiting until their channel holds no leg.
  std::map<ordering_channel, std::vector<caf::typed_response_promise<caf::ok_atom>>>
    drain_waiters;
  // -- the hot path (docs/behaviour/routing.md#the-co-hosted-hot-path) --
  /// Units of work and the gauge delta not yet published.
  leg_accounting acct;
  /// Resolutions the resolver marked cacheable.
  resolution_cache resolved;
  uint64_t membership_version = 0;
  /// True until the pool's drain took the core's legs over: the core admits itself.
  bool admits_itself = true;
  /// Nesting of `turn_scope`s; work and the gauge delta settle when the outermost ends.
  int turn_depth = 0;
  std::deque<turn_work> work;
  bool flush_armed = false;
};

const char* core_state::name = "cafmesh.router_core";

using pointer = impl_actor::stateful_pointer<core_state>;

int64_t now_ms(pointer self) {
  return std::chrono::duration_cast<ms>(self->clock().now().time_since_epoch()).count();
}

routing::io_pool_owner_actor owner_of(pointer self) {
  return caf::actor_cast<routing::io_pool_owner_actor>(self);
}

void log_sat(pointer self, const std::optional<saturation_event>& ev) {
  if (!ev)
    return;
  log_saturation_event(*ev, self->state.disp.snapshot(), self->state.log);
  // A report below critical waits to see whether the saturation lasts (saturation_report.hpp).
  if (auto due = self->state.sat.lasting_due(*ev))
    self->delayed_send(self, ms(std::max<int64_t>(0, *due - now_ms(self))),
                       rc_sat_lasting_atom::value);
}

ms attempt_timeout(pointer self) {
  auto& o = self->state.opts;
  return ms(o.placement_timeout_ms + o.grain_response_timeout_ms);
}

bool is_request_timeout(const caf::error& e) {
  return e == caf::sec::request_timeout;
}

bool needs_probe(const fault& f) {
  if (f.code == mesh_errc::runtime_gone && f.probe == probe_answer::no_answer)
    return true;
  for (auto& c : f.causes)
    if (needs_probe(c))
      return true;
  return false;
}

void set_probe(fault& f, probe_answer a) {
  if (f.code == mesh_errc::runtime_gone && f.probe == probe_answer::no_answer)
    f.probe = a;
  for (auto& c : f.causes)
    set_probe(c, a);
}

bool runtime_torn_down(const fault& f) {
  if (f.code == mesh_errc::runtime_gone && f.probe == probe_answer::torn_down)
    return true;
  for (auto& c : f.causes)
    if (runtime_torn_down(c))
      return true;
  return false;
}

// -- pool and gauge helpers ----------------------------------------------------------
//
// docs/behaviour/quiescence.md#the-router-cores-own-count and
// #admission-inside-the-router-core: the core counts its units itself and publishes the
// gauge delta at the end of the turn when the gauge's zero depends on it, else at the end
// of the first turn that finds its mailbox empty; until the pool's drain takes its legs
// over it grants its own start permits, at the end of the turn that asked for them. Work
// left outside any turn scope runs from one `rc_flush` message.

void arm_flush(pointer self) {
  auto& s = self->state;
  if (s.flush_armed)
    return;
  s.flush_armed = true;
  self->send(self, rc_flush_atom::value);
}

void publish_delta(pointer self) {
  auto& s = self->state;
  if (!s.acct.pending())
    return;
  auto ops = s.acct.take();
  if (s.opts.gauge)
    self->send(s.opts.gauge, routing::q_delta_atom::value, std::move(ops));
}

/// Publishes the delta if it is due in this turn or the mailbox has drained; else a later
/// turn's end publishes it (the last turn before the core idles finds the mailbox empty).
void settle_gauge(pointer self) {
  auto& s = self->state;
  if (s.acct.pending() && (s.acct.due() || self->mailbox().empty()))
    publish_delta(self);
}

/// A gauge change outside any turn scope settles at once.
void gauge_changed(pointer self) {
  if (self->state.turn_depth == 0)
    settle_gauge(self);
}

void push_work(pointer self, turn_work w) {
  auto& s = self->state;
  s.work.push_back(w);
  if (s.turn_depth == 0)
    arm_flush(self); // no turn end will run it
}

void run_work(pointer self);

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
      settle_gauge(self);
    }
    --s.turn_depth;
  }
};

void admit(pointer self, uint64_t id) {
  auto& s = self->state;
  auto i = s.legs.find(id);
  if (i != s.legs.end()) {
    i->second.pooled = true;
  } else {
    auto j = s.nacks.find(id);
    if (j != s.nacks.end())
      j->second.pooled = true;
  }
  if (s.opts.pool && !s.admits_itself) {
    self->send(s.opts.pool, routing::pool_admit_atom::value, id, owner_of(self));
    return;
  }
  // The core's own permit: granted at the end of this turn (never inline, so a dispatcher
  // never recurses).
  push_work(self, turn_work{turn_work::admitted, id, 0});
}

void pool_started(pointer self, uint64_t id) {
  auto& s = self->state;
  if (s.opts.pool && !s.admits_itself)
    self->send(s.opts.pool, routing::pool_started_atom::value, id);
}

void pool_ended(pointer self, uint64_t id) {
  auto& s = self->state;
  if (s.opts.pool && !s.admits_itself)
    self->send(s.opts.pool, routing::pool_ended_atom::value, id);
}

void gauge_track(pointer self, uint64_t slot, const std::string& label,
                 routing::slot_state st) {
  self->state.acct.track(slot, label, st, now_ms(self));
  gauge_changed(self);
}

void gauge_mark(pointer self, uint64_t slot) {
  self->state.acct.mark(slot, now_ms(self));
  gauge_changed(self);
}

void gauge_handover(pointer self, uint64_t slot, const std::string& label) {
  self->state.acct.handover(slot, label);
  gauge_changed(self);
}

void gauge_release(pointer self, uint64_t slot) {
  self->state.acct.release(slot);
  gauge_changed(self);
}

/// Fills the probe qualifier of `runtime_gone` nodes (docs/behaviour/classification.md#codes), then
/// calls `k(f)`. Asks the registry only when needed; silence, an error or no registry leave
/// `no_answer`.
template <class K>
void with_probe(pointer self, fault f, K k) {
  auto& s = self->state;
  if (!needs_probe(f) || !s.opts.registry) {
    k(std::move(f));
    return;
  }
  self->request(s.opts.registry, ms(s.opts.runtime_probe_timeout_ms),
                lifecycle::probe_runtime_atom::value, s.silo_name)
    .then(
      [=](probe_answer a) mutable {
        turn_scope turn{self};
        set_probe(f, a);
        k(std::move(f));
      },
      [=](caf::error&) mutable { k(std::move(f)); });
}

// -- request deadlines ----------------------------------------------------------------
//
// The node leg's two requests per delivery (resolve, grain attempt) are issued without a CAF
// request timeout and bounded here instead. In CAF 0.17 every request timeout is registered
// with, and cancelled on, the clock thread (a mutex, a condition-variable broadcast and a
// wake-up of that thread per request): on the co-hosted hot path that cost more than the
// messages themselves. The router core keeps the deadlines in one ordered map with one
// pending `rc_deadline` timer for the earliest; when a bound passes it puts exactly what
// CAF's clock would put into its own mailbox, a `request_timeout` error carrying the
// request's response id, so the request's error arm runs as before (same error, same
// virtual-time instant) and CAF drops the response handler. A late answer finds no handler
// and is dropped, as after a CAF timeout.

/// Arms the `rc_deadline` timer for the earliest deadline unless one at or before it is armed.
void arm_deadline_timer(pointer self) {
  auto& s = self->state;
  if (s.deadlines.empty())
    return;
  auto due = s.deadlines.begin()->first.first;
  if (s.deadline_timer_ms >= 0 && s.deadline_timer_ms <= due)
    return;
  s.deadline_timer_ms = due;
  self->delayed_send(self, ms(std::max<int64_t>(0, due - now_ms(self))),
                     rc_deadline_atom::value, due);
}

/// Bounds the request whose response id is `rid` by `bound` from now.
deadline_key add_deadline(pointer self, caf::message_id rid, ms bound) {
  auto& s = self->state;
  deadline_key k{now_ms(self) + bound.count(), ++s.next_deadline_seq};
  s.deadlines.emplace(k, rid);
  arm_deadline_timer(self);
  return k;
}

/// The request of `k` was answered (or failed) before its bound.
void drop_deadline(pointer self, const deadline_key& k) {
  self->state.deadlines.erase(k);
}

/// The `rc_deadline` timer for `fired_due` fired: every request whose bound has passed gets
/// its `request_timeout`, then the timer is armed for the next deadline.
void expire_deadlines(pointer self, int64_t fired_due) {
  auto& s = self->state;
  if (fired_due == s.deadline_timer_ms)
    s.deadline_timer_ms = -1;
  auto now = now_ms(self);
  while (!s.deadlines.empty() && s.deadlines.begin()->first.first <= now) {
    auto rid = s.deadlines.begin()->second;
    s.deadlines.erase(s.deadlines.begin());
    self->eq_impl(rid, self->ctrl(), self->context(),
                  caf::make_error(caf::sec::request_timeout));
  }
  arm_deadline_timer(self);
}

/// Sends a request bounded by the router core's own deadline of `bound` (see above);
/// `on_value(T&)` and `on_error(caf::error&)` are the response handlers, called as with
/// `request(...).then`.
template <class T, class Dest, class OnValue, class OnError, class... Ts>
void bounded_request(pointer self, const Dest& dest, ms bound, OnValue on_value,
                     OnError on_error, Ts&&... xs) {
  auto h = self->template request<caf::message_priority::high>(dest, caf::infinite,
                                                               std::forward<Ts>(xs)...);
  auto k = add_deadline(self, h.id(), bound);
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

// -- the NACK machinery ---------------------------------------------------------------------------
// docs/behaviour/routing.md#nacks

/// Posts a NACK for `original` (docs/behaviour/routing.md#nacks). `handover_slot`: the
/// failing leg's gauge slot, which the NACK takes over (count unchanged); none: a fresh slot.
/// Answers true if a NACK was handed to the machinery. When no NACK may be sent, the hand-over
/// slot is released and the failure is logged windowed and counted as suppressed.
uint64_t post_nack(pointer self, const envelope& original, verdict v, const std::string& text,
                   bool target_unserved, caf::optional<silo_address> responding,
                   std::optional<uint64_t> handover_slot, bool quiet = false,
                   bool direct = false) {
  auto& s = self->state;
  if (original.sender.empty() || !may_answer(original)) {
    ++s.stats.suppressed_failures;
    if (s.opts.failure_observer && !original.sender.empty())
      caf::anon_send(s.opts.failure_observer, ep_event_atom::value, std::string{"suppressed"},
                     original.id, static_cast<uint8_t>(v), text);
    auto d = s.refusals.record(host_address(original.target, s.opts.mesh_type).to_string(),
                               original.sender.to_string(), now_ms(self));
    if (d.log)
      s.log.warning(with_repeats("routing failure of answer-suppressed delivery "
                                   + original.id + " to '" + original.target.to_string()
                                   + "' (" + to_string(v) + "), no NACK: " + text,
                                 d));
    if (handover_slot)
      gauge_release(self, *handover_slot);
    return 0;
  }
  auto failure = make_delivery_failure(original, text, v, target_unserved,
                                       std::move(responding));
  auto id = s.next_id++;
  nack_job job;
  job.id = id;
  job.nack = make_nack_envelope(failure, s.silo_name + "-nack-" + std::to_string(id),
                                s.opts.self_address);
  job.delivery_id = original.id;
  job.sender = original.sender.to_string();
  job.sender_host = host_address(original.sender, s.opts.mesh_type);
  job.quiet = quiet;
  auto label = routing::nack_label(job.sender, original.id);
  if (handover_slot) {
    job.slot = *handover_slot;
    gauge_handover(self, job.slot, label);
  } else {
    job.slot = id;
    gauge_track(self, job.slot, label, routing::slot_state::queued);
  }
  s.log.debug("NACK " + to_string(v) + " for delivery " + original.id + " to "
              + job.sender + " posted: " + text);
  s.nacks.emplace(id, std::move(job));
  ++s.stats.nacks_posted;
  auto vi = static_cast<size_t>(v);
  if (s.stats.nacks_by_verdict.size() <= vi)
    s.stats.nacks_by_verdict.resize(vi + 1);
  ++s.stats.nacks_by_verdict[vi];
  if (direct) { // the pool drains and would refuse it: start without a permit
    push_work(self, turn_work{turn_work::admitted, id, 0});
  } else {
    admit(self, id);
  }
  return id;
}

/// Answers every waiting `q_nacks_out` and disarms the release bound.
void answer_release(pointer self) {
  auto& s = self->state;
  s.release_gen = 0;
  auto waiters = std::move(s.release_waiters);
  s.release_waiters.clear();
  for (auto& rp : waiters)
    rp.deliver(caf::ok_atom::value);
}

void nack_done(pointer self, uint64_t id) {
  auto& s = self->state;
  auto i = s.nacks.find(id);
  if (i == s.nacks.end())
    return;
  gauge_release(self, i->second.slot);
  pool_ended(self, id);
  if (i->second.pool_leg_id != 0)
    pool_ended(self, i->second.pool_leg_id);
  s.nacks.erase(i);
  if (s.nacks.empty() && s.release_gen != 0)
    answer_release(self);
}

nack_job* find_nack(pointer self, uint64_t id, uint64_t token) {
  auto i = self->state.nacks.find(id);
  if (i == self->state.nacks.end() || i->second.token != token)
    return nullptr;
  return &i->second;
}

void nack_error(pointer self, nack_job& job, const std::string& line) {
  auto& s = self->state;
  if (job.quiet) {
    s.log.info(line);
    return;
  }
  auto d = s.refusals.record(job.sender, line.substr(0, line.find(" for NACK")), now_ms(self));
  if (d.log)
    s.log.error(with_repeats(line, d));
}

void nack_both_failed(pointer self, nack_job& job, const std::string& detail) {
  ++self->state.stats.nacks_failed;
  nack_error(self, job,
             "BOTH transports failed for NACK to " + job.sender + " (delivery "
               + job.delivery_id + "): " + detail);
  nack_done(self, job.id);
}

void nack_publish(pointer self, uint64_t id) {
  auto& s = self->state;
  auto& job = s.nacks.at(id);
  auto tok = ++job.token;
  self->request(s.opts.streams, ms(s.opts.routing.stream_post_timeout_ms),
                sp_publish_atom::value, job.sender_host, job.nack)
    .then(
      [=](caf::ok_atom) {
        turn_scope turn{self};
        if (find_nack(self, id, tok) == nullptr)
          return;
        ++self->state.stats.nacks_stream;
        nack_done(self, id);
      },
      [=](caf::error& e) {
        turn_scope turn{self};
        auto job = find_nack(self, id, tok);
        if (job == nullptr)
          return;
        nack_both_failed(self, *job,
                         is_request_timeout(e)
                           ? "stream post never completed within "
                               + routing::render_budget(
                                 self->state.opts.routing.stream_post_timeout_ms)
                           : "stream post failed: " + to_fault(e).render());
      });
}

/// Rung d: stream publish, probing for a subscriber first (docs/behaviour/routing.md#nacks).
void nack_stream(pointer self, uint64_t id) {
  auto& s = self->state;
  auto& job = s.nacks.at(id);
  job.at = rung::stream;
  if (!s.opts.streams) {
    nack_both_failed(self, job, "the stream transport is not available");
    return;
  }
  auto tok = ++job.token;
  self->request(s.opts.streams, ms(s.opts.routing.subscriber_probe_timeout_ms),
                sp_probe_atom::value, job.sender_host)
    .then(
      [=](bool live) {
        turn_scope turn{self};
        auto job = find_nack(self, id, tok);
        if (job == nullptr)
          return;
        if (!live)
          nack_error(self, *job,
                     "no live subscriber for NACK to " + job->sender + " (delivery "
                       + job->delivery_id + "); publishing anyway");
        nack_publish(self, id);
      },
      [=](caf::error&) {
        turn_scope turn{self};
        if (find_nack(self, id, tok) != nullptr)
          nack_publish(self, id); // silence counts as "yes"
      });
}

void nack_node_attempt(pointer self, uint64_t id);

/// Rung b: the sender's node hub inside the router retry loop.
void nack_node_hub(pointer self, uint64_t id, const std::string& prefix) {
  auto& s = self->state;
  auto& job = s.nacks.at(id);
  job.at = rung::node_hub;
  job.grain = node_hub_grain(prefix);
  job.retry.emplace(s.policy);
  nack_node_attempt(self, id);
}

void nack_node_attempt(pointer self, uint64_t id) {
  auto& s = self->state;
  auto& job = s.nacks.at(id);
  auto tok = ++job.token;
  self->request(s.opts.grains, attempt_timeout(self), gp_deliver_atom::value, job.grain,
                job.nack)
    .then(
      [=](envelope&) {
        turn_scope turn{self};
        if (find_nack(self, id, tok) == nullptr)
          return;
        ++self->state.stats.nacks_node_hub;
        nack_done(self, id);
      },
      [=](caf::error& e) {
        turn_scope turn{self};
        auto job = find_nack(self, id, tok);
        if (job == nullptr)
          return;
        auto f = to_fault(e);
        auto d = job->retry->next(f);
        if (d.retry) {
          self->send(self->state.opts.grains, gp_invalidate_atom::value, job->grain);
          for (auto& silo : d.departed)
            self->send(self->state.opts.grains, gp_inval_silo_atom::value, silo);
          auto t = ++job->token;
          self->delayed_send(self, ms(d.delay_ms), rc_timer_atom::value, id, t);
          return;
        }
        self->state.log.info("NACK to " + job->sender + " (delivery " + job->delivery_id
                             + ") via " + job->grain.to_string() + " failed ("
                             + f.render() + "); falling back to the stream transport");
        nack_stream(self, id);
      });
}

/// Rung b, first half: resolve the sender's path; exactly a node -> node hub, else (d).
void nack_resolve(pointer self, uint64_t id) {
  auto& s = self->state;
  auto& job = s.nacks.at(id);
  job.at = rung::resolve;
  if (!s.opts.resolver || !s.opts.grains) {
    nack_stream(self, id);
    return;
  }
  auto tok = ++job.token;
  self->request(s.opts.resolver, ms(s.opts.routing.resolve_timeout_ms), pr_resolve_atom::value,
                job.sender_host.path())
    .then(
      [=](resolve_result& r) {
        turn_scope turn{self};
        if (find_nack(self, id, tok) == nullptr)
          return;
        if (r.found && r.remainder.empty())
          nack_node_hub(self, id, r.node_prefix);
        else
          nack_stream(self, id);
      },
      [=](caf::error&) {
        turn_scope turn{self};
        if (find_nack(self, id, tok) != nullptr)
          nack_stream(self, id); // a fault counts as unresolved
      });
}

/// Rung c: the sender's pod hub.
void nack_pod_hub(pointer self, uint64_t id) {
  auto& s = self->state;
  auto& job = s.nacks.at(id);
  job.at = rung::pod_hub;
  if (!s.opts.grains) {
    nack_stream(self, id);
    return;
  }
  job.grain = pod_hub_grain(job.sender_host.path());
  auto tok = ++job.token;
  self->request(s.opts.grains, attempt_timeout(self), gp_deliver_atom::value, job.grain,
                job.nack)
    .then(
      [=](envelope&) {
        turn_scope turn{self};
        if (find_nack(self, id, tok) == nullptr)
          return;
        ++self->state.stats.nacks_pod_hub;
        nack_done(self, id);
      },
      [=](caf::error& e) {
        turn_scope turn{self};
        auto job = find_nack(self, id, tok);
        if (job == nullptr)
          return;
        auto f = to_fault(e);
        if (contains_code(f, mesh_errc::runtime_gone)) {
          ++self->state.stats.nacks_failed;
          self->state.log.info("NACK to " + job->sender + " (delivery " + job->delivery_id
                               + ") given up: runtime gone (" + f.render() + ")");
          nack_done(self, id);
          return;
        }
        nack_stream(self, id);
      });
}

/// After rung a: b or c by the sender's type.
void nack_after_local(pointer self, uint64_t id) {
  auto& s = self->state;
  auto& job = s.nacks.at(id);
  if (s.stream_routed.count(job.sender_host.type) != 0)
    nack_pod_hub(self, id);
  else
    nack_resolve(self, id);
}

/// Rung a: the local route of the sender in this process.
void nack_local(pointer self, uint64_t id) {
  auto& s = self->state;
  auto& job = s.nacks.at(id);
  if (s.opts.local_routes) {
    job.at = rung::local;
    auto tok = ++job.token;
    self->request(s.opts.local_routes, ms(s.opts.routing.resolve_timeout_ms),
                  lr_deliver_atom::value, job.nack)
      .then(
        [=](bool took) {
          turn_scope turn{self};
          if (find_nack(self, id, tok) == nullptr)
            return;
          if (took) {
            ++self->state.stats.nacks_local;
            nack_done(self, id);
          } else {
            nack_after_local(self, id);
          }
        },
        [=](caf::error&) {
          turn_scope turn{self};
          if (find_nack(self, id, tok) != nullptr)
            nack_after_local(self, id);
        });
  } else {
    nack_after_local(self, id);
  }
}

/// Before rung a: the local route of the pure client that handed the delivery to the
/// routing grain. Its process hosts the sender, whose address may name a hub elsewhere too
/// (a node hub any silo's application would build): only there does the NACK reach the
/// sender that waits for it. Not taken or not reachable: rung a.
/// docs/behaviour/routing.md#nacks
void nack_entry_client(pointer self, uint64_t id) {
  auto& s = self->state;
  auto& job = s.nacks.at(id);
  job.at = rung::entry_client;
  auto tok = ++job.token;
  auto bound = attempt_timeout(self);
  self
    ->request(s.opts.centre, bound,
              make_bounded_call(bound.count(), job.entry_client, component::client,
                                lr_deliver_atom::value, job.nack))
    .then(
      [=](bool took) {
        turn_scope turn{self};
        auto job = find_nack(self, id, tok);
        if (job == nullptr)
          return;
        if (took) {
          ++self->state.stats.nacks_client;
          nack_done(self, id);
          return;
        }
        self->state.log.info("NACK to " + job->sender + " (delivery " + job->delivery_id
                             + "): pure client " + job->entry_client.to_string()
                             + " has no route for it; trying this silo's transports");
        nack_local(self, id);
      },
      [=](caf::error& e) {
        turn_scope turn{self};
        auto job = find_nack(self, id, tok);
        if (job == nullptr)
          return;
        self->state.log.info("NACK to " + job->sender + " (delivery " + job->delivery_id
                             + "): pure client " + job->entry_client.to_string()
                             + " not reached (" + to_fault(e).render()
                             + "); trying this silo's transports");
        nack_local(self, id);
      });
}

/// The pool admitted a NACK: climb the ladder from its first rung.
void nack_start(pointer self, uint64_t id) {
  auto& s = self->state;
  auto& job = s.nacks.at(id);
  if (job.started)
    return;
  job.started = true;
  if (job.slot == job.id)
    gauge_mark(self, job.slot);
  if (!job.entry_client.empty() && s.opts.centre)
    nack_entry_client(self, id);
  else
    nack_local(self, id);
  pool_started(self, id);
}

// -- legs -----------------------------------------------------------------------------------------
// docs/behaviour/routing.md#legs, docs/behaviour/classification.md#retry-policies

leg_rec* find_leg(pointer self, uint64_t id, uint64_t token) {
  auto i = self->state.legs.find(id);
  if (i == self->state.legs.end() || i->second.finished || i->second.token != token)
    return nullptr;
  return &i->second;
}

/// A leg no longer waits for a departed silo.
void unpark(pointer self, leg_rec& leg) {
  if (leg.parked) {
    leg.parked = false;
    --self->state.parked_legs;
  }
}

/// Its terminal event runs at the end of this turn (docs/behaviour/routing.md#one-turn-per-step).
void finish_leg(pointer self, leg_rec& leg, leg_outcome outcome) {
  unpark(self, leg);
  leg.finished = true;
  ++leg.token;
  push_work(self, turn_work{turn_work::done, leg.id, static_cast<uint8_t>(outcome)});
}

/// The NACK `nack_id` (0: none was posted) answers `leg`'s own sender: it tries first the
/// pure client that handed the delivery to the routing grain, if one did. Answers `nack_id`.
uint64_t via_entry_client(pointer self, uint64_t nack_id, const leg_rec& leg) {
  if (nack_id != 0 && !leg.entry_client.empty())
    self->state.nacks.at(nack_id).entry_client = leg.entry_client;
  return nack_id;
}

/// Ends `leg` with a NACK that takes over its gauge slot.
void leg_nack(pointer self, leg_rec& leg, verdict v, const std::string& text,
              bool target_unserved = false, caf::optional<silo_address> responding = caf::none,
              bool quiet = false) {
  leg.slot_owned = false;
  via_entry_client(self,
                   post_nack(self, leg.env, v, text, target_unserved, std::move(responding),
                             leg.id, quiet),
                   leg);
  finish_leg(self, leg, leg_outcome::nacked);
}

std::string before_attempt_text(const leg_rec& leg, const std::string& what) {
  return "Routing to '" + leg.host_path
         + "' failed before the delivery could be attempted: " + what;
}

void composition_fault(pointer self, leg_rec& leg, const std::string& what) {
  self->state.log.warning("delivery " + leg.env.id + ": composition fault: " + what);
  leg_nack(self, leg, verdict::failed, before_attempt_text(leg, what));
}

void leg_attempt(pointer self, uint64_t id);
void leg_stream_probe(pointer self, uint64_t id);

/// Size check against the grain-call limit (docs/behaviour/size-guard.md#limits) then the
/// retry loop.
void leg_grain_call(pointer self, leg_rec& leg) {
  auto& s = self->state;
  auto check = check_size(leg.env, size_crossing::grain_call, s.opts.size);
  if (check.refused) {
    log_size_refusal(leg.env, check);
    leg_nack(self, leg, verdict::rejected, size_refusal_message(leg.env, check));
    return;
  }
  if (!s.opts.grains) {
    composition_fault(self, leg, "the grain-call port is not available");
    return;
  }
  leg.retry.emplace(s.policy);
  leg_attempt(self, leg.id);
}

/// The fault arm once the retry loop gave up (docs/behaviour/routing.md#legs).
void leg_fault_arm(pointer self, uint64_t id, fault f, retry_decision d) {
  auto& s = self->state;
  auto& leg = s.legs.at(id);
  auto tok = ++leg.token;
  auto attempts = leg.retry->attempts();
  self->request(s.opts.grains, ms(s.opts.grain_response_timeout_ms), gp_act_error_atom::value,
                leg.grain)
    .then(
      [=](std::string& recorded) {
        turn_scope turn{self};
        auto leg = find_leg(self, id, tok);
        if (leg == nullptr)
          return;
        auto detail = recorded.empty() ? f.render() : recorded;
        auto text = "Delivery to '" + leg->host_path + "' failed: " + detail;
        bool quiet = runtime_torn_down(f);
        auto line = "delivery " + leg->env.id + " to '" + leg->host_path + "' NACKed "
                    + to_string(d.verdict) + " after " + std::to_string(attempts)
                    + " attempt(s) (" + to_string(d.reason) + "): " + detail;
        if (quiet)
          self->state.log.info(line);
        else
          self->state.log.warning(line);
        leg_nack(self, *leg, d.verdict, text, false, caf::none, quiet);
      },
      [=](caf::error&) {
        turn_scope turn{self};
        auto leg = find_leg(self, id, tok);
        if (leg == nullptr)
          return;
        bool quiet = runtime_torn_down(f);
        auto line = "delivery " + leg->env.id + " to '" + leg->host_path + "' NACKed "
                    + to_string(d.verdict) + " after " + std::to_string(attempts)
                    + " attempt(s) (" + to_string(d.reason) + "): " + f.render();
        if (quiet)
          self->state.log.info(line);
        else
          self->state.log.warning(line);
        leg_nack(self, *leg, d.verdict, "Delivery to '" + leg->host_path + "' failed: "
                                          + f.render(),
                 false, caf::none, quiet);
      });
}

/// A grain attempt of `leg` failed with `f` (probe qualifier filled).
void leg_on_fault(pointer self, uint64_t id, fault f) {
  auto& s = self->state;
  auto& leg = s.legs.at(id);
  // A fault of the node's hub: its path is resolved afresh by the next leg
  // (docs/behaviour/routing.md#cacheable-resolutions).
  if (leg.kind == leg_kind::node)
    s.resolved.forget(leg.host_path);
  if (leg.kind == leg_kind::pod_hub) {
    if (auto n = find_code(f, mesh_errc::pod_hub_not_here)) {
      // Handled before classification (docs/behaviour/routing.md#legs, #hubs).
      if (s.client_hosted.count(leg.host.type) != 0) {
        s.log.info("delivery " + leg.env.id + ": pod hub for '" + leg.host_path
                   + "' not here; falling back to the stream transport");
        leg.kind = leg_kind::stream;
        leg_stream_probe(self, id);
        return;
      }
      // A continuation (a response or a NACK) has no sender that would send it again, so
      // while the hub's claim moves (its client re-homes, its gateway stops) the leg keeps
      // trying within its router budget, re-resolving the pod hub each time; only an
      // exhausted budget ends it in the NACK below. docs/behaviour/routing.md#stopping-silos
      fault moving{mesh_errc::directory_unstable,
                   "pod hub for '" + leg.host_path + "' not here: " + n->text};
      auto probe = *leg.retry;
      if (is_continuation(leg.env) && probe.next(moving).retry) {
        ++s.stats.continuation_retries;
        f = std::move(moving);
      } else {
        auto silo = n->silo;
        auto by = silo ? silo->to_string() : std::string{"unknown silo"};
        leg_nack(self, leg, verdict::shutting_down,
                 "No silo serves hub '" + leg.host_path + "' (answered by " + by + "); retry",
                 true, silo);
        return;
      }
    }
  }
  auto d = leg.retry->next(f);
  if (d.retry) {
    // At the priority of the leg's attempts (`bounded_request`), so the grain port sees the
    // invalidation before the next attempt whatever its mailbox holds.
    if (d.invalidate_target)
      self->send<caf::message_priority::high>(s.opts.grains, gp_invalidate_atom::value,
                                              leg.grain);
    for (auto& silo : d.departed)
      self->send<caf::message_priority::high>(s.opts.grains, gp_inval_silo_atom::value, silo);
    s.log.debug("delivery " + leg.env.id + ": attempt " + std::to_string(leg.retry->attempts() - 1)
                + " failed (" + f.render() + "); retry in " + std::to_string(d.delay_ms)
                + " ms" + (d.re_resolve ? ", re-resolving" : ""));
    // A leg that waits for a departed silo (until membership declares it Dead and the grain
    // is placed anew) holds no resource of this core but its record: it must not make
    // admission refuse the traffic to every healthy silo meanwhile.
    // docs/behaviour/admission-control.md
    if (!d.departed.empty() && !leg.parked) {
      leg.parked = true;
      ++s.parked_legs;
    }
    auto tok = ++leg.token;
    self->delayed_send(self, ms(d.delay_ms), rc_timer_atom::value, id, tok);
    return;
  }
  leg_fault_arm(self, id, std::move(f), std::move(d));
}

/// One grain attempt (docs/behaviour/routing.md#legs,
/// docs/behaviour/classification.md#retry-policies).
void leg_attempt(pointer self, uint64_t id) {
  auto& s = self->state;
  auto& leg = s.legs.at(id);
  auto tok = ++leg.token;
  ++s.stats.grain_attempts;
  leg.in_flight = true;
  bounded_request<envelope>(
    self, s.opts.grains, attempt_timeout(self),
      [=](envelope& r) {
        turn_scope turn{self};
        auto leg = find_leg(self, id, tok);
        if (leg == nullptr)
          return;
        leg->in_flight = false;
        auto d = judge_result(r);
        switch (d.action) {
          case result_action::landed:
            report_landing(self->state.opts.silo, self->state.opts.centre,
                           self->state.opts.local_routes, leg->entry_client, leg->env, r);
            finish_leg(self, *leg, leg_outcome::landed);
            return;
          case result_action::already_nacked:
            // the target answered the sender itself: no NACK, the slot goes
            finish_leg(self, *leg, leg_outcome::nacked);
            return;
          default: {
            auto text = d.text.empty() ? "Delivery to '" + leg->host_path + "' failed: "
                                           + to_string(r.state)
                                       : d.text;
            leg_nack(self, *leg, d.verdict, text);
            return;
          }
        }
      },
      [=](caf::error& e) {
        turn_scope turn{self};
        auto leg = find_leg(self, id, tok);
        if (leg == nullptr)
          return;
        auto f = to_fault(e);
        // Without an answer the target may still hold the delivery.
        leg->in_flight = has_response_timeout(f);
        auto tok2 = ++leg->token;
        with_probe(self, std::move(f), [=](fault g) {
          if (find_leg(self, id, tok2) != nullptr)
            leg_on_fault(self, id, std::move(g));
        });
      },
    gp_deliver_atom::value, leg.grain, leg.env);
}

/// Node leg step 1: resolve the host path (docs/behaviour/routing.md#legs).
void leg_resolve(pointer self, uint64_t id) {
  auto& s = self->state;
  auto& leg = s.legs.at(id);
  if (!s.opts.resolver) {
    composition_fault(self, leg, "the path resolver is not available");
    return;
  }
  if (auto prefix = s.resolved.find(leg.host_path)) {
    // docs/behaviour/routing.md#cacheable-resolutions
    leg.grain = node_hub_grain(*prefix);
    leg_grain_call(self, leg);
    return;
  }
  auto tok = ++leg.token;
  bounded_request<resolve_result>(
    self, s.opts.resolver, ms(s.opts.routing.resolve_timeout_ms),
      [=](resolve_result& r) {
        turn_scope turn{self};
        auto leg = find_leg(self, id, tok);
        if (leg == nullptr)
          return;
        if (r.cacheable && r.found && r.remainder.empty())
          self->state.resolved.put(leg->host_path, r.node_prefix);
        if (!r.found || !r.remainder.empty()) {
          auto text = "No node found at '" + leg->host_path + "'";
          if (r.closest_ancestor)
            text += ". Closest ancestor: '" + *r.closest_ancestor + "'";
          leg_nack(self, *leg, verdict::not_found, text);
          return;
        }
        leg->grain = node_hub_grain(r.node_prefix);
        leg_grain_call(self, *leg);
      },
      [=](caf::error& e) {
        turn_scope turn{self};
        auto leg = find_leg(self, id, tok);
        if (leg == nullptr)
          return;
        auto detail = is_request_timeout(e)
                        ? "timed out after "
                            + routing::render_budget(self->state.opts.routing.resolve_timeout_ms)
                        : to_fault(e).render();
        leg_nack(self, *leg, verdict::failed,
                 "Path resolution for '" + leg->host_path + "' failed: " + detail);
      },
    pr_resolve_atom::value, leg.host_path);
}

/// Stream leg step 3: publish under the router's guard (docs/behaviour/routing.md#legs).
void leg_stream_publish(pointer self, uint64_t id) {
  auto& s = self->state;
  auto& leg = s.legs.at(id);
  auto check = check_size(leg.env, size_crossing::stream_block, s.opts.size);
  if (check.refused) {
    log_size_refusal(leg.env, check);
    leg_nack(self, leg, verdict::rejected, size_refusal_message(leg.env, check));
    return;
  }
  auto tok = ++leg.token;
  leg.in_flight = true;
  self->request(s.opts.streams, ms(s.opts.routing.stream_post_timeout_ms),
                sp_publish_atom::value, leg.host, leg.env)
    .then(
      [=](caf::ok_atom) {
        turn_scope turn{self};
        if (auto leg = find_leg(self, id, tok))
          finish_leg(self, *leg, leg_outcome::landed);
      },
      [=](caf::error& e) {
        turn_scope turn{self};
        auto leg = find_leg(self, id, tok);
        if (leg == nullptr)
          return;
        leg->in_flight = true; // a failed or timed-out publish may have been delivered
        if (is_request_timeout(e))
          leg_nack(self, *leg, verdict::failed,
                   "Stream post to '" + leg->host_path + "' never completed within "
                     + routing::render_budget(self->state.opts.routing.stream_post_timeout_ms));
        else
          leg_nack(self, *leg, verdict::failed,
                   "Stream post to '" + leg->host_path + "' failed: " + to_fault(e).render());
      });
}

/// Stream leg step 1: probe for a live subscriber (docs/behaviour/routing.md#legs).
void leg_stream_probe(pointer self, uint64_t id) {
  auto& s = self->state;
  auto& leg = s.legs.at(id);
  if (!s.opts.streams) {
    composition_fault(self, leg, "the stream transport has not started");
    return;
  }
  auto tok = ++leg.token;
  self->request(s.opts.streams, ms(s.opts.routing.subscriber_probe_timeout_ms),
                sp_probe_atom::value, leg.host)
    .then(
      [=](bool live) {
        turn_scope turn{self};
        auto leg = find_leg(self, id, tok);
        if (leg == nullptr)
          return;
        if (!live) {
          leg_nack(self, *leg, verdict::not_found,
                   "No live stream subscriber for '" + leg->host_path + "'", true);
          return;
        }
        leg_stream_publish(self, id);
      },
      [=](caf::error& e) {
        turn_scope turn{self};
        auto leg = find_leg(self, id, tok);
        if (leg == nullptr)
          return;
        // A transport that has not started cannot carry the leg: a composition fault
        // (docs/behaviour/routing.md#legs), not a silent probe.
        auto f = to_fault(e);
        if (f.code == mesh_errc::lifecycle_misuse) {
          composition_fault(self, *leg, f.text);
          return;
        }
        leg_stream_publish(self, id); // silence counts as "yes"
      });
}

/// The pool admitted `leg`: it starts now (its timers start here, docs/behaviour/routing.md#legs).
void leg_start(pointer self, leg_rec& leg) {
  auto& s = self->state;
  leg.started = true;
  gauge_mark(self, leg.id);
  log_sat(self, s.sat.dispatched(leg.id, now_ms(self)));
  switch (leg.kind) {
    case leg_kind::node:
      leg_resolve(self, leg.id);
      break;
    case leg_kind::pod_hub:
      leg.grain = pod_hub_grain(leg.host_path);
      leg_grain_call(self, leg);
      break;
    case leg_kind::stream:
      leg_stream_probe(self, leg.id);
      break;
  }
  pool_started(self, leg.id);
}

/// Counts one leg's latency (acceptance to terminal event) in the histogram of the stats.
void record_latency(router_core_stats& st, int64_t latency_ms) {
  if (st.latency_buckets.empty())
    st.latency_buckets.resize(leg_latency_bounds_ms.size() + 1);
  auto i = std::lower_bound(leg_latency_bounds_ms.begin(), leg_latency_bounds_ms.end(),
                            latency_ms);
  ++st.latency_buckets[static_cast<size_t>(i - leg_latency_bounds_ms.begin())];
  st.latency_sum_ms += latency_ms;
}

/// The one terminal event of `id` (the latch already settled): accounting, channel advance.
void leg_terminal(pointer self, uint64_t id, leg_outcome outcome, bool end_in_pool = true) {
  auto& s = self->state;
  auto i = s.legs.find(id);
  if (i == s.legs.end())
    return;
  auto& leg = i->second;
  leg.finished = true;
  ++leg.token;
  if (leg.slot_owned)
    gauge_release(self, id);
  auto now = now_ms(self);
  log_sat(self, s.sat.terminated(id, now));
  ++s.stats.terminal_events;
  record_latency(s.stats, now - leg.accepted_ms);
  switch (outcome) {
    case leg_outcome::landed: ++s.stats.landed; break;
    case leg_outcome::nacked: ++s.stats.nacked; break;
    case leg_outcome::abandoned: ++s.stats.abandoned; break;
    case leg_outcome::crashed: ++s.stats.crashed; break;
    case leg_outcome::refused: ++s.stats.refused; break;
  }
  if (s.log.enabled(log::level::debug)) // once per delivery: build the line only if kept
    s.log.debug("leg " + std::to_string(id) + " (" + leg.label + ") terminated: "
                + outcome_name(outcome));
  bool ordered = leg.ordered;
  s.legs.erase(i);
  if (outcome != leg_outcome::refused && end_in_pool)
    pool_ended(self, id);
  if (!ordered)
    return;
  std::optional<ordering_channel> channel;
  if (!s.drain_waiters.empty())
    channel = s.disp.channel_of(id);
  if (auto next = s.disp.on_terminal(id)) {
    auto j = s.legs.find(*next);
    if (j == s.legs.end() || !j->second.finished) // an ended head needs no permit
      admit(self, *next);
  }
  if (channel && !s.disp.head_of(*channel)) {
    auto w = s.drain_waiters.find(*channel);
    if (w != s.drain_waiters.end()) {
      auto waiters = std::move(w->second);
      s.drain_waiters.erase(w);
      for (auto& rp : waiters)
        rp.deliver(caf::ok_atom::value);
    }
  }
}

// -- ending legs that will not land ------------------------------------------------------

/// The one NACK of a leg that ends without landing because its silo stops (`finished`
/// false): nothing of it outstanding -> `shutting_down`, resendable; a call or publish in
/// flight -> `failed`, its outcome unknown. Answers the NACK's id (0: none was sent, the
/// delivery is answer-suppressed).
uint64_t stop_nack(pointer self, leg_rec& leg, bool direct) {
  auto& s = self->state;
  if (is_failed_and_nacked(leg.env))
    return 0; // its sender was answered already; the slot goes with the leg
  auto target = leg.env.target.to_string();
  leg.slot_owned = false;
  if (is_continuation(leg.env) && leg.env.payload_type != delivery_failure_payload_type) {
    // A response that will not land: the one waiting for it is its request's sender (its
    // target here), not the hub that answered, which goes with this silo. The NACK answers
    // the request: failed, its outcome unknown (its handler ran). docs/behaviour/quiescence.md
    envelope request;
    request.id = *leg.env.request_id;
    request.sender = leg.env.target;
    request.target = leg.env.sender;
    request.access_context = leg.env.access_context;
    return post_nack(self, request, verdict::failed,
                     "silo " + s.silo_name + " stopped before the response of "
                       + leg.env.sender.to_string() + " to request " + request.id
                       + " left it; the request's outcome is unknown",
                     false, caf::none, leg.id, false, direct);
  }
  auto v = leg.in_flight ? verdict::failed : verdict::shutting_down;
  auto text = leg.in_flight ? "silo " + s.silo_name + " stopped while the delivery to " + target
                                + " was in flight; its outcome is unknown"
                            : "silo " + s.silo_name + " stopped before the delivery to " + target
                                + " was attempted";
  return via_entry_client(
    self, post_nack(self, leg.env, v, text, false, caf::none, leg.id, false, direct), leg);
}

/// Arms the bound within which the NACKs of a stop must leave (unless one is armed).
void arm_release_bound(pointer self) {
  auto& s = self->state;
  if (s.release_gen != 0)
    return;
  s.release_gen = ++s.release_gen_seq;
  self->delayed_send(self, ms(std::max<int64_t>(0, s.opts.release_bound_ms)),
                     rc_release_atom::value, s.release_gen);
}

/// The release bound passed: the NACKs still on the ladder could not leave. One error line
/// names their deliveries; they are dropped so the pool's join does not wait for them.
void release_bound_passed(pointer self) {
  auto& s = self->state;
  std::vector<std::string> ids;
  std::vector<uint64_t> jobs;
  for (auto& kv : s.nacks) {
    ids.push_back(kv.second.delivery_id);
    jobs.push_back(kv.first);
  }
  auto unsent = static_cast<uint64_t>(ids.size());
  if (unsent > 0) {
    s.stats.nacks_unsent += unsent;
    s.log.error(std::to_string(unsent) + " NACK(s) could not leave silo " + s.silo_name
                + " within " + routing::render_budget(s.opts.release_bound_ms)
                + " of its stop: " + routing::render_delivery_ids(ids, unsent));
  }
  s.release_gen = 0; // nack_done below must not answer the waiters yet
  for (auto id : jobs)
    nack_done(self, id);
  answer_release(self);
}

/// Ends every accepted leg that has not landed with its one NACK (`q_end_legs`); answers the
/// residual's delivery ids: those legs, then the NACKs already on their ladder.
std::vector<std::string> end_unlanded_legs(pointer self, const std::string& why) {
  auto& s = self->state;
  std::vector<std::string> residual;
  std::vector<std::string> earlier_nacks;
  for (auto& kv : s.nacks)
    earlier_nacks.push_back(kv.second.delivery_id);
  std::vector<uint64_t> ids;
  for (auto& kv : s.legs)
    if (!kv.second.finished && s.latch.is_open(kv.first))
      ids.push_back(kv.first);
  uint64_t before = 0;
  uint64_t in_flight = 0;
  for (auto id : ids) {
    auto& leg = s.legs.at(id);
    (leg.in_flight ? in_flight : before) += 1;
    residual.push_back(leg.env.id);
    stop_nack(self, leg, false);
    finish_leg(self, leg, leg_outcome::nacked);
    ++s.stats.ended_by_release;
  }
  if (!ids.empty())
    s.log.warning("router core: " + why + ": ended " + std::to_string(ids.size())
                  + " leg(s) that had not landed, each with one NACK (" + std::to_string(before)
                  + " before the delivery was attempted, " + std::to_string(in_flight)
                  + " in flight)");
  residual.insert(residual.end(), earlier_nacks.begin(), earlier_nacks.end());
  return residual;
}

// -- the end of a turn ----------------------------------------------------------------------

/// A start permit for `id` (granted by the core itself or by the pool).
void on_admitted(pointer self, uint64_t id) {
  auto& s = self->state;
  auto i = s.legs.find(id);
  if (i != s.legs.end()) {
    if (!i->second.started && !i->second.finished && s.latch.is_open(id))
      leg_start(self, i->second);
    return;
  }
  if (s.nacks.count(id) != 0)
    nack_start(self, id);
}

/// Runs the work the turn left, first in first out; what it leaves in turn joins the queue
/// (no recursion: S12.41, docs/behaviour/routing.md#one-turn-per-step).
void run_work(pointer self) {
  auto& s = self->state;
  while (!s.work.empty()) {
    auto w = s.work.front();
    s.work.pop_front();
    if (w.kind == turn_work::admitted)
      on_admitted(self, w.id);
    else if (s.latch.settle(w.id, routing::leg_terminal::done))
      leg_terminal(self, w.id, static_cast<leg_outcome>(w.outcome));
  }
}

// -- accepting ------------------------------------------------------------------------------------
// docs/behaviour/routing.md#the-router-core

/// Admission control: the router core already holds `routing.max_in_flight` legs and
/// `env` is new work. A continuation (a response or a NACK) answers work some router core
/// already accepted, so refusing it would strand that work: continuations are always
/// admitted, and they are bounded by the requests that were admitted.
/// The legs admission control counts: in flight, less those parked on a departed silo.
uint64_t admitted_in_flight(pointer self) {
  auto& s = self->state;
  auto n = s.sat.in_flight();
  return n > s.parked_legs ? n - s.parked_legs : 0;
}

bool over_bound(pointer self, const envelope& env) {
  if (is_continuation(env))
    return false;
  auto& s = self->state;
  auto bound = s.opts.routing.max_in_flight;
  return bound > 0 && admitted_in_flight(self) >= static_cast<uint64_t>(bound);
}

std::string overload_text(pointer self) {
  auto& s = self->state;
  return "silo " + s.silo_name + " overloaded: " + std::to_string(admitted_in_flight(self))
         + " deliveries in flight (routing.max_in_flight " + std::to_string(s.opts.routing.max_in_flight)
         + "); retry after " + std::to_string(s.opts.routing.overload_retry_after_ms) + " ms";
}

/// Refuses a co-hosted delivery at the bound, before acceptance: one NACK `unavailable`
/// whose envelope carries `retry_after_ms`; no leg, no channel, nothing shed.
void refuse_overloaded(pointer self, const envelope& env) {
  auto& s = self->state;
  ++s.stats.refused_overloaded;
  auto text = overload_text(self);
  auto d = s.refusals.record("overloaded", env.sender.to_string(), now_ms(self));
  if (d.log)
    s.log.warning(with_repeats("delivery " + env.id + " to '" + env.target.to_string()
                                 + "' refused: " + text,
                               d));
  if (auto id = post_nack(self, env, verdict::unavailable, text, false, caf::none,
                          std::nullopt, false, true))
    s.nacks.at(id).nack.properties["retry_after_ms"]
      = std::to_string(s.opts.routing.overload_retry_after_ms);
}

bool on_path(const envelope& env, const address& self_addr) {
  for (auto& a : env.routing_path)
    if (a == self_addr)
      return true;
  return false;
}

/// Accepts `env`, which `entry_client` handed to the routing grain (empty: co-hosted or
/// unknown); answers the leg id, or none when it was NACKed as a loop (`loop_nack_posted`
/// tells whether the loop NACK was posted).
std::optional<uint64_t> accept(pointer self, envelope env, bool& loop_nack_posted,
                               const silo_address& entry_client = silo_address{}) {
  auto& s = self->state;
  if (on_path(env, s.opts.self_address)) {
    ++s.stats.routing_loops;
    s.log.warning("routing loop: delivery " + env.id + " to '" + env.target.to_string()
                  + "' came back to " + s.opts.self_address.to_string());
    auto nack = post_nack(self, env, verdict::routing_loop,
                          "Routing loop: delivery to '" + env.target.to_string()
                            + "' came back to router '" + s.opts.self_address.to_string() + "'",
                          false, caf::none, std::nullopt);
    if (nack != 0 && !entry_client.empty())
      s.nacks.at(nack).entry_client = entry_client;
    loop_nack_posted = nack != 0;
    return std::nullopt;
  }
  env.routing_path.push_back(s.opts.self_address);
  leg_rec leg;
  leg.id = s.next_id++;
  leg.host = host_address(env.target, s.opts.mesh_type);
  leg.host_path = leg.host.path();
  leg.ordered = s.stream_routed.count(leg.host.type) != 0;
  if (leg.ordered)
    leg.kind = leg_kind::pod_hub;
  else if (s.client_hosted.count(leg.host.type) != 0)
    leg.kind = leg_kind::stream;
  else
    leg.kind = leg_kind::node;
  leg.label = leg.ordered ? routing::stream_routed_label(leg.host_path, env.id)
                          : routing::dispatch_label(leg.host_path, env.id);
  leg.env = std::move(env);
  leg.entry_client = entry_client;
  auto id = leg.id;
  s.latch.arm(id);
  gauge_track(self, id, leg.label, routing::slot_state::queued);
  ++s.stats.accepted;
  leg.accepted_ms = now_ms(self);
  bool ordered = leg.ordered;
  // Only the stream-routed branch has a channel (docs/behaviour/routing.md#the-ordered-dispatcher);
  // the node branch builds none.
  std::optional<ordering_channel> channel;
  if (ordered)
    channel = make_channel(leg.host_path, leg.env.ordering_key ? *leg.env.ordering_key
                                                               : std::string{});
  s.legs.emplace(id, std::move(leg));
  log_sat(self, s.sat.accept(id, leg_phase::queued, now_ms(self)));
  if (!ordered || s.disp.enqueue(*channel, id))
    admit(self, id);
  return id;
}

impl_actor::behavior_type router_core(pointer self, router_core_options opts) {
  auto& s = self->state;
  if (opts.self_address.empty())
    opts.self_address = default_router_address(opts.silo);
  s.silo_name = opts.silo.to_string();
  s.log = log::get("router_core").with_context(s.silo_name);
  s.policy = router_policy(opts.routing);
  s.disp = ordered_route_dispatcher{opts.per_channel_fifo};
  if (!opts.per_channel_fifo)
    s.log.warning("per-channel FIFO disabled (test-only negative control, S12.57)");
  s.sat = saturation_monitor(opts.routing);
  s.refusals = refusal_log(opts.routing);
  s.stream_routed.insert(opts.routing.stream_routed_address_types.begin(),
                         opts.routing.stream_routed_address_types.end());
  s.client_hosted.insert(opts.routing.client_hosted_address_types.begin(),
                         opts.routing.client_hosted_address_types.end());
  s.opts = std::move(opts);
  // Own start permits only where configured: with them the simulated overlapping stops
  // (S13.10, seeds 4 and 8) changed, one losing deliveries; the cause is not found yet
  // (docs/behaviour/quiescence.md#admission-inside-the-router-core).
  s.admits_itself = s.opts.own_start_permits || !s.opts.pool;
  if (s.opts.pool && s.opts.own_start_permits)
    self->send(s.opts.pool, routing::pool_attach_atom::value, owner_of(self));
  return {
    // -- public protocol --
    [=](rc_route_atom, envelope& env) {
      turn_scope turn{self};
      if (over_bound(self, env)) {
        refuse_overloaded(self, env);
        return;
      }
      bool posted = false;
      if (accept(self, std::move(env), posted))
        ++self->state.stats.accepted_co_hosted;
    },
    [=](rc_grain_atom, envelope& env, const silo_address& client) -> caf::result<envelope> {
      turn_scope turn{self};
      auto& s = self->state;
      if (s.stopping) {
        ++s.stats.refused_stopping;
        fault f{mesh_errc::silo_unavailable,
                "silo " + s.silo_name + " is leaving; route elsewhere"};
        f.silo = s.opts.silo;
        return to_error(f);
      }
      if (over_bound(self, env)) {
        ++s.stats.refused_overloaded;
        fault f{mesh_errc::overloaded, overload_text(self)};
        f.retry_after_ms = static_cast<uint32_t>(s.opts.routing.overload_retry_after_ms);
        f.silo = s.opts.silo;
        return to_error(f);
      }
      auto answer = env;
      bool posted = false;
      if (accept(self, std::move(env), posted, client)) {
        answer.state = delivery_state::forwarded;
        answer.routing_path.push_back(s.opts.self_address);
        return answer;
      }
      if (posted) {
        mark_failed_and_nacked(answer);
      } else {
        answer.state = delivery_state::failed;
        answer.properties["error"] = json_quote("Routing loop at router '"
                                                + s.opts.self_address.to_string() + "'");
      }
      return answer;
    },
    [=](lifecycle::host_stopping_atom) -> caf::ok_atom {
      turn_scope turn{self};
      auto& s = self->state;
      if (!s.stopping) {
        s.stopping = true;
        // From now on the participant reads the gauge: every turn publishes its delta.
        s.acct.set_eager();
        s.log.info("router core: stopping signal received; " + std::to_string(s.sat.in_flight())
                   + " leg(s) in flight continue, grain-path deliveries are refused");
      }
      return caf::ok_atom::value;
    },
    [=](routing::q_end_legs_atom,
        std::string& why) -> caf::result<std::vector<std::string>> {
      turn_scope turn{self};
      auto& s = self->state;
      auto residual = end_unlanded_legs(self, why);
      if (!s.nacks.empty())
        arm_release_bound(self);
      return residual;
    },
    [=](routing::q_nacks_out_atom) -> caf::result<caf::ok_atom> {
      turn_scope turn{self};
      auto& s = self->state;
      if (s.nacks.empty())
        return caf::ok_atom::value;
      auto rp = self->make_response_promise<caf::ok_atom>();
      s.release_waiters.push_back(rp);
      arm_release_bound(self);
      return rp;
    },
    [=](rc_release_atom, uint64_t gen) {
      turn_scope turn{self};
      if (gen != 0 && gen == self->state.release_gen)
        release_bound_passed(self);
    },
    [=](rc_locals_atom, local_route_port_actor& port) {
      turn_scope turn{self};
      self->state.opts.local_routes = std::move(port);
    },
    [=](rc_sync_atom) { return caf::ok_atom::value; },
    [=](rc_drained_atom, std::string& destination,
        const std::string& key) -> caf::result<caf::ok_atom> {
      turn_scope turn{self};
      auto& s = self->state;
      auto channel = make_channel(std::move(destination), key);
      if (!s.disp.head_of(channel))
        return caf::ok_atom::value;
      auto rp = self->make_response_promise<caf::ok_atom>();
      s.drain_waiters[channel].push_back(rp);
      return rp;
    },
    [=](rc_stats_atom) -> router_core_stats {
      turn_scope turn{self};
      auto& s = self->state;
      auto out = s.stats;
      out.in_flight = s.sat.in_flight();
      out.nacks_alive = s.nacks.size();
      out.stopping = s.stopping;
      out.saturation_latched = s.sat.latched();
      out.saturation_reports = s.sat.reports();
      auto ages = s.sat.ages(now_ms(self));
      out.oldest_dispatched_age_ms = ages.oldest_dispatched_age_ms ? *ages.oldest_dispatched_age_ms : -1;
      out.oldest_queued_age_ms = ages.oldest_queued_age_ms ? *ages.oldest_queued_age_ms : -1;
      auto snap = s.disp.snapshot();
      out.channels = snap.channels;
      out.destinations = snap.destinations;
      out.deepest = snap.deepest;
      out.deepest_channel = snap.deepest_channel;
      out.max_dispatch_depth = s.disp.max_depth();
      for (auto& kv : s.legs) {
        out.in_flight_ids.push_back(kv.second.env.id);
        if (!kv.second.started && !kv.second.finished)
          ++out.queued;
      }
      return out;
    },
    // -- internal --
    [=](rc_flush_atom) {
      turn_scope turn{self};
      auto& s = self->state;
      s.flush_armed = false;
      run_work(self);
      publish_delta(self);
    },
    [=](rc_forget_atom, const std::string& host_path) {
      turn_scope turn{self};
      self->state.resolved.forget(host_path);
    },
    [=](mb_snapshot_atom, const membership_snapshot& v) {
      turn_scope turn{self};
      auto& s = self->state;
      if (v.version != s.membership_version) {
        s.membership_version = v.version;
        s.resolved.clear();
      }
    },
    [=](routing::pool_handover_atom) -> std::vector<uint64_t> {
      // The pool's drain takes the core's legs over
      // (docs/behaviour/quiescence.md#admission-inside-the-router-core).
      turn_scope turn{self};
      auto& s = self->state;
      run_work(self);
      std::vector<uint64_t> ids;
      if (!s.admits_itself)
        return ids;
      s.admits_itself = false;
      for (auto& kv : s.legs)
        if (kv.second.pooled)
          ids.push_back(kv.first);
      for (auto& kv : s.nacks)
        if (kv.second.pooled)
          ids.push_back(kv.first);
      return ids;
    },
    [=](rc_deadline_atom, int64_t due_ms) { expire_deadlines(self, due_ms); },
    [=](rc_sat_lasting_atom) { log_sat(self, self->state.sat.lasting(now_ms(self))); },
    [=](rc_timer_atom, uint64_t id, uint64_t tok) {
      turn_scope turn{self};
      if (auto leg = find_leg(self, id, tok)) {
        unpark(self, *leg);
        leg_attempt(self, leg->id);
        return;
      }
      if (auto job = find_nack(self, id, tok))
        if (job->at == rung::node_hub)
          nack_node_attempt(self, id);
    },
    // -- pool owner protocol (docs/behaviour/quiescence.md#the-routing-io-pool) --
    [=](routing::pool_admitted_atom, uint64_t id) { on_admitted(self, id); },
    [=](routing::pool_refused_atom, uint64_t id, caf::error& err) {
      turn_scope turn{self};
      auto& s = self->state;
      auto i = s.legs.find(id);
      if (i != s.legs.end()) {
        if (!s.latch.settle(id, routing::leg_terminal::cancelled))
          return;
        auto& leg = i->second;
        auto f = to_fault(err);
        s.log.info("leg " + std::to_string(id) + " (" + leg.label + ") refused by the pool: "
                   + f.render());
        if (!leg.finished && !is_failed_and_nacked(leg.env)) {
          if (s.stopping) {
            // The silo stops and the draining pool will not run it: one NACK, started
            // without a permit, before the delivery was attempted.
            if (stop_nack(self, leg, true) != 0)
              arm_release_bound(self);
          } else {
            leg.slot_owned = false;
            via_entry_client(self,
                             post_nack(self, leg.env, verdict::failed,
                                       before_attempt_text(leg, f.render()), false, caf::none,
                                       id),
                             leg);
          }
        }
        leg_terminal(self, id, leg_outcome::refused);
        return;
      }
      auto j = s.nacks.find(id);
      if (j != s.nacks.end()) {
        ++s.stats.nacks_pool_refused;
        s.log.debug("NACK to " + j->second.sender + " (delivery " + j->second.delivery_id
                    + ") not sent: " + to_fault(err).render());
        gauge_release(self, j->second.slot);
        s.nacks.erase(j);
      }
    },
    [=](routing::pool_cancel_atom, uint64_t id) {
      turn_scope turn{self};
      auto& s = self->state;
      if (s.legs.count(id) != 0) {
        if (s.latch.settle(id, routing::leg_terminal::cancelled)) {
          auto& leg = s.legs.at(id);
          uint64_t nack = 0;
          // In a silo stop (the stopping signal came first) the leg gets its one NACK; a
          // drain outside a stop abandons it silently as before.
          if (s.stopping && !leg.finished && !is_failed_and_nacked(leg.env)) {
            nack = stop_nack(self, leg, true);
            if (nack != 0) {
              s.nacks.at(nack).pool_leg_id = id;
              arm_release_bound(self);
            }
          }
          s.log.info("leg " + std::to_string(id) + " (" + leg.label
                     + ") abandoned by the pool drain; "
                     + (nack != 0 ? "NACKed" : "no NACK"));
          leg_terminal(self, id, leg_outcome::abandoned, nack == 0);
        }
        return;
      }
      if (s.nacks.count(id) != 0) {
        // Still on its ladder (a local route may yet take it); if it has not left when the
        // release bound passes, that bound's error line names it and drops it.
        s.log.info("NACK to " + s.nacks.at(id).sender + " (delivery "
                   + s.nacks.at(id).delivery_id + ") cancelled by the pool drain");
        arm_release_bound(self);
      }
    },
    [=](routing::pool_down_atom, uint64_t id, caf::error& reason) {
      turn_scope turn{self};
      auto& s = self->state;
      auto i = s.legs.find(id);
      if (i != s.legs.end()) {
        if (!s.latch.settle(id, routing::leg_terminal::down))
          return;
        auto& leg = i->second;
        s.log.error("leg " + std::to_string(id) + " (" + leg.label + ") crashed: "
                    + self->system().render(reason));
        if (!leg.finished && !is_failed_and_nacked(leg.env)) {
          leg.slot_owned = false;
          via_entry_client(
            self,
            post_nack(self, leg.env, verdict::failed,
                      before_attempt_text(leg, "leg crashed: " + self->system().render(reason)),
                      false, caf::none, id),
            leg);
        }
        leg_terminal(self, id, leg_outcome::crashed);
        return;
      }
      if (s.nacks.count(id) != 0)
        nack_done(self, id);
    },
  };
}

} // namespace

router_core_actor spawn_router_core(caf::actor_system& sys, router_core_options opts) {
  return caf::actor_cast<router_core_actor>(sys.spawn(router_core, std::move(opts)));
}

} // namespace cafmesh::routing
