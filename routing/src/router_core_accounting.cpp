#include "router_core_state.hpp"

#include <algorithm>
#include <utility>
#include <vector>

#include <caf/send.hpp>

namespace cafmesh::routing::router_core_detail {

// -- pool and gauge helpers ----------------------------------------------------------
//
// docs/behaviour/quiescence.md#the-router-cores-own-count and
// #admission-inside-the-router-core: the core counts its units itself and publishes the
// gauge delta at the end of the turn when the gauge's zero depends on it, else at the end
// of the first turn that finds its mailbox empty; until the pool's drain takes its legs
// over it grants its own start permits, at the end of the turn that asked for them. Work
// left outside any turn scope runs from one `rc_flush` message.

namespace {

void arm_flush(pointer self) {
  auto& s = self->state;
  if (s.flush_armed)
    return;
  s.flush_armed = true;
  self->send(self, rc_flush_atom::value);
}

/// A gauge change outside any turn scope settles at once.
void gauge_changed(pointer self) {
  if (self->state.turn_depth == 0)
    settle_gauge(self);
}

} // namespace

void publish_delta(pointer self) {
  auto& s = self->state;
  if (!s.acct.pending())
    return;
  auto units = s.acct.take();
  if (s.opts.gauge)
    self->send(s.opts.gauge, routing::q_units_atom::value, routing::quiescence_source_actor{self},
               units);
}

void settle_gauge(pointer self) {
  auto& s = self->state;
  if (s.acct.pending() && (s.acct.due() || self->mailbox().empty()))
    publish_delta(self);
}

void push_work(pointer self, turn_work w) {
  auto& s = self->state;
  s.work.push_back(w);
  if (s.turn_depth == 0)
    arm_flush(self); // no turn end will run it
}

void admit(pointer self, uint64_t id) {
  auto& s = self->state;
  auto* i = s.legs.find(id);
  if (i != nullptr) {
    i->pooled = true;
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

void gauge_track(pointer self) {
  self->state.acct.track();
  gauge_changed(self);
}

void gauge_release(pointer self) {
  self->state.acct.release();
  gauge_changed(self);
}

routing::quiescence_sample oldest_units(pointer self, uint64_t n) {
  // A leg holds its slot from acceptance until its terminal event unless a NACK took it
  // over; a NACK holds one from its posting until it is done (docs/behaviour/quiescence.md).
  auto& s = self->state;
  routing::quiescence_sample out;
  out.count = s.acct.units();
  out.now_ms = now_ms(self);
  std::vector<routing::quiescence_entry> all;
  // Legs in id order are in (taken, slot) order: the `n` oldest holding a slot are the `n`
  // least ids among them.
  std::vector<leg_rec*> owners;
  s.legs.for_each([&](leg_rec& leg) {
    if (leg.slot_owned)
      owners.push_back(&leg);
  });
  auto m = std::min<size_t>(n, owners.size());
  std::partial_sort(owners.begin(), owners.begin() + static_cast<std::ptrdiff_t>(m), owners.end(),
                    [](const leg_rec* x, const leg_rec* y) { return x->id < y->id; });
  owners.resize(m);
  for (auto* leg : owners) {
    routing::quiescence_entry e;
    e.slot = leg->id;
    e.label = leg_label(*leg);
    e.taken_ms = leg->accepted_ms;
    e.dispatched_ms = leg->started_ms();
    e.state = leg->started_ms() >= 0 ? routing::slot_state::dispatched
                                     : routing::slot_state::queued;
    all.push_back(std::move(e));
  }
  for (auto& [id, job] : s.nacks) {
    routing::quiescence_entry e;
    e.slot = job.slot;
    e.label = routing::nack_label(job.sender, job.delivery_id);
    e.taken_ms = job.taken_ms;
    e.dispatched_ms = job.dispatched_ms;
    e.state = job.dispatched_ms >= 0 ? routing::slot_state::dispatched
                                     : routing::slot_state::queued;
    all.push_back(std::move(e));
  }
  auto older = [](const routing::quiescence_entry& x, const routing::quiescence_entry& y) {
    return std::make_pair(x.taken_ms, x.slot) < std::make_pair(y.taken_ms, y.slot);
  };
  auto k = std::min<size_t>(n, all.size());
  std::partial_sort(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(k), all.end(), older);
  all.resize(k);
  out.entries = std::move(all);
  return out;
}

} // namespace cafmesh::routing::router_core_detail
