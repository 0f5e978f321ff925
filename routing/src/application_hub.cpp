#include "cafmesh/routing/application_hub.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <memory>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

#include <caf/all.hpp>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/lifecycle_atoms.hpp"
#include "cafmesh/actors/stage.hpp"
#include "cafmesh/actors/log.hpp"
#include "cafmesh/routing/classify.hpp"
#include "cafmesh/routing/entry_atoms.hpp"
#include "cafmesh/routing/outcome_tracker.hpp"
#include "cafmesh/routing/router_core_actor.hpp"
#include "cafmesh/routing/routing_quiescence_actor.hpp"
#include "cafmesh/routing/size_guard.hpp"

namespace cafmesh::routing {

namespace {

int64_t now_ms(caf::local_actor* self) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
           self->clock().now().time_since_epoch())
    .count();
}

/// `(ah_end_atom, delivery id, uint8_t how, reply, std::string text, uint8_t verdict)`: a
/// responder ended a delivery (how: 0 respond, 1 done, 2 fail with that verdict).
using ah_end_atom = caf::atom_constant<caf::atom("ahend")>;

constexpr uint8_t end_respond = 0;
constexpr uint8_t end_done = 1;
constexpr uint8_t end_fail = 2;

/// A delivery the handler has not ended yet.
struct pending_delivery {
  envelope d;
  caf::response_promise rp; ///< a node hub grain's hand-over waits for this
  bool waits = false;
};

/// Gauge slot ids of the application hubs of this process (`application_hub_slot_bit`).
uint64_t next_hub_slot() {
  static std::atomic<uint64_t> n{0};
  return application_hub_slot_bit | ++n;
}

/// `(ah_quiescence_atom, routing_quiescence_actor gauge, router_core_actor core)`: the hub's
/// silo's gauge and router core (see `ht_quiescence_atom`).
using ah_quiescence_atom = caf::atom_constant<caf::atom("ahquiesce")>;

struct app_hub_state {
  address self_address;
  caf::actor routing;
  async_hub_handler handler;
  outcome_tracker taken; ///< delivery ids handled (a repeated hand-over is dropped)
  std::map<std::string, pending_delivery> pending;
  /// `ah_drain_atom` requests, answered once no delivery is in progress.
  std::vector<caf::response_promise> drain_waiters;
  /// The silo's quiescence gauge and router core (null: not in a silo, or not told yet).
  routing_quiescence_actor gauge;
  router_core_actor core;
  /// The hub's one gauge slot (0: none), held while a delivery is in progress or a
  /// continuation it sent may not have reached the router core yet
  /// (docs/behaviour/quiescence.md#the-gauge).
  uint64_t slot = 0;
  /// Continuations handed to the routing service whose acceptance has not been answered.
  size_t sends_open = 0;
  /// A continuation was accepted since the last barrier: the slot goes only after the
  /// router core answered a barrier asked after it.
  bool sent_since_barrier = false;
  /// A barrier (`rc_sync`) is on its way.
  bool barrier_open = false;
  /// An `ah_settle_atom` to itself is queued behind the mailbox's backlog.
  bool settle_queued = false;
  /// The slot held, shared with the exit functor (which runs after the state is gone).
  std::shared_ptr<std::set<uint64_t>> live_slots = std::make_shared<std::set<uint64_t>>();
  std::shared_ptr<routing_quiescence_actor> hold_gauge; ///< `gauge`, for the exit functor
  log::logger log;
  static const char* name;
};

const char* app_hub_state::name = "application-hub";

/// `(ah_settle_atom)` to itself: decide about the hub's gauge slot after the backlog.
using ah_settle_atom = caf::atom_constant<caf::atom("ahsettle")>;

/// `(ah_drain_atom) -> ok`: answered once the hub has no delivery in progress.
using ah_drain_atom = caf::atom_constant<caf::atom("ahdrain")>;

using app_hub = caf::stateful_actor<app_hub_state>;

/// Takes the hub's gauge slot if it holds none: from now on the gauge does not read 0
/// before the hub let go of it.
void cover(app_hub* self, const std::string& first_id) {
  auto& st = self->state;
  if (st.slot != 0 || !st.gauge)
    return;
  st.slot = next_hub_slot();
  st.live_slots->insert(st.slot);
  caf::anon_send(st.gauge, q_track_atom::value, st.slot,
                 "application hub " + st.self_address.to_string() + " (delivery " + first_id + ")",
                 slot_state::dispatched);
}

/// Frees the hub's slot once nothing needs it: no delivery in progress, no continuation
/// whose acceptance is unanswered, and the router core has taken every continuation the
/// routing service accepted (a barrier asked after the last one). Under load the hub's
/// mailbox stays full and the slot stays: it is let go in a turn that finds the mailbox
/// empty, so a flood of deliveries costs the gauge two messages, not two per delivery.
void settle(app_hub* self) {
  auto& st = self->state;
  if (st.slot == 0 || !st.pending.empty() || st.sends_open > 0 || st.barrier_open)
    return;
  if (!self->mailbox().empty()) {
    // A later turn decides: at the latest the one that finds this note behind the backlog.
    if (!st.settle_queued) {
      st.settle_queued = true;
      self->send(self, ah_settle_atom::value);
    }
    return;
  }
  if (st.sent_since_barrier && st.core) {
    st.sent_since_barrier = false;
    st.barrier_open = true;
    auto done = [self] {
      self->state.barrier_open = false;
      settle(self);
    };
    self->request(st.core, caf::infinite, rc_sync_atom::value)
      .then([done](caf::ok_atom) { done(); }, [done](caf::error&) { done(); });
    return;
  }
  st.sent_since_barrier = false;
  st.live_slots->erase(st.slot);
  caf::anon_send(st.gauge, q_release_atom::value, std::exchange(st.slot, 0));
}

/// Hands `e` (a response or NACK) to the routing service; the hub's slot stays until the
/// router core took it.
void send_logged(app_hub* self, envelope e, const char* what) {
  auto& st = self->state;
  auto id = e.id;
  if (st.gauge)
    cover(self, id);
  ++st.sends_open;
  auto accepted = [self] {
    auto& st = self->state;
    --st.sends_open;
    st.sent_since_barrier = true;
    settle(self);
  };
  self->request(st.routing, caf::infinite, rs_deliver_atom::value, std::move(e))
    .then(
      [=](const envelope& a) {
        if (a.state == delivery_state::failed && !is_failed_and_nacked(a))
          self->state.log.warning(std::string{what} + " " + id + " refused by the entry");
        accepted();
      },
      [=](caf::error& err) {
        self->state.log.warning(std::string{what} + " " + id
                                + " not sent: " + self->system().render(err));
        accepted();
      });
}

/// Ends the pending delivery `id`.
void end(app_hub* self, const std::string& id, uint8_t how, reply r, const std::string& text,
         verdict v = verdict::failed) {
  auto& st = self->state;
  auto i = st.pending.find(id);
  if (i == st.pending.end())
    return; // a second call of the same responder
  auto p = std::move(i->second);
  st.pending.erase(i);
  if (st.pending.empty() && !st.drain_waiters.empty()) {
    auto waiters = std::move(st.drain_waiters);
    st.drain_waiters.clear();
    for (auto& w : waiters)
      w.deliver(caf::ok_atom::value);
  }
  auto& d = p.d;
  if (how != end_fail)
    st.taken.on_nack(d.id, now_ms(self)); // remembered: a repetition is dropped
  bool answerable = !d.sender.empty() && may_answer(d);
  if (how == end_respond && answerable) {
    envelope resp;
    resp.id = d.id + "-response";
    resp.sender = st.self_address;
    resp.target = d.sender;
    resp.request_id = d.id;
    resp.payload_type = std::move(r.payload_type);
    resp.payload_json = std::move(r.payload_json);
    send_logged(self, std::move(resp), "response");
  }
  if (how == end_fail) {
    // A transient cause (a grain's silo leaving) is routine during a roll: the sender gets a
    // resendable NACK, and the log says so at info; anything else is the handler's failure.
    if (v == verdict::shutting_down || v == verdict::unavailable)
      st.log.info("hub handler ended " + d.id + " with a resendable failure (" + to_string(v)
                  + "): " + text);
    else
      st.log.warning("hub handler failed on " + d.id + ": " + text);
    if (p.waits) {
      // The node hub grain NACKs the sender from this answer.
      d.state = delivery_state::failed;
      d.properties["error"] = json_quote(text);
      if (v != verdict::failed)
        d.properties["verdict"] = json_quote(to_string(v));
    } else if (answerable) {
      // Handed over by the local route table: nobody else will tell the sender.
      auto f = make_delivery_failure(d, text, v);
      send_logged(self, make_nack_envelope(f, d.id + "-nack", st.self_address), "NACK");
    }
  } else {
    d.state = delivery_state::processed;
  }
  if (p.waits)
    p.rp.deliver(std::move(d));
}

/// How a delivery's handler ended it before returning (`hub_responder` called on the hub's
/// own thread inside its turn).
struct inline_end {
  const caf::local_actor* hub = nullptr;
  const std::string* id = nullptr;
  bool set = false;
  uint8_t how = end_done;
  reply r;
  std::string text;
  uint8_t v = static_cast<uint8_t>(verdict::failed);
};

/// The delivery whose handler runs on this thread now, if any.
thread_local inline_end* inline_ending = nullptr;

/// Records the ending of the delivery whose handler runs now, if `hub` and `id` name it.
bool end_inline(const caf::actor& hub, const std::string& id, uint8_t how, reply&& r,
                std::string&& text, uint8_t v) {
  auto* e = inline_ending;
  if (e == nullptr || e->set || *e->id != id
      || caf::actor_cast<caf::abstract_actor*>(hub)
           != static_cast<const caf::abstract_actor*>(e->hub))
    return false;
  e->set = true;
  e->how = how;
  e->r = std::move(r);
  e->text = std::move(text);
  e->v = v;
  return true;
}

/// Takes `d` in. A hand-over that waits (`rp` set) is answered once the handler ended it.
void take_in(app_hub* self, envelope d, caf::response_promise* rp) {
  auto& st = self->state;
  auto answer_now = [&](envelope x) {
    if (rp)
      rp->deliver(std::move(x));
  };
  if (d.payload_type == delivery_failure_payload_type || is_continuation(d)) {
    st.log.debug("answer " + d.id + " to a hub that sent nothing dropped");
    d.state = delivery_state::ignored;
    answer_now(std::move(d));
    return;
  }
  // A delivery in progress, or ended (landed) within the dedup window, is a repetition; a
  // delivery that failed is not remembered, so the sender's retry is handled afresh.
  if (st.taken.remembered(d.id) || st.pending.count(d.id) > 0) {
    st.log.debug("repeated delivery " + d.id + " dropped");
    d.state = delivery_state::processed;
    answer_now(std::move(d));
    return;
  }
  auto id = d.id;
  auto& p = st.pending[id];
  p.d = std::move(d);
  if (rp) {
    p.rp = *rp;
    p.waits = true;
  }
  auto copy = p.d; // the handler may end the delivery (and erase `p`) before returning
  // A delivery the handler ends before it returns is ended here, in this turn: no message
  // to the hub itself, and no gauge slot unless what the ending sends needs one.
  inline_end ending;
  ending.hub = self;
  ending.id = &id;
  {
    // Whatever the handler throws, the thread forgets this delivery when it returns.
    struct restore {
      inline_end* outer;
      ~restore() { inline_ending = outer; }
    } guard{std::exchange(inline_ending, &ending)};
    try {
      st.handler(self, copy, hub_responder{caf::actor_cast<caf::actor>(self), id});
    } catch (const std::exception& e) {
      inline_ending = guard.outer;
      end(self, id, end_fail, reply{}, std::string{"hub handler failed: "} + e.what());
    }
  }
  if (ending.set)
    end(self, id, ending.how, std::move(ending.r), ending.text, static_cast<verdict>(ending.v));
  // Still in progress: the hub's slot covers it until it ends.
  if (st.pending.count(id) > 0)
    cover(self, id);
}

caf::behavior application_hub(app_hub* self, address me, caf::actor routing,
                              async_hub_handler handler, config::routing_section cfg) {
  auto& st = self->state;
  st.self_address = me;
  st.routing = std::move(routing);
  st.handler = std::move(handler);
  st.log = log::get("hub").with_context(me.to_string());
  st.taken = outcome_tracker{cfg, st.log};
  // A hub that ends with deliveries in progress frees their slots: nothing will end them.
  // The functor runs after CAF destroyed the state: it holds what it needs itself.
  auto hold = std::make_shared<routing_quiescence_actor>();
  st.hold_gauge = hold;
  self->attach_functor([hold, live = st.live_slots] {
    if (*hold)
      for (auto slot : *live)
        caf::anon_send(*hold, q_release_atom::value, slot);
  });
  return {
    [=](hb_in_atom, envelope& d) {
      take_in(self, std::move(d), nullptr);
      settle(self);
    },
    [=](hb_deliver_atom, envelope& d) {
      auto rp = self->make_response_promise();
      take_in(self, std::move(d), &rp);
      settle(self);
      return rp;
    },
    [=](ah_end_atom, const std::string& id, uint8_t how, reply& r, const std::string& text,
        uint8_t v) {
      end(self, id, how, std::move(r), text, static_cast<verdict>(v));
      settle(self);
    },
    [=](ah_quiescence_atom, routing_quiescence_actor& gauge, router_core_actor& core) {
      self->state.gauge = std::move(gauge);
      self->state.core = std::move(core);
      *self->state.hold_gauge = self->state.gauge;
    },
    [=](ah_settle_atom) {
      self->state.settle_queued = false;
      settle(self);
    },
    [=](ah_drain_atom) -> caf::result<caf::ok_atom> {
      auto& st = self->state;
      if (st.pending.empty())
        return caf::ok_atom::value;
      auto rp = self->make_response_promise();
      st.drain_waiters.push_back(rp);
      return rp;
    },
  };
}

// -- hub table ------------------------------------------------------------------

struct hub_table_state {
  hub_key_form form = hub_key_form::node_prefix;
  config::routing_section cfg;
  caf::actor routing;
  caf::actor claimer;
  std::map<std::string, async_hub_handler> handlers; ///< pattern -> handler
  std::map<std::string, caf::actor> hubs;            ///< path -> spawned hub
  routing_quiescence_actor gauge; ///< silo_host: the quiescence gauge its hubs hold slots of
  router_core_actor core;         ///< silo_host: the router core
  std::vector<std::string> eager; ///< exact stream-routed patterns not yet spawned
  /// The silo's latest membership view (node_prefix form; empty: never told).
  membership_snapshot view;
  /// The patterns went out with the silo's membership row (`ht_patterns_atom`).
  bool published = false;
  /// The stop of stage Active, answered once every hub drained (or the budget expired).
  caf::typed_response_promise<caf::ok_atom> drain;
  bool draining = false;
  log::logger log;
  static const char* name;
};

const char* hub_table_state::name = "hub-table";

using hub_table = hub_table_actor::stateful_pointer<hub_table_state>;

/// The handler of the longest pattern matching `path`, or null.
const async_hub_handler* match(const hub_table_state& st, const std::string& path) {
  const async_hub_handler* best = nullptr;
  size_t best_len = 0;
  for (auto& [pattern, h] : st.handlers) {
    if (hub_pattern_matches(pattern, path) && pattern.size() >= best_len) {
      best = &h;
      best_len = pattern.size();
    }
  }
  return best;
}

bool stream_routed(const hub_table_state& st, const address& a) {
  auto& types = st.cfg.stream_routed_address_types;
  return std::find(types.begin(), types.end(), a.type) != types.end();
}

/// The hub of `path` (spawned and registered on the first call).
caf::actor hub_for(hub_table self, const std::string& path, const async_hub_handler& h) {
  auto& st = self->state;
  if (auto i = st.hubs.find(path); i != st.hubs.end())
    return i->second;
  auto addr = address::from(path);
  auto hub = spawn_application_hub(self->system(), addr, st.routing, h, st.cfg);
  self->link_to(hub);
  if (st.gauge)
    caf::anon_send(hub, ah_quiescence_atom::value, st.gauge, st.core);
  caf::anon_send(st.routing, rs_register_atom::value, addr, hub);
  if (st.claimer && stream_routed(st, addr))
    caf::anon_send(st.claimer, pc_claim_atom::value, addr);
  st.hubs.emplace(path, hub);
  return hub;
}

void spawn_eager(hub_table self) {
  auto& st = self->state;
  if (!st.routing)
    return;
  auto eager = std::move(st.eager);
  st.eager.clear();
  for (auto& path : eager)
    if (auto h = match(st, path))
      hub_for(self, path, *h);
}

/// Answers the stop of stage Active once.
void drained(hub_table self, const std::string& why) {
  auto& st = self->state;
  if (!st.draining)
    return;
  st.draining = false;
  st.log.info("application hubs: " + why);
  st.drain.deliver(caf::ok_atom::value);
}

hub_table_actor::behavior_type hub_table_behaviour(hub_table self, hub_key_form form,
                                                   config::routing_section cfg) {
  self->state.form = form;
  self->state.cfg = std::move(cfg);
  self->state.log = log::get("hub");
  return {
    // Lifecycle observer at stage Active (docs/behaviour/lifecycle.md): a graceful stop holds
    // until no hub of this process has a delivery in progress, so that the answers and NACKs
    // of asynchronous hubs leave while routing is still up.
    [=](lifecycle::start_stage_atom, lifecycle::stage) -> caf::result<caf::ok_atom> {
      return caf::ok_atom::value;
    },
    [=](lifecycle::stop_stage_atom, lifecycle::stage, bool graceful) -> caf::result<caf::ok_atom> {
      auto& st = self->state;
      if (!graceful || st.hubs.empty())
        return caf::ok_atom::value;
      st.drain = self->make_response_promise<caf::ok_atom>();
      st.draining = true;
      auto left = std::make_shared<size_t>(st.hubs.size());
      for (auto& kv : st.hubs)
        self->request(kv.second, caf::infinite, ah_drain_atom::value)
          .then(
            [=](caf::ok_atom) {
              if (--*left == 0)
                drained(self, "no delivery in progress");
            },
            [=](caf::error&) {
              if (--*left == 0)
                drained(self, "no delivery in progress");
            });
      return st.drain;
    },
    [=](lifecycle::budget_expired_atom) {
      drained(self, "shutdown budget expired with deliveries in progress");
    },
    [=](ht_add_atom, std::string& pattern, async_hub_handler& h) -> caf::result<caf::ok_atom> {
      if (auto why = hub_pattern_error(pattern); !why.empty())
        return to_error(fault{mesh_errc::config_invalid, why});
      auto probe = pattern;
      if (probe.size() >= 2 && probe.compare(probe.size() - 2, 2, "/*") == 0)
        probe = probe.substr(0, probe.size() - 2) + "/x";
      auto parsed = address::from(probe);
      auto& st = self->state;
      if (st.published && st.form == hub_key_form::node_prefix && parsed.type == "node") {
        // docs/behaviour/routing.md#unserved-addresses: the other silos judge by the row.
        auto why = "hub pattern '" + pattern
                   + "' comes after this silo published its hub patterns with its membership "
                     "row; register node hubs before the silo starts";
        st.log.error(why);
        return to_error(fault{mesh_errc::config_invalid, why});
      }
      bool exact = probe == pattern;
      st.handlers[pattern] = std::move(h);
      if (exact && stream_routed(st, parsed)) {
        st.eager.push_back(pattern);
        spawn_eager(self);
      }
      return caf::ok_atom::value;
    },
    [=](ht_quiescence_atom, routing_quiescence_actor& gauge, router_core_actor& core) {
      auto& st = self->state;
      st.gauge = std::move(gauge);
      st.core = std::move(core);
      for (auto& kv : st.hubs)
        caf::anon_send(kv.second, ah_quiescence_atom::value, st.gauge, st.core);
    },
    [=](ht_routing_atom, caf::actor& routing, caf::actor& claimer) {
      self->state.routing = std::move(routing);
      self->state.claimer = std::move(claimer);
      spawn_eager(self);
    },
    [=](hf_build_atom, const std::string& key) -> caf::result<caf::actor> {
      auto& st = self->state;
      if (!st.routing)
        return to_error(
          fault{mesh_errc::silo_unavailable, "the hub table has no routing service yet"});
      auto path = st.form == hub_key_form::node_prefix ? "node/" + key : key;
      auto h = match(st, path);
      if (h)
        return hub_for(self, path, *h);
      auto here = "no hub handler for '" + path + "' in this process";
      if (st.form == hub_key_form::host_path) // a monolith is the whole mesh
        return to_error(fault{mesh_errc::not_found, here});
      // docs/behaviour/routing.md#unserved-addresses
      if (auto live = unserved_by(st.view, path))
        return to_error(fault{mesh_errc::not_found,
                              "No live process serves '" + path + "': no hub pattern of the "
                                + std::to_string(*live)
                                + " live silo(s) matches it; register a hub whose pattern "
                                  "matches it (silo_builder::hub, mesh_process::register_hub) "
                                  "or send to an address a hub serves"});
      return to_error(
        fault{mesh_errc::no_compatible_silo, here + "; another live silo may serve it"});
    },
    [=](ht_patterns_atom) {
      auto& st = self->state;
      st.published = true;
      std::vector<std::string> out;
      for (auto& kv : st.handlers)
        out.push_back(kv.first);
      return out;
    },
    [=](mb_snapshot_atom, membership_snapshot& snap) {
      // The agent orders the snapshots; each one is applied (membership.hpp).
      self->state.view = std::move(snap);
    },
  };
}

} // namespace

std::string hub_pattern_error(const std::string& pattern) {
  address parsed;
  auto probe = pattern;
  if (probe.size() >= 2 && probe.compare(probe.size() - 2, 2, "/*") == 0)
    probe = probe.substr(0, probe.size() - 2) + "/x";
  if (!address::parse(probe, parsed) || !parsed.hosts.empty())
    return "hub pattern '" + pattern + "' is no address path (type/id, or type/prefix/*)";
  if (probe.find('*') != std::string::npos)
    return "hub pattern '" + pattern
           + "' can match nothing: '*' stands only for a whole last segment (type/prefix/*)";
  return {};
}

bool hub_pattern_matches(const std::string& pattern, const std::string& path) {
  if (pattern.size() >= 2 && pattern.compare(pattern.size() - 2, 2, "/*") == 0) {
    auto prefix = std::string_view{pattern}.substr(0, pattern.size() - 1); // keeps the '/'
    return path.size() > prefix.size() && path.compare(0, prefix.size(), prefix) == 0;
  }
  return pattern == path;
}

namespace {

constexpr std::string_view hub_entry_prefix = "@hub ";

} // namespace

std::vector<grain_type_info> hub_pattern_manifest(const std::vector<std::string>& patterns) {
  std::vector<grain_type_info> out;
  out.push_back(grain_type_info{hub_patterns_marker, placement_strategy::random, 1});
  for (auto& p : patterns)
    out.push_back(
      grain_type_info{std::string{hub_entry_prefix} + p, placement_strategy::random, 1});
  return out;
}

std::optional<size_t> unserved_by(const membership_snapshot& view, const std::string& path) {
  size_t live = 0;
  for (auto& row : view.rows) {
    if (row.status == silo_status::dead || view.departed(row.silo))
      continue;
    ++live;
    if (row.find_type(hub_patterns_marker) == nullptr)
      return std::nullopt; // this silo does not say what it serves
    for (auto& t : row.manifest)
      if (t.type.size() > hub_entry_prefix.size()
          && t.type.compare(0, hub_entry_prefix.size(), hub_entry_prefix) == 0
          && hub_pattern_matches(t.type.substr(hub_entry_prefix.size()), path))
        return std::nullopt;
  }
  if (live == 0)
    return std::nullopt;
  return live;
}

hub_responder::hub_responder(caf::actor hub, std::string delivery_id)
  : hub_(std::move(hub)), id_(std::move(delivery_id)) {
  // nop
}

void hub_responder::respond(reply r) const {
  if (end_inline(hub_, id_, end_respond, std::move(r), std::string{},
                 static_cast<uint8_t>(verdict::failed)))
    return;
  caf::anon_send(hub_, ah_end_atom::value, id_, end_respond, std::move(r), std::string{},
                 static_cast<uint8_t>(verdict::failed));
}

void hub_responder::done() const {
  if (end_inline(hub_, id_, end_done, reply{}, std::string{},
                 static_cast<uint8_t>(verdict::failed)))
    return;
  caf::anon_send(hub_, ah_end_atom::value, id_, end_done, reply{}, std::string{},
                 static_cast<uint8_t>(verdict::failed));
}

void hub_responder::fail(std::string text) const {
  if (end_inline(hub_, id_, end_fail, reply{}, std::string{text},
                 static_cast<uint8_t>(verdict::failed)))
    return;
  caf::anon_send(hub_, ah_end_atom::value, id_, end_fail, reply{}, std::move(text),
                 static_cast<uint8_t>(verdict::failed));
}

void hub_responder::fail(const caf::error& err) const {
  auto f = to_fault(err);
  if (end_inline(hub_, id_, end_fail, reply{}, f.render(), static_cast<uint8_t>(classify(f))))
    return;
  caf::anon_send(hub_, ah_end_atom::value, id_, end_fail, reply{}, f.render(),
                 static_cast<uint8_t>(classify(f)));
}

async_hub_handler as_async(hub_handler h) {
  return [h = std::move(h)](caf::event_based_actor*, const envelope& d, hub_responder r) {
    std::optional<reply> x;
    try {
      x = h(d);
    } catch (const std::exception& e) {
      r.fail(std::string{"hub handler failed: "} + e.what());
      return;
    }
    if (x)
      r.respond(std::move(*x));
    else
      r.done();
  };
}

caf::actor spawn_application_hub(caf::actor_system& sys, address self_address, caf::actor routing,
                                 async_hub_handler handler, const config::routing_section& cfg) {
  return sys.spawn(application_hub, std::move(self_address), std::move(routing), std::move(handler),
                   cfg);
}

hub_table_actor spawn_hub_table(caf::actor_system& sys, hub_key_form form,
                                const config::routing_section& cfg) {
  return sys.spawn(hub_table_behaviour, form, cfg);
}

} // namespace cafmesh::routing
