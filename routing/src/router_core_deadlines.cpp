#include "router_core_state.hpp"

#include <algorithm>

#include <caf/sec.hpp>

namespace cafmesh::routing::router_core_detail {

//
// The node leg's resolve request is issued without a CAF
// request timeout and bounded here instead. In CAF 0.17 every request timeout is registered
// with, and cancelled on, the clock thread (a mutex, a condition-variable broadcast and a
// wake-up of that thread per request): on the co-hosted hot path that cost more than the
// messages themselves. The router core keeps the deadlines in one ordered map with one
// pending `rc_deadline` timer for the earliest; when a bound passes it puts exactly what
// CAF's clock would put into its own mailbox, a `request_timeout` error carrying the
// request's response id, so the request's error arm runs as before (same error, same
// virtual-time instant) and CAF drops the response handler. A late answer finds no handler
// and is dropped, as after a CAF timeout. The same deadlines bound the grain-port calls
// (router_core_calls.cpp): an expired call gets `(gp_result_atom, id, error)` in the mailbox,
// the error a `response_timeout` fault naming the bound, and the first result for its id wins.

namespace {

/// Arms the `rc_deadline` timer for the earliest deadline unless one at or before it is armed.
void arm_deadline_timer(pointer self) {
  auto& s = self->state;
  auto listed = s.timed_calls.head;
  if (s.deadlines.empty() && listed == nullptr)
    return;
  auto due = s.deadlines.empty() ? listed->due.first : s.deadlines.begin()->first.first;
  if (listed != nullptr)
    due = std::min(due, listed->due.first);
  if (s.deadline_timer_ms >= 0 && s.deadline_timer_ms <= due)
    return;
  s.deadline_timer_ms = due;
  self->delayed_send(self, ms(std::max<int64_t>(0, due - now_ms(self))), rc_deadline_atom::value,
                     due);
}

} // namespace

deadline_key next_deadline_key(pointer self, ms bound) {
  auto& s = self->state;
  return deadline_key{now_ms(self) + bound.count(), ++s.next_deadline_seq};
}

void add_call_deadline(pointer self, call_node& x) {
  auto& s = self->state;
  auto& c = x;
  auto& l = s.timed_calls;
  if (l.tail == nullptr || l.tail->due < c.due) {
    c.listed = true;
    c.prev = l.tail;
    c.next = nullptr;
    if (l.tail != nullptr)
      l.tail->next = &x;
    else
      l.head = &x;
    l.tail = &x;
  } else {
    s.deadlines.emplace(c.due, deadline_target{caf::message_id{}, x.id});
  }
  arm_deadline_timer(self);
}

void drop_call_deadline(pointer self, call_node& x) {
  auto& s = self->state;
  auto& c = x;
  if (!c.listed) {
    s.deadlines.erase(c.due);
    return;
  }
  auto& l = s.timed_calls;
  if (c.prev != nullptr)
    c.prev->next = c.next;
  else
    l.head = c.next;
  if (c.next != nullptr)
    c.next->prev = c.prev;
  else
    l.tail = c.prev;
  c.listed = false;
  c.prev = c.next = nullptr;
}

deadline_key add_deadline(pointer self, deadline_target what, ms bound) {
  auto& s = self->state;
  auto k = next_deadline_key(self, bound);
  // Usually the latest deadline (a later call, the same bound): placed at the end in O(1).
  s.deadlines.emplace_hint(s.deadlines.end(), k, what);
  arm_deadline_timer(self);
  return k;
}

void drop_deadline(pointer self, const deadline_key& k) {
  self->state.deadlines.erase(k);
}

void expire_deadlines(pointer self, int64_t fired_due) {
  auto& s = self->state;
  if (fired_due == s.deadline_timer_ms)
    s.deadline_timer_ms = -1;
  auto now = now_ms(self);
  for (;;) {
    // The earliest passed deadline of the map and of the listed calls, in key order.
    bool in_map = !s.deadlines.empty() && s.deadlines.begin()->first.first <= now;
    auto listed = s.timed_calls.head;
    bool in_list = listed != nullptr && listed->due.first <= now;
    if (!in_map && !in_list)
      break;
    deadline_target what;
    if (in_list && (!in_map || listed->due < s.deadlines.begin()->first)) {
      what.call = listed->id;
      drop_call_deadline(self, *listed);
    } else {
      what = s.deadlines.begin()->second;
      s.deadlines.erase(s.deadlines.begin());
    }
    if (what.call == 0) {
      self->eq_impl(what.rid, self->ctrl(), self->context(),
                    caf::make_error(caf::sec::request_timeout));
      continue;
    }
    // A call's timeout queues behind what is already in the mailbox, as a request's does;
    // whichever of it and the port's answer comes first ends the call.
    auto* i = s.calls.find(what.call);
    if (i == nullptr)
      continue;
    auto prio = i->urgent ? caf::message_priority::high : caf::message_priority::normal;
    fault timeout{mesh_errc::response_timeout,
                  "grain call got no answer within " + render_budget(i->bound_ms)};
    self->eq_impl(caf::make_message_id(prio), self->ctrl(), self->context(), gp_result_atom::value,
                  what.call, to_error(timeout));
  }
  arm_deadline_timer(self);
}

} // namespace cafmesh::routing::router_core_detail
