#include "router_core_state.hpp"

#include <algorithm>

#include <caf/send.hpp>

#include "cafmesh/routing/size_guard.hpp"
#include "cafmesh/routing/held_requests.hpp"
#include "landing_report.hpp"

namespace cafmesh::routing::router_core_detail {

// docs/behaviour/routing.md#legs, docs/behaviour/classification.md#retry-policies

namespace {

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
  self
    ->request(s.opts.registry, ms(s.opts.runtime_probe_timeout_ms),
              lifecycle::probe_runtime_atom::value, s.silo_name)
    .then(
      [=](probe_answer a) mutable {
        turn_scope turn{self};
        set_probe(f, a);
        k(std::move(f));
      },
      [=](caf::error&) mutable { k(std::move(f)); });
}

const char* outcome_name(leg_outcome x) {
  switch (x) {
    case leg_outcome::landed: return "landed";
    case leg_outcome::nacked: return "nacked";
    case leg_outcome::abandoned: return "abandoned";
    case leg_outcome::crashed: return "leg_crashed";
    default: return "pool_refused";
  }
}

void composition_fault(pointer self, leg_rec& leg, const std::string& what) {
  self->state.log.warning("delivery " + leg.env.id + ": composition fault: " + what);
  leg_nack(self, leg, verdict::failed, before_attempt_text(leg, what));
}

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
  attempts_of(leg); // its retry state comes with the first failed attempt
  leg_attempt(self, leg.id);
}

/// The fault arm once the retry loop gave up (docs/behaviour/routing.md#legs).
void leg_fault_arm(pointer self, uint64_t id, fault f, retry_decision d) {
  auto& s = self->state;
  auto& leg = s.legs.at(id);
  auto tok = ++leg.token;
  auto attempts = leg.att->retry->attempts();
  self
    ->request(s.opts.grains, ms(s.opts.grain_response_timeout_ms), gp_act_error_atom::value,
              leg.att->grain)
    .then(
      [=](std::string& recorded) {
        turn_scope turn{self};
        auto leg = find_leg(self, id, tok);
        if (leg == nullptr)
          return;
        auto detail = recorded.empty() ? f.render() : recorded;
        auto text = "Delivery to '" + leg->host_path() + "' failed: " + detail;
        bool quiet = runtime_torn_down(f);
        auto line = "delivery " + leg->env.id + " to '" + leg->host_path() + "' NACKed "
                    + to_string(d.verdict) + " after " + std::to_string(attempts) + " attempt(s) ("
                    + to_string(d.reason) + "): " + detail;
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
        auto line = "delivery " + leg->env.id + " to '" + leg->host_path() + "' NACKed "
                    + to_string(d.verdict) + " after " + std::to_string(attempts) + " attempt(s) ("
                    + to_string(d.reason) + "): " + f.render();
        if (quiet)
          self->state.log.info(line);
        else
          self->state.log.warning(line);
        leg_nack(self, *leg, d.verdict,
                 "Delivery to '" + leg->host_path() + "' failed: " + f.render(), false, caf::none,
                 quiet);
      });
}

/// NACKs `leg` `failed` if its requester stops waiting by `at_ms`, before the attempt that
/// would start then (docs/behaviour/routing.md#a-requests-remaining-time); true if it did.
bool nack_if_requester_gone_by(pointer self, leg_rec& leg, int64_t at_ms) {
  if (leg.answer_by_ms() <= 0 || at_ms < leg.answer_by_ms())
    return false;
  ++self->state.stats.requester_time_ran_out;
  auto n = leg.att && leg.att->retry ? leg.att->retry->attempts() : int64_t{1};
  auto text = "Delivery to '" + leg.host_path()
              + "' failed: its requester stops waiting before "
                "attempt "
              + std::to_string(n);
  if (leg.in_flight)
    text += "; the outcome of attempt " + std::to_string(n - 1) + " is unknown";
  leg_nack(self, leg, verdict::failed, text);
  return true;
}

/// A grain attempt of `leg` failed with `f` (probe qualifier filled).
void leg_on_fault(pointer self, uint64_t id, fault f) {
  auto& s = self->state;
  auto& leg = s.legs.at(id);
  auto& att = attempts_of(leg);
  if (!att.retry)
    att.retry = std::make_unique<retry_state>(s.policy);
  // A fault of the node's hub: its path is resolved afresh by the next leg
  // (docs/behaviour/routing.md#cacheable-resolutions).
  if (leg.kind == leg_kind::node)
    s.resolved.forget(leg.host_path());
  if (leg.kind == leg_kind::pod_hub) {
    if (auto n = find_code(f, mesh_errc::pod_hub_not_here)) {
      // Handled before classification (docs/behaviour/routing.md#legs, #hubs).
      if (s.client_hosted.count(leg_host_address(self, leg).type) != 0) {
        s.log.info("delivery " + leg.env.id + ": pod hub for '" + leg.host_path()
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
                   "pod hub for '" + leg.host_path() + "' not here: " + n->text};
      auto probe = *leg.att->retry;
      if (is_continuation(leg.env) && probe.next(moving).retry) {
        ++s.stats.continuation_retries;
        f = std::move(moving);
      } else {
        auto silo = n->silo;
        auto by = silo ? silo->to_string() : std::string{"unknown silo"};
        leg_nack(self, leg, verdict::shutting_down,
                 "No silo serves hub '" + leg.host_path() + "' (answered by " + by + "); retry",
                 true, silo);
        return;
      }
    }
  }
  if (is_continuation(leg.env) && has_response_timeout(f)) {
    // A continuation's attempt got no answer: its receiver keeps one outcome per request
    // (docs/behaviour/routing.md#nacks), so sending it again cannot make a second one, and
    // nobody else would send it. It is retried within the router budget like a refused
    // attempt; an exhausted budget NACKs `failed` with the same text.
    // docs/behaviour/routing.md#continuations-sent-again
    auto probe = *leg.att->retry;
    fault again{mesh_errc::rejected, f.render()};
    if (probe.next(again).retry)
      ++s.stats.continuation_resends;
    f = std::move(again);
  }
  auto d = leg.att->retry->next(f);
  if (d.retry) {
    // At the priority of the leg's attempts (`bounded_request`), so the grain port sees the
    // invalidation before the next attempt whatever its mailbox holds.
    if (d.invalidate_target) {
      auto& grain = leg.att->grain;
      if (!s.local_routes.empty()) {
        auto key = remote_route_key(grain);
        auto r = s.local_routes.find(key);
        if (r != s.local_routes.end())
          forget_local_route(self, key, r->second.tag);
      }
      forget_remote_route(self, grain);
      self->send<caf::message_priority::high>(s.opts.grains, gp_invalidate_atom::value, grain);
    }
    for (auto& silo : d.departed) {
      drop_remote_routes(self, silo);
      self->send<caf::message_priority::high>(s.opts.grains, gp_inval_silo_atom::value, silo);
    }
    s.log.debug("delivery " + leg.env.id + ": attempt "
                + std::to_string(leg.att->retry->attempts() - 1) + " failed (" + f.render()
                + "); retry in " + std::to_string(d.delay_ms) + " ms"
                + (d.re_resolve ? ", re-resolving" : ""));
    if (nack_if_requester_gone_by(self, leg, now_ms(self) + d.delay_ms))
      return;
    // A leg that waits for a departed silo (until membership declares it Dead and the grain
    // is placed anew) holds no resource of this core but its record: it must not make
    // admission refuse the traffic to every healthy silo meanwhile.
    // docs/behaviour/admission-control.md
    if (!d.departed.empty() && !leg.parked) {
      leg.parked = true;
      ++s.parked_legs;
    }
    uint64_t tok = ++leg.token;
    self->delayed_send(self, ms(d.delay_ms), rc_timer_atom::value, id, tok);
    return;
  }
  leg_fault_arm(self, id, std::move(f), std::move(d));
}

/// Node leg step 1: resolve the host path (docs/behaviour/routing.md#legs).
void leg_resolve(pointer self, uint64_t id) {
  auto& s = self->state;
  auto& leg = s.legs.at(id);
  if (!s.opts.resolver) {
    composition_fault(self, leg, "the path resolver is not available");
    return;
  }
  if (auto prefix = s.resolved.find(leg.host_path())) {
    // docs/behaviour/routing.md#cacheable-resolutions
    attempts_of(leg).grain = node_hub_grain(*prefix);
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
        self->state.resolved.put(leg->host_path(), r.node_prefix);
      if (!r.found || !r.remainder.empty()) {
        auto text = "No node found at '" + leg->host_path() + "'";
        if (r.closest_ancestor)
          text += ". Closest ancestor: '" + *r.closest_ancestor + "'";
        leg_nack(self, *leg, verdict::not_found, text);
        return;
      }
      attempts_of(*leg).grain = node_hub_grain(r.node_prefix);
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
               "Path resolution for '" + leg->host_path() + "' failed: " + detail);
    },
    pr_resolve_atom::value, leg.host_path());
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
  self
    ->request(s.opts.streams, ms(s.opts.routing.stream_post_timeout_ms), sp_publish_atom::value,
              leg_host_address(self, leg), routed_env(self, leg))
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
                   "Stream post to '" + leg->host_path() + "' never completed within "
                     + routing::render_budget(self->state.opts.routing.stream_post_timeout_ms));
        else
          leg_nack(self, *leg, verdict::failed,
                   "Stream post to '" + leg->host_path() + "' failed: " + to_fault(e).render());
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
  self
    ->request(s.opts.streams, ms(s.opts.routing.subscriber_probe_timeout_ms), sp_probe_atom::value,
              leg_host_address(self, leg))
    .then(
      [=](bool live) {
        turn_scope turn{self};
        auto leg = find_leg(self, id, tok);
        if (leg == nullptr)
          return;
        if (!live) {
          leg_nack(self, *leg, verdict::not_found,
                   "No live stream subscriber for '" + leg->host_path() + "'", true);
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

/// Counts one leg's latency (acceptance to terminal event) in the histogram of the stats.
void record_latency(router_core_stats& st, int64_t latency_ms) {
  if (st.latency_buckets.empty())
    st.latency_buckets.resize(leg_latency_bounds_ms.size() + 1);
  auto i = std::lower_bound(leg_latency_bounds_ms.begin(), leg_latency_bounds_ms.end(), latency_ms);
  ++st.latency_buckets[static_cast<size_t>(i - leg_latency_bounds_ms.begin())];
  st.latency_sum_ms += latency_ms;
}

} // namespace

std::vector<std::pair<uint64_t, leg_rec*>> legs_in_order(core_state& s) {
  std::vector<std::pair<uint64_t, leg_rec*>> out;
  out.reserve(s.legs.size());
  s.legs.for_each([&](leg_rec& leg) { out.emplace_back(leg.id, &leg); });
  std::sort(out.begin(), out.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  return out;
}

ordering_channel leg_channel(const leg_rec& leg) {
  return make_channel(leg.host_path(),
                      leg.env.ordering_key ? *leg.env.ordering_key : std::string{});
}

address leg_host_address(pointer self, const leg_rec& leg) {
  return host_address(leg.env.target, self->state.opts.mesh_type);
}

std::string leg_label(const leg_rec& leg) {
  return leg.ordered ? routing::stream_routed_label(leg.host_path(), leg.env.id)
                     : routing::dispatch_label(leg.host_path(), leg.env.id);
}

const silo_address& entry_client_of(pointer self, const leg_rec& leg) {
  static const silo_address none;
  if (!leg.has_entry_client)
    return none;
  auto i = self->state.entry_clients.find(leg.id);
  return i != self->state.entry_clients.end() ? i->second : none;
}

bool settle_latch(pointer self, uint64_t id) {
  auto* i = self->state.legs.find(id);
  if (i == nullptr || !i->latch_open)
    return false;
  i->latch_open = false;
  return true;
}

envelope routed_env(pointer self, const leg_rec& leg) {
  auto out = leg.env;
  out.routing_path.push_back(self->state.opts.self_address);
  return out;
}

leg_attempts& attempts_of(leg_rec& leg) {
  if (!leg.att)
    leg.att = std::make_unique<leg_attempts>();
  return *leg.att;
}

leg_rec* find_leg(pointer self, uint64_t id, uint64_t token) {
  auto* i = self->state.legs.find(id);
  if (i == nullptr || i->finished || i->token != token)
    return nullptr;
  return &*i;
}

void unpark(pointer self, leg_rec& leg) {
  if (leg.parked) {
    leg.parked = false;
    --self->state.parked_legs;
  }
}

void finish_leg(pointer self, leg_rec& leg, leg_outcome outcome) {
  unpark(self, leg);
  leg.finished = true;
  ++leg.token;
  push_work(self, turn_work{turn_work::done, leg.id, static_cast<uint8_t>(outcome)});
}

uint64_t via_entry_client(pointer self, uint64_t nack_id, const leg_rec& leg) {
  if (nack_id != 0 && leg.has_entry_client)
    self->state.nacks.at(nack_id).entry_client = entry_client_of(self, leg);
  return nack_id;
}

void leg_nack(pointer self, leg_rec& leg, verdict v, const std::string& text, bool target_unserved,
              caf::optional<silo_address> responding, bool quiet) {
  leg.slot_owned = false;
  via_entry_client(self,
                   post_nack(self, routed_env(self, leg), v, text, target_unserved, responding,
                             leg.id, quiet),
                   leg);
  finish_leg(self, leg, leg_outcome::nacked);
  batch_nack_riders(self, leg, v, text, target_unserved, responding, quiet);
}

std::string before_attempt_text(const leg_rec& leg, const std::string& what) {
  return "Routing to '" + leg.host_path()
         + "' failed before the delivery could be attempted: " + what;
}

void leg_attempt(pointer self, uint64_t id) {
  auto& s = self->state;
  auto& leg = s.legs.at(id);
  auto bound = attempt_timeout(self);
  // A request's attempt ends before its requester stops waiting, so that its NACK reaches
  // the requester first (docs/behaviour/routing.md#a-requests-remaining-time).
  auto now = now_ms(self);
  if (nack_if_requester_gone_by(self, leg, now))
    return;
  if (leg.answer_by_ms() > 0)
    bound = std::min(bound, ms(leg.answer_by_ms() - now));
  // A continuation is sent again when an attempt gets no answer, so its attempt is short
  // (docs/behaviour/routing.md#continuations-sent-again).
  if (is_continuation(leg.env))
    bound = std::min(bound, ms(s.opts.routing.continuation_attempt_timeout_ms));
  if (!leg.batched)
    batch_form(self, leg);
  auto tok = ++leg.token;
  ++s.stats.grain_attempts;
  leg.in_flight = true;
  port_call_send(self, call_for::leg_attempt, id, tok, leg.att->grain, routed_env(self, leg), bound,
                 true, destination_of(self, leg.host_path()));
  batch_send_riders(self, leg, bound);
}

void leg_attempt_result(pointer self, uint64_t id, uint64_t tok, envelope& r) {
  turn_scope turn{self};
  auto leg = find_leg(self, id, tok);
  if (leg == nullptr)
    return;
  if (leg->batched && batch_take_result(self, *leg, tok, r))
    return;
  leg->in_flight = false;
  auto d = judge_result(r);
  switch (d.action) {
    case result_action::landed: {
      // Parsed once, for the per-destination admission and the entry's landing report.
      auto at = landing_of(r);
      if (at && self->state.opts.routing.max_in_flight_per_destination > 0)
        learn_destination(self, leg->host_path(), *at);
      // An activation of another silo that placement resolved: later attempts go to it
      // through the message centre directly (docs/delivery-costs.md#the-remote-frame-path).
      if (at && leg->att)
        if (auto tag = landed_activation_of(r))
          learn_remote_route(self, leg->att->grain, *at, *tag);
      report_landing(self->state.opts.silo, self->state.opts.centre, self->state.opts.local_routes,
                     entry_client_of(self, *leg), leg->env, at);
      finish_leg(self, *leg, leg_outcome::landed);
      return;
    }
    case result_action::already_nacked:
      // the target answered the sender itself: no NACK, the slot goes
      finish_leg(self, *leg, leg_outcome::nacked);
      return;
    default: {
      auto text = d.text.empty()
                    ? "Delivery to '" + leg->host_path() + "' failed: " + to_string(r.state)
                    : d.text;
      leg_nack(self, *leg, d.verdict, text);
      return;
    }
  }
}

void leg_attempt_fault(pointer self, uint64_t id, uint64_t tok, caf::error& e) {
  turn_scope turn{self};
  auto leg = find_leg(self, id, tok);
  if (leg == nullptr)
    return;
  if (leg->batched && batch_take_fault(self, *leg, tok, e))
    return;
  auto f = to_fault(e);
  // Without an answer the target may still hold the delivery.
  leg->in_flight = has_response_timeout(f);
  auto tok2 = ++leg->token;
  with_probe(self, std::move(f), [=](fault g) {
    if (find_leg(self, id, tok2) != nullptr)
      leg_on_fault(self, id, std::move(g));
  });
}

void leg_start(pointer self, leg_rec& leg) {
  auto& s = self->state;
  leg.started = true;
  leg.set_started_ms(now_ms(self));
  log_sat(self, s.sat.dispatched(leg.sat_link, leg.started_ms()));
  switch (leg.kind) {
    case leg_kind::node: leg_resolve(self, leg.id); break;
    case leg_kind::pod_hub:
      attempts_of(leg).grain = pod_hub_grain(leg.host_path());
      leg_grain_call(self, leg);
      break;
    case leg_kind::stream: leg_stream_probe(self, leg.id); break;
  }
  pool_started(self, leg.id);
}

void leg_terminal(pointer self, uint64_t id, leg_outcome outcome, bool end_in_pool) {
  auto& s = self->state;
  auto* i = s.legs.find(id);
  if (i == nullptr)
    return;
  auto& leg = *i;
  // A parked leg that ends by the pool (cancel, down, refusal) leaves admission's count too.
  unpark(self, leg);
  leg.finished = true;
  ++leg.token;
  batch_leave(self, leg);
  if (leg.slot_owned)
    gauge_release(self);
  auto now = now_ms(self);
  log_sat(self, s.sat.terminated(leg.sat_link, now));
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
    s.log.debug(leg_name(id) + " (" + leg_label(leg) + ") terminated: " + outcome_name(outcome));
  bool ordered = leg.ordered;
  std::optional<ordering_channel> channel;
  if (ordered)
    channel = leg_channel(leg);
  if (leg.has_entry_client)
    s.entry_clients.erase(id);
  if (--leg.path->second == 0)
    s.host_paths.erase(leg.path->first);
  s.legs.erase(*i);
  if (outcome != leg_outcome::refused && end_in_pool)
    pool_ended(self, id);
  if (!ordered)
    return;
  if (auto next = s.disp.on_terminal(*channel, id)) {
    auto* j = s.legs.find(*next);
    // An ended head needs no permit, nor one that started as a rider of the batch before.
    if (j == nullptr || (!j->finished && !j->started))
      admit(self, *next);
  }
  if (!s.drain_waiters.empty() && !s.disp.head_of(*channel)) {
    auto w = s.drain_waiters.find(*channel);
    if (w != s.drain_waiters.end()) {
      auto waiters = std::move(w->second);
      s.drain_waiters.erase(w);
      for (auto& rp : waiters)
        rp.deliver(caf::ok_atom::value);
    }
  }
}

} // namespace cafmesh::routing::router_core_detail
