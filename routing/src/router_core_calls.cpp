#include "router_core_state.hpp"

namespace cafmesh::routing::router_core_detail {

// docs/behaviour/routing.md#grain-port-calls
//
// A leg's grain attempt and a NACK's hub attempts go to the grain port as one-way calls
// carrying a call id; the port answers `(gp_result_atom, id, ...)`. The continuation is found
// by id in `calls` (a hash map), where a CAF request's response handler would be searched
// for in a vector of every response the actor awaits (CAF 0.17): O(1) instead of O(legs in
// flight) per answer and per call.

void port_call_send(pointer self, call_for kind, uint64_t owner, uint64_t token,
                    const grain_id& grain, const envelope& env, ms bound, bool urgent) {
  auto& s = self->state;
  auto id = ++s.next_call;
  port_call c;
  c.kind = kind;
  c.urgent = urgent;
  c.owner = owner;
  c.token = token;
  c.bound_ms = bound.count();
  c.due = add_deadline(self, deadline_target{caf::message_id{}, id}, bound);
  s.calls.emplace(id, c);
  if (urgent)
    self->send<caf::message_priority::high>(s.opts.grains, gp_call_atom::value, id, grain, env,
                                            caf::timespan{bound});
  else
    self->send(s.opts.grains, gp_call_atom::value, id, grain, env, caf::timespan{bound});
}

namespace {

/// Takes call `id` out (its deadline dropped); none if it already ended.
std::optional<port_call> take_call(pointer self, uint64_t id) {
  auto& s = self->state;
  auto i = s.calls.find(id);
  if (i == s.calls.end())
    return std::nullopt;
  auto c = i->second;
  s.calls.erase(i);
  drop_deadline(self, c.due);
  return c;
}

} // namespace

void port_call_result(pointer self, uint64_t id, envelope& result) {
  auto c = take_call(self, id);
  if (!c)
    return; // its deadline ended it already: a late answer changes nothing
  switch (c->kind) {
    case call_for::leg_attempt:
      leg_attempt_result(self, c->owner, c->token, result);
      break;
    case call_for::nack_node_hub:
      nack_node_result(self, c->owner, c->token);
      break;
    case call_for::nack_pod_hub:
      nack_pod_hub_result(self, c->owner, c->token);
      break;
  }
}

void port_call_fault(pointer self, uint64_t id, caf::error& failure) {
  auto c = take_call(self, id);
  if (!c)
    return;
  switch (c->kind) {
    case call_for::leg_attempt:
      leg_attempt_fault(self, c->owner, c->token, failure);
      break;
    case call_for::nack_node_hub:
      nack_node_fault(self, c->owner, c->token, failure);
      break;
    case call_for::nack_pod_hub:
      nack_pod_hub_fault(self, c->owner, c->token, failure);
      break;
  }
}

} // namespace cafmesh::routing::router_core_detail
