#include "cafmesh/routing/hub_endpoint.hpp"

#include <algorithm>
#include <chrono>

#include <caf/all.hpp>

#include "cafmesh/actors/detail/tell.hpp"
#include "cafmesh/routing/entry_atoms.hpp"
#include "cafmesh/routing/size_guard.hpp"
#include "cafmesh/routing/detail/hub_endpoint_state.hpp"

namespace cafmesh::routing {

using cafmesh::routing::detail::hub_endpoint_state;

const char* hub_endpoint_state::name = "cafmesh.hub_endpoint";

namespace {

/// The hub endpoint with its own timer: the earliest deadline of a request it tracks.
using hub_endpoint_impl = hub_endpoint_actor::extend<caf::reacts_to<ep_tick_atom>>;
using ep_actor = hub_endpoint_impl::stateful_base<hub_endpoint_state>;

int64_t now_ms(ep_actor* self) {
  using namespace std::chrono;
  return duration_cast<milliseconds>(self->clock().now().time_since_epoch()).count();
}

void arm(ep_actor* self) {
  auto& st = self->state;
  auto next = st.tracker.next_deadline_ms();
  if (!next)
    return;
  if (st.timer_armed && st.timer_due_ms <= *next)
    return;
  st.timer_armed = true;
  st.timer_due_ms = *next;
  auto delay = std::max<int64_t>(0, *next - now_ms(self));
  self->delayed_send(self, std::chrono::milliseconds(delay), ep_tick_atom::value);
}

void notify(ep_actor* self, const std::string& kind, const std::string& id, verdict v,
            const std::string& text) {
  auto& st = self->state;
  if (st.observer)
    cafmesh::detail::tell(self, st.observer, ep_event_atom::value, kind, id,
                          static_cast<uint8_t>(v), text);
}

/// Tells the observer about a tracker decision other than `deliver`.
void dropped(ep_actor* self, outcome_action act, const std::string& id) {
  if (act == outcome_action::duplicate)
    notify(self, "duplicate", id, verdict::failed, "");
}

/// Appends `x` to `record`, dropping the oldest entries beyond `max`.
template <class T>
void keep(std::deque<T>& record, T x, size_t max) {
  if (max == 0)
    return;
  record.push_back(std::move(x));
  while (record.size() > max)
    record.pop_front();
}

void record(ep_actor* self, hub_outcome o) {
  auto& st = self->state;
  st.log.debug("outcome " + o.kind + " for delivery " + o.id);
  notify(self, o.kind, o.id, o.verdict, o.message);
  keep(st.outcomes, std::move(o), st.record_max);
}

void on_entry_answer(ep_actor* self, const envelope& answer, bool request) {
  auto& st = self->state;
  keep(st.entry_answers, answer, st.record_max);
  // A plain failed answer means no NACK will come: it is the terminal outcome.
  if (answer.state == delivery_state::failed && !is_failed_and_nacked(answer)) {
    auto now = now_ms(self);
    (void) request;
    auto act = st.tracker.on_nack(answer.id, now);
    if (act == outcome_action::deliver) {
      auto i = answer.properties.find("error");
      record(self, hub_outcome{now, answer.id, "entry_failed", verdict::failed, false,
                               i == answer.properties.end() ? std::string{} : i->second});
    }
  }
}

/// An envelope for this hub (local-route hand-over or node-hub hand-over): a NACK, a
/// response, or a delivery (recorded; answered with a response when `respond` is on and
/// the delivery may be answered).
void take_in(ep_actor* self, envelope& d) {
  auto& st = self->state;
  auto now = now_ms(self);
  if (d.payload_type == delivery_failure_payload_type) {
    delivery_failure f;
    if (!from_json_text(d.payload_json, f)) {
      st.log.warning("unreadable NACK " + d.id + " dropped");
      return;
    }
    auto act = st.tracker.on_nack(f.request_id, now);
    if (act == outcome_action::deliver)
      record(self, hub_outcome{now, f.request_id, "nack", f.verdict, f.target_unserved, f.message});
    else
      dropped(self, act, f.request_id);
    return;
  }
  if (d.request_id) {
    auto act = st.tracker.on_response(*d.request_id, now);
    if (act == outcome_action::deliver)
      record(self, hub_outcome{now, *d.request_id, "response", verdict::failed, false, ""});
    else
      dropped(self, act, *d.request_id);
    return;
  }
  if (auto act = st.taken.on_nack(d.id, now); act != outcome_action::deliver) {
    dropped(self, act, d.id);
    return;
  }
  notify(self, "received", d.id, verdict::failed, "");
  keep(st.received, hub_received{now, d}, st.record_max);
  if (st.respond && !d.sender.empty() && may_answer(d)) {
    envelope r;
    r.id = d.id + "-response";
    r.sender = st.self_address;
    r.target = d.sender;
    r.request_id = d.id;
    r.payload_type = "response";
    r.payload_json = "{}";
    self->request(st.routing, caf::infinite, rs_deliver_atom::value, std::move(r))
      .then([](envelope&) {}, [](caf::error&) {});
  }
}

/// The routing service did not answer the entry at all: this hub's host is gone (its
/// routing service exited with the silo). The delivery was never accepted; its terminal
/// outcome is `entry_failed` with verdict `shutting_down`, as the entry itself answers while
/// its host stops (docs/behaviour/routing.md#the-entry): "Host is shutting down, cannot route to
/// {target}".
void on_entry_error(ep_actor* self, const std::string& id, const address& target,
                    const caf::error& e) {
  auto& st = self->state;
  auto now = now_ms(self);
  auto act = st.tracker.on_nack(id, now);
  if (act == outcome_action::deliver)
    record(self,
           hub_outcome{now, id, "entry_failed", verdict::shutting_down, false,
                       "Host is shutting down, cannot route to " + target.to_string()
                         + " (routing service unreachable: " + self->system().render(e) + ")"});
}

hub_endpoint_impl::behavior_type hub_endpoint(ep_actor* self, address me, caf::actor routing,
                                              config::routing_section cfg, bool respond,
                                              caf::actor observer) {
  auto& st = self->state;
  st.observer = std::move(observer);
  st.self_address = me;
  st.routing = std::move(routing);
  st.respond = respond;
  st.record_max = static_cast<size_t>(std::max<int64_t>(cfg.endpoint_record_max, 0));
  st.log = log::get("hub_endpoint").with_context(me.to_string());
  st.tracker = outcome_tracker{cfg, st.log};
  st.taken = outcome_tracker{cfg, st.log};
  return {
    [=](ep_request_atom, envelope& d, int64_t timeout_ms) {
      auto& st = self->state;
      auto now = now_ms(self);
      if (d.sender.empty())
        d.sender = st.self_address;
      st.tracker.track_request(d.id, now + timeout_ms, now);
      arm(self);
      auto id = d.id;
      auto target = d.target;
      self->request(st.routing, caf::infinite, rs_request_atom::value, std::move(d), timeout_ms)
        .then([=](envelope& a) { on_entry_answer(self, a, true); },
              [=](caf::error& e) { on_entry_error(self, id, target, e); });
    },
    [=](ep_post_atom, envelope& d) {
      auto& st = self->state;
      if (d.sender.empty())
        d.sender = st.self_address;
      auto id = d.id;
      auto target = d.target;
      self->request(st.routing, caf::infinite, rs_deliver_atom::value, std::move(d))
        .then([=](envelope& a) { on_entry_answer(self, a, false); },
              [=](caf::error& e) { on_entry_error(self, id, target, e); });
    },
    [=](hb_in_atom, envelope& d) { take_in(self, d); },
    [=](hb_deliver_atom, envelope& d) {
      take_in(self, d);
      d.state = delivery_state::processed;
      return d;
    },
    [=](ep_rehome_atom, caf::actor& routing) { self->state.routing = std::move(routing); },
    [=](ep_tick_atom) {
      auto& st = self->state;
      st.timer_armed = false;
      auto now = now_ms(self);
      for (auto& id : st.tracker.expire(now))
        record(self, hub_outcome{now, id, "deadline", verdict::failed, false, ""});
      arm(self);
    },
  };
}

} // namespace

hub_endpoint_actor spawn_hub_endpoint(caf::actor_system& sys, address self_address,
                                      caf::actor routing, const config::routing_section& cfg,
                                      bool respond, caf::actor observer) {
  return sys.spawn(hub_endpoint, std::move(self_address), std::move(routing), cfg, respond,
                   std::move(observer));
}

hub_endpoint_state& detail::state_of(const hub_endpoint_actor& ep) {
  auto ptr = caf::actor_cast<caf::abstract_actor*>(ep);
  return dynamic_cast<ep_actor&>(*ptr).state;
}

} // namespace cafmesh::routing
