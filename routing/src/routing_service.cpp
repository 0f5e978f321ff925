#include "cafmesh/routing/routing_service.hpp"

#include <algorithm>
#include <chrono>
#include <optional>
#include <utility>

#include <caf/all.hpp>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/placement_atoms.hpp"
#include "cafmesh/routing/classify.hpp"
#include "cafmesh/routing/size_guard.hpp"

namespace cafmesh::routing {

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

namespace {

using rs_actor = caf::stateful_actor<routing_service_state>;

int64_t now_ms(rs_actor* self) {
  using namespace std::chrono;
  return duration_cast<milliseconds>(self->clock().now().time_since_epoch()).count();
}

/// Appends `x` to a per-attach record, keeping its newest `max` entries (`max` <= 0: none).
/// Attaches happen per membership change, not per delivery: erasing at the front is cheap.
template <class T>
void keep_newest(std::vector<T>& record, T x, int64_t max) {
  if (max <= 0)
    return;
  record.push_back(std::move(x));
  if (record.size() > static_cast<size_t>(max))
    record.erase(record.begin(), record.end() - max);
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

/// Posts a NACK straight to the sender's local route (entry NACKs,
/// docs/behaviour/routing.md#the-entry, #nacks: not tracked). Answers true if it was posted.
bool post_local_nack(rs_actor* self, const envelope& d, verdict v, const std::string& text,
                     std::optional<int64_t> retry_after_ms = std::nullopt) {
  if (!may_answer(d) || d.sender.empty())
    return false;
  auto h = find_route(self, d.sender);
  if (h == nullptr)
    return false;
  auto& st = self->state;
  auto failure = make_delivery_failure(d, text, v);
  auto nack = make_nack_envelope(failure, st.opts.process_name + "-entry-"
                                            + std::to_string(++st.next_id),
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

// -- pure client ---------------------------------------------------------------------

void client_attempt(rs_actor* self, uint64_t id);
void reassert_all(rs_actor* self, bool idle_only);

/// Picks a gateway if there is none (docs/behaviour/membership.md#gateways-for-pure-clients: at
/// random from the active set, avoiding gateways that refused or said stop-send while another
/// exists) and connects to it.
void ensure_gateway(rs_actor* self) {
  auto& st = self->state;
  if (!st.gateway.empty() || st.gateways.empty())
    return;
  std::vector<silo_address> usable;
  std::vector<silo_address> fresh;
  for (auto& g : st.gateways) {
    if (st.lost.count(g) > 0)
      continue; // its connection broke: never again, even if it is the only one
    usable.push_back(g);
    if (st.avoided.count(g) == 0)
      fresh.push_back(g);
  }
  if (usable.empty())
    return;
  auto& pool = fresh.empty() ? usable : fresh;
  st.gateway = pool[st.rng() % pool.size()];
  if (st.opts.inbound_attach && st.opts.centre) {
    st.log.info("homed on gateway " + st.gateway.to_string());
    self->send(st.opts.centre, mc_send_atom::value, st.gateway, component::gateway,
               caf::make_message(gw_connect_atom::value, st.opts.self_silo));
  }
}

/// Drops gateway `gw` if it is the current one (re-homing,
/// docs/behaviour/membership.md#gateways-for-pure-clients): it is avoided while another Active
/// gateway exists, and every inbound path is attached again elsewhere.
void drop_gateway(rs_actor* self, const silo_address& gw, const std::string& why) {
  auto& st = self->state;
  if (gw.empty())
    return;
  st.avoided.insert(gw);
  if (st.gateway != gw)
    return;
  ++st.stats.rehomes;
  st.log.info("re-homing away from gateway " + gw.to_string() + ": " + why);
  st.gateway = silo_address{};
  reassert_all(self, true);
}

/// A gateway call that failed this way says the gateway `gw` cannot serve this client now:
/// it refused (`silo_unavailable`), is gone (`departed_silo`), or did not answer in time
/// (`response_timeout`: cafmesh goes further than
/// docs/behaviour/membership.md#gateways-for-pure-clients, a stalled gateway that the failure
/// detector has not caught is left like a stopping one). Only a node about `gw` itself (or about no
/// silo in particular) counts: a healthy gateway that reports the departure of another silo it
/// tried to reach keeps this client. The `retry_after_ms` of an `overloaded` node anywhere in `f`,
/// if there is one.
std::optional<uint32_t> overload_hint_ms(const fault& f) {
  if (f.code == mesh_errc::overloaded && f.retry_after_ms)
    return *f.retry_after_ms;
  for (auto& c : f.causes)
    if (auto h = overload_hint_ms(c))
      return h;
  return std::nullopt;
}

bool gateway_failed(const fault& f, const silo_address& gw) {
  bool hit = false;
  auto visit = [&](const fault& n, auto& self_ref) -> void {
    if (hit)
      return;
    if ((n.code == mesh_errc::silo_unavailable || n.code == mesh_errc::departed_silo
         || n.code == mesh_errc::response_timeout)
        && (!n.silo || *n.silo == gw)) {
      hit = true;
      return;
    }
    for (auto& c : n.causes)
      self_ref(c, self_ref);
  };
  visit(f, visit);
  return hit;
}

bool any_first_pending(rs_actor* self) {
  for (auto& kv : self->state.inbound)
    if (kv.second.first)
      return true;
  return false;
}

/// Starts the dispatches that waited for a first attach, in arrival order, once no first
/// assertion is pending (docs/behaviour/routing.md#the-entry: dispatch no longer waits after the
/// attach completed).
void release_gate(rs_actor* self) {
  auto& st = self->state;
  if (any_first_pending(self))
    return;
  auto waiting = std::move(st.gated);
  st.gated.clear();
  for (auto id : waiting)
    client_attempt(self, id);
}

/// The current assertion of `key` completed (attached, refused or given up).
void attach_done(rs_actor* self, const std::string& key) {
  auto& st = self->state;
  auto i = st.inbound.find(key);
  if (i == st.inbound.end() || !i->second.first)
    return;
  i->second.first = false;
  release_gate(self);
}

void attach_attempt(rs_actor* self, const std::string& key);

void attach_failed(rs_actor* self, const std::string& key, uint64_t tok, const fault& f,
                   const silo_address& gw) {
  auto& st = self->state;
  auto i = st.inbound.find(key);
  if (i == st.inbound.end() || i->second.token != tok)
    return;
  i->second.attached = false;
  auto d = i->second.retry.next(f);
  auto attempts = i->second.retry.attempts() - (d.retry ? 1 : 0);
  // A failed gateway (refusing, departed, silent) is dropped; this path stays busy and
  // retries below (on the next gateway), the idle paths re-attach at once.
  if (gateway_failed(f, gw))
    drop_gateway(self, gw, f.render());
  i = st.inbound.find(key);
  if (i == st.inbound.end())
    return;
  if (!d.retry) {
    ++st.stats.attach_gave_up;
    i->second.busy = false;
    st.log.error("inbound attach of " + key + " gave up after " + std::to_string(attempts)
                 + " attempt(s): " + f.render());
    attach_done(self, key);
    return;
  }
  st.log.debug("inbound attach of " + key + " failed (" + f.render() + "); retry in "
               + std::to_string(d.delay_ms) + " ms");
  self->delayed_send(self, std::chrono::milliseconds(d.delay_ms), rs_attach_retry_atom::value,
                     key, i->second.token);
}

void attach_attempt(rs_actor* self, const std::string& key) {
  auto& st = self->state;
  auto i = st.inbound.find(key);
  if (i == st.inbound.end())
    return;
  if (st.stopping) {
    attach_done(self, key);
    return;
  }
  auto& r = i->second;
  auto tok = ++r.token;
  r.busy = true;
  keep_newest(r.attempt_ms, now_ms(self), st.opts.client.attempt_record_max);
  ++st.stats.attach_attempts;
  ensure_gateway(self);
  if (st.gateway.empty() || !st.opts.centre) {
    fault f{mesh_errc::no_compatible_silo,
            "no active silo is compatible with grain type podhub (interface version 1); "
            "no Active gateway silo is known to this client"};
    attach_failed(self, key, tok, f, silo_address{});
    return;
  }
  auto gw = st.gateway;
  auto call = make_call(gw, component::gateway, gw_attach_atom::value, st.opts.self_silo,
                        r.addr);
  auto bound = std::chrono::milliseconds(st.opts.placement_timeout_ms
                                         + st.opts.grain_response_timeout_ms);
  self->request(st.opts.centre, bound, std::move(call))
    .then(
      [=](bool ok) {
        auto& st = self->state;
        auto j = st.inbound.find(key);
        if (j == st.inbound.end() || j->second.token != tok)
          return;
        auto& r = j->second;
        r.attached = ok;
        r.busy = false;
        if (ok) {
          ++st.stats.attach_ok;
          r.at = gw;
          keep_newest(r.attached_at, gw, st.opts.client.attempt_record_max);
          keep_newest(r.attached_ms, now_ms(self), st.opts.client.attempt_record_max);
          st.log.info("inbound path " + key + " attached at gateway " + gw.to_string());
        } else {
          st.log.warning("inbound attach of " + key + " refused by gateway " + gw.to_string());
        }
        attach_done(self, key);
      },
      [=](caf::error& e) { attach_failed(self, key, tok, to_fault(e), gw); });
}

/// Starts a fresh assertion of `key` (new attach budget).
void assert_attach(rs_actor* self, const std::string& key) {
  auto& st = self->state;
  auto i = st.inbound.find(key);
  if (i == st.inbound.end())
    return;
  if (st.stopping) {
    attach_done(self, key);
    return;
  }
  i->second.retry = retry_state{attach_policy(st.opts.attach, st.opts.placement_timeout_attempts)};
  attach_attempt(self, key);
}

/// Asserts every inbound path again; with `idle_only`, only the paths not in an
/// assertion right now (re-homing: a busy path's own next attempt goes to the new gateway).
void reassert_all(rs_actor* self, bool idle_only) {
  std::vector<std::string> keys;
  for (auto& kv : self->state.inbound)
    if (!idle_only || !kv.second.busy)
      keys.push_back(kv.first);
  for (auto& k : keys)
    assert_attach(self, k);
}

bool is_stream_routed(rs_actor* self, const address& host) {
  auto& types = self->state.opts.stream_routed_address_types;
  return std::find(types.begin(), types.end(), host.type) != types.end();
}

// -- per-channel order across a re-homing ------------------------------------------------
// docs/behaviour/routing.md#a-pure-clients-streams-across-a-re-homing

/// The ordering channel of `d` as the router core forms it (host path, ordering key), or
/// none for the node branch, which the router core does not order.
std::optional<ordering_channel> dispatch_channel(rs_actor* self, const envelope& d) {
  auto host = host_address(d.target, self->state.opts.mesh_type);
  if (!is_stream_routed(self, host))
    return std::nullopt;
  return make_channel(host.path(), d.ordering_key ? *d.ordering_key : std::string{});
}

/// Drops the channels that hold no dispatch and whose pin is older than `channel_pin_ms`
/// or names a gateway whose connection was lost (memory bound of `channels`).
void sweep_channels(rs_actor* self) {
  auto& st = self->state;
  auto now = now_ms(self);
  for (auto i = st.channels.begin(); i != st.channels.end();) {
    auto& c = i->second;
    if (c.pending.empty() && !c.draining
        && (c.pinned.empty() || st.lost.count(c.pinned) > 0
            || now - c.pinned_ms > st.opts.channel_pin_ms))
      i = st.channels.erase(i);
    else
      ++i;
  }
  st.channel_sweep_at = std::max<size_t>(1024, 2 * st.channels.size());
}

void pump_channel(rs_actor* self, const ordering_channel& ch);

/// The old gateway of `ch` answered (or could not: gone, closed, silent within the bound).
void drain_done(rs_actor* self, const ordering_channel& ch, uint64_t tok) {
  auto& st = self->state;
  auto i = st.channels.find(ch);
  if (i == st.channels.end() || !i->second.draining || i->second.drain_token != tok)
    return;
  i->second.draining = false;
  i->second.pinned = silo_address{};
  pump_channel(self, ch);
}

/// Asks the gateway that accepted the latest dispatch of `ch` to answer once its router
/// core holds no leg of `ch` any more.
void start_drain(rs_actor* self, const ordering_channel& ch, client_channel& c) {
  auto& st = self->state;
  if (c.draining)
    return;
  c.draining = true;
  auto tok = ++c.drain_token;
  ++st.stats.drains;
  auto gw = c.pinned;
  auto bound = std::chrono::milliseconds(st.opts.placement_timeout_ms
                                         + st.opts.grain_response_timeout_ms);
  st.log.debug("channel " + ch.name() + " moves off gateway " + gw.to_string()
               + ": its next deliveries wait until that gateway's router core let go of it");
  self->request(st.opts.centre, bound,
                make_call(gw, component::gateway, gw_drained_atom::value, ch.destination,
                          ch.key ? *ch.key : std::string{}))
    .then([=](caf::ok_atom) { drain_done(self, ch, tok); },
          [=](caf::error& e) {
            self->state.log.info("channel " + ch.name() + " at gateway " + gw.to_string()
                                 + ": no drain answer (" + to_fault(e).render()
                                 + "); its next deliveries go on");
            drain_done(self, ch, tok);
          });
}

/// True if dispatch `id` of channel `ch` may start on the current gateway now: every
/// earlier dispatch of the channel is in a call at that gateway, and the gateway that
/// accepted the channel's latest dispatch is this one or has let go of the channel. A
/// dispatch that waits only for the old gateway starts the drain there.
bool channel_allows(rs_actor* self, uint64_t id, const ordering_channel& ch) {
  auto& st = self->state;
  auto i = st.channels.find(ch);
  if (i == st.channels.end())
    return true;
  auto& c = i->second;
  auto gw = st.gateway;
  for (auto pid : c.pending) {
    if (pid == id)
      break;
    auto j = st.dispatches.find(pid);
    if (j != st.dispatches.end() && j->second.in_call != gw)
      return false; // it waits for a retry or its channel, or is in a call elsewhere
  }
  if (c.pinned.empty() || c.pinned == gw || gw.empty())
    return true;
  if (st.lost.count(c.pinned) > 0 || !st.opts.centre) {
    c.pinned = silo_address{}; // its legs ended with its connection
    return true;
  }
  start_drain(self, ch, c);
  return false;
}

/// Starts the held dispatches of `ch` that may start now, in arrival order; stops at the
/// first that still has to wait (everything behind it waits too).
void pump_channel(rs_actor* self, const ordering_channel& ch) {
  auto& st = self->state;
  auto i = st.channels.find(ch);
  if (i == st.channels.end())
    return;
  std::vector<uint64_t> ids(i->second.pending.begin(), i->second.pending.end());
  for (auto pid : ids) {
    auto j = st.dispatches.find(pid);
    if (j == st.dispatches.end() || !j->second.in_call.empty())
      continue;
    if (!j->second.held)
      return; // waits for its retry (or a first attach)
    client_attempt(self, pid);
    j = st.dispatches.find(pid);
    if (j != st.dispatches.end() && j->second.held)
      return;
  }
}

/// Dispatch `id` of `ch` ended (accepted by `gw`, or given up with `gw` empty).
void channel_finish(rs_actor* self, uint64_t id, const ordering_channel& ch,
                    const silo_address& gw) {
  auto& st = self->state;
  auto i = st.channels.find(ch);
  if (i == st.channels.end())
    return;
  auto& c = i->second;
  c.pending.erase(std::remove(c.pending.begin(), c.pending.end(), id), c.pending.end());
  if (!gw.empty()) {
    c.pinned = gw;
    c.pinned_ms = now_ms(self);
  }
  if (c.pending.empty() && c.pinned.empty() && !c.draining)
    st.channels.erase(i);
  else
    pump_channel(self, ch);
  if (st.channels.size() > st.channel_sweep_at)
    sweep_channels(self);
}

/// `gw` accepted the dispatch `id` (`gw` empty on failure).
void client_finish(rs_actor* self, uint64_t id, bool ok, const fault* f,
                   const silo_address& gw = silo_address{}) {
  auto& st = self->state;
  auto i = st.dispatches.find(id);
  if (i == st.dispatches.end())
    return;
  auto& dsp = i->second;
  auto took = now_ms(self) - dsp.started_ms;
  if (took > st.opts.client.slow_dispatch_log_ms)
    st.log.info("slow dispatch of delivery " + dsp.env.id + " to '" + dsp.env.target.to_string()
                + "': " + std::to_string(took) + " ms over "
                + std::to_string(dsp.attempt_ms.size()) + " attempt(s)");
  if (ok) {
    ++st.stats.client_accepted;
    if (dsp.deadline_ms > now_ms(self) && !gw.empty() && may_answer(dsp.env)) {
      st.held.hold(dsp.env, gw, dsp.deadline_ms, now_ms(self));
    }
  } else {
    ++st.stats.client_failed;
    auto target = dsp.env.target.to_string();
    if (!may_answer(dsp.env)) {
      auto text = f ? f->render() : std::string{};
      st.log.info("answer-suppressed delivery " + dsp.env.id + " to '" + target
                  + "' failed: " + text);
      if (st.opts.failure_observer)
        self->send(st.opts.failure_observer, ep_event_atom::value, std::string{"suppressed"},
                   dsp.env.id, static_cast<uint8_t>(f ? classify(*f) : verdict::failed),
                   "Delivery to '" + target + "' failed: " + text);
    } else {
      bool posted;
      if (st.stopping) {
        posted = post_local_nack(self, dsp.env, verdict::shutting_down,
                                 "Host is shutting down, cannot route to " + target);
      } else {
        auto v = f ? classify(*f) : verdict::failed;
        posted = post_local_nack(self, dsp.env, v,
                                 "Delivery to '" + target + "' failed: "
                                   + (f ? f->render() : std::string{"unknown fault"}));
      }
      if (!posted)
        st.log.error("dispatch of delivery " + dsp.env.id + " to '" + target
                     + "' failed and its sender has no local route here: "
                     + (f ? f->render() : std::string{}));
    }
  }
  auto ch = std::move(dsp.channel);
  st.dispatches.erase(i);
  if (ch)
    channel_finish(self, id, *ch, ok ? gw : silo_address{});
}

void client_failed_attempt(rs_actor* self, uint64_t id, uint64_t tok, fault f,
                           const silo_address& gw) {
  auto& st = self->state;
  auto i = st.dispatches.find(id);
  if (i == st.dispatches.end() || i->second.token != tok)
    return;
  i->second.in_call = silo_address{};
  if (gateway_failed(f, gw))
    drop_gateway(self, gw, f.render());
  // Admission control: a cluster that refused the dispatch as overloaded told its sender when
  // to come back. Retrying inside the client would hide the overload (the delivery's latency
  // grows by every hidden retry), so the refusal goes back to the sender at once, as the NACK
  // `unavailable` with the hint in its text. docs/behaviour/admission-control.md
  if (overload_hint_ms(f)) {
    client_finish(self, id, false, &f);
    return;
  }
  auto d = i->second.retry.next(f);
  if (!d.retry) {
    client_finish(self, id, false, &f);
    return;
  }
  self->delayed_send(self, std::chrono::milliseconds(d.delay_ms), rs_retry_atom::value, id,
                     i->second.token);
}

void client_attempt(rs_actor* self, uint64_t id) {
  auto& st = self->state;
  auto i = st.dispatches.find(id);
  if (i == st.dispatches.end())
    return;
  auto& dsp = i->second;
  ensure_gateway(self);
  if (dsp.channel && !channel_allows(self, id, *dsp.channel)) {
    if (!dsp.held)
      ++st.stats.order_held;
    dsp.held = true;
    return;
  }
  dsp.held = false;
  auto tok = ++dsp.token;
  auto now = now_ms(self);
  dsp.attempt_ms.push_back(now);
  record_attempt(st, dsp.env.id, now);
  ++st.stats.client_attempts;
  if (st.gateway.empty() || !st.opts.centre) {
    fault f{mesh_errc::no_compatible_silo,
            "no active silo is compatible with grain type routing (interface version 1); "
            "no Active gateway silo is known to this client"};
    st.log.debug("dispatch of " + dsp.env.id + ": " + f.render());
    client_failed_attempt(self, id, tok, std::move(f), silo_address{});
    return;
  }
  auto gw = st.gateway;
  dsp.in_call = gw;
  auto bound = std::chrono::milliseconds(st.opts.placement_timeout_ms
                                         + st.opts.grain_response_timeout_ms);
  auto call = make_bounded_call(bound.count(), gw, component::gateway, pl_call_atom::value,
                                routing_grain_id(), int32_t{0},
                                caf::make_message(hg_route_atom::value, dsp.env,
                                                  st.opts.self_silo));
  self->request(st.opts.centre, bound, std::move(call))
    .then([=](envelope&) { client_finish(self, id, true, nullptr, gw); },
          [=](caf::error& e) {
            auto f = to_fault(e);
            if (e == caf::sec::request_timeout)
              f = fault{mesh_errc::response_timeout,
                        "routing/default on gateway " + gw.to_string()
                          + " did not answer: the call timed out after "
                          + std::to_string(bound.count()) + " ms"};
            client_failed_attempt(self, id, tok, std::move(f), gw);
          });
}

/// Ends held request `r` with one NACK `failed`: `s`, which its answer depended on, is gone.
void nack_lost(rs_actor* self, const held_requests::entry& r, held_loss why,
               const silo_address& s) {
  auto& st = self->state;
  auto& d = r.env;
  auto detail = why == held_loss::gateway
                  ? departed_in_flight(s).render()
                  : "silo " + s.to_string() + " departed after its hub took the request, "
                      "before the answer left; its outcome is unknown";
  if (post_local_nack(self, d, verdict::failed,
                      "Delivery to '" + d.target.to_string() + "' failed: " + detail)) {
    ++(why == held_loss::gateway ? st.stats.departed_nacks : st.stats.landing_nacks);
  } else {
    st.log.error("request " + d.id + " held for departed silo " + s.to_string()
                 + " has no local route for its sender here: " + detail);
  }
}

/// True if this process knows `s` is gone: its centre reported it, or membership shows it
/// Dead or superseded.
bool known_gone(rs_actor* self, const silo_address& s) {
  auto& st = self->state;
  return st.lost.count(s) > 0 || (st.view && st.view->departed(s));
}

/// The centre reports `s` departed (its connection broke, a call to it bounced, or
/// membership shows it Dead). A pure client leaves `s` for good if it was its gateway and
/// never picks it again. Every held request `s` had accepted, or whose hub `s` hosts, ends
/// with one NACK `failed`: the answer can no longer come, and whether `s` processed the
/// request is unknown. docs/behaviour/routing.md#requests-whose-silo-departs
void silo_lost(rs_actor* self, const silo_address& s) {
  auto& st = self->state;
  if (st.opts.role == config::process_role::monolith || s.empty())
    return;
  if (!st.lost.insert(s).second)
    return;
  if (st.opts.role == config::process_role::pure_client) {
    ++st.stats.gateways_lost;
    if (st.gateway == s)
      drop_gateway(self, s, "the connection to it was lost");
  }
  if (st.graceful.count(s) > 0) {
    // A silo that left gracefully finishes the work it accepted and its hubs' answers leave
    // before it goes (their answers reach this process through the next gateway): nothing
    // to NACK.
    st.held.left(s);
    return;
  }
  for (auto& l : st.held.departed(s, now_ms(self)))
    nack_lost(self, l.req, l.why, s);
}

/// The router core whose leg landed request `id` reports that a hub of `at` took it.
void on_landed(rs_actor* self, const std::string& id, const silo_address& at) {
  auto& st = self->state;
  if (!st.held.landed(id, at))
    return; // answered already, expired, or a post
  ++st.stats.landings;
  if (!known_gone(self, at))
    return;
  if (st.graceful.count(at) > 0) {
    st.held.landed(id, silo_address{});
    return;
  }
  // `at` departed before this report arrived: the answer cannot come any more.
  if (auto r = st.held.take(id, now_ms(self)))
    nack_lost(self, *r, held_loss::landing, at);
}

// -- monolith --------------------------------------------------------------------------

void monolith_build(rs_actor* self, const address& host) {
  auto& st = self->state;
  auto key = host.path();
  auto flush_failed = [=](const fault& f) {
    auto& st = self->state;
    auto waiting = std::move(st.building[key]);
    st.building.erase(key);
    for (auto& d : waiting) {
      auto v = contains_code(f, mesh_errc::not_found) ? verdict::not_found : classify(f);
      if (post_local_nack(self, d, v, "Delivery to '" + d.target.to_string()
                                        + "' failed: " + f.render()))
        ++st.stats.monolith_nacks;
      else
        st.log.warning("monolith: delivery " + d.id + " to '" + d.target.to_string()
                       + "' failed without a NACK: " + f.render());
    }
  };
  if (!st.opts.hubs) {
    flush_failed(fault{mesh_errc::extension_missing, "no hub factory in this monolith"});
    return;
  }
  self->request(st.opts.hubs, std::chrono::milliseconds(st.opts.hub_build_timeout_ms),
                hf_build_atom::value, key)
    .then(
      [=](caf::actor hub) {
        auto& st = self->state;
        ++st.stats.hubs_built;
        st.routes[key] = hub;
        st.log.info("monolith: hub " + key + " created in-process");
        auto waiting = std::move(st.building[key]);
        st.building.erase(key);
        for (auto& d : waiting)
          self->send(hub, hb_in_atom::value, std::move(d));
      },
      [=](caf::error& e) { flush_failed(to_fault(e)); });
}

envelope monolith_deliver(rs_actor* self, envelope d) {
  auto& st = self->state;
  auto target = d.target.to_string();
  if (st.stopping) {
    auto text = "Mesh is shutting down, cannot route to " + target;
    bool posted = post_local_nack(self, d, verdict::shutting_down, text);
    if (posted)
      ++st.stats.monolith_nacks;
    return refused(std::move(d), posted, text);
  }
  auto host = host_address(d.target, st.opts.mesh_type);
  auto key = host.path();
  auto answer = accepted(d);
  auto i = st.building.find(key);
  if (i != st.building.end()) {
    i->second.push_back(std::move(d));
    return answer;
  }
  st.building[key].push_back(std::move(d));
  monolith_build(self, host);
  return answer;
}

// -- deliver -------------------------------------------------------------------------

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
  // 3. size guard (pure_client only).
  if (st.opts.role == config::process_role::pure_client) {
    auto chk = check_size(d, size_crossing::grain_call, st.opts.size);
    if (chk.refused) {
      ++st.stats.size_refused;
      log_size_refusal(d, chk);
      auto text = size_refusal_message(d, chk);
      bool posted = post_local_nack(self, d, verdict::rejected, text);
      return refused(std::move(d), posted, text);
    }
  }
  // 4. hand-over by role.
  if (st.opts.role == config::process_role::silo_host) {
    if (!st.opts.core) {
      auto text = "Routing to '" + d.target.to_string()
                  + "' failed before the delivery could be attempted: no router core in this "
                    "process";
      bool posted = post_local_nack(self, d, verdict::failed, text);
      return refused(std::move(d), posted, text);
    }
    ++st.stats.to_core;
    envelope answer = d;
    answer.state = delivery_state::forwarded;
    // A request is held until its answer passes: if the silo whose hub took it departs
    // abruptly first, it ends in one NACK at once. Only a sender this process can NACK (a
    // local route) is held. docs/behaviour/routing.md#requests-whose-silo-departs
    if (deadline_ms > 0 && may_answer(d) && !is_continuation(d)
        && find_route(self, d.sender) != nullptr)
      st.held.hold(d, silo_address{}, deadline_ms, now_ms(self));
    self->send(st.opts.core, rc_route_atom::value, std::move(d));
    return answer;
  }
  // pure_client
  // 3b. admission (docs/behaviour/admission-control.md): at the bound the delivery is refused here,
  // before it is accepted, so an offered load above what the cluster carries never queues in
  // a mailbox. Continuations of accepted work are always admitted.
  if (st.opts.max_outstanding > 0 && !is_continuation(d)
      && st.dispatches.size() >= static_cast<size_t>(st.opts.max_outstanding)) {
    ++st.stats.refused_overloaded;
    auto text = "client " + st.opts.process_name + " overloaded: "
                + std::to_string(st.dispatches.size())
                + " dispatches outstanding (gateway.max_outstanding "
                + std::to_string(st.opts.max_outstanding) + "); retry after "
                + std::to_string(st.opts.overload_retry_after_ms) + " ms";
    bool posted = post_local_nack(self, d, verdict::unavailable, text,
                                  st.opts.overload_retry_after_ms);
    return refused(std::move(d), posted, text);
  }
  ++st.stats.client_dispatches;
  auto id = ++st.next_id;
  auto answer = accepted(d);
  client_dispatch dsp;
  dsp.env = std::move(d);
  dsp.deadline_ms = deadline_ms;
  dsp.retry = retry_state{client_policy(st.opts.client, st.opts.placement_timeout_attempts)};
  dsp.started_ms = now_ms(self);
  dsp.channel = dispatch_channel(self, dsp.env);
  if (dsp.channel)
    st.channels[*dsp.channel].pending.push_back(id);
  st.dispatches.emplace(id, std::move(dsp));
  if (!st.gated.empty() || any_first_pending(self)) {
    ++st.stats.gated;
    st.gated.push_back(id);
    return answer;
  }
  client_attempt(self, id);
  return answer;
}

/// The one-way entry (docs/behaviour/routing.md#the-co-hosted-hot-path): the local route and
/// the co-hosted router core take `d` as `deliver` would, without the copy an answer needs;
/// anything else goes through `deliver`, and a refusal no NACK carried is logged.
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
    [=](rs_landed_atom, const std::string& id, const silo_address& at) {
      on_landed(self, id, at);
    },
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
      if (st.opts.role == config::process_role::pure_client && st.opts.inbound_attach
          && is_stream_routed(self, host) && st.inbound.count(key) == 0 && !st.stopping) {
        auto& r = st.inbound[key];
        r.addr = host;
        assert_attach(self, key);
      }
      return caf::ok_atom::value;
    },
    [=](rs_unregister_atom, const address& a) {
      auto& st = self->state;
      auto key = route_key(self, a);
      if (st.opts.streams) {
        auto old = st.routes.find(key);
        if (old != st.routes.end())
          caf::anon_send(st.opts.streams, st_unsub_atom::value,
                         host_address(a, st.opts.mesh_type), old->second);
      }
      st.routes.erase(key);
      auto i = st.inbound.find(key);
      if (i != st.inbound.end()) {
        auto at = i->second.at;
        auto path = i->second.addr;
        st.inbound.erase(i);
        if (!at.empty() && st.opts.centre && !st.stopping) {
          auto lg = st.log;
          auto bound = std::chrono::milliseconds(st.opts.placement_timeout_ms
                                                 + st.opts.grain_response_timeout_ms);
          self->request(st.opts.centre, bound,
                        make_call(at, component::gateway, gw_detach_atom::value,
                                  st.opts.self_silo, path))
            .then([](caf::ok_atom) {},
                  [=](caf::error& e) {
                    lg.info("detach of " + key + " at gateway " + at.to_string()
                            + " failed: " + to_fault(e).render());
                  });
        }
        release_gate(self);
      }
      return caf::ok_atom::value;
    },
    [=](rs_has_route_atom, const address& a) { return find_route(self, a) != nullptr; },
    [=](lr_deliver_atom, envelope& d) {
      if (d.request_id && self->state.held.size() > 0)
        self->state.held.answered(*d.request_id);
      auto h = find_route(self, d.target);
      if (h == nullptr) {
        ++self->state.stats.lr_refused;
        return false;
      }
      ++self->state.stats.lr_delivered;
      self->send(*h, hb_in_atom::value, std::move(d));
      return true;
    },
    [=](gw_stop_send_atom a, const silo_address& gw) {
      auto& st = self->state;
      ++st.stats.stop_sends;
      if (st.opts.events)
        self->send(st.opts.events, a, gw);
      st.log.info("stop-send from gateway " + gw.to_string());
      drop_gateway(self, gw, "stop-send");
    },
    [=](rs_reattach_atom, const address& a) {
      auto& st = self->state;
      auto key = route_key(self, a);
      if (st.inbound.count(key) == 0)
        return;
      st.log.info("pod hub of " + key + " was deactivated; attaching again");
      assert_attach(self, key);
    },
    [=](rs_home_atom, const silo_address& gw) {
      auto& st = self->state;
      if (st.gateway != gw) {
        st.gateway = silo_address{};
        st.avoided.erase(gw);
        auto saved = st.gateways;
        st.gateways = {gw};
        ensure_gateway(self);
        st.gateways = saved.empty() ? std::vector<silo_address>{gw} : saved;
        reassert_all(self, false);
      }
      return caf::ok_atom::value;
    },
    [=](rs_attach_retry_atom, const std::string& key, uint64_t tok) {
      auto& st = self->state;
      auto i = st.inbound.find(key);
      if (i == st.inbound.end() || i->second.token != tok)
        return;
      attach_attempt(self, key);
    },
    [=](lifecycle::host_stopping_atom) {
      auto& st = self->state;
      if (!st.stopping) {
        st.stopping = true;
        st.log.info("routing service: stopping signal received; new deliveries that miss "
                    "the local route table are NACKed shutting_down, responses and NACKs "
                    "still leave");
        // Nothing is attached any more; pending first attaches complete now.
        for (auto& kv : st.inbound) {
          ++kv.second.token;
          kv.second.busy = false;
          kv.second.first = false;
        }
        release_gate(self);
      }
      return caf::ok_atom::value;
    },
    [=](rs_core_atom, router_core_actor& core) { self->state.opts.core = std::move(core); },
    [=](rs_role_atom) { return config::to_string(self->state.opts.role); },
    [=](rs_stats_atom) { return self->state.stats; },
    [=](mb_snapshot_atom, const membership_snapshot& v) {
      auto& st = self->state;
      for (auto& r : v.rows)
        if (r.status == silo_status::shutting_down)
          st.graceful.insert(r.silo);
      st.view = v;
      if (st.opts.role != config::process_role::pure_client) {
        // A silo host only needs the view for its held requests (silo_lost, on_landed).
        for (auto i = st.lost.begin(); i != st.lost.end();)
          i = v.departed(*i) ? st.lost.erase(i) : std::next(i);
        return;
      }
      st.gateways = v.active_set();
      for (auto i = st.lost.begin(); i != st.lost.end();) {
        if (v.departed(*i))
          i = st.lost.erase(i); // membership caught up: Dead or superseded for good
        else
          ++i;
      }
      for (auto i = st.avoided.begin(); i != st.avoided.end();) {
        if (!v.is_active(*i))
          i = st.avoided.erase(i);
        else
          ++i;
      }
      if (!st.gateway.empty() && !v.is_active(st.gateway)) {
        st.log.info("gateway " + st.gateway.to_string() + " left the active set; re-homing");
        ++st.stats.rehomes;
        st.gateway = silo_address{};
      }
      // docs/behaviour/routing.md#the-entry, #hubs: every snapshot re-asserts the inbound attaches.
      if (!st.stopping)
        reassert_all(self, false);
    },
    [=](rs_retry_atom, uint64_t id, uint64_t tok) {
      auto& st = self->state;
      auto i = st.dispatches.find(id);
      if (tok == 0 || i == st.dispatches.end() || i->second.token != tok)
        return;
      auto ch = i->second.channel;
      client_attempt(self, id);
      if (ch)
        pump_channel(self, *ch); // the dispatches behind it may follow it now
    },
  };
}

} // namespace

routing_service_actor spawn_routing_service(caf::actor_system& sys,
                                            routing_service_options opts) {
  return caf::actor_cast<routing_service_actor>(sys.spawn(routing_service, std::move(opts)));
}

} // namespace cafmesh::routing
