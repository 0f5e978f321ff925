#include "cafmesh/routing/io_pool.hpp"

#include <algorithm>
#include <chrono>
#include <deque>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/log.hpp"
#include "cafmesh/config/mesh_config.hpp"
#include "cafmesh/routing/leg_latch.hpp"

namespace cafmesh::routing {

std::string to_string(leg_terminal x) {
  switch (x) {
    case leg_terminal::done: return "done";
    case leg_terminal::cancelled: return "cancelled";
    default: return "down";
  }
}

std::string to_string(pool_phase x) {
  switch (x) {
    case pool_phase::open: return "open";
    case pool_phase::grace: return "grace";
    case pool_phase::cancelling: return "cancelling";
    case pool_phase::joining: return "joining";
    default: return "drained";
  }
}

io_pool_options io_pool_options::from(const config::pool_section& cfg, std::string silo_name) {
  io_pool_options out;
  out.silo_name = std::move(silo_name);
  out.cap = cfg.cap;
  out.drain_grace_ms = cfg.drain_grace_ms;
  out.cancel_wait_ms = cfg.cancel_wait_ms;
  out.join_ms = cfg.join_ms;
  return out;
}

namespace {

/// The pool's full interface: the protocol plus its own drain timers (each carrying the
/// generation it was armed under; a timer of an older generation is stale).
using pool_actor_type = io_pool_actor::extend<caf::reacts_to<pool_grace_atom, uint64_t>,
                                              caf::reacts_to<pool_cwait_atom, uint64_t>,
                                              caf::reacts_to<pool_join_atom, uint64_t>>;

struct pool_leg {
  io_pool_owner_actor owner;
  caf::actor leg_actor; ///< watched leg actor, may be invalid
  bool started = false; ///< false: holds a permit
  bool cancelled = false;
};

struct waiting_admission {
  uint64_t leg_id;
  io_pool_owner_actor owner;
};

struct pool_state {
  static const char* name;
  log::logger log;
  io_pool_options opts;
  std::map<uint64_t, pool_leg> legs; ///< admitted and not gone
  std::deque<waiting_admission> waiting;
  std::set<uint64_t> waiting_ids; ///< leg ids in `waiting`: O(log n) membership tests
  uint64_t permits_out = 0;
  pool_phase phase = pool_phase::open;
  uint64_t timer_gen = 0;
  bool cancel_confirmed = true;
  uint64_t residual = 0;
  std::vector<caf::typed_response_promise<uint64_t>> drain_waiters;
  std::set<caf::actor_addr> monitored;
  /// Owners admitting their legs themselves until the drain (`pool_attach_atom`).
  std::vector<io_pool_owner_actor> attached;
  /// Their hand-overs the drain still waits for.
  size_t handovers_pending = 0;
};

const char* pool_state::name = "cafmesh.io_pool";

using pool_pointer = pool_actor_type::stateful_pointer<pool_state>;

uint64_t running_count(const pool_state& s) {
  return s.legs.size() - s.permits_out;
}

void refuse(pool_pointer self, uint64_t leg_id, const io_pool_owner_actor& owner, fault f) {
  self->send(owner, pool_refused_atom::value, leg_id, to_error(f));
}

void refuse_drained(pool_pointer self, uint64_t leg_id, const io_pool_owner_actor& owner) {
  refuse(self, leg_id, owner, fault{mesh_errc::pool_refused, pool_refused_text});
}

template <class Handle>
void watch(pool_pointer self, const Handle& who) {
  if (who && self->state.monitored.insert(who.address()).second)
    self->monitor(who);
}

void grant(pool_pointer self, uint64_t leg_id, io_pool_owner_actor owner) {
  auto& s = self->state;
  ++s.permits_out;
  pool_leg leg;
  leg.owner = owner;
  s.legs.emplace(leg_id, std::move(leg));
  self->send(owner, pool_admitted_atom::value, leg_id);
}

/// Grants permits to waiting admissions in FIFO order while the cap allows.
void grant_waiting(pool_pointer self) {
  auto& s = self->state;
  while (s.phase == pool_phase::open && !s.waiting.empty()
         && s.permits_out < static_cast<uint64_t>(s.opts.cap)) {
    auto next = std::move(s.waiting.front());
    s.waiting.pop_front();
    s.waiting_ids.erase(next.leg_id);
    grant(self, next.leg_id, std::move(next.owner));
  }
}

void finish(pool_pointer self) {
  auto& s = self->state;
  s.residual = (s.cancel_confirmed ? 0 : 1) + s.permits_out + running_count(s);
  s.phase = pool_phase::drained;
  if (s.residual == 0)
    s.log.info("routing I/O pool drained, residual 0");
  else
    s.log.warning("routing I/O pool drained, residual " + std::to_string(s.residual) + " ("
                  + std::to_string(s.permits_out) + " permit(s) out, "
                  + std::to_string(running_count(s)) + " leg(s) alive"
                  + (s.cancel_confirmed ? "" : ", cancel not confirmed") + ")");
  auto waiters = std::move(s.drain_waiters);
  s.drain_waiters.clear();
  for (auto& rp : waiters)
    rp.deliver(s.residual);
}

void arm_grace(pool_pointer self) {
  auto& s = self->state;
  self->delayed_send(self, std::chrono::milliseconds(s.opts.drain_grace_ms), pool_grace_atom::value,
                     ++s.timer_gen);
}

void begin_join(pool_pointer self) {
  auto& s = self->state;
  s.phase = pool_phase::joining;
  if (s.legs.empty()) {
    finish(self);
    return;
  }
  self->delayed_send(self, std::chrono::milliseconds(s.opts.join_ms), pool_join_atom::value,
                     ++s.timer_gen);
}

void begin_cancel(pool_pointer self) {
  auto& s = self->state;
  s.log.warning(std::to_string(s.legs.size()) + " leg(s) still running after the "
                + std::to_string(s.opts.drain_grace_ms)
                + " ms grace window; cancelled after grace");
  s.phase = pool_phase::cancelling;
  for (auto& kvp : s.legs) {
    auto& leg = kvp.second;
    leg.cancelled = true;
    if (leg.leg_actor)
      self->send_exit(leg.leg_actor, caf::exit_reason::user_shutdown);
    if (!leg.leg_actor || leg.leg_actor.address() != leg.owner.address())
      self->send(leg.owner, pool_cancel_atom::value, kvp.first);
  }
  self->delayed_send(self, std::chrono::milliseconds(s.opts.cancel_wait_ms), pool_cwait_atom::value,
                     ++s.timer_gen);
}

/// A leg went away (ended, its actor or its owner went down): bookkeeping plus drain
/// progress.
void gone(pool_pointer self, uint64_t leg_id) {
  auto& s = self->state;
  auto i = s.legs.find(leg_id);
  if (i == s.legs.end())
    return;
  if (!i->second.started)
    --s.permits_out;
  s.legs.erase(i);
  if (s.handovers_pending > 0)
    return; // the drain goes on once the hand-overs are in
  switch (s.phase) {
    case pool_phase::open: grant_waiting(self); break;
    case pool_phase::grace:
      if (s.legs.empty())
        finish(self);
      else
        arm_grace(self); // each termination restarts the window
      break;
    case pool_phase::cancelling:
      if (s.legs.empty()) {
        s.cancel_confirmed = true;
        begin_join(self);
      }
      break;
    case pool_phase::joining:
      if (s.legs.empty())
        finish(self);
      break;
    case pool_phase::drained: break;
  }
}

/// Tracks leg `id` of an owner that admitted it itself as started (its hand-over).
void adopt(pool_pointer self, uint64_t id, const io_pool_owner_actor& owner) {
  auto& s = self->state;
  if (s.legs.count(id) != 0)
    return;
  pool_leg leg;
  leg.owner = owner;
  leg.started = true;
  s.legs.emplace(id, std::move(leg));
}

/// Drain step 1 and 2: waiting admissions refused, then the grace (or the end at once).
void begin_grace(pool_pointer self) {
  auto& s = self->state;
  auto refused = std::move(s.waiting);
  s.waiting.clear();
  s.waiting_ids.clear();
  s.log.info("routing I/O pool: draining with " + std::to_string(s.legs.size()) + " leg(s) alive; "
             + std::to_string(refused.size()) + " waiting admission(s) refused");
  for (auto& w : refused)
    refuse_drained(self, w.leg_id, w.owner);
  if (s.legs.empty())
    finish(self);
  else
    arm_grace(self);
}

pool_actor_type::behavior_type pool_actor(pool_pointer self, io_pool_options opts) {
  auto& st = self->state;
  st.log = opts.silo_name.empty() ? log::get("pool")
                                  : log::get("pool").with_context(opts.silo_name);
  if (opts.cap < 1)
    opts.cap = 1;
  st.opts = std::move(opts);
  self->set_down_handler([=](caf::down_msg& dm) {
    auto& s = self->state;
    s.monitored.erase(dm.source);
    s.attached.erase(std::remove_if(s.attached.begin(), s.attached.end(),
                                    [&](const io_pool_owner_actor& o) {
                                      return o.address() == dm.source;
                                    }),
                     s.attached.end());
    // Admissions still waiting for a dead owner can never start.
    for (auto i = s.waiting.begin(); i != s.waiting.end();) {
      if (i->owner.address() == dm.source) {
        s.waiting_ids.erase(i->leg_id);
        i = s.waiting.erase(i);
      } else {
        ++i;
      }
    }
    std::vector<uint64_t> dead;
    for (auto& kvp : s.legs) {
      auto& leg = kvp.second;
      bool owner_down = leg.owner.address() == dm.source;
      bool actor_down = leg.leg_actor && leg.leg_actor.address() == dm.source;
      if (!owner_down && !actor_down)
        continue;
      if (actor_down && !owner_down)
        self->send(leg.owner, pool_down_atom::value, kvp.first, dm.reason);
      dead.push_back(kvp.first);
    }
    for (auto id : dead)
      gone(self, id);
  });
  return {
    [=](pool_admit_atom, uint64_t leg_id, io_pool_owner_actor& owner) {
      auto& s = self->state;
      if (!owner)
        return;
      if (s.phase != pool_phase::open) {
        refuse_drained(self, leg_id, owner);
        return;
      }
      if (s.legs.count(leg_id) != 0 || s.waiting_ids.count(leg_id) != 0) {
        refuse(self, leg_id, owner,
               fault{mesh_errc::invalid_operation,
                     "leg id " + std::to_string(leg_id) + " is already admitted"});
        return;
      }
      watch(self, owner);
      if (s.waiting.empty() && s.permits_out < static_cast<uint64_t>(s.opts.cap))
        grant(self, leg_id, std::move(owner));
      else {
        s.waiting.push_back(waiting_admission{leg_id, std::move(owner)});
        s.waiting_ids.insert(leg_id);
      }
    },
    [=](pool_attach_atom, io_pool_owner_actor& owner) {
      auto& s = self->state;
      if (!owner || s.phase != pool_phase::open)
        return;
      watch(self, owner);
      s.attached.push_back(std::move(owner));
    },
    [=](pool_watch_atom, uint64_t leg_id, caf::actor& leg_actor) {
      auto& s = self->state;
      auto i = s.legs.find(leg_id);
      if (i == s.legs.end() || !leg_actor)
        return;
      i->second.leg_actor = leg_actor;
      watch(self, leg_actor);
      if (i->second.cancelled) // cancelled before it was watched: the exit is still due
        self->send_exit(leg_actor, caf::exit_reason::user_shutdown);
    },
    [=](pool_started_atom, uint64_t leg_id) {
      auto& s = self->state;
      auto i = s.legs.find(leg_id);
      if (i == s.legs.end() || i->second.started)
        return;
      i->second.started = true;
      --s.permits_out;
      grant_waiting(self);
    },
    [=](pool_ended_atom, uint64_t leg_id) {
      auto& s = self->state;
      if (s.waiting_ids.erase(leg_id) != 0) { // ended before it was admitted (rare)
        for (auto i = s.waiting.begin(); i != s.waiting.end(); ++i)
          if (i->leg_id == leg_id) {
            s.waiting.erase(i);
            break;
          }
        return;
      }
      gone(self, leg_id);
    },
    [=](pool_drain_atom) -> caf::typed_response_promise<uint64_t> {
      auto& s = self->state;
      auto rp = self->make_response_promise<uint64_t>();
      if (s.phase == pool_phase::drained) {
        rp.deliver(s.residual);
        return rp;
      }
      s.drain_waiters.push_back(rp);
      if (s.phase != pool_phase::open)
        return rp; // joins the drain in progress
      s.phase = pool_phase::grace;
      if (s.attached.empty()) {
        begin_grace(self);
        return rp;
      }
      // The owners that admit their legs themselves hand them over first; the drain goes on
      // once every one answered (docs/behaviour/quiescence.md#admission-inside-the-router-core).
      s.handovers_pending = s.attached.size();
      for (auto& owner : s.attached)
        self->request(owner, caf::infinite, pool_handover_atom::value)
          .then(
            [=](std::vector<uint64_t>& ids) {
              for (auto id : ids)
                adopt(self, id, owner);
              if (--self->state.handovers_pending == 0)
                begin_grace(self);
            },
            [=](caf::error&) {
              if (--self->state.handovers_pending == 0)
                begin_grace(self);
            });
      return rp;
    },
    [=](pool_stats_atom) -> io_pool_stats {
      auto& s = self->state;
      io_pool_stats out;
      out.permits_out = s.permits_out;
      out.running = running_count(s);
      out.waiting = s.waiting.size();
      out.phase = s.phase;
      out.residual = s.residual;
      return out;
    },
    [=](pool_grace_atom, uint64_t gen) {
      auto& s = self->state;
      if (s.phase == pool_phase::grace && gen == s.timer_gen)
        begin_cancel(self);
    },
    [=](pool_cwait_atom, uint64_t gen) {
      auto& s = self->state;
      if (s.phase != pool_phase::cancelling || gen != s.timer_gen)
        return;
      s.cancel_confirmed = false;
      s.log.warning(std::to_string(s.legs.size()) + " cancelled leg(s) did not confirm within "
                    + std::to_string(s.opts.cancel_wait_ms) + " ms");
      begin_join(self);
    },
    [=](pool_join_atom, uint64_t gen) {
      auto& s = self->state;
      if (s.phase == pool_phase::joining && gen == s.timer_gen)
        finish(self);
    },
  };
}

} // namespace

io_pool_actor spawn_io_pool(caf::actor_system& sys, io_pool_options opts) {
  return caf::actor_cast<io_pool_actor>(sys.spawn(pool_actor, std::move(opts)));
}

} // namespace cafmesh::routing
