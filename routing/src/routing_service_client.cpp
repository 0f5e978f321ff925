#include "cafmesh/routing/routing_service.hpp"

#include <algorithm>
#include <chrono>
#include <limits>
#include <optional>
#include <utility>

#include <caf/all.hpp>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/placement_atoms.hpp"
#include "cafmesh/routing/classify.hpp"
#include "cafmesh/routing/dispatch_batch.hpp"
#include "cafmesh/routing/entry_atoms.hpp"
#include "cafmesh/routing/size_guard.hpp"
#include "routing_service_parts.hpp"
#include "cafmesh/routing/detail/routing_service_state.hpp"

// The pure client backend of the routing service: its gateway, its inbound attaches and
// its dispatches through the gateway (routing_service_parts.hpp).

namespace cafmesh::routing::routing_service_detail {

using cafmesh::routing::detail::client_dispatch;
using cafmesh::routing::detail::inbound_route;

// -- pure client ---------------------------------------------------------------------

namespace {

void reassert_all(rs_actor* self, bool idle_only);

} // namespace

/// Picks a gateway if there is none (docs/behaviour/membership.md#gateways-for-pure-clients: at
/// random from the active set, avoiding gateways that refused or said stop-send while another
/// exists) and connects to it.
void ensure_gateway(rs_actor* self) {
  auto& st = self->state;
  if (!st.gateway.empty() || st.gateways.empty())
    return;
  std::vector<silo_address> usable;
  std::vector<silo_address> fresh;
  for (auto& g : st.gateways) {
    if (st.lost.count(g) > 0)
      continue; // its connection broke: never again, even if it is the only one
    usable.push_back(g);
    if (st.avoided.count(g) == 0)
      fresh.push_back(g);
  }
  if (usable.empty())
    return;
  auto& pool = fresh.empty() ? usable : fresh;
  st.gateway = pool[st.rng() % pool.size()];
  if (st.opts.inbound_attach && st.opts.centre) {
    st.log.info("homed on gateway " + st.gateway.to_string());
    self->send(st.opts.centre, mc_send_atom::value, st.gateway, component::gateway,
               caf::make_message(gw_connect_atom::value, st.opts.self_silo));
  }
}

/// Drops gateway `gw` if it is the current one (re-homing,
/// docs/behaviour/membership.md#gateways-for-pure-clients): it is avoided while another Active
/// gateway exists, and every inbound path is attached again elsewhere.
void drop_gateway(rs_actor* self, const silo_address& gw, const std::string& why) {
  auto& st = self->state;
  if (gw.empty())
    return;
  st.avoided.insert(gw);
  if (st.gateway != gw)
    return;
  ++st.stats.rehomes;
  st.log.info("re-homing away from gateway " + gw.to_string() + ": " + why);
  st.gateway = silo_address{};
  reassert_all(self, true);
}

bool no_usable_gateway(rs_actor* self) {
  auto& st = self->state;
  if (!st.view || !st.gateway.empty())
    return false; // no view yet: the first snapshot is still on its way
  for (auto& g : st.gateways)
    if (st.lost.count(g) == 0)
      return false;
  return true;
}

std::string no_active_silo_text(rs_actor* self) {
  auto& st = self->state;
  return "no active silo: client " + st.opts.process_name
         + " knows no Active silo to use as its gateway (membership v"
         + std::to_string(st.view ? st.view->version : 0)
         + "; the last silo stopped, or none has started); send again once a silo is Active";
}

namespace {

/// A gateway call that failed this way says the gateway `gw` cannot serve this client now:
/// it refused (`silo_unavailable`), is gone (`departed_silo`), or did not answer in time
/// (`response_timeout`: cafmesh goes further than
/// docs/behaviour/membership.md#gateways-for-pure-clients, a stalled gateway that the failure
/// detector has not caught is left like a stopping one). Only a node about `gw` itself (or about no
/// silo in particular) counts: a healthy gateway that reports the departure of another silo it
/// tried to reach keeps this client. The `retry_after_ms` of an `overloaded` node anywhere in `f`,
/// if there is one.
std::optional<uint32_t> overload_hint_ms(const fault& f) {
  if (f.code == mesh_errc::overloaded && f.retry_after_ms)
    return *f.retry_after_ms;
  for (auto& c : f.causes)
    if (auto h = overload_hint_ms(c))
      return h;
  return std::nullopt;
}

bool gateway_failed(const fault& f, const silo_address& gw) {
  bool hit = false;
  auto visit = [&](const fault& n, auto& self_ref) -> void {
    if (hit)
      return;
    if ((n.code == mesh_errc::silo_unavailable || n.code == mesh_errc::departed_silo
         || n.code == mesh_errc::response_timeout)
        && (!n.silo || *n.silo == gw)) {
      hit = true;
      return;
    }
    for (auto& c : n.causes)
      self_ref(c, self_ref);
  };
  visit(f, visit);
  return hit;
}

bool any_first_pending(rs_actor* self) {
  for (auto& kv : self->state.inbound)
    if (kv.second.first)
      return true;
  return false;
}

/// Starts the dispatches that waited for a first attach, in arrival order, once no first
/// assertion is pending (docs/behaviour/routing.md#the-entry: dispatch no longer waits after the
/// attach completed).
void release_gate(rs_actor* self) {
  auto& st = self->state;
  if (any_first_pending(self))
    return;
  auto waiting = std::move(st.gated);
  st.gated.clear();
  dispatch_scope scope{self}; // they leave as one batch
  for (auto id : waiting)
    client_attempt(self, id);
}

/// The current assertion of `key` completed (attached, refused or given up).
void attach_done(rs_actor* self, const std::string& key) {
  auto& st = self->state;
  auto i = st.inbound.find(key);
  if (i == st.inbound.end() || !i->second.first)
    return;
  i->second.first = false;
  release_gate(self);
}

void attach_attempt(rs_actor* self, const std::string& key);

void attach_failed(rs_actor* self, const std::string& key, uint64_t tok, const fault& f,
                   const silo_address& gw) {
  auto& st = self->state;
  auto i = st.inbound.find(key);
  if (i == st.inbound.end() || i->second.token != tok)
    return;
  i->second.attached = false;
  bool gave_up_before = i->second.retry.given_up();
  auto d = i->second.retry.next(f);
  auto attempts = i->second.retry.attempts() - (d.retry ? 1 : 0);
  // A failed gateway (refusing, departed, silent) is dropped; this path stays busy and
  // retries below (on the next gateway), the idle paths re-attach at once.
  if (gateway_failed(f, gw))
    drop_gateway(self, gw, f.render());
  i = st.inbound.find(key);
  if (i == st.inbound.end())
    return;
  if (!d.retry) {
    i->second.busy = false;
    if (d.reason == give_up_reason::runtime_gone || contains_code(f, mesh_errc::runtime_gone)) {
      ++st.stats.attach_gave_up;
      st.log.error("inbound attach of " + key + " gave up after " + std::to_string(attempts)
                   + " attempt(s): " + f.render());
      attach_done(self, key);
      return;
    }
    // SPEC §15 C3: an assertion that gave up is made again every `attach.retry_cap_ms` while
    // this client runs. The next membership view may never come (a silo restarted on its
    // address before the last one), and an unattached path makes every response leg to it
    // place a pod hub that is not here. One error line per assertion; the attempts after it
    // log at debug. A view or a re-homing starts a fresh assertion at once.
    // docs/behaviour/routing.md#hubs
    auto again_ms = std::max<int64_t>(i->second.retry.policy().cap_ms, 1);
    if (!gave_up_before) {
      ++st.stats.attach_gave_up;
      st.log.error("inbound attach of " + key + " gave up after " + std::to_string(attempts)
                   + " attempt(s): " + f.render() + "; attaching again every "
                   + std::to_string(again_ms) + " ms until it attaches");
    } else {
      st.log.debug("inbound attach of " + key + " failed again (" + f.render()
                   + "); next attempt in " + std::to_string(again_ms) + " ms");
    }
    auto token = i->second.token;
    attach_done(self, key);
    self->delayed_send(self, std::chrono::milliseconds(again_ms), rs_attach_retry_atom::value, key,
                       token);
    return;
  }
  st.log.debug("inbound attach of " + key + " failed (" + f.render() + "); retry in "
               + std::to_string(d.delay_ms) + " ms");
  self->delayed_send(self, std::chrono::milliseconds(d.delay_ms), rs_attach_retry_atom::value, key,
                     i->second.token);
}

/// Inbound path `key` if an assertion of it may run now; null if it is gone, or after the
/// stopping signal (its assertion completes then: nothing is attached any more).
inbound_route* assertable(rs_actor* self, const std::string& key) {
  auto& st = self->state;
  auto i = st.inbound.find(key);
  if (i == st.inbound.end())
    return nullptr;
  if (st.stopping) {
    attach_done(self, key);
    return nullptr;
  }
  return &i->second;
}

void attach_attempt(rs_actor* self, const std::string& key) {
  auto& st = self->state;
  auto* path = assertable(self, key);
  if (path == nullptr)
    return;
  auto& r = *path;
  auto tok = ++r.token;
  r.busy = true;
  keep_newest(r.attempt_ms, now_ms(self), st.opts.client.attempt_record_max);
  ++st.stats.attach_attempts;
  ensure_gateway(self);
  if (st.gateway.empty() || !st.opts.centre) {
    fault f{mesh_errc::no_compatible_silo,
            "no active silo is compatible with grain type podhub (interface version 1); "
            "no Active gateway silo is known to this client"};
    attach_failed(self, key, tok, f, silo_address{});
    return;
  }
  auto gw = st.gateway;
  auto call = make_call(gw, component::gateway, gw_attach_atom::value, st.opts.self_silo, r.addr);
  auto bound
    = std::chrono::milliseconds(st.opts.placement_timeout_ms + st.opts.grain_response_timeout_ms);
  self->request(st.opts.centre, bound, std::move(call))
    .then(
      [=](bool ok) {
        auto& st = self->state;
        auto j = st.inbound.find(key);
        if (j == st.inbound.end() || j->second.token != tok)
          return;
        auto& r = j->second;
        r.attached = ok;
        r.busy = false;
        if (ok) {
          ++st.stats.attach_ok;
          r.at = gw;
          keep_newest(r.attached_at, gw, st.opts.client.attempt_record_max);
          keep_newest(r.attached_ms, now_ms(self), st.opts.client.attempt_record_max);
          st.log.info("inbound path " + key + " attached at gateway " + gw.to_string());
        } else {
          st.log.warning("inbound attach of " + key + " refused by gateway " + gw.to_string());
        }
        attach_done(self, key);
      },
      [=](caf::error& e) { attach_failed(self, key, tok, to_fault(e), gw); });
}

/// Starts a fresh assertion of `key` (new attach budget).
void assert_attach(rs_actor* self, const std::string& key) {
  auto& st = self->state;
  auto* path = assertable(self, key);
  if (path == nullptr)
    return;
  path->retry = retry_state{attach_policy(st.opts.attach, st.opts.placement_timeout_attempts)};
  attach_attempt(self, key);
}

/// Asserts every inbound path again; with `idle_only`, only the paths not in an
/// assertion right now (re-homing: a busy path's own next attempt goes to the new gateway).
void reassert_all(rs_actor* self, bool idle_only) {
  std::vector<std::string> keys;
  for (auto& kv : self->state.inbound)
    if (!idle_only || !kv.second.busy)
      keys.push_back(kv.first);
  for (auto& k : keys)
    assert_attach(self, k);
}

/// Takes dispatch `dsp`'s gateway call (if any) off the call deadlines.
void end_call(rs_actor* self, uint64_t id, client_dispatch& dsp) {
  if (dsp.call_due_ms > 0)
    self->state.call_deadlines.remove(dsp.call_due_ms, id);
  dsp.call_due_ms = 0;
}

/// Dispatch `id`, if its gateway call `tok` is still the one in progress: its answer or
/// failure counts; null once the call ended (timed out, or the dispatch ended).
client_dispatch* live_call(rs_actor* self, uint64_t id, uint64_t tok) {
  auto& st = self->state;
  auto i = st.dispatches.find(id);
  if (i == st.dispatches.end() || i->second.token != tok || i->second.call_due_ms == 0)
    return nullptr;
  return &i->second;
}

/// `gw` accepted the dispatch `id` (`gw` empty on failure). A failure is NACKed with the
/// verdict `classify(*f)` unless `forced` gives one.
void client_finish(rs_actor* self, uint64_t id, bool ok, const fault* f,
                   const silo_address& gw = silo_address{},
                   std::optional<verdict> forced = std::nullopt) {
  auto& st = self->state;
  auto i = st.dispatches.find(id);
  if (i == st.dispatches.end())
    return;
  auto& dsp = i->second;
  auto took = now_ms(self) - dsp.started_ms;
  if (took > st.opts.client.slow_dispatch_log_ms)
    st.log.info("slow dispatch of delivery " + dsp.env.id + " to '" + dsp.env.target.to_string()
                + "': " + std::to_string(took) + " ms over " + std::to_string(dsp.attempt_ms.size())
                + " attempt(s)");
  if (ok) {
    ++st.stats.client_accepted;
    if (dsp.deadline_ms > now_ms(self) && !gw.empty() && may_answer(dsp.env)) {
      st.held.hold(dsp.env, gw, dsp.deadline_ms, now_ms(self));
    }
  } else {
    ++st.stats.client_failed;
    auto target = dsp.env.target.to_string();
    if (!may_answer(dsp.env)) {
      auto text = f ? f->render() : std::string{};
      st.log.info("answer-suppressed delivery " + dsp.env.id + " to '" + target
                  + "' failed: " + text);
      if (st.opts.failure_observer)
        self->send(st.opts.failure_observer, ep_event_atom::value, std::string{"suppressed"},
                   dsp.env.id, static_cast<uint8_t>(f ? classify(*f) : verdict::failed),
                   "Delivery to '" + target + "' failed: " + text);
    } else {
      bool posted;
      if (st.stopping) {
        posted = post_local_nack(self, dsp.env, verdict::shutting_down,
                                 "Host is shutting down, cannot route to " + target);
      } else {
        auto v = forced ? *forced : (f ? classify(*f) : verdict::failed);
        posted = post_local_nack(self, dsp.env, v,
                                 "Delivery to '" + target + "' failed: "
                                   + (f ? f->render() : std::string{"unknown fault"}));
      }
      if (!posted)
        st.log.error("dispatch of delivery " + dsp.env.id + " to '" + target
                     + "' failed and its sender has no local route here: "
                     + (f ? f->render() : std::string{}));
    }
  }
  end_call(self, id, dsp);
  auto ch = std::move(dsp.channel);
  st.dispatches.erase(i);
  if (ch)
    channel_finish(self, id, *ch, ok ? gw : silo_address{});
}

/// Ends dispatch `id` at once with one NACK `unavailable` "no active silo" (SPEC C5): no
/// silo is Active, so waiting out the client retry budget (6.2 s) could only end the same
/// way, and new deliveries would pile up against `gateway.max_outstanding` meanwhile.
void client_end_no_silo(rs_actor* self, uint64_t id) {
  auto& st = self->state;
  ++st.stats.no_silo_nacks;
  fault f{mesh_errc::no_compatible_silo, no_active_silo_text(self)};
  client_finish(self, id, false, &f, silo_address{}, verdict::unavailable);
}

/// True if dispatch `dsp` must end now because no silo is Active: a new request only (SPEC
/// C5). Posts, frames and continuations keep the client retry policy: a silo may become
/// Active within it (S12.27).
bool ends_for_no_silo(rs_actor* self, const client_dispatch& dsp) {
  return dsp.deadline_ms > 0 && !is_continuation(dsp.env) && no_usable_gateway(self);
}

void client_failed_attempt(rs_actor* self, uint64_t id, uint64_t tok, fault f,
                           const silo_address& gw) {
  auto& st = self->state;
  auto i = st.dispatches.find(id);
  if (i == st.dispatches.end() || i->second.token != tok)
    return;
  i->second.in_call = silo_address{};
  end_call(self, id, i->second);
  if (gateway_failed(f, gw))
    drop_gateway(self, gw, f.render());
  // Admission control: a cluster that refused the dispatch as overloaded told its sender when
  // to come back. Retrying inside the client would hide the overload (the delivery's latency
  // grows by every hidden retry), so the refusal goes back to the sender at once, as the NACK
  // `unavailable` with the hint in its text. docs/behaviour/admission-control.md
  if (overload_hint_ms(f)) {
    client_finish(self, id, false, &f);
    return;
  }
  if (ends_for_no_silo(self, i->second)) {
    client_end_no_silo(self, id);
    return;
  }
  auto d = i->second.retry.next(f);
  if (!d.retry) {
    client_finish(self, id, false, &f);
    return;
  }
  self->delayed_send(self, std::chrono::milliseconds(d.delay_ms), rs_retry_atom::value, id,
                     i->second.token);
}

} // namespace

void client_attempt(rs_actor* self, uint64_t id) {
  auto& st = self->state;
  auto i = st.dispatches.find(id);
  if (i == st.dispatches.end())
    return;
  auto& dsp = i->second;
  ensure_gateway(self);
  if (dsp.channel && !channel_allows(self, id, *dsp.channel)) {
    if (!dsp.held)
      ++st.stats.order_held;
    dsp.held = true;
    return;
  }
  dsp.held = false;
  auto tok = ++dsp.token;
  auto now = now_ms(self);
  dsp.attempt_ms.push_back(now);
  record_attempt(st, dsp.env.id, now);
  ++st.stats.client_attempts;
  if (st.gateway.empty() && ends_for_no_silo(self, dsp)) {
    client_end_no_silo(self, id);
    return;
  }
  if (st.gateway.empty() || !st.opts.centre) {
    fault f{mesh_errc::no_compatible_silo,
            "no active silo is compatible with grain type routing (interface version 1); "
            "no Active gateway silo is known to this client"};
    st.log.debug("dispatch of " + dsp.env.id + ": " + f.render());
    client_failed_attempt(self, id, tok, std::move(f), silo_address{});
    return;
  }
  auto gw = st.gateway;
  dsp.in_call = gw;
  auto bound
    = std::chrono::milliseconds(st.opts.placement_timeout_ms + st.opts.grain_response_timeout_ms);
  // The dispatch itself ends before its requester stops waiting, so that a dispatch lost on
  // the wire is NACKed before the deadline too
  // (docs/behaviour/routing.md#a-requests-remaining-time).
  auto within = may_answer(dsp.env) ? answer_within(dsp.deadline_ms, now) : caf::timespan{0};
  if (within > caf::timespan{0})
    bound = std::min(bound, std::chrono::duration_cast<std::chrono::milliseconds>(within));
  // No CAF timeout per call (SPEC §14 B6): the call's deadline joins the others, and one
  // timer armed for the earliest bounds them all (client_call_sweep).
  dsp.call_bound_ms = bound.count();
  dsp.call_due_ms = now + bound.count();
  st.call_deadlines.add(dsp.call_due_ms, id);
  st.call_deadlines.arm(self, rs_call_sweep_atom::value, now_ms(self));
  // The attempt joins the batch for its gateway (docs/behaviour/routing.md#dispatch-batches).
  if (!st.batch.empty() && st.batch_gateway != gw)
    flush_dispatches(self);
  st.batch_gateway = gw;
  st.batch.emplace_back(id, tok);
  if (st.batch.size() >= dispatch_batch_max) {
    flush_dispatches(self);
  } else if (st.batch_scopes == 0) {
    // A lone dispatch leaves at once; with more work waiting, at the latest behind it.
    if (self->mailbox().empty())
      flush_dispatches(self);
    else if (!st.batch_flush_queued) {
      st.batch_flush_queued = true;
      self->send(self, rs_flush_atom::value);
    }
  }
}

dispatch_scope::dispatch_scope(rs_actor* ptr) : self(ptr) {
  ++self->state.batch_scopes;
}

dispatch_scope::~dispatch_scope() {
  if (--self->state.batch_scopes == 0)
    flush_dispatches(self);
}

namespace {

/// Sends `items` (dispatches `sent`, in order) to `gw` as one routing-grain call that lives
/// `ttl_ms`, and ends each item by its verdict.
void send_batch(rs_actor* self, const silo_address& gw, std::vector<dispatch_item> items,
                std::vector<std::pair<uint64_t, uint64_t>> sent, int64_t ttl_ms) {
  auto& st = self->state;
  ++st.stats.client_batches;
  auto call = make_bounded_call(
    std::max<int64_t>(ttl_ms, 1), gw, component::gateway, pl_call_atom::value, routing_grain_id(),
    int32_t{0}, caf::make_message(hg_routes_atom::value, std::move(items), st.opts.self_silo));
  self->request(st.opts.centre, caf::infinite, std::move(call))
    .then(
      [=](dispatch_verdicts& verdicts) {
        dispatch_scope scope{self}; // the dispatches the answers release leave together
        for (size_t i = 0; i < sent.size(); ++i) {
          auto [id, tok] = sent[i];
          if (live_call(self, id, tok) == nullptr)
            continue;
          if (i >= verdicts.size())
            // The gateway took the call: what became of this item is unknown, so it is never
            // sent again (it may have been accepted).
            client_failed_attempt(self, id, tok,
                                  fault{mesh_errc::response_timeout,
                                        "routing/default on gateway " + gw.to_string()
                                          + " answered " + std::to_string(verdicts.size())
                                          + " verdicts for " + std::to_string(sent.size())
                                          + " dispatches"},
                                  gw);
          else if (verdicts[i])
            client_failed_attempt(self, id, tok, to_fault(verdicts[i]), gw);
          else
            client_finish(self, id, true, nullptr, gw);
        }
      },
      [=](caf::error& e) {
        dispatch_scope scope{self};
        auto f = to_fault(e);
        for (auto [id, tok] : sent)
          if (live_call(self, id, tok) != nullptr)
            client_failed_attempt(self, id, tok, f, gw);
      });
}

/// True if a dispatch with `left_ms` of its call bound may share a call whose shortest bound
/// is `min_ms`: the call lives as long as its shortest bound, so an item joins only a call
/// whose bound is within a fifth of its own, and one about to expire goes alone.
bool shares_call(int64_t left_ms, int64_t min_ms) {
  if (left_ms <= call_expiry_margin_ms || min_ms <= call_expiry_margin_ms)
    return false;
  return left_ms * 4 <= min_ms * 5 && min_ms * 4 <= left_ms * 5;
}

} // namespace

void flush_dispatches(rs_actor* self) {
  auto& st = self->state;
  if (st.batch.empty())
    return;
  auto gw = st.batch_gateway;
  auto collected = std::move(st.batch);
  st.batch.clear();
  auto now = now_ms(self);
  // One call lives as long as its shortest bound (no item may start at the gateway after its
  // own caller stopped waiting: docs/behaviour/classification.md, time-to-live), so items of
  // bounds far apart go in consecutive calls, which keep their order.
  std::vector<dispatch_item> items;
  std::vector<std::pair<uint64_t, uint64_t>> sent;
  int64_t min_ms = 0;
  for (auto [id, tok] : collected) {
    auto* dsp = live_call(self, id, tok);
    if (dsp == nullptr || dsp->in_call != gw)
      continue; // ended before it left (its call deadline passed, or it was given up)
    auto left_ms = dsp->call_due_ms - now;
    if (!items.empty() && !shares_call(left_ms, min_ms)) {
      send_batch(self, gw, std::move(items), std::move(sent), min_ms);
      items.clear();
      sent.clear();
    }
    if (items.empty() || left_ms < min_ms)
      min_ms = left_ms;
    auto within = may_answer(dsp->env) ? answer_within(dsp->deadline_ms, now) : caf::timespan{0};
    items.push_back(dispatch_item{dsp->env, within});
    sent.emplace_back(id, tok);
  }
  if (!items.empty())
    send_batch(self, gw, std::move(items), std::move(sent), min_ms);
}

void client_call_sweep(rs_actor* self, int64_t due_ms) {
  auto& st = self->state;
  st.call_deadlines.fire(
    self, rs_call_sweep_atom::value, due_ms, now_ms(self), [self](int64_t due, uint64_t id) {
      auto& st = self->state;
      auto i = st.dispatches.find(id);
      if (i == st.dispatches.end() || i->second.call_due_ms != due)
        return;
      auto& dsp = i->second;
      dsp.call_due_ms = 0;
      auto gw = dsp.in_call;
      fault f{mesh_errc::response_timeout, "routing/default on gateway " + gw.to_string()
                                             + " did not answer: the call timed out after "
                                             + std::to_string(dsp.call_bound_ms) + " ms"};
      client_failed_attempt(self, id, dsp.token, std::move(f), gw);
    });
}

caf::timespan answer_within(int64_t deadline_ms, int64_t now_ms) {
  if (deadline_ms <= 0)
    return caf::timespan{0};
  auto left_ms = deadline_ms - now_ms;
  auto margin_ms = std::min<int64_t>(answer_margin_cap_ms, left_ms / 10);
  return std::chrono::milliseconds(std::max<int64_t>(left_ms - margin_ms, 1));
}

void client_retry(rs_actor* self, uint64_t id, uint64_t tok) {
  auto& st = self->state;
  auto i = st.dispatches.find(id);
  if (tok == 0 || i == st.dispatches.end() || i->second.token != tok)
    return;
  auto ch = i->second.channel;
  client_attempt(self, id);
  if (ch)
    pump_channel(self, *ch); // the dispatches behind it may follow it now
}

envelope client_deliver(rs_actor* self, envelope& d, int64_t deadline_ms) {
  auto& st = self->state;
  // 3. size guard.
  auto chk = check_size(d, size_crossing::grain_call, st.opts.size);
  if (chk.refused) {
    ++st.stats.size_refused;
    log_size_refusal(d, chk);
    auto text = size_refusal_message(d, chk);
    bool posted = post_local_nack(self, d, verdict::rejected, text);
    return refused(std::move(d), posted, text);
  }
  // 3a. no silo (SPEC C5): with no Active silo to use as a gateway, a new request is NACKed
  // `unavailable` "no active silo" at once, before admission, so its sender learns the
  // cause instead of "client overloaded" and nothing piles up waiting for a retry budget.
  bool no_silo = !is_continuation(d) && no_usable_gateway(self);
  if (no_silo && deadline_ms > 0) {
    ++st.stats.no_silo_nacks;
    auto text = "Delivery to '" + d.target.to_string() + "' failed: " + no_active_silo_text(self);
    bool posted = post_local_nack(self, d, verdict::unavailable, text);
    return refused(std::move(d), posted, text);
  }
  // 3b. admission (docs/behaviour/admission-control.md): at the bound the delivery is refused here,
  // before it is accepted, so an offered load above what the cluster carries never queues in
  // a mailbox. Continuations of accepted work are always admitted.
  if (st.opts.max_outstanding > 0 && !is_continuation(d)
      && st.dispatches.size() >= static_cast<size_t>(st.opts.max_outstanding)) {
    // Without a usable gateway the outstanding dispatches are posts and frames waiting for a
    // silo to become Active: say that, not "overloaded" (SPEC C5).
    if (no_silo)
      ++st.stats.no_silo_nacks;
    else
      ++st.stats.refused_overloaded;
    auto text = no_silo ? "Delivery to '" + d.target.to_string()
                            + "' failed: " + no_active_silo_text(self) + " ("
                            + std::to_string(st.dispatches.size())
                            + " deliveries wait for one; retry after "
                            + std::to_string(st.opts.overload_retry_after_ms) + " ms)"
                        : "client " + st.opts.process_name
                            + " overloaded: " + std::to_string(st.dispatches.size())
                            + " dispatches outstanding (gateway.max_outstanding "
                            + std::to_string(st.opts.max_outstanding) + "); retry after "
                            + std::to_string(st.opts.overload_retry_after_ms) + " ms";
    bool posted = post_local_nack(self, d, verdict::unavailable, text,
                                  st.opts.overload_retry_after_ms);
    return refused(std::move(d), posted, text);
  }
  // 4. dispatch through a gateway.
  ++st.stats.client_dispatches;
  auto id = ++st.next_id;
  auto answer = accepted(d);
  client_dispatch dsp;
  dsp.env = std::move(d);
  dsp.deadline_ms = deadline_ms;
  dsp.retry = retry_state{client_policy(st.opts.client, st.opts.placement_timeout_attempts)};
  dsp.started_ms = now_ms(self);
  dsp.channel = dispatch_channel(self, dsp.env);
  if (dsp.channel)
    st.channels[*dsp.channel].pending.push_back(id);
  st.dispatches.emplace(id, std::move(dsp));
  if (!st.gated.empty() || any_first_pending(self)) {
    ++st.stats.gated;
    st.gated.push_back(id);
    return answer;
  }
  client_attempt(self, id);
  return answer;
}

void client_registered(rs_actor* self, const std::string& key, const address& host) {
  auto& st = self->state;
  if (st.opts.inbound_attach && is_stream_routed(self, host) && st.inbound.count(key) == 0
      && !st.stopping) {
    auto& r = st.inbound[key];
    r.addr = host;
    assert_attach(self, key);
  }
}

void client_unregistered(rs_actor* self, const std::string& key) {
  auto& st = self->state;
  auto i = st.inbound.find(key);
  if (i == st.inbound.end())
    return;
  auto at = i->second.at;
  auto path = i->second.addr;
  st.inbound.erase(i);
  if (!at.empty() && st.opts.centre && !st.stopping) {
    auto lg = st.log;
    auto bound
      = std::chrono::milliseconds(st.opts.placement_timeout_ms + st.opts.grain_response_timeout_ms);
    self
      ->request(st.opts.centre, bound,
                make_call(at, component::gateway, gw_detach_atom::value, st.opts.self_silo, path))
      .then([](caf::ok_atom) {},
            [=](caf::error& e) {
              lg.info("detach of " + key + " at gateway " + at.to_string()
                      + " failed: " + to_fault(e).render());
            });
  }
  release_gate(self);
}

void client_reattach(rs_actor* self, const address& a) {
  auto& st = self->state;
  auto key = route_key(self, a);
  if (st.inbound.count(key) == 0)
    return;
  st.log.info("pod hub of " + key + " was deactivated; attaching again");
  assert_attach(self, key);
}

void client_attach_retry(rs_actor* self, const std::string& key, uint64_t tok) {
  auto& st = self->state;
  auto i = st.inbound.find(key);
  if (i == st.inbound.end() || i->second.token != tok)
    return;
  attach_attempt(self, key);
}

void client_home(rs_actor* self, const silo_address& gw) {
  auto& st = self->state;
  if (st.gateway == gw)
    return;
  st.gateway = silo_address{};
  st.avoided.erase(gw);
  auto saved = st.gateways;
  st.gateways = {gw};
  ensure_gateway(self);
  st.gateways = saved.empty() ? std::vector<silo_address>{gw} : saved;
  reassert_all(self, false);
}

void client_snapshot(rs_actor* self, const membership_snapshot& v) {
  auto& st = self->state;
  st.gateways = v.active_set();
  for (auto i = st.avoided.begin(); i != st.avoided.end();) {
    if (!v.is_active(*i))
      i = st.avoided.erase(i);
    else
      ++i;
  }
  if (!st.gateway.empty() && !v.is_active(st.gateway)) {
    st.log.info("gateway " + st.gateway.to_string() + " left the active set; re-homing");
    ++st.stats.rehomes;
    st.gateway = silo_address{};
  }
  // docs/behaviour/routing.md#the-entry, #hubs: every snapshot re-asserts the inbound attaches.
  if (!st.stopping)
    reassert_all(self, false);
  // SPEC C5: no silo is Active any more. Every new request that is not in a call now
  // (waiting for its retry, its channel or a first attach) ends at once with its NACK; one
  // in a call ends when that call fails.
  if (no_usable_gateway(self)) {
    std::vector<uint64_t> ending;
    for (auto& kv : st.dispatches)
      if (kv.second.in_call.empty() && ends_for_no_silo(self, kv.second))
        ending.push_back(kv.first);
    std::sort(ending.begin(), ending.end());
    for (auto id : ending)
      if (st.dispatches.count(id) > 0)
        client_end_no_silo(self, id);
  }
}

void client_stopping(rs_actor* self) {
  auto& st = self->state;
  // Nothing is attached any more; pending first attaches complete now.
  for (auto& kv : st.inbound) {
    ++kv.second.token;
    kv.second.busy = false;
    kv.second.first = false;
  }
  release_gate(self);
}

} // namespace cafmesh::routing::routing_service_detail
