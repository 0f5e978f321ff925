#include "router_core_state.hpp"

namespace cafmesh::routing::router_core_detail {

// docs/behaviour/routing.md#the-router-core

namespace {

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

bool on_path(const envelope& env, const address& self_addr) {
  for (auto& a : env.routing_path)
    if (a == self_addr)
      return true;
  return false;
}

/// A refusal before acceptance (admission control): logged windowed under `reason`, one NACK
/// `unavailable` saying `text` whose envelope carries `retry_after_ms`; no leg, no channel.
void refuse_before_acceptance(pointer self, const envelope& env, const char* reason,
                              const std::string& text) {
  auto& s = self->state;
  auto d = s.refusals.record(reason, env.sender.to_string(), now_ms(self));
  if (d.log)
    s.log.warning(with_repeats(
      "delivery " + env.id + " to '" + env.target.to_string() + "' refused: " + text, d));
  if (auto id = post_nack(self, env, verdict::unavailable, text, false, caf::none, std::nullopt,
                          false, true))
    s.nacks.at(id).nack.properties["retry_after_ms"]
      = std::to_string(s.opts.routing.overload_retry_after_ms);
}

} // namespace

bool over_bound(pointer self, const envelope& env) {
  auto& s = self->state;
  // Every slot of the legs' or the calls' slab taken (about four million each): nothing more
  // fits.
  if (s.legs.full() || s.calls.full())
    return true;
  if (is_continuation(env))
    return false;
  auto bound = s.opts.routing.max_in_flight;
  return bound > 0 && admitted_in_flight(self) >= static_cast<uint64_t>(bound);
}

std::string overload_text(pointer self) {
  auto& s = self->state;
  return "silo " + s.silo_name + " overloaded: " + std::to_string(admitted_in_flight(self))
         + " deliveries in flight (routing.max_in_flight "
         + std::to_string(s.opts.routing.max_in_flight) + "); retry after "
         + std::to_string(s.opts.routing.overload_retry_after_ms) + " ms";
}

void refuse_overloaded(pointer self, const envelope& env) {
  ++self->state.stats.refused_overloaded;
  refuse_before_acceptance(self, env, "overloaded", overload_text(self));
}

uint32_t destination_of(pointer self, const std::string& host_path) {
  auto& s = self->state;
  if (s.opts.routing.max_in_flight_per_destination <= 0 || s.path_destination.empty())
    return 0;
  auto i = s.path_destination.find(host_path);
  return i == s.path_destination.end() ? 0 : i->second;
}

void learn_destination(pointer self, const std::string& host_path, const silo_address& silo) {
  auto& s = self->state;
  if (s.opts.routing.max_in_flight_per_destination <= 0)
    return;
  auto& m = s.path_destination;
  auto i = m.find(host_path);
  // The core's own silo is not a destination of its own: its attempts there are bounded by
  // `routing.max_in_flight` alone (a stalled own silo stalls the core too).
  if (silo == s.opts.silo) {
    if (i != m.end())
      m.erase(i);
    return;
  }
  if (i != m.end() && s.destinations[i->second - 1].silo == silo)
    return;
  uint32_t d = 0;
  for (size_t k = 0; k < s.destinations.size(); ++k)
    if (s.destinations[k].silo == silo) {
      d = static_cast<uint32_t>(k + 1);
      break;
    }
  if (d == 0) {
    s.destinations.push_back(destination_load{silo, 0});
    d = static_cast<uint32_t>(s.destinations.size());
  }
  // A bounded memory: past 65,536 host paths the map starts over and learns again.
  if (i == m.end() && m.size() >= 65536)
    m.clear();
  m[host_path] = d;
}

leg_host leg_host_of(pointer self, const envelope& env) {
  leg_host h{host_address(env.target, self->state.opts.mesh_type), std::string{}};
  h.path = h.host.path();
  return h;
}

std::optional<std::string> destination_refusal(pointer self, const envelope& env,
                                               const std::string& host_path) {
  auto& s = self->state;
  auto bound = s.opts.routing.max_in_flight_per_destination;
  if (bound <= 0 || is_continuation(env) || s.path_destination.empty())
    return std::nullopt;
  auto d = destination_of(self, host_path);
  if (d == 0)
    return std::nullopt;
  auto& load = s.destinations[d - 1];
  if (load.waiting < static_cast<uint64_t>(bound))
    return std::nullopt;
  return "destination " + load.silo.to_string()
         + " is not keeping up: " + std::to_string(load.waiting)
         + " deliveries in flight to it (routing.max_in_flight_per_destination "
         + std::to_string(bound) + "); retry after "
         + std::to_string(s.opts.routing.overload_retry_after_ms) + " ms";
}

void refuse_for_destination(pointer self, const envelope& env, const std::string& text) {
  ++self->state.stats.refused_destination;
  refuse_before_acceptance(self, env, "destination", text);
}

std::optional<uint64_t> accept(pointer self, envelope env, leg_host host, bool& loop_nack_posted,
                               const silo_address& entry_client, caf::timespan answer_within) {
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
  // The leg keeps the envelope as accepted: what leaves the core carries the router's address
  // on its routing path (`routed_env`).
  auto& leg = s.legs.emplace(s.next_id++);
  auto id = leg.id;
  leg.path = &*s.host_paths.try_emplace(std::move(host.path), 0).first;
  ++leg.path->second;
  leg.ordered = s.stream_routed.count(host.host.type) != 0;
  if (leg.ordered)
    leg.kind = leg_kind::pod_hub;
  else if (s.client_hosted.count(host.host.type) != 0)
    leg.kind = leg_kind::stream;
  else
    leg.kind = leg_kind::node;
  leg.env = std::move(env);
  if (!entry_client.empty()) {
    leg.has_entry_client = true;
    s.entry_clients.emplace(id, entry_client);
  }
  // The gauge counts the leg's unit; the leg names it when the gauge is asked
  // (docs/delivery-costs.md#what-a-delivery-holds).
  gauge_track(self);
  ++s.stats.accepted;
  leg.accepted_ms = now_ms(self);
  if (answer_within > caf::timespan{0})
    leg.set_answer_by_ms(leg.accepted_ms + std::chrono::duration_cast<ms>(answer_within).count());
  bool ordered = leg.ordered;
  // Only the stream-routed branch has a channel (docs/behaviour/routing.md#the-ordered-dispatcher);
  // the node branch builds none.
  std::optional<ordering_channel> channel;
  if (ordered)
    channel = leg_channel(leg);
  log_sat(self, s.sat.accept(leg.sat_link, leg_phase::queued, now_ms(self)));
  if (!ordered || s.disp.push(*channel, id))
    admit(self, id);
  return id;
}

} // namespace cafmesh::routing::router_core_detail
