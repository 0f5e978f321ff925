#include "router_core_state.hpp"

#include "cafmesh/routing/entry_atoms.hpp"

#include <algorithm>

namespace cafmesh::routing::router_core_detail {

// docs/behaviour/routing.md#grain-port-calls
//
// A leg's grain attempt and a NACK's hub attempts go to the grain port as one-way calls
// carrying a call id; the port answers `(gp_result_atom, id, ...)`. The continuation is found
// by id in `calls` (a hash map), where a CAF request's response handler would be searched
// for in a vector of every response the actor awaits (CAF 0.17): O(1) instead of O(legs in
// flight) per answer and per call.

void port_call_send(pointer self, call_for kind, uint64_t owner, uint64_t token,
                    const grain_id& grain, envelope env, ms bound, bool urgent,
                    uint32_t destination) {
  auto& s = self->state;
  // The call's record in the slab: its id leaves with the call.
  auto& c = s.calls.emplace(++s.next_call);
  auto id = c.id;
  c.kind = kind;
  c.urgent = urgent;
  c.owner = owner;
  c.token = static_cast<uint32_t>(token);
  c.bound_ms = clamp_ms(bound.count(), 0);
  c.due = next_deadline_key(self, bound);
  // Admission per destination (SPEC C4): the attempt waits on the silo its hub last
  // answered from until the call ends.
  c.destination = destination;
  if (destination != 0)
    ++s.destinations[destination - 1].waiting;
  // A leg's attempt at a hub grain whose activation lives in this silo goes to its catalog
  // directly: one turn of the activation, answered by id (SPEC B3, docs/delivery-costs.md).
  if (kind == call_for::leg_attempt && !s.stopping && !s.local_routes.empty()
      && (grain.type == "messagehub" || grain.type == "podhub")) {
    auto key = remote_route_key(grain);
    auto r = s.local_routes.find(key);
    if (r != s.local_routes.end()) {
      c.direct = true;
      c.tag = r->second.tag;
      c.catalog = r->second.catalog.address();
      add_call_deadline(self, c);
      auto i = std::find_if(s.direct_out.begin(), s.direct_out.end(),
                            [&](const auto& x) { return x.first == r->second.catalog; });
      if (i == s.direct_out.end()) {
        s.direct_out.emplace_back(r->second.catalog, std::vector<ct_call_item>{});
        i = s.direct_out.end() - 1;
      }
      i->second.push_back(
        ct_call_item{id, grain, r->second.tag, 0,
                     caf::make_message(hg_deliver_atom::value, std::move(env), s.opts.silo, true)});
      ++s.direct_waiting;
      if (s.turn_depth == 0)
        flush_direct_calls(self, true); // no turn end will send it
      return;
    }
  }
  // A leg's attempt at a hub grain whose activation placement found on another silo goes
  // to this silo's message centre directly, answered by id (SPEC B3 extended,
  // docs/delivery-costs.md#the-remote-frame-path).
  if (kind == call_for::leg_attempt && !s.stopping && s.opts.centre && !s.remote_routes.empty()) {
    auto key = remote_route_key(grain);
    auto r = s.remote_routes.find(key);
    if (r != s.remote_routes.end()) {
      c.remote = true;
      c.tag = r->second.tag;
      add_call_deadline(self, c);
      s.remote_out.push_back(
        remote_call_item{r->second.silo, std::max<int64_t>(bound.count(), 1),
                         ct_call_item{id, grain, r->second.tag, 0,
                                      caf::make_message(hg_deliver_atom::value, std::move(env),
                                                        s.opts.silo, true)}});
      ++s.direct_waiting;
      if (s.turn_depth == 0)
        flush_direct_calls(self, true); // no turn end will send it
      return;
    }
  }
  add_call_deadline(self, c);
  if (urgent)
    self->send<caf::message_priority::high>(s.opts.grains, gp_call_atom::value, id, grain,
                                            std::move(env), caf::timespan{bound});
  else
    self->send(s.opts.grains, gp_call_atom::value, id, grain, std::move(env), caf::timespan{bound});
}

namespace {

/// Takes call `id` out (its deadline dropped); none if it already ended.
std::optional<port_call> take_call(pointer self, uint64_t id) {
  auto& s = self->state;
  auto* i = s.calls.find(id);
  if (i == nullptr)
    return std::nullopt;
  drop_call_deadline(self, *i);
  auto c = *i;
  s.calls.erase(*i);
  if (c.destination != 0 && s.destinations[c.destination - 1].waiting > 0)
    --s.destinations[c.destination - 1].waiting;
  if (c.remote && s.direct_waiting > 0) {
    auto j = std::find_if(s.remote_out.begin(), s.remote_out.end(),
                          [id](const remote_call_item& x) { return x.call.id == id; });
    if (j != s.remote_out.end()) {
      s.remote_out.erase(j);
      --s.direct_waiting;
    }
  }
  if (c.direct && s.direct_waiting > 0) {
    // Ended (by its deadline) before it left: it never leaves.
    for (auto& [catalog, calls] : s.direct_out) {
      auto j = std::find_if(calls.begin(), calls.end(),
                            [id](const ct_call_item& x) { return x.id == id; });
      if (j != calls.end()) {
        calls.erase(j);
        --s.direct_waiting;
        break;
      }
    }
  }
  return c;
}

} // namespace

void flush_direct_calls(pointer self, bool now) {
  auto& s = self->state;
  if (s.direct_waiting == 0)
    return;
  if (!now && s.direct_waiting < 64 && !self->mailbox().empty()) {
    // A later turn's end sends them, at the latest the `rc_flush` behind the backlog.
    if (!s.flush_armed) {
      s.flush_armed = true;
      self->send(self, rc_flush_atom::value);
    }
    return;
  }
  auto out = std::move(s.direct_out);
  s.direct_out.clear();
  s.direct_waiting = 0;
  if (!s.remote_out.empty()) {
    auto remote = std::move(s.remote_out);
    s.remote_out.clear();
    s.opts.centre->enqueue(
      caf::make_mailbox_element(caf::strong_actor_ptr{self->ctrl()},
                                caf::make_message_id(caf::message_priority::high), {},
                                mc_calls_atom::value, std::move(remote)),
      self->context());
  }
  for (auto& [catalog, calls] : out)
    // As `send` does, from this actor's execution context (the catalog is a plain actor),
    // at the priority of the leg attempts.
    catalog->enqueue(caf::make_mailbox_element(caf::strong_actor_ptr{self->ctrl()},
                                               caf::make_message_id(caf::message_priority::high),
                                               {}, ct_calls_atom::value, std::move(calls)),
                     self->context());
}

void forget_local_route(pointer self, const std::string& key, activation_tag tag) {
  auto& s = self->state;
  auto i = s.local_routes.find(key);
  if (i != s.local_routes.end() && i->second.tag == tag)
    s.local_routes.erase(i);
}

void drop_local_routes(pointer self) {
  auto& s = self->state;
  s.local_routes.clear();
  for (auto& a : s.watched_catalogs)
    self->demonitor(a);
  s.watched_catalogs.clear();
}

std::string remote_route_key(const grain_id& grain) {
  std::string key;
  key.reserve(grain.type.size() + 1 + grain.key.size());
  key += grain.type;
  key += '/';
  key += grain.key;
  return key;
}

void learn_remote_route(pointer self, const grain_id& grain, const silo_address& silo,
                        activation_tag tag) {
  auto& s = self->state;
  // Pod hubs only: a route to a node hub of another silo left legs unanswered in the
  // simulated roll with co-hosted portal hubs (docs/known-limits.md).
  if (s.stopping || !s.opts.centre || silo == s.opts.silo || silo.empty() || grain.type != "podhub")
    return;
  if (s.remote_routes.size() >= 65536)
    drop_remote_routes(self, silo_address{}); // bounded as the resolution cache is
  if (!s.centre_watched) {
    s.centre_watched = true;
    self->monitor(s.opts.centre);
  }
  s.remote_routes[remote_route_key(grain)] = remote_route{silo, tag};
}

void forget_remote_route(pointer self, const grain_id& grain) {
  auto& s = self->state;
  if (!s.remote_routes.empty())
    s.remote_routes.erase(remote_route_key(grain));
}

void drop_remote_routes(pointer self, const silo_address& silo) {
  auto& s = self->state;
  if (silo.empty()) {
    s.remote_routes.clear();
    return;
  }
  for (auto i = s.remote_routes.begin(); i != s.remote_routes.end();)
    if (i->second.silo == silo)
      i = s.remote_routes.erase(i);
    else
      ++i;
}

void drop_inactive_remote_routes(pointer self, const membership_snapshot& v) {
  auto& s = self->state;
  for (auto i = s.remote_routes.begin(); i != s.remote_routes.end();)
    if (!v.is_active(i->second.silo))
      i = s.remote_routes.erase(i);
    else
      ++i;
}

void centre_down(pointer self) {
  auto& s = self->state;
  s.centre_watched = false;
  s.remote_routes.clear();
  std::vector<uint64_t> lost;
  s.calls.for_each([&](const port_call& c) {
    if (c.remote)
      lost.push_back(c.id);
  });
  std::sort(lost.begin(), lost.end());
  for (auto id : lost) {
    auto e = to_error(to_fault(caf::make_error(caf::sec::request_receiver_down)));
    port_call_fault(self, id, e);
  }
}

void catalog_down(pointer self, const caf::actor_addr& source) {
  auto& s = self->state;
  if (s.watched_catalogs.erase(source) == 0)
    return;
  for (auto i = s.local_routes.begin(); i != s.local_routes.end();)
    if (i->second.catalog.address() == source)
      i = s.local_routes.erase(i);
    else
      ++i;
  std::vector<uint64_t> lost;
  s.calls.for_each([&](const port_call& c) {
    if (c.direct && c.catalog == source)
      lost.push_back(c.id);
  });
  std::sort(lost.begin(), lost.end());
  for (auto id : lost) {
    auto e = to_error(to_fault(caf::make_error(caf::sec::request_receiver_down)));
    port_call_fault(self, id, e);
  }
}

void port_call_result(pointer self, uint64_t id, envelope& result) {
  auto c = take_call(self, id);
  if (!c)
    return; // its deadline ended it already: a late answer changes nothing

  switch (c->kind) {
    case call_for::leg_attempt: leg_attempt_result(self, c->owner, c->token, result); break;
    case call_for::nack_node_hub: nack_node_result(self, c->owner, c->token); break;
    case call_for::nack_pod_hub: nack_pod_hub_result(self, c->owner, c->token); break;
  }
}

void port_call_fault(pointer self, uint64_t id, caf::error& failure) {
  auto c = take_call(self, id);
  if (!c)
    return;
  if (c->direct || c->remote) {
    // The route's key is the owner leg's hub grain's (a direct or remote call is a leg's
    // attempt). A leg that ended meanwhile (crashed, cancelled) no longer names it: the routes
    // to the activation called go by its tag.
    auto& s = self->state;
    auto* leg = s.legs.find(c->owner);
    if (leg != nullptr && leg->att) {
      auto key = remote_route_key(leg->att->grain);
      if (c->direct)
        forget_local_route(self, key, c->tag);
      if (c->remote) {
        auto r = s.remote_routes.find(key);
        if (r != s.remote_routes.end() && r->second.tag == c->tag)
          s.remote_routes.erase(r);
      }
    } else {
      auto drop = [&](auto& routes, bool called) {
        if (!called)
          return;
        for (auto i = routes.begin(); i != routes.end();)
          i = i->second.tag == c->tag ? routes.erase(i) : std::next(i);
      };
      drop(s.local_routes, c->direct);
      drop(s.remote_routes, c->remote);
    }
  }
  switch (c->kind) {
    case call_for::leg_attempt: leg_attempt_fault(self, c->owner, c->token, failure); break;
    case call_for::nack_node_hub: nack_node_fault(self, c->owner, c->token, failure); break;
    case call_for::nack_pod_hub: nack_pod_hub_fault(self, c->owner, c->token, failure); break;
  }
}

} // namespace cafmesh::routing::router_core_detail
