#include "router_core_state.hpp"

#include <utility>

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
  auto ops = s.acct.take();
  if (s.opts.gauge)
    self->send(s.opts.gauge, routing::q_delta_atom::value, std::move(ops));
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

void gauge_track(pointer self, uint64_t slot, std::string label, routing::slot_state st) {
  self->state.acct.track(slot, std::move(label), st, now_ms(self));
  gauge_changed(self);
}

void gauge_mark(pointer self, uint64_t slot) {
  self->state.acct.mark(slot, now_ms(self));
  gauge_changed(self);
}

void gauge_handover(pointer self, uint64_t slot, std::string label) {
  self->state.acct.handover(slot, std::move(label));
  gauge_changed(self);
}

void gauge_release(pointer self, uint64_t slot) {
  self->state.acct.release(slot);
  gauge_changed(self);
}

} // namespace cafmesh::routing::router_core_detail
