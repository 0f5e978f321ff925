#include "cafmesh/routing/correlating_entry.hpp"

#include <map>
#include <utility>

#include <caf/all.hpp>

#include "cafmesh/actors/deadline_sweep.hpp"
#include "cafmesh/actors/log.hpp"
#include "cafmesh/routing/nack_codec.hpp"
#include "cafmesh/routing/retry_policy.hpp"

namespace cafmesh::routing {

namespace {

/// One request in progress, keyed by its first delivery id.
struct pending_request {
  caf::typed_response_promise<std::string> promise;
  address target;
  std::string payload_type;
  std::string payload_json;
  int64_t deadline_ms = 0;
  int64_t timeout_ms = 0;
  bool resend = false;
  int64_t resends = 0;
  std::string attempt_id; ///< the delivery id of the current attempt
};

struct entry_state {
  correlating_entry_options opts;
  retry_policy policy;
  std::string process;
  uint64_t next_id = 0;
  std::map<std::string, pending_request> requests; ///< key -> request
  std::map<std::string, std::string> attempts;     ///< attempt id -> key
  /// The requests' deadlines, earliest first: one timer, armed for the earliest, ends them
  /// all (SPEC §14 B6, docs/delivery-costs.md).
  deadline_sweep<std::string> deadlines;
  log::logger log;
  static const char* name;
};

const char* entry_state::name = "correlating-entry";

using entry_actor = correlating_entry_actor::stateful_pointer<entry_state>;

int64_t now_ms(caf::local_actor* self) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
           self->clock().now().time_since_epoch())
    .count();
}

std::string next_id(entry_actor self) {
  auto& st = self->state;
  return st.process + "-" + std::to_string(++st.next_id);
}

/// Ends the request `key` with `err`, or sends it again when that is allowed.
/// `key` is taken by value: callers pass entries of `attempts`, which this erases.
void fail(entry_actor self, std::string key, delivery_error err);

/// Sends the current attempt of request `key` to the routing service.
void attempt(entry_actor self, const std::string& key) {
  auto& st = self->state;
  auto i = st.requests.find(key);
  if (i == st.requests.end())
    return;
  auto& req = i->second;
  auto id = next_id(self);
  if (!req.attempt_id.empty())
    st.attempts.erase(req.attempt_id);
  req.attempt_id = id;
  st.attempts[id] = key;
  envelope e;
  e.id = id;
  e.sender = st.opts.self_address;
  e.target = req.target;
  e.payload_type = req.payload_type;
  e.payload_json = req.payload_json;
  auto remaining = std::max<int64_t>(req.deadline_ms - now_ms(self), 1);
  self->request(st.opts.routing, caf::infinite, rs_request_atom::value, std::move(e), remaining)
    .then(
      [=](const envelope& a) {
        if (a.state != delivery_state::failed || is_failed_and_nacked(a))
          return; // accepted, or its NACK is on the way to this entry
        auto& st = self->state;
        auto k = st.attempts.find(id);
        if (k == st.attempts.end())
          return;
        fail(self, k->second, entry_refusal(a));
      },
      [=](caf::error& e) {
        auto& st = self->state;
        auto k = st.attempts.find(id);
        if (k == st.attempts.end())
          return;
        fail(self, k->second,
             delivery_error{verdict::shutting_down,
                            "Host is shutting down, cannot route to "
                              + st.requests[k->second].target.to_string()
                              + " (routing service unreachable: " + self->system().render(e) + ")",
                            false, false});
      });
}

void finish(entry_actor self, std::string key, caf::error err, std::string payload) {
  auto& st = self->state;
  auto i = st.requests.find(key);
  if (i == st.requests.end())
    return;
  st.deadlines.remove(i->second.deadline_ms, key);
  auto promise = i->second.promise;
  st.attempts.erase(i->second.attempt_id);
  st.requests.erase(i);
  if (err)
    promise.deliver(std::move(err));
  else
    promise.deliver(std::move(payload));
}

void fail(entry_actor self, std::string key, delivery_error err) {
  auto& st = self->state;
  auto i = st.requests.find(key);
  if (i == st.requests.end())
    return;
  auto& req = i->second;
  if (req.resend && err.resendable && req.resends < st.policy.retry_max) {
    auto delay = st.policy.delay_ms(req.resends);
    if (now_ms(self) + delay < req.deadline_ms) {
      ++req.resends;
      st.log.debug("request " + key + " to " + req.target.to_string() + " sent again in "
                   + std::to_string(delay) + " ms after: " + to_string(err));
      st.attempts.erase(req.attempt_id);
      req.attempt_id.clear();
      self->delayed_send(self, std::chrono::milliseconds(delay), ce_resend_atom::value, key);
      return;
    }
  }
  finish(self, key, to_error(err), {});
}

/// A NACK or a response addressed to this entry.
void take_in(entry_actor self, const envelope& d) {
  auto& st = self->state;
  if (d.payload_type == delivery_failure_payload_type) {
    delivery_failure f;
    if (!from_json_text(d.payload_json, f)) {
      st.log.warning("unreadable NACK " + d.id + " dropped");
      return;
    }
    auto k = st.attempts.find(f.request_id);
    if (k == st.attempts.end()) {
      st.log.warning("delivery " + f.request_id + " NACKed " + to_string(f.verdict) + ": "
                     + f.message);
      return;
    }
    fail(self, k->second, to_delivery_error(f));
    return;
  }
  if (d.request_id) {
    auto k = st.attempts.find(*d.request_id);
    if (k == st.attempts.end()) {
      st.log.debug("late or repeated response " + d.id + " to " + *d.request_id + " dropped");
      return;
    }
    finish(self, k->second, caf::error{}, d.payload_json);
    return;
  }
  st.log.debug("delivery " + d.id + " to the correlating entry ignored");
}

} // namespace

correlating_entry_actor spawn_correlating_entry(caf::actor_system& sys,
                                                correlating_entry_options opts) {
  auto entry = sys.spawn([opts](entry_actor self) -> correlating_entry_actor::behavior_type {
    auto& st = self->state;
    st.opts = opts;
    st.policy = attach_policy(opts.attach);
    st.process = opts.self_address.id;
    st.log = log::get("entry").with_context(opts.self_address.to_string());
    // Registered (and claimed) before this entry sends anything: same sender, same order.
    // The pod hub is claimed once the route exists: a claim without one is refused.
    self
      ->request(opts.routing, caf::infinite, rs_register_atom::value, opts.self_address,
                caf::actor_cast<caf::actor>(self))
      .then(
        [=](caf::ok_atom) {
          if (opts.claimer)
            caf::anon_send(opts.claimer, pc_claim_atom::value, opts.self_address);
        },
        [=](caf::error& e) {
          self->state.log.error("correlating entry not registered: " + self->system().render(e));
        });
    return {
      [=](ce_send_atom, address& target, std::string& type,
          std::string& payload) -> caf::result<std::string> {
        auto& st = self->state;
        envelope e;
        e.id = next_id(self);
        e.sender = st.opts.self_address;
        e.target = std::move(target);
        e.payload_type = std::move(type);
        e.payload_json = std::move(payload);
        auto rp = self->make_response_promise<std::string>();
        auto id = e.id;
        auto tgt = e.target.to_string();
        self->request(st.opts.routing, caf::infinite, rs_deliver_atom::value, std::move(e))
          .then(
            [=](const envelope& a) mutable {
              if (a.state == delivery_state::failed && !is_failed_and_nacked(a))
                rp.deliver(to_error(entry_refusal(a)));
              else
                rp.deliver(id);
            },
            [=](caf::error& err) mutable {
              rp.deliver(to_error(delivery_error{verdict::shutting_down,
                                                 "Host is shutting down, cannot route to " + tgt
                                                   + " (routing service " + "unreachable: "
                                                   + self->system().render(err) + ")",
                                                 false, false}));
            });
        return rp;
      },
      [=](ce_request_atom, address& target, std::string& type, std::string& payload,
          int64_t timeout_ms, bool resend) -> caf::result<std::string> {
        auto& st = self->state;
        pending_request req;
        req.promise = self->make_response_promise<std::string>();
        req.target = std::move(target);
        req.payload_type = std::move(type);
        req.payload_json = std::move(payload);
        req.timeout_ms = std::max<int64_t>(timeout_ms, 1);
        req.deadline_ms = now_ms(self) + req.timeout_ms;
        req.resend = resend;
        auto key = st.process + "-" + std::to_string(st.next_id + 1); // the first attempt's id
        auto rp = req.promise;
        st.deadlines.add(req.deadline_ms, key);
        st.requests.emplace(key, std::move(req));
        st.deadlines.arm(self, ce_deadline_atom::value, now_ms(self));
        attempt(self, key);
        return rp;
      },
      [=](hb_in_atom, envelope& d) { take_in(self, d); },
      [=](hb_deliver_atom, envelope& d) -> envelope {
        take_in(self, d);
        d.state = delivery_state::processed;
        return d;
      },
      // The deadline timer, armed for due ms `fired`: every request whose deadline has
      // passed ends "no answer", then the timer is armed for the next deadline.
      [=](ce_deadline_atom, int64_t fired) {
        auto& st = self->state;
        st.deadlines.fire(
          self, ce_deadline_atom::value, fired, now_ms(self),
          [self](int64_t, const std::string& key) {
            auto& st = self->state;
            auto i = st.requests.find(key);
            if (i == st.requests.end())
              return;
            auto text = "no answer to request " + key + " for " + i->second.target.to_string()
                        + " within " + std::to_string(i->second.timeout_ms)
                        + " ms; its outcome is unknown";
            finish(self, key, to_error(delivery_error{verdict::failed, text, false, true}), {});
          });
      },
      [=](ce_resend_atom, const std::string& key) { attempt(self, key); },
    };
  });
  return entry;
}

} // namespace cafmesh::routing
