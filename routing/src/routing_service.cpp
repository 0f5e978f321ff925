#include "cafmesh/routing/routing_service.hpp"

#include <algorithm>
#include <chrono>
#include <optional>
#include <utility>

#include <caf/all.hpp>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/placement_atoms.hpp"
#include "cafmesh/routing/classify.hpp"
#include "cafmesh/routing/entry_atoms.hpp"
#include "cafmesh/routing/size_guard.hpp"
#include "landing_report.hpp"
#include "routing_service_parts.hpp"
#include "cafmesh/routing/detail/routing_service_state.hpp"

namespace cafmesh::routing {

using cafmesh::routing::detail::routing_service_state;

const char* routing_service_state::name = "cafmesh.routing_service";

routing_service_options routing_service_options::from(const config::mesh_config& cfg) {
  routing_service_options out;
  out.role = cfg.mesh.role;
  if (!cfg.mesh.name.empty())
    out.process_name = cfg.mesh.name;
  out.size = cfg.size;
  out.client = cfg.client;
  out.placement_timeout_ms = cfg.placement.timeout_ms;
  out.grain_response_timeout_ms = cfg.grain_call.response_timeout_ms;
  out.placement_timeout_attempts = cfg.routing.placement_timeout_attempts;
  out.seed = cfg.simulation.seed;
  out.stream_routed_address_types = cfg.routing.stream_routed_address_types;
  out.attach = cfg.attach;
  out.max_outstanding = cfg.gateway.max_outstanding;
  out.overload_retry_after_ms = cfg.routing.overload_retry_after_ms;
  out.channel_pin_ms = cfg.routing.leg_self_bound_ms;
  return out;
}

namespace routing_service_detail {

int64_t now_ms(rs_actor* self) {
  using namespace std::chrono;
  return duration_cast<milliseconds>(self->clock().now().time_since_epoch()).count();
}

/// Appends attempt time `now` to `attempts_by_id[id]`, keeping at most
/// `client.attempt_record_max` ids (the oldest dropped first).
void record_attempt(routing_service_state& st, const std::string& id, int64_t now) {
  auto cap = static_cast<size_t>(std::max<int64_t>(st.opts.client.attempt_record_max, 0));
  if (cap == 0)
    return;
  auto [i, fresh] = st.attempts_by_id.try_emplace(id);
  i->second.push_back(now);
  if (!fresh)
    return;
  st.attempt_ids.push_back(id);
  while (st.attempt_ids.size() > cap) {
    st.attempts_by_id.erase(st.attempt_ids.front());
    st.attempt_ids.pop_front();
  }
}

namespace {

/// Renders the route-table key of `a` (its host address's path,
/// docs/behaviour/envelope.md#addresses) into `out`, reusing `out`'s buffer; an unhosted address is
/// its own host address (no copy of it).
void render_route_key(rs_actor* self, const address& a, std::string& out) {
  if (a.hosts.empty()) {
    out.assign(a.type);
    out += '/';
    out += a.id;
    return;
  }
  auto host = host_address(a, self->state.opts.mesh_type);
  out.assign(host.type);
  out += '/';
  out += host.id;
}

} // namespace

std::string route_key(rs_actor* self, const address& a) {
  std::string out;
  render_route_key(self, a, out);
  return out;
}

/// The local route of `a`'s host address, or null. Runs once per delivery: the key is
/// rendered into a reused per-thread buffer, so a hit allocates nothing.
caf::actor* find_route(rs_actor* self, const address& a) {
  thread_local std::string key;
  render_route_key(self, a, key);
  auto i = self->state.routes.find(key);
  return i == self->state.routes.end() ? nullptr : &i->second;
}

/// The local route that takes hand-over `d` (`lr_deliver_atom`, `lr_land_atom`), counted, or
/// null if this process has none; an answer it carries ends the request it answers here.
caf::actor* landing_route(rs_actor* self, const envelope& d) {
  auto& st = self->state;
  if (d.request_id && st.held.size() > 0)
    st.held.answered(*d.request_id);
  auto h = find_route(self, d.target);
  if (h == nullptr)
    ++st.stats.lr_refused;
  else
    ++st.stats.lr_delivered;
  return h;
}

/// Posts a NACK straight to the sender's local route (entry NACKs,
/// docs/behaviour/routing.md#the-entry, #nacks: not tracked). Answers true if it was posted.
bool post_local_nack(rs_actor* self, const envelope& d, verdict v, const std::string& text,
                     std::optional<int64_t> retry_after_ms) {
  if (!may_answer(d) || d.sender.empty())
    return false;
  auto h = find_route(self, d.sender);
  if (h == nullptr)
    return false;
  auto& st = self->state;
  auto failure = make_delivery_failure(d, text, v);
  auto nack = make_nack_envelope(failure,
                                 st.opts.process_name + "-entry-" + std::to_string(++st.next_id),
                                 st.opts.self_address);
  if (retry_after_ms)
    nack.properties["retry_after_ms"] = std::to_string(*retry_after_ms);
  self->send(*h, hb_in_atom::value, std::move(nack));
  return true;
}

/// The entry's answer for a delivery it gave up on: failed-and-NACKed if the NACK was posted,
/// else plain failed with the text.
envelope refused(envelope d, bool posted, const std::string& text) {
  if (posted) {
    mark_failed_and_nacked(d);
  } else {
    d.state = delivery_state::failed;
    d.properties["error"] = json_quote(text);
  }
  return d;
}

envelope accepted(envelope d) {
  d.state = delivery_state::forwarded;
  return d;
}

bool is_stream_routed(rs_actor* self, const address& host) {
  auto& types = self->state.opts.stream_routed_address_types;
  return std::find(types.begin(), types.end(), host.type) != types.end();
}

} // namespace routing_service_detail

namespace {

using namespace routing_service_detail;

/// Step 4 of `deliver` for a silo host: the co-hosted router core takes `d`.
envelope core_hand_over(rs_actor* self, envelope& d, int64_t deadline_ms) {
  auto& st = self->state;
  if (!st.opts.core) {
    auto text = "Routing to '" + d.target.to_string()
                + "' failed before the delivery could be attempted: no router core in this "
                  "process: its silo is not Active yet (the router core comes at stage "
                  "ApplicationServices) or its start failed; send once the silo is Active "
                  "(when_active)";
    bool posted = post_local_nack(self, d, verdict::failed, text);
    return refused(std::move(d), posted, text);
  }
  ++st.stats.to_core;
  envelope answer = d;
  answer.state = delivery_state::forwarded;
  // A request is held until its answer passes: if the silo whose hub took it departs
  // abruptly first, it ends in one NACK at once. Only a sender this process can NACK (a
  // local route) is held. docs/behaviour/routing.md#requests-whose-silo-departs
  auto now = now_ms(self);
  if (deadline_ms > 0 && may_answer(d) && !is_continuation(d)
      && find_route(self, d.sender) != nullptr)
    st.held.hold(d, silo_address{}, deadline_ms, now);
  // A request tells the core how long its requester waits
  // (docs/behaviour/routing.md#a-requests-remaining-time).
  if (deadline_ms > 0 && may_answer(d))
    self->send(st.opts.core, rc_route_atom::value, std::move(d), answer_within(deadline_ms, now));
  else
    self->send(st.opts.core, rc_route_atom::value, std::move(d));
  return answer;
}

// -- deliver -------------------------------------------------------------------------

/// The entry: the steps every role shares, then the role's backend (routing_service_parts.hpp).
/// `d` is the request's own envelope (taken by reference: the hot paths below copy it once
/// for the answer and move it on, never an extra move in between).
envelope deliver(rs_actor* self, envelope& d, int64_t deadline_ms = 0) {
  auto& st = self->state;
  ++st.stats.delivered;
  // 1. local route table hit.
  if (auto h = find_route(self, d.target)) {
    ++st.stats.local_hits;
    if (d.request_id && st.held.size() > 0)
      st.held.answered(*d.request_id);
    envelope answer = d;
    answer.state = delivery_state::forwarded;
    self->send(*h, hb_in_atom::value, std::move(d));
    return answer;
  }
  if (st.opts.role == config::process_role::monolith)
    return monolith_deliver(self, std::move(d));
  // 2. host stopping. A silo host still hands continuations of accepted work (responses
  // and NACKs from its own hubs) to its router core: they are accepted work that must
  // leave the silo, and the router core's gauge holds the stop until they landed. Only new
  // work is refused here.
  bool continuation = st.stopping && st.opts.role == config::process_role::silo_host
                      && is_continuation(d);
  if (continuation)
    ++st.stats.stopping_continuations;
  if (st.stopping && !continuation) {
    auto text = "Host is shutting down, cannot route to " + d.target.to_string();
    bool posted = post_local_nack(self, d, verdict::shutting_down, text);
    if (posted)
      ++st.stats.stopping_nacks;
    else
      ++st.stats.stopping_refused;
    return refused(std::move(d), posted, text);
  }
  // 3, 3b and 4 by role.
  if (st.opts.role == config::process_role::pure_client)
    return client_deliver(self, d, deadline_ms);
  return core_hand_over(self, d, deadline_ms);
}

void post(rs_actor* self, envelope& d) {
  auto& st = self->state;
  if (auto h = find_route(self, d.target)) {
    ++st.stats.delivered;
    ++st.stats.local_hits;
    self->send(*h, hb_in_atom::value, std::move(d));
    return;
  }
  if (st.opts.role == config::process_role::silo_host && !st.stopping && st.opts.core) {
    ++st.stats.delivered;
    ++st.stats.to_core;
    self->send(st.opts.core, rc_route_atom::value, std::move(d));
    return;
  }
  auto a = deliver(self, d);
  if (a.state == delivery_state::failed && !is_failed_and_nacked(a)) {
    auto i = a.properties.find("error");
    st.log.warning("post " + a.id + " to '" + a.target.to_string()
                   + "' refused and no NACK could reach its sender: "
                   + (i == a.properties.end() ? std::string{"refused"} : i->second));
  }
}

caf::behavior routing_service(rs_actor* self, routing_service_options opts) {
  auto& st = self->state;
  if (opts.self_address.empty())
    opts.self_address = address{"routing", opts.process_name, {}};
  st.log = log::get("routing_service").with_context(opts.process_name);
  st.rng.seed(opts.seed ^ fnv1a64("gateway/" + opts.process_name));
  st.opts = std::move(opts);
  return {
    [=](rs_deliver_atom, envelope& d) -> envelope { return deliver(self, d); },
    [=](rs_post_atom, envelope& d) { post(self, d); },
    [=](rs_request_atom, envelope& d, int64_t timeout_ms) -> envelope {
      return deliver(self, d, now_ms(self) + std::max<int64_t>(timeout_ms, 0));
    },
    [=](mc_gone_atom, const silo_address& s) { silo_lost(self, s); },
    [=](mc_leaving_atom, const silo_address& s, bool graceful) { silo_leaving(self, s, graceful); },
    [=](rs_landed_atom, const std::string& id, const silo_address& at) { on_landed(self, id, at); },
    [=](rs_register_atom, const address& a, caf::actor& h) {
      auto& st = self->state;
      auto key = route_key(self, a);
      auto host = host_address(a, st.opts.mesh_type);
      if (st.opts.streams) {
        auto old = st.routes.find(key);
        if (old != st.routes.end() && old->second != h)
          caf::anon_send(st.opts.streams, st_unsub_atom::value, host, old->second);
        caf::anon_send(st.opts.streams, st_sub_atom::value, host, h);
      }
      st.routes[key] = std::move(h);
      if (st.opts.role == config::process_role::pure_client)
        client_registered(self, key, host);
      return caf::ok_atom::value;
    },
    [=](rs_unregister_atom, const address& a) {
      auto& st = self->state;
      auto key = route_key(self, a);
      if (st.opts.streams) {
        auto old = st.routes.find(key);
        if (old != st.routes.end())
          caf::anon_send(st.opts.streams, st_unsub_atom::value, host_address(a, st.opts.mesh_type),
                         old->second);
      }
      st.routes.erase(key);
      client_unregistered(self, key);
      return caf::ok_atom::value;
    },
    [=](rs_has_route_atom, const address& a) { return find_route(self, a) != nullptr; },
    [=](lr_deliver_atom, envelope& d) {
      auto h = landing_route(self, d);
      if (h == nullptr)
        return false;
      self->send(*h, hb_in_atom::value, std::move(d));
      return true;
    },
    // A pod hub activation's delivery, delegated here: the answer goes straight to whoever
    // called the activation (docs/delivery-costs.md#the-remote-frame-path).
    [=](lr_land_atom, envelope& d, const silo_address& landing, activation_tag tag,
        caf::actor& activation) -> caf::result<envelope> {
      auto h = landing_route(self, d);
      if (h == nullptr) {
        if (!activation) // nobody to hand it back to (a delegation to nobody is never answered)
          return to_error(
            fault{mesh_errc::pod_hub_not_here,
                  "no local route for '" + d.target.to_string() + "' in this process"});
        auto rp = self->make_response_promise<envelope>();
        return rp.delegate(activation, ph_no_route_atom::value, std::move(d));
      }
      auto ack = forwarded_answer(d);
      if (!landing.empty())
        stamp_landing(ack, landing);
      if (tag.value != 0)
        stamp_landed_activation(ack, tag);
      self->send(*h, hb_in_atom::value, std::move(d));
      return ack;
    },
    [=](gw_stop_send_atom a, const silo_address& gw) {
      auto& st = self->state;
      ++st.stats.stop_sends;
      if (st.opts.events)
        self->send(st.opts.events, a, gw);
      st.log.info("stop-send from gateway " + gw.to_string());
      drop_gateway(self, gw, "stop-send");
    },
    [=](rs_reattach_atom, const address& a) { client_reattach(self, a); },
    [=](rs_home_atom, const silo_address& gw) {
      client_home(self, gw);
      return caf::ok_atom::value;
    },
    [=](rs_attach_retry_atom, const std::string& key, uint64_t tok) {
      client_attach_retry(self, key, tok);
    },
    [=](lifecycle::host_stopping_atom) {
      auto& st = self->state;
      if (!st.stopping) {
        st.stopping = true;
        st.log.info("routing service: stopping signal received; new deliveries that miss "
                    "the local route table are NACKed shutting_down, responses and NACKs "
                    "still leave");
        client_stopping(self);
      }
      return caf::ok_atom::value;
    },
    [=](rs_core_atom, router_core_actor& core) { self->state.opts.core = std::move(core); },
    [=](rs_role_atom) { return config::to_string(self->state.opts.role); },
    [=](rs_stats_atom) { return self->state.stats; },
    [=](mb_snapshot_atom, const membership_snapshot& v) {
      // A silo host only needs the view for its held requests (silo_lost, on_landed).
      departures_snapshot(self, v);
      if (self->state.opts.role == config::process_role::pure_client)
        client_snapshot(self, v);
    },
    [=](rs_retry_atom, uint64_t id, uint64_t tok) { client_retry(self, id, tok); },
    [=](rs_call_sweep_atom, int64_t due_ms) { client_call_sweep(self, due_ms); },
    [=](rs_flush_atom) {
      self->state.batch_flush_queued = false;
      flush_dispatches(self);
    },
  };
}

} // namespace

routing_service_actor spawn_routing_service(caf::actor_system& sys, routing_service_options opts) {
  return caf::actor_cast<routing_service_actor>(sys.spawn(routing_service, std::move(opts)));
}

} // namespace cafmesh::routing
