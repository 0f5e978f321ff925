#include "router_core_state.hpp"

#include <caf/send.hpp>

#include "cafmesh/actors/message_center.hpp"
#include "cafmesh/routing/entry_atoms.hpp"
#include "cafmesh/routing/nack_codec.hpp"

namespace cafmesh::routing::router_core_detail {

// docs/behaviour/routing.md#nacks

namespace {

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
             "BOTH transports failed for NACK to " + job.sender + " (delivery " + job.delivery_id
               + "): " + detail);
  nack_done(self, job.id);
}

void nack_publish(pointer self, uint64_t id) {
  auto& s = self->state;
  auto& job = s.nacks.at(id);
  auto tok = ++job.token;
  self
    ->request(s.opts.streams, ms(s.opts.routing.stream_post_timeout_ms), sp_publish_atom::value,
              job.sender_host, job.nack)
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
  self
    ->request(s.opts.streams, ms(s.opts.routing.subscriber_probe_timeout_ms), sp_probe_atom::value,
              job.sender_host)
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

/// Rung b: the sender's node hub inside the router retry loop.
void nack_node_hub(pointer self, uint64_t id, const std::string& prefix) {
  auto& s = self->state;
  auto& job = s.nacks.at(id);
  job.at = rung::node_hub;
  job.grain = node_hub_grain(prefix);
  job.retry.emplace(s.policy);
  nack_node_attempt(self, id);
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
  self
    ->request(s.opts.resolver, ms(s.opts.routing.resolve_timeout_ms), pr_resolve_atom::value,
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
  port_call_send(self, call_for::nack_pod_hub, id, tok, job.grain, job.nack, attempt_timeout(self),
                 false);
}

} // namespace

namespace {

/// A hub attempt of NACK `id` (step token `tok`) delivered it: counted in `rung_count`, done.
void nack_hub_took(pointer self, uint64_t id, uint64_t tok,
                   uint64_t router_core_stats::*rung_count) {
  turn_scope turn{self};
  if (find_nack(self, id, tok) == nullptr)
    return;
  ++(self->state.stats.*rung_count);
  nack_done(self, id);
}

} // namespace

void nack_pod_hub_result(pointer self, uint64_t id, uint64_t tok) {
  nack_hub_took(self, id, tok, &router_core_stats::nacks_pod_hub);
}

void nack_pod_hub_fault(pointer self, uint64_t id, uint64_t tok, caf::error& e) {
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
}

namespace {

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
    self
      ->request(s.opts.local_routes, ms(s.opts.routing.resolve_timeout_ms), lr_deliver_atom::value,
                job.nack)
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
                             + "): pure client " + job->entry_client.to_string() + " not reached ("
                             + to_fault(e).render() + "); trying this silo's transports");
        nack_local(self, id);
      });
}

} // namespace

uint64_t post_nack(pointer self, const envelope& original, verdict v, const std::string& text,
                   bool target_unserved, caf::optional<silo_address> responding,
                   std::optional<uint64_t> handover_slot, bool quiet, bool direct) {
  auto& s = self->state;
  if (original.sender.empty() || !may_answer(original)) {
    ++s.stats.suppressed_failures;
    if (s.opts.failure_observer && !original.sender.empty())
      caf::anon_send(s.opts.failure_observer, ep_event_atom::value, std::string{"suppressed"},
                     original.id, static_cast<uint8_t>(v), text);
    auto d = s.refusals.record(host_address(original.target, s.opts.mesh_type).to_string(),
                               original.sender.to_string(), now_ms(self));
    if (d.log)
      s.log.warning(with_repeats("routing failure of answer-suppressed delivery " + original.id
                                   + " to '" + original.target.to_string() + "' (" + to_string(v)
                                   + "), no NACK: " + text,
                                 d));
    if (handover_slot)
      gauge_release(self);
    return 0;
  }
  auto failure = make_delivery_failure(original, text, v, target_unserved, std::move(responding));
  // Ordered with the legs' ids, naming none of them.
  auto seq = s.next_id++;
  auto id = slot_table<leg_rec>::foreign_id(seq);
  nack_job job;
  job.id = id;
  job.nack = make_nack_envelope(failure, s.silo_name + "-nack-" + std::to_string(seq),
                                s.opts.self_address);
  job.delivery_id = original.id;
  job.sender = original.sender.to_string();
  job.sender_host = host_address(original.sender, s.opts.mesh_type);
  job.quiet = quiet;
  if (handover_slot) {
    // The leg's unit, with its times and state, is the NACK's now (the count does not move).
    job.slot = *handover_slot;
    job.taken_ms = now_ms(self);
    auto* i = s.legs.find(*handover_slot);
    if (i != nullptr) {
      job.taken_ms = i->accepted_ms;
      job.dispatched_ms = i->started_ms();
    }
  } else {
    job.slot = id;
    job.taken_ms = now_ms(self);
    gauge_track(self);
  }
  s.log.debug("NACK " + to_string(v) + " for delivery " + original.id + " to " + job.sender
              + " posted: " + text);
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
  gauge_release(self);
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

void nack_node_attempt(pointer self, uint64_t id) {
  auto& s = self->state;
  auto& job = s.nacks.at(id);
  auto tok = ++job.token;
  port_call_send(self, call_for::nack_node_hub, id, tok, job.grain, job.nack, attempt_timeout(self),
                 false);
}

void nack_node_result(pointer self, uint64_t id, uint64_t tok) {
  nack_hub_took(self, id, tok, &router_core_stats::nacks_node_hub);
}

void nack_node_fault(pointer self, uint64_t id, uint64_t tok, caf::error& e) {
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
    uint64_t t = ++job->token;
    self->delayed_send(self, ms(d.delay_ms), rc_timer_atom::value, id, t);
    return;
  }
  self->state.log.info("NACK to " + job->sender + " (delivery " + job->delivery_id + ") via "
                       + job->grain.to_string() + " failed (" + f.render()
                       + "); falling back to the stream transport");
  nack_stream(self, id);
}

void nack_start(pointer self, uint64_t id) {
  auto& s = self->state;
  auto& job = s.nacks.at(id);
  if (job.started)
    return;
  job.started = true;
  if (job.slot == job.id)
    job.dispatched_ms = now_ms(self);
  if (!job.entry_client.empty() && s.opts.centre)
    nack_entry_client(self, id);
  else
    nack_local(self, id);
  pool_started(self, id);
}

} // namespace cafmesh::routing::router_core_detail
