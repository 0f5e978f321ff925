#include "cafmesh/actors/message_center.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include <caf/all.hpp>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/log.hpp"
#include "cafmesh/actors/membership.hpp"
#include "cafmesh/actors/remote_call.hpp"
#include "cafmesh/actors/request_any.hpp"

namespace cafmesh {

std::string to_string(component x) {
  switch (x) {
    case component::none: return "none";
    case component::membership: return "membership";
    case component::oracle: return "oracle";
    case component::directory: return "directory";
    case component::catalog: return "catalog";
    case component::placement: return "placement";
    case component::activation: return "activation";
    case component::router: return "router";
    case component::routing: return "routing";
    case component::gateway: return "gateway";
    case component::client: return "client";
    case component::pod_hub: return "pod_hub";
    case component::test: return "test";
    case component::stream: return "stream";
    default: break;
  }
  return "component(" + std::to_string(static_cast<int>(x)) + ")";
}

bool is_application(component x) {
  switch (x) {
    case component::catalog:
    case component::activation:
    case component::router:
    case component::routing:
    case component::gateway:
    case component::pod_hub:
    case component::stream: return true;
    default: return static_cast<uint8_t>(x) >= static_cast<uint8_t>(component::user_first);
  }
}

std::string wire_frame::describe() const {
  std::string kind = is_response ? "resp" : (correlation_id == 0 ? "send" : "req");
  return src.to_string() + " -> " + dst.to_string() + " #" + std::to_string(correlation_id) + " "
         + to_string(target) + " " + kind;
}

void arm_expiry(wire_frame& f, caf::actor_clock::time_point now) {
  if (f.ttl_ms > 0)
    f.expires_at = now + std::chrono::milliseconds(f.ttl_ms);
}

bool wire_frame::expired(caf::actor_clock::time_point now) const {
  return ttl_ms > 0 && expires_at != caf::actor_clock::time_point{}
         && now + std::chrono::milliseconds(call_expiry_margin_ms) >= expires_at;
}

bool refresh_ttl(wire_frame& f, caf::actor_clock::time_point now) {
  if (f.ttl_ms <= 0 || f.expires_at == caf::actor_clock::time_point{})
    return true;
  if (f.expired(now))
    return f.is_response || f.correlation_id == 0;
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(f.expires_at - now).count();
  f.ttl_ms = std::max<int64_t>(left, 1);
  return true;
}

fault departed_in_flight(const silo_address& s) {
  fault cause{mesh_errc::response_timeout,
              "no answer can come from " + s.to_string() + " any more"};
  cause.silo = s;
  fault f{mesh_errc::departed_silo,
          "silo " + s.to_string()
            + " departed while the call was in flight; its outcome is "
              "unknown",
          {std::move(cause)}};
  f.silo = s;
  return f;
}

wire_frame response_to(const wire_frame& req) {
  wire_frame resp;
  resp.src = req.dst;
  resp.dst = req.src;
  resp.correlation_id = req.correlation_id;
  resp.target = req.target;
  resp.is_response = true;
  return resp;
}

wire_frame expired_response(const wire_frame& req, const std::string& where) {
  auto resp = response_to(req);
  fault f{mesh_errc::response_timeout,
          "call #" + std::to_string(req.correlation_id) + " to " + to_string(req.target) + " on "
            + req.dst.to_string() + " expired " + where + ": its caller stopped waiting after "
            + std::to_string(req.ttl_ms) + " ms"};
  f.silo = req.dst;
  resp.error = to_error(f);
  return resp;
}

namespace {

/// A call waiting for its response frame: a request's promise (`mc_call_atom`), or the
/// caller and its id for a call answered by id (`mc_calls_atom`, remote_call.hpp).
struct pending_call {
  caf::response_promise rp;
  silo_address dst;
  caf::strong_actor_ptr caller; ///< set for a call answered by id
  uint64_t caller_id = 0;
};

/// An inbound grain call handed to its handler by id: the response frame its answer goes
/// into, and the handler.
struct inbound_call {
  wire_frame resp_to;
  caf::actor_addr handler;
};

struct message_center_state {
  silo_address self_addr;
  link_actor net; ///< the link: a `sim_network` or a `net_link`
  std::map<component, caf::actor> components;
  std::map<uint64_t, pending_call> pending;
  uint64_t next_id = 1;
  std::set<silo_address> departed;
  /// Silos membership showed departed (Dead, or superseded by a newer generation of their
  /// endpoint): their application frames are dropped when they arrive (SPEC C6).
  std::set<silo_address> declared_departed;
  /// Simulation: departed silos whose frames on the wire are awaited (`sim_flush_atom`)
  /// before the calls to them fail.
  std::set<silo_address> flushing;
  /// Silos that are leaving: membership showed them ShuttingDown or Stopping, or their
  /// centre said so over the link (`mc_leaving_atom`). Their departure is a leave.
  std::set<silo_address> graceful;
  /// Every silo this centre exchanged a frame with: told when this silo leaves.
  std::set<silo_address> peers;
  /// Of `graceful`: the silos whose leave is graceful (ShuttingDown).
  std::set<silo_address> graceful_leaves;
  /// This silo's own leave was announced to its peers (`announce_leaving`).
  bool announced_leaving = false;
  /// This silo's own view showed it ShuttingDown.
  bool own_graceful_leave = false;
  bool block_application = false;
  /// Told `(mc_gone_atom, s)` once for every silo this centre learns has departed.
  std::vector<caf::actor> watchers;
  message_center_stats stats;
  /// Frames this centre's turns produced that the link has not been handed yet, in order
  /// (SPEC §14 B7): flushed when the mailbox is empty, at `link_batch_max_frames`, by the
  /// `mc_flush_atom` behind the backlog, before a `sim_flush_atom` and before an exit.
  std::vector<wire_frame> out;
  bool flush_armed = false; ///< an `mc_flush_atom` is in the mailbox
  /// A turn is taking a batch (`mc_calls`, `mc_frames`, `ct_results`): the frames it
  /// produces wait for its end (`turn_end`), not for the mailbox to fill.
  bool in_batch = false;
  /// Answers to calls by id not sent yet, by caller (remote_call.hpp): sent in one
  /// `ct_results` per caller when the mailbox is empty, else by the `mc_flush_atom`.
  std::vector<std::pair<caf::strong_actor_ptr, std::vector<ct_result_item>>> results_out;
  /// Inbound grain calls (`ct_invoke` for component `activation`) handed to the catalog by
  /// id, with the response frame each one's answer goes into (SPEC §14 B1).
  std::unordered_map<uint64_t, inbound_call> inbound;
  uint64_t next_inbound = 0;
  /// Inbound grain calls not handed over yet: one `ct_calls` per handler at the end of the
  /// turn (`turn_end`).
  std::vector<std::pair<caf::actor, std::vector<ct_call_item>>> inbound_out;
  /// Handlers of `inbound` calls, monitored: their calls fail when they go down.
  std::set<caf::actor_addr> watched;
  log::logger log;
  static const char* name;
};

const char* message_center_state::name = "cafmesh.message_center";

using mc_actor = caf::stateful_actor<message_center_state>;

caf::error departed_error(const silo_address& s) {
  fault f{mesh_errc::departed_silo, "silo " + s.to_string() + " has departed"};
  f.silo = s;
  return to_error(f);
}

caf::error in_flight_error(const silo_address& s) {
  return to_error(departed_in_flight(s));
}

caf::error unavailable_error(const silo_address& s, std::string text) {
  fault f{mesh_errc::silo_unavailable, std::move(text)};
  f.silo = s;
  return to_error(f);
}

/// Asks `h` with `payload` (no timeout) and calls `done(reply, error)`.
template <class F>
void ask_any(mc_actor* self, const caf::actor& h, caf::message payload, F done) {
  request_any(
    self, h, 0, std::move(payload),
    [done](caf::message reply) mutable { done(std::move(reply), caf::error{}); },
    [done](caf::error e) mutable { done(caf::message{}, std::move(e)); });
}

void mark_departed(mc_actor* self, const silo_address& s);

/// Sends the answers to calls by id collected so far, one `ct_results` per caller.
void flush_results(mc_actor* self) {
  auto& st = self->state;
  if (st.results_out.empty())
    return;
  auto out = std::move(st.results_out);
  st.results_out.clear();
  for (auto& [caller, items] : out)
    caller->enqueue(caf::make_mailbox_element(caf::strong_actor_ptr{self->ctrl()},
                                              caf::make_message_id(), {}, ct_results_atom::value,
                                              std::move(items)),
                    self->context());
}

void flush_out(mc_actor* self);

/// Hands the inbound grain calls collected so far to their handlers, one `ct_calls` each.
void flush_inbound(mc_actor* self) {
  auto& st = self->state;
  if (st.inbound_out.empty())
    return;
  auto out = std::move(st.inbound_out);
  st.inbound_out.clear();
  for (auto& [handler, calls] : out)
    self->send(handler, ct_calls_atom::value, std::move(calls));
}

/// Queues the answer to call `id` of `caller` (remote_call.hpp); `turn_end` or the
/// `mc_flush_atom` sends it.
void post_result(mc_actor* self, const caf::strong_actor_ptr& caller, uint64_t id,
                 caf::message reply, caf::error err) {
  auto& st = self->state;
  auto i = std::find_if(st.results_out.begin(), st.results_out.end(),
                        [&](const auto& x) { return x.first == caller; });
  if (i == st.results_out.end()) {
    st.results_out.emplace_back(caller, std::vector<ct_result_item>{});
    i = st.results_out.end() - 1;
  }
  i->second.push_back(ct_result_item{id, std::move(reply), std::move(err)});
}

/// The fault with `code` in `f` or its causes, depth first; null if none.
const fault* find_fault(const fault& f, mesh_errc code) {
  if (f.code == code)
    return &f;
  for (auto& c : f.causes)
    if (auto x = find_fault(c, code))
      return x;
  return nullptr;
}

/// Answers a pending call with `reply` or `err`, by its promise or by id. A call by id that
/// a leaving silo refused (`silo_unavailable` naming it) is first reported to this silo's
/// placement (`pl_leaving_atom`, component `placement`), as the grain port reports its own
/// calls' refusals: the caller's retry through placement then finds it knowing.
void answer(mc_actor* self, pending_call& c, caf::message reply, caf::error err) {
  if (c.caller) {
    if (err) {
      auto& st = self->state;
      auto pl = st.components.find(component::placement);
      if (pl != st.components.end()) {
        auto f = to_fault(err);
        if (auto n = find_fault(f, mesh_errc::silo_unavailable))
          if (n->silo)
            self->send(pl->second, pl_leaving_atom::value, *n->silo);
      }
    }
    post_result(self, c.caller, c.caller_id, std::move(reply), std::move(err));
    return;
  }
  if (err)
    c.rp.deliver(std::move(err));
  else
    c.rp.deliver(std::move(reply));
}

/// The end of a turn that may have answered calls by id, taken inbound grain calls or (in a
/// batch) produced frames: they leave now when the mailbox is empty, else with the
/// `mc_flush_atom` behind the backlog (SPEC B1).
void turn_end(mc_actor* self) {
  auto& st = self->state;
  st.in_batch = false;
  if (st.results_out.empty() && st.inbound_out.empty() && st.out.empty())
    return;
  if (self->mailbox().empty()) {
    flush_results(self);
    flush_inbound(self);
    flush_out(self);
    return;
  }
  if (!st.flush_armed) {
    st.flush_armed = true;
    self->send(self, mc_flush_atom::value);
  }
}

/// Hands the frames collected so far to the link in one message (SPEC §14 B7).
void flush_out(mc_actor* self) {
  auto& st = self->state;
  if (st.out.empty())
    return;
  ++st.stats.batches_out;
  if (st.out.size() == 1) {
    auto f = std::move(st.out.front());
    st.out.clear();
    self->send(st.net, sim_frame_atom::value, std::move(f));
    return;
  }
  auto batch = std::move(st.out);
  st.out.clear();
  self->send(st.net, sim_frames_atom::value, std::move(batch));
}

/// Queues `f` for the link: a frame waits while more messages wait in the mailbox (their
/// turns may add frames to the same message), never for a timer and never behind more than
/// the backlog the `mc_flush_atom` queues behind.
void transmit(mc_actor* self, wire_frame f) {
  auto& st = self->state;
  ++st.stats.frames_out;
  st.peers.insert(f.dst);
  st.out.push_back(std::move(f));
  if (st.out.size() >= link_batch_max_frames || (!st.in_batch && self->mailbox().empty())) {
    flush_out(self);
    return;
  }
  if (!st.in_batch && !st.flush_armed) {
    st.flush_armed = true;
    self->send(self, mc_flush_atom::value);
  }
}

void respond(mc_actor* self, const wire_frame& req, caf::message reply, caf::error err) {
  auto resp = response_to(req);
  resp.src = self->state.self_addr;
  resp.payload = std::move(reply);
  resp.error = std::move(err);
  transmit(self, std::move(resp));
}

/// `s` is leaving (its own notice, or membership shows it ShuttingDown or Stopping): a call
/// still waiting on it when it departs fails as resendable (SPEC C2). Tells the watchers
/// `(mc_leaving_atom, s, graceful)` the first time, and again if a graceful leave is learnt
/// after a non-graceful one; `graceful`: ShuttingDown, the stop lets its hubs' answers leave.
void learn_leaving(mc_actor* self, const silo_address& s, bool graceful) {
  auto& st = self->state;
  if (s == st.self_addr)
    return;
  bool first = st.graceful.insert(s).second;
  bool upgraded = graceful && st.graceful_leaves.insert(s).second;
  if (!first && !upgraded)
    return;
  for (auto& w : st.watchers)
    self->send(w, mc_leaving_atom::value, s, graceful);
}

/// This silo is leaving (its own view shows it ShuttingDown or Stopping, or it blocks
/// application messages): tells every peer it exchanged frames with, once, in a one-way
/// frame `(mc_leaving_atom, graceful)` that travels on the link ahead of everything it sends
/// later. A peer whose membership view skips the leaving row (a table read between
/// ShuttingDown and Dead) still knows the departure that follows is a leave, not a crash
/// (SPEC C2). `graceful`: this silo's own view showed it ShuttingDown.
void announce_leaving(mc_actor* self, bool graceful) {
  auto& st = self->state;
  if (st.announced_leaving)
    return;
  st.announced_leaving = true;
  auto peers = st.peers;
  size_t told = 0;
  for (auto& p : peers) {
    if (p == st.self_addr || st.departed.count(p) > 0)
      continue;
    wire_frame f;
    f.src = st.self_addr;
    f.dst = p;
    f.target = component::none;
    f.payload = caf::make_message(mc_leaving_atom::value, graceful);
    transmit(self, std::move(f));
    ++told;
  }
  st.log.info(std::string{"leaving ("} + (graceful ? "graceful" : "not graceful") + "): told "
              + std::to_string(told) + " peer(s)");
}

/// Remembers `s` as departed; tells the watchers the first time.
void note_departed(mc_actor* self, const silo_address& s) {
  auto& st = self->state;
  if (s == st.self_addr || !st.departed.insert(s).second)
    return;
  for (auto& w : st.watchers)
    self->send(w, mc_gone_atom::value, s);
}

/// Fails every call still waiting on `s`. Their frames left this process (a frame the link
/// could not hand on comes back as a bounce first), so `s` may have processed them: their
/// outcome is unknown. Except after a leave (membership showed `s` ShuttingDown or
/// Stopping, or `s` said so itself over the link: `learn_leaving`) over a link that lost no
/// frame from `s` (`frames_lost` false): such a silo answers the calls it takes, refuses
/// those that reach it after it blocked application messages (`silo_unavailable`, "is
/// leaving; route elsewhere") while its centre runs, and its routing work ends in a landing
/// or a NACK of its own, so a call it left unanswered was not carried out and may be sent
/// again (SPEC C2). When a frame from `s` was lost, the missing answer may be that frame
/// (docs/behaviour/membership.md#departures-and-the-wire).
void fail_pending_to(mc_actor* self, const silo_address& s, bool frames_lost) {
  auto& st = self->state;
  bool left_gracefully = st.graceful.count(s) > 0 && !frames_lost;
  for (auto i = st.pending.begin(); i != st.pending.end();) {
    if (i->second.dst == s) {
      ++st.stats.departed_fails;
      if (!left_gracefully)
        ++st.stats.in_flight_fails;
      answer(self, i->second, caf::message{},
             left_gracefully ? departed_error(s) : in_flight_error(s));
      i = st.pending.erase(i);
    } else {
      ++i;
    }
  }
  st.stats.pending_calls = st.pending.size();
}

/// `s` can answer no more: no new call goes to it. The calls waiting for it fail once the
/// frames `s` sent us before it left have arrived (`sim_flush_atom`, answered by the
/// simulated wire or the network link): a graceful stop's last answers must not be
/// overtaken by the news of its departure (a membership snapshot travels on no link, a
/// bounce on the other one), or a call its target already processed fails `departed_silo`
/// and is retried (docs/behaviour/membership.md#departures-and-the-wire). The simulated wire
/// answers at once for a killed silo, the network link once the connection broke.
void depart(mc_actor* self, const silo_address& s) {
  auto& st = self->state;
  if (st.flushing.count(s) > 0)
    return;
  if (!st.net || s == st.self_addr || st.departed.count(s) > 0) {
    mark_departed(self, s);
    return;
  }
  note_departed(self, s);
  st.flushing.insert(s);
  flush_out(self); // "already on its way" includes what this centre still holds
  auto done = [=](bool frames_lost) {
    self->state.flushing.erase(s);
    fail_pending_to(self, s, frames_lost);
    turn_end(self);
  };
  self->request(st.net, caf::infinite, sim_flush_atom::value, s, st.self_addr)
    .then([=](caf::ok_atom, bool frames_lost) { done(frames_lost); },
          [=](caf::error&) { done(true); });
}

/// A frame this centre sent could not reach its destination (bounce, failed connect).
void fail_frame(mc_actor* self, const wire_frame& f) {
  auto& st = self->state;
  if (!f.is_response && f.correlation_id != 0) {
    if (auto i = st.pending.find(f.correlation_id); i != st.pending.end()) {
      ++st.stats.departed_fails;
      answer(self, i->second, caf::message{}, departed_error(f.dst));
      st.pending.erase(i);
      st.stats.pending_calls = st.pending.size();
    }
    depart(self, f.dst);
  } else if (f.dst != st.self_addr) {
    note_departed(self, f.dst);
  }
}

void mark_departed(mc_actor* self, const silo_address& s) {
  if (s == self->state.self_addr)
    return;
  note_departed(self, s);
  fail_pending_to(self, s, false);
}

void on_inbound(mc_actor* self, wire_frame& f) {
  auto& st = self->state;
  ++st.stats.frames_in;
  if (f.is_response) {
    auto i = st.pending.find(f.correlation_id);
    if (i == st.pending.end())
      return; // the call already failed (departure); a late answer changes nothing
    auto c = std::move(i->second);
    st.pending.erase(i);
    st.stats.pending_calls = st.pending.size();
    answer(self, c, std::move(f.payload), std::move(f.error));
    return;
  }
  bool is_request = f.correlation_id != 0;
  if (is_request && f.expired(self->clock().now())) {
    // Never start a call whose caller has stopped waiting (see `mc_call_atom` with a
    // time-to-live): its response timeout is the delivery's outcome.
    ++st.stats.expired;
    auto resp = expired_response(f, "in transit");
    st.log.warning("dropped an expired request from " + f.src.to_string() + ": "
                   + to_fault(resp.error).text);
    transmit(self, std::move(resp));
    return;
  }
  if (f.dst == st.self_addr && !f.src.empty())
    st.peers.insert(f.src);
  if (!is_request && f.target == component::none
      && f.payload.match_elements<mc_leaving_atom, bool>()) {
    learn_leaving(self, f.src, f.payload.get_as<bool>(1));
    return;
  }
  if (f.dst != st.self_addr) {
    // Addressed to another incarnation on our endpoint: that one has departed.
    if (is_request)
      respond(self, f, caf::message{}, departed_error(f.dst));
    return;
  }
  if (st.declared_departed.count(f.src) > 0 && is_application(f.target)) {
    // Sent before membership declared its sender Dead (cut off by a partition, its frames
    // retransmitted once the partition healed): every call of that incarnation has failed
    // at its callers and its grains live elsewhere now, so a turn started here could run
    // beside the activation that replaced one (SPEC C6). Dropped unanswered: the sender is
    // gone. A sender whose connection merely broke is not dropped here.
    ++st.stats.blocked;
    st.log.info("dropped " + std::string{is_request ? "request" : "one-way"} + " "
                + to_string(f.target) + " message from departed silo " + f.src.to_string());
    return;
  }
  if (st.block_application && is_application(f.target)) {
    ++st.stats.blocked;
    auto text = "silo " + st.self_addr.to_string() + " is leaving; route elsewhere";
    if (is_request)
      respond(self, f, caf::message{}, unavailable_error(st.self_addr, text));
    else
      st.log.info("dropped one-way " + to_string(f.target) + " message from " + f.src.to_string()
                  + ": " + text);
    return;
  }
  auto c = st.components.find(f.target);
  if (c == st.components.end()) {
    auto text = "component " + to_string(f.target) + " is not registered on silo "
                + st.self_addr.to_string();
    if (is_request)
      respond(self, f, caf::message{}, unavailable_error(st.self_addr, text));
    else
      st.log.info("dropped one-way message from " + f.src.to_string() + ": " + text);
    return;
  }
  if (!is_request) {
    self->send(c->second, std::move(f.payload));
    return;
  }
  wire_frame req = f;
  req.payload = caf::message{};
  if (f.target == component::activation
      && f.payload
           .match_elements<ct_invoke_atom, grain_id, activation_tag, int32_t, caf::message>()) {
    // A grain call: to the catalog by id, with the others of this turn (`ct_calls`), answered
    // in `ct_results` batches.
    auto id = ++st.next_inbound;
    auto& handler = c->second;
    if (st.watched.insert(handler.address()).second)
      self->monitor(handler);
    auto i = std::find_if(st.inbound_out.begin(), st.inbound_out.end(),
                          [&](const auto& x) { return x.first == handler; });
    if (i == st.inbound_out.end()) {
      st.inbound_out.emplace_back(handler, std::vector<ct_call_item>{});
      i = st.inbound_out.end() - 1;
    }
    auto& p = f.payload;
    i->second.push_back(ct_call_item{id, p.get_as<grain_id>(1), p.get_as<activation_tag>(2),
                                     p.get_as<int32_t>(3), p.get_as<caf::message>(4)});
    st.inbound.emplace(id, inbound_call{std::move(req), handler.address()});
    return;
  }
  ask_any(self, c->second, std::move(f.payload), [=](caf::message reply, caf::error err) {
    respond(self, req, std::move(reply), std::move(err));
  });
}

/// A call by id from a component of this silo (`mc_calls_atom`, remote_call.hpp): answered
/// to `caller` in a `ct_results` batch.
void start_call_by_id(mc_actor* self, const caf::strong_actor_ptr& caller, remote_call_item& x) {
  auto& st = self->state;
  auto id = x.call.id;
  auto payload = caf::make_message(ct_invoke_atom::value, std::move(x.call.grain), x.call.tag,
                                   x.call.forward_count, std::move(x.call.payload));
  if (x.dst == st.self_addr) {
    auto i = st.components.find(component::activation);
    if (i == st.components.end()) {
      post_result(self, caller, id, caf::message{},
                  unavailable_error(st.self_addr, "component activation is not registered on "
                                                  "silo "
                                                    + st.self_addr.to_string()));
      return;
    }
    ++st.stats.local_calls;
    ask_any(self, i->second, std::move(payload), [=](caf::message reply, caf::error err) {
      post_result(self, caller, id, std::move(reply), std::move(err));
      turn_end(self);
    });
    return;
  }
  if (st.departed.count(x.dst) > 0) {
    ++st.stats.departed_fails;
    post_result(self, caller, id, caf::message{}, departed_error(x.dst));
    return;
  }
  auto fid = st.next_id++;
  wire_frame f;
  f.src = st.self_addr;
  f.dst = x.dst;
  f.correlation_id = fid;
  f.target = component::activation;
  f.payload = std::move(payload);
  if (x.ttl_ms > 0) {
    f.ttl_ms = x.ttl_ms;
    f.expires_at = self->clock().now() + std::chrono::milliseconds(x.ttl_ms);
  }
  st.pending.emplace(fid, pending_call{caf::response_promise{}, x.dst, caller, id});
  st.stats.pending_calls = st.pending.size();
  transmit(self, std::move(f));
}

/// A call from a component of this silo (`mc_call_atom`), with a time-to-live when
/// `ttl_ms` > 0.
caf::response_promise start_call(mc_actor* self, const silo_address& dst, component c,
                                 caf::message payload, int64_t ttl_ms) {
  auto& st = self->state;
  auto rp = self->make_response_promise();
  if (dst == st.self_addr) {
    auto i = st.components.find(c);
    if (i == st.components.end()) {
      rp.deliver(unavailable_error(st.self_addr, "component " + to_string(c)
                                                   + " is not registered on silo "
                                                   + st.self_addr.to_string()));
      return rp;
    }
    ++st.stats.local_calls;
    ask_any(self, i->second, std::move(payload), [=](caf::message reply, caf::error err) mutable {
      if (err)
        rp.deliver(std::move(err));
      else
        rp.deliver(std::move(reply));
    });
    return rp;
  }
  if (st.departed.count(dst) > 0) {
    ++st.stats.departed_fails;
    rp.deliver(departed_error(dst));
    return rp;
  }
  auto id = st.next_id++;
  wire_frame f;
  f.src = st.self_addr;
  f.dst = dst;
  f.correlation_id = id;
  f.target = c;
  f.payload = std::move(payload);
  if (ttl_ms > 0) {
    f.ttl_ms = ttl_ms;
    f.expires_at = self->clock().now() + std::chrono::milliseconds(ttl_ms);
  }
  st.pending.emplace(id, pending_call{rp, dst, nullptr, 0});
  st.stats.pending_calls = st.pending.size();
  transmit(self, std::move(f));
  return rp;
}

caf::behavior message_center(mc_actor* self, silo_address self_addr, link_actor net) {
  auto& st = self->state;
  st.self_addr = self_addr;
  st.net = std::move(net);
  st.log = log::get("message_center").with_context(self_addr.to_string());
  // What its turns sent before the exit still leaves, as it did when every frame left at
  // once (a graceful stop's last answers).
  self->set_exit_handler([=](caf::exit_msg& em) {
    if (em.reason) {
      flush_results(self);
      flush_inbound(self);
      flush_out(self);
      self->quit(std::move(em.reason));
    }
  });
  // A handler of inbound grain calls went down: the calls it held fail as a request to an
  // actor that is gone does.
  self->set_down_handler([=](caf::down_msg& dm) {
    auto& st = self->state;
    if (st.watched.erase(dm.source) == 0)
      return;
    st.inbound_out.erase(std::remove_if(st.inbound_out.begin(), st.inbound_out.end(),
                                        [&](const auto& x) {
                                          return x.first.address() == dm.source;
                                        }),
                         st.inbound_out.end());
    std::vector<uint64_t> lost;
    for (auto& kv : st.inbound)
      if (kv.second.handler == dm.source)
        lost.push_back(kv.first);
    std::sort(lost.begin(), lost.end());
    for (auto id : lost) {
      auto i = st.inbound.find(id);
      auto req = std::move(i->second.resp_to);
      st.inbound.erase(i);
      respond(self, req, caf::message{}, caf::make_error(caf::sec::request_receiver_down));
    }
  });
  return {
    [=](mc_register_atom, component c, caf::actor h) {
      self->state.components[c] = std::move(h);
      return caf::ok_atom::value;
    },
    [=](mc_unregister_atom, component c) {
      self->state.components.erase(c);
      return caf::ok_atom::value;
    },
    [=](mc_call_atom, const silo_address& dst, component c, caf::message& payload)
      -> caf::response_promise { return start_call(self, dst, c, std::move(payload), 0); },
    [=](mc_call_atom, const silo_address& dst, component c, caf::message& payload, int64_t ttl_ms)
      -> caf::response_promise { return start_call(self, dst, c, std::move(payload), ttl_ms); },
    [=](mc_calls_atom, std::vector<remote_call_item>& calls) {
      auto caller = self->current_sender();
      if (!caller)
        return; // nobody to answer: an anonymous call by id is a programming error
      self->state.in_batch = true;
      for (auto& x : calls)
        start_call_by_id(self, caller, x);
      turn_end(self);
    },
    [=](mc_send_atom, const silo_address& dst, component c, caf::message& payload) {
      auto& st = self->state;
      if (dst == st.self_addr) {
        auto i = st.components.find(c);
        if (i != st.components.end())
          self->send(i->second, std::move(payload));
        else
          st.log.info("dropped local one-way message: component " + to_string(c)
                      + " is not registered");
        return;
      }
      if (st.departed.count(dst) > 0)
        return;
      wire_frame f;
      f.src = st.self_addr;
      f.dst = dst;
      f.target = c;
      f.payload = std::move(payload);
      transmit(self, std::move(f));
    },
    [=](mc_frame_atom, wire_frame& f) {
      on_inbound(self, f);
      turn_end(self);
    },
    [=](mc_frames_atom, std::vector<wire_frame>& fs) {
      self->state.in_batch = true;
      for (auto& f : fs)
        on_inbound(self, f);
      turn_end(self);
    },
    [=](ct_results_atom, std::vector<ct_result_item>& results) {
      auto& st = self->state;
      st.in_batch = true;
      for (auto& r : results) {
        auto i = st.inbound.find(r.id);
        if (i == st.inbound.end())
          continue;
        auto req = std::move(i->second.resp_to);
        st.inbound.erase(i);
        respond(self, req, std::move(r.reply), std::move(r.failure));
      }
      turn_end(self);
    },
    [=](mc_flush_atom) {
      self->state.flush_armed = false;
      flush_results(self);
      flush_inbound(self);
      flush_out(self);
    },
    [=](mc_bounce_atom, const wire_frame& f) {
      fail_frame(self, f);
      turn_end(self);
    },
    [=](mc_gone_atom, const silo_address& s) {
      mark_departed(self, s);
      turn_end(self);
    },
    [=](mb_snapshot_atom, const membership_snapshot& snap) {
      std::set<silo_address> gone;
      for (const auto& r : snap.rows) {
        if (r.status == silo_status::shutting_down || r.status == silo_status::stopping) {
          bool graceful = r.status == silo_status::shutting_down;
          if (r.silo == self->state.self_addr) {
            self->state.own_graceful_leave = graceful;
            announce_leaving(self, graceful);
          } else {
            learn_leaving(self, r.silo, graceful);
          }
        }
        if (snap.departed(r.silo)) {
          gone.insert(r.silo);
          self->state.declared_departed.insert(r.silo);
        }
      }
      for (const auto& kv : self->state.pending)
        if (snap.departed(kv.second.dst))
          gone.insert(kv.second.dst);
      for (const auto& s : gone)
        depart(self, s);
      turn_end(self);
    },
    [=](mc_block_atom, bool on) {
      self->state.block_application = on;
      if (on)
        announce_leaving(self, self->state.own_graceful_leave);
      return caf::ok_atom::value;
    },
    [=](mc_watch_atom, caf::actor& w) {
      auto& st = self->state;
      for (auto& s : st.departed)
        self->send(w, mc_gone_atom::value, s);
      st.watchers.push_back(std::move(w));
    },
    [=](mc_whoami_atom) { return self->state.self_addr; },
    [=](mc_stats_atom) { return self->state.stats; },
  };
}

} // namespace

caf::actor spawn_message_center(caf::actor_system& sys, const silo_address& self_addr,
                                const link_actor& net) {
  auto mc = sys.spawn(message_center, self_addr, net);
  caf::anon_send(net, sim_attach_atom::value, self_addr, mc);
  return mc;
}

} // namespace cafmesh
