#include "router_core_state.hpp"

#include <algorithm>

#include "cafmesh/routing/size_guard.hpp"

namespace cafmesh::routing::router_core_detail {

// docs/behaviour/routing.md#channel-batches (SPEC §14 B2)
//
// A channel's head leg takes the deliveries queued behind it along on its attempts (one-way
// deliveries with a one-way head, responses and NACKs with a continuation):
// their calls leave in the same turn, in channel order, over the route the head uses (one
// `ct_calls` to the activation's catalog or one `mc_calls` to the message centre), so the
// activation takes them in order. Each item keeps its own leg, gauge slot and terminal event;
// the dispatcher starts the channel's next leg only when every item has ended. The answers of
// one attempt are judged together, in channel order, once all are in: an item behind a fault
// that the head's retry would send again rides that retry, so a channel never lands out of
// order.

namespace {

/// True if `leg` may lead or ride a batch: a delivery without a requester's bound (a request
/// with a deadline keeps a leg of its own).
bool rides(const leg_rec& leg) {
  return leg.ordered && leg.kind == leg_kind::pod_hub && leg.answer_by_ms() == 0;
}

/// True if `leg` may ride the batch `head` leads: continuations (responses and NACKs) ride
/// only with continuations and one-way deliveries with one-way deliveries, so that the
/// leader's retry rules (docs/behaviour/routing.md#continuations-sent-again) are every
/// item's.
bool rides_with(const leg_rec& head, const leg_rec& leg) {
  return rides(leg) && is_continuation(leg.env) == is_continuation(head.env);
}

/// True if `grain`'s activation is reached over a route of this core (a direct or remote
/// route): its calls then arrive in the order they leave.
bool routed(core_state& s, const grain_id& grain) {
  if (s.local_routes.empty() && s.remote_routes.empty())
    return false;
  auto key = remote_route_key(grain);
  return s.local_routes.count(key) != 0 || s.remote_routes.count(key) != 0;
}

/// The position of `id` in batch `b` led by `head`: 0 for the head, 1 + its rider index.
std::optional<size_t> position_of(const channel_batch& b, uint64_t head, uint64_t id) {
  if (id == head)
    return size_t{0};
  auto i = std::find(b.riders.begin(), b.riders.end(), id);
  if (i == b.riders.end())
    return std::nullopt;
  return 1 + static_cast<size_t>(i - b.riders.begin());
}

/// Drops from `ids` the legs that are gone or finished.
void drop_ended(core_state& s, std::vector<uint64_t>& ids) {
  ids.erase(std::remove_if(ids.begin(), ids.end(),
                           [&](uint64_t id) {
                             auto* i = s.legs.find(id);
                             return i == nullptr || i->finished;
                           }),
            ids.end());
}

/// The batch `leg` leads; null if it leads none (its mark is cleared if the batch is gone).
channel_batch* led_by(core_state& s, leg_rec& leg) {
  if (batch_of(s, leg) != leg.id)
    return nullptr;
  auto i = s.batches.find(leg.id);
  if (i == s.batches.end()) {
    set_batch(s, leg, 0);
    return nullptr;
  }
  return &i->second;
}

/// `riders` form the batch of the first of them, which attempts now.
void lead_anew(pointer self, std::vector<uint64_t> riders) {
  auto& s = self->state;
  drop_ended(s, riders);
  if (riders.empty())
    return;
  auto first = riders.front();
  auto& leg = s.legs.at(first);
  if (riders.size() > 1) {
    set_batch(s, leg, first);
    auto& b = s.batches[first];
    b.continuations = is_continuation(leg.env);
    b.riders.assign(riders.begin() + 1, riders.end());
    for (auto id : b.riders)
      set_batch(s, s.legs.at(id), first);
  }
  leg_attempt(self, first);
}

/// Every answer of the batch led by `head` is in: judged in channel order.
void batch_judge(pointer self, uint64_t head) {
  auto& s = self->state;
  auto i = s.batches.find(head);
  if (i == s.batches.end())
    return;
  auto b = std::move(i->second);
  s.batches.erase(i);
  std::vector<uint64_t> items;
  items.reserve(1 + b.riders.size());
  items.push_back(head);
  items.insert(items.end(), b.riders.begin(), b.riders.end());
  for (auto id : items) {
    auto* j = s.legs.find(id);
    if (j != nullptr)
      set_batch(s, *j, 0);
  }
  // The first item whose attempt failed, and whether an item behind it landed anyway.
  auto none = items.size();
  auto first_fault = none;
  bool landed_behind = false;
  for (size_t k = 0; k < items.size(); ++k) {
    auto& a = b.answers[k];
    if (a.result) {
      if (first_fault != none && judge_result(*a.result).action == result_action::landed)
        landed_behind = true;
    } else if (a.failure && first_fault == none) {
      first_fault = k;
    }
  }
  // Continuations correlate by request id, not by order, and their receivers keep one outcome
  // per request: a failed one is sent again even behind one that landed (its requester would
  // otherwise get a NACK where a response exists).
  if (b.continuations)
    landed_behind = false;
  std::vector<uint64_t> tail;
  for (size_t k = 0; k < items.size(); ++k) {
    auto& a = b.answers[k];
    auto id = items[k];
    if (a.result) {
      leg_attempt_result(self, id, a.token, *a.result);
      continue;
    }
    if (!a.failure || k == first_fault)
      continue; // ended meanwhile, or the retry's head (below)
    auto leg = find_leg(self, id, a.token);
    if (leg == nullptr)
      continue;
    auto f = to_fault(a.failure);
    leg->in_flight = has_response_timeout(f);
    if (landed_behind) {
      // Sent again, it would land behind a delivery that followed it on its channel.
      leg_nack(self, *leg, verdict::failed,
               "Delivery to '" + leg->host_path() + "' failed: " + f.render()
                 + "; a delivery behind it on its channel landed, so it is not sent again");
      continue;
    }
    tail.push_back(id);
  }
  if (first_fault == none)
    return;
  auto id = items[first_fault];
  auto& a = b.answers[first_fault];
  auto leg = find_leg(self, id, a.token);
  if (leg == nullptr) {
    lead_anew(self, std::move(tail));
    return;
  }
  if (landed_behind) {
    auto f = to_fault(a.failure);
    leg->in_flight = has_response_timeout(f);
    leg_nack(self, *leg, verdict::failed,
             "Delivery to '" + leg->host_path() + "' failed: " + f.render()
               + "; a delivery behind it on its channel landed, so it is not sent again");
    return;
  }
  // The faulted items behind it ride its retry (or share its NACK when it gives up).
  if (!tail.empty()) {
    set_batch(s, *leg, id);
    for (auto t : tail)
      set_batch(s, s.legs.at(t), id);
    auto& again = s.batches[id];
    again.riders = std::move(tail);
    again.continuations = b.continuations;
  }
  leg_attempt_fault(self, id, a.token, a.failure);
}

/// The batch `leg` belongs to, if it is collecting the answers of an attempt.
channel_batch* collecting(pointer self, leg_rec& leg) {
  auto& s = self->state;
  auto i = s.batches.find(batch_of(s, leg));
  if (i == s.batches.end()) {
    set_batch(s, leg, 0);
    return nullptr;
  }
  return i->second.answers.empty() ? nullptr : &i->second;
}

/// Takes one answer of `leg`; true if its batch took it.
template <class Store>
bool take(pointer self, leg_rec& leg, uint64_t token, Store store) {
  auto b = collecting(self, leg);
  if (b == nullptr)
    return false;
  auto head = batch_of(self->state, leg);
  auto k = position_of(*b, head, leg.id);
  if (!k || b->answers[*k].in || b->answers[*k].token != token)
    return false;
  auto& a = b->answers[*k];
  a.in = true;
  store(a);
  if (--b->waiting == 0)
    batch_judge(self, head);
  return true;
}

} // namespace

void batch_form(pointer self, leg_rec& head) {
  auto& s = self->state;
  auto max = s.opts.routing.channel_batch_max;
  if (max <= 1 || batch_of(s, head) != 0 || !rides(head) || !head.att || s.stopping
      || !s.admits_itself || !routed(s, head.att->grain))
    return;
  auto channel = leg_channel(head);
  if (!s.disp.is_head(channel, head.id))
    return;
  // Within the grain call's size limit, the batch as a whole (docs/behaviour/size-guard.md).
  auto bytes = check_size(head.env, size_crossing::grain_call, s.opts.size).bytes;
  std::vector<uint64_t> riders;
  s.disp.for_each_behind(channel, head.id, [&](uint64_t id) {
    if (static_cast<int64_t>(riders.size()) + 1 >= max)
      return false;
    auto* i = s.legs.find(id);
    if (i == nullptr)
      return false;
    auto& leg = *i;
    if (leg.started || leg.finished || !leg.latch_open || !rides_with(head, leg))
      return false;
    auto c = check_size(leg.env, size_crossing::grain_call, s.opts.size);
    if (c.refused || bytes + c.bytes >= c.limit_bytes)
      return false;
    bytes += c.bytes;
    riders.push_back(id);
    return true;
  });
  if (riders.empty())
    return;
  auto now = now_ms(self);
  for (auto id : riders) {
    auto& leg = s.legs.at(id);
    // Started with the head: counted by admission and the pool's hand-over like any
    // started leg, marked dispatched in the gauge.
    leg.started = true;
    leg.pooled = true;
    set_batch(s, leg, head.id);
    leg.set_started_ms(now);
    log_sat(self, s.sat.dispatched(leg.sat_link, now));
    attempts_of(leg).grain = head.att->grain;
  }
  set_batch(s, head, head.id);
  auto& b = s.batches[head.id];
  b.riders = std::move(riders);
  b.continuations = is_continuation(head.env);
}

void batch_send_riders(pointer self, leg_rec& head, ms bound) {
  auto& s = self->state;
  auto* led = led_by(s, head);
  if (led == nullptr)
    return;
  auto& b = *led;
  drop_ended(s, b.riders);
  if (b.riders.empty()) {
    s.batches.erase(head.id);
    set_batch(s, head, 0);
    return;
  }
  // Riders go only over a route, where they arrive in the order they leave (a stopping core
  // uses none); without one they wait for the head's outcome (`batch_leave`).
  if (s.stopping || !routed(s, head.att->grain))
    return;
  b.answers.clear();
  b.answers.resize(1 + b.riders.size());
  b.answers[0].token = head.token;
  b.waiting = b.answers.size();
  // Admission per destination (SPEC C4) counts grain attempts: the riders are part of the
  // head's, which waits on its destination already.
  for (size_t k = 0; k < b.riders.size(); ++k) {
    auto& leg = s.legs.at(b.riders[k]);
    auto tok = ++leg.token;
    leg.in_flight = true;
    b.answers[k + 1].token = tok;
    ++s.stats.batch_riders;
    port_call_send(self, call_for::leg_attempt, leg.id, tok, leg.att->grain, routed_env(self, leg),
                   bound, true);
  }
}

bool batch_take_result(pointer self, leg_rec& leg, uint64_t token, envelope& result) {
  return take(self, leg, token, [&](channel_batch::answer& a) {
    a.result = std::make_unique<envelope>(std::move(result));
  });
}

bool batch_take_fault(pointer self, leg_rec& leg, uint64_t token, caf::error& failure) {
  return take(self, leg, token, [&](channel_batch::answer& a) {
    a.failure = failure ? std::move(failure) : caf::make_error(caf::sec::request_timeout);
  });
}

void batch_nack_riders(pointer self, leg_rec& leg, verdict v, const std::string& text,
                       bool target_unserved, const caf::optional<silo_address>& responding,
                       bool quiet) {
  auto& s = self->state;
  auto* b = led_by(s, leg);
  if (b == nullptr)
    return;
  if (!b->answers.empty())
    return; // an attempt is out: each rider ends by its own answer
  auto riders = std::move(b->riders);
  s.batches.erase(leg.id);
  set_batch(s, leg, 0);
  for (auto id : riders) {
    auto* j = s.legs.find(id);
    if (j == nullptr || j->finished)
      continue;
    set_batch(s, *j, 0);
    leg_nack(self, *j, v, text, target_unserved, responding, quiet);
  }
}

void batch_leave(pointer self, leg_rec& leg) {
  auto& s = self->state;
  if (batch_of(s, leg) == 0)
    return;
  auto head = batch_of(s, leg);
  set_batch(s, leg, 0);
  auto i = s.batches.find(head);
  if (i == s.batches.end())
    return;
  auto& b = i->second;
  if (!b.answers.empty()) {
    // An attempt is out: this item's answer no longer matters.
    if (auto k = position_of(b, head, leg.id); k && !b.answers[*k].in) {
      b.answers[*k].in = true;
      if (--b.waiting == 0)
        batch_judge(self, head);
    }
    return;
  }
  if (head != leg.id) {
    b.riders.erase(std::remove(b.riders.begin(), b.riders.end(), leg.id), b.riders.end());
    if (b.riders.empty()) {
      s.batches.erase(i);
      auto* h = s.legs.find(head);
      if (h != nullptr)
        set_batch(s, *h, 0);
    }
    return;
  }
  // The head ended between attempts: the riders waiting for its next one go on without it.
  // A stop ends one-way riders itself; continuations leave a stopping silo
  // (docs/behaviour/routing.md#stopping-silos), one at a time through placement.
  auto riders = std::move(b.riders);
  auto continuations = b.continuations;
  s.batches.erase(i);
  for (auto id : riders) {
    auto* j = s.legs.find(id);
    if (j != nullptr)
      set_batch(s, *j, 0);
  }
  if (!s.stopping || continuations)
    lead_anew(self, std::move(riders));
}

} // namespace cafmesh::routing::router_core_detail
