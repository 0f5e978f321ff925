#include "cafmesh/actors/catalog.hpp"

#include <algorithm>
#include <chrono>

#include <caf/all.hpp>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/request_any.hpp"
#include "cafmesh/config/mesh_config.hpp"

namespace cafmesh {

const char* catalog_state::name = "cafmesh.catalog";

std::string to_string(deactivation_reason x) {
  switch (x) {
    case deactivation_reason::idle:
      return "idle";
    case deactivation_reason::shutting_down:
      return "shutting_down";
    case deactivation_reason::lost_registration:
      return "lost_registration";
    case deactivation_reason::request:
      return "request";
  }
  return "deactivation_reason(" + std::to_string(static_cast<int>(x)) + ")";
}

catalog_config make_catalog_config(const config::mesh_config& cfg, const silo_address& self) {
  catalog_config out;
  out.self = self;
  out.seed = cfg.simulation.seed;
  out.deactivation_timeout_ms = cfg.catalog.deactivation_timeout_ms;
  out.activation_timeout_ms = cfg.catalog.activation_timeout_ms;
  out.max_forward_count = cfg.placement.max_forward_count;
  out.lookup_attempt_timeout_ms = cfg.directory.lookup_attempt_timeout_ms;
  out.stateless_worker_bypass = cfg.directory.stateless_worker_bypass;
  return out;
}

namespace {

using ct_actor = caf::stateful_actor<catalog_state>;

/// `request_any` with one completion: `done(reply, error)`, exactly one of them set.
template <class F>
void ask_any(ct_actor* self, const caf::actor& h, int64_t timeout_ms, caf::message msg, F done) {
  request_any(
    self, h, timeout_ms, std::move(msg),
    [done](caf::message m) mutable { done(std::move(m), caf::error{}); },
    [done](caf::error e) mutable { done(caf::message{}, std::move(e)); });
}

std::string tag_of(const catalog_activation& a) {
  return a.tag.to_string() + " of " + a.grain.to_string();
}

caf::error not_active_error(const catalog_state& st, const grain_id& g) {
  fault f{mesh_errc::silo_unavailable, "silo " + st.cfg.self.to_string()
                                         + " is not active, refusing to activate "
                                         + g.to_string()};
  f.silo = st.cfg.self;
  return to_error(f);
}

caf::error failed_activation_error(const catalog_state& st, const grain_id& g,
                                   const std::string& text) {
  fault f{mesh_errc::activation_deactivated,
          "activation of " + g.to_string() + " failed on silo " + st.cfg.self.to_string()
            + ": " + text};
  f.activation_error_recorded = tri_bool::yes;
  f.silo = st.cfg.self;
  return to_error(f);
}

/// SPEC §3.6: a message for an activation that is not (or no longer) here.
caf::error missing_error(const catalog_state& st, const grain_id& g, activation_tag t) {
  auto fl = st.failures.find(g);
  if (fl != st.failures.end())
    return failed_activation_error(st, g, fl->second);
  fault f{mesh_errc::activation_deactivated, t.to_string() + " of " + g.to_string()
                                               + " is not active on silo "
                                               + st.cfg.self.to_string()};
  auto d = st.departed.find(t.value);
  f.activation_error_recorded = (d != st.departed.end() && d->second == g) ? tri_bool::no
                                                                             : tri_bool::unknown;
  f.silo = st.cfg.self;
  return to_error(f);
}

activation_tag next_tag(catalog_state& st) {
  for (;;) {
    auto v = static_cast<uint32_t>(st.rng() & 0xFFFFFFFFu);
    if (v != 0 && st.used_tags.insert(v).second)
      return activation_tag{v};
  }
}

/// Spawns one activation. The activation is linked to the catalog so it never outlives
/// it; the catalog traps exits of its activations.
catalog_activation& create(ct_actor* self, const grain_id& g, const grain_type& t) {
  auto& st = self->state;
  auto tag = next_tag(st);
  catalog_activation a;
  a.grain = g;
  a.tag = tag;
  a.stateless = t.kind == grain_kind::stateless_worker;
  a.hook_ms = t.deactivation_hook_ms;
  auto factory = t.factory;
  a.actor = self->spawn<caf::linked>(
    [factory, g](caf::event_based_actor* act) -> caf::behavior { return factory(act, g); });
  ++st.stats.activated;
  st.by_grain[g].push_back(tag.value);
  st.log.debug("activated " + tag.to_string() + " of " + g.to_string());
  return st.activations.emplace(tag.value, std::move(a)).first->second;
}

void check_all_gone(ct_actor* self) {
  auto& st = self->state;
  if (!st.activations.empty() || st.reroutes_in_flight > 0 || st.all_gone.empty())
    return;
  auto waiters = std::move(st.all_gone);
  st.all_gone.clear();
  for (auto& rp : waiters)
    rp.deliver(caf::ok_atom::value);
}

void reroute(ct_actor* self, const grain_id& g, catalog_turn turn) {
  auto& st = self->state;
  ++st.stats.rerouted;
  ++st.reroutes_in_flight;
  auto rp = turn.rp;
  ask_any(self, st.placement, 0,
          caf::make_message(pl_call_atom::value, g, turn.forward_count + 1, std::move(turn.payload)),
          [=](caf::message reply, caf::error err) mutable {
            --self->state.reroutes_in_flight;
            check_all_gone(self);
            if (err)
              rp.deliver(std::move(err));
            else
              rp.deliver(std::move(reply));
          });
}

/// The activation has left (its turn ended, it was abandoned or it lost registration):
/// unregister, tell placement, reroute every held message.
void finish(ct_actor* self, uint32_t tag, bool kill) {
  auto& st = self->state;
  auto i = st.activations.find(tag);
  if (i == st.activations.end())
    return;
  auto a = std::move(i->second);
  st.activations.erase(i);
  auto& tags = st.by_grain[a.grain];
  tags.erase(std::remove(tags.begin(), tags.end(), tag), tags.end());
  if (tags.empty())
    st.by_grain.erase(a.grain);
  st.departed[tag] = a.grain;
  ++st.stats.deactivated;
  self->unlink_from(a.actor);
  self->send_exit(a.actor, kill ? caf::exit_reason::kill : caf::exit_reason::user_shutdown);
  if (a.registering.pending()) {
    // Deactivated before its first registration answered: the placement that asked for it
    // would otherwise wait for an answer that can no longer come, until its own timeout.
    fault f{mesh_errc::activation_deactivated,
            "the activation of " + a.grain.to_string() + " on silo " + st.cfg.self.to_string()
              + " deactivated before its registration completed"};
    f.activation_error_recorded = tri_bool::no;
    f.silo = st.cfg.self;
    a.registering.deliver(to_error(f));
  }
  if (!a.stateless) {
    activation_address addr{a.grain, st.cfg.self, a.tag};
    st.dir.unregister(self, addr, [] {}, [](caf::error) {});
    self->send(st.placement, pl_inval_atom::value, addr);
  }
  st.log.debug("deactivated " + tag_of(a) + ", rerouting " + std::to_string(a.queue.size())
               + " held message(s)");
  for (auto& turn : a.queue)
    reroute(self, a.grain, std::move(turn));
  for (auto& rp : a.gone)
    rp.deliver(caf::ok_atom::value);
  check_all_gone(self);
}

/// The activation's last turn has ended: with a deactivation hook, it runs first (bounded;
/// the grain stays registered and its messages keep waiting, so no other activation of it
/// starts before the hook saved what it must), then `finish`.
void release(ct_actor* self, uint32_t tag) {
  auto& st = self->state;
  auto i = st.activations.find(tag);
  if (i == st.activations.end())
    return;
  auto& a = i->second;
  if (a.hook_ms <= 0 || a.hook_skipped) {
    finish(self, tag, false);
    return;
  }
  if (a.hook_running)
    return;
  a.hook_running = true;
  auto bound = a.hook_ms;
  auto what = tag_of(a);
  self->request(a.actor, std::chrono::milliseconds(bound), grain_deactivate_atom::value)
    .then([=](caf::ok_atom) { finish(self, tag, false); },
          [=](caf::error& e) {
            self->state.log.warning(
              "deactivation hook of " + what
              + (e == caf::sec::request_timeout
                   ? " did not end within " + std::to_string(bound) + " ms"
                   : " failed: " + to_fault(e).render())
              + "; the activation goes anyway");
            finish(self, tag, false);
          });
}

void deactivate(ct_actor* self, uint32_t tag, deactivation_reason why) {
  auto& st = self->state;
  auto i = st.activations.find(tag);
  if (i == st.activations.end() || i->second.deactivating)
    return;
  auto& a = i->second;
  a.deactivating = true;
  a.hook_skipped = why == deactivation_reason::lost_registration;
  st.log.debug("deactivating " + tag_of(a) + " (" + to_string(why) + ")");
  if (!a.turn_open) {
    release(self, tag);
    return;
  }
  self->delayed_send(self, std::chrono::milliseconds(st.cfg.deactivation_timeout_ms),
                     ct_abandon_atom::value, tag);
}

void pump(ct_actor* self, uint32_t tag);

void arm_idle(ct_actor* self, catalog_activation& a) {
  auto& st = self->state;
  if (st.cfg.idle_deactivation_ms <= 0 || a.pinned)
    return;
  ++a.idle_seq;
  self->delayed_send(self, std::chrono::milliseconds(st.cfg.idle_deactivation_ms),
                     ct_idle_atom::value, a.tag.value, a.idle_seq);
}

void pump(ct_actor* self, uint32_t tag) {
  auto& st = self->state;
  auto i = st.activations.find(tag);
  if (i == st.activations.end())
    return;
  auto& a = i->second;
  if (a.turn_open || a.deactivating || a.queue.empty())
    return;
  auto turn = std::move(a.queue.front());
  a.queue.pop_front();
  a.turn_open = true;
  st.last_forward_count = turn.forward_count;
  ++a.idle_seq; // a pending idle timer is stale now
  auto rp = turn.rp;
  ask_any(self, a.actor, 0, std::move(turn.payload),
          [=](caf::message reply, caf::error err) mutable {
            if (err)
              rp.deliver(to_error(to_fault(err)));
            else
              rp.deliver(std::move(reply));
            auto& st = self->state;
            auto j = st.activations.find(tag);
            if (j == st.activations.end())
              return; // abandoned
            auto& act = j->second;
            act.turn_open = false;
            ++st.stats.turns;
            if (act.deactivating) {
              release(self, tag);
              return;
            }
            if (act.queue.empty())
              arm_idle(self, act);
            else
              pump(self, tag);
          });
}

void enqueue(ct_actor* self, catalog_activation& a, catalog_turn turn) {
  a.queue.push_back(std::move(turn));
  pump(self, a.tag.value);
}

/// Picks (or creates) the stateless-worker activation for one message; nullptr if none may
/// serve it (`err` set).
catalog_activation* pick_worker(ct_actor* self, const grain_id& g, const grain_type& t,
                                caf::error& err) {
  auto& st = self->state;
  catalog_activation* best = nullptr;
  size_t live = 0;
  auto bg = st.by_grain.find(g);
  if (bg != st.by_grain.end()) {
    for (auto v : bg->second) {
      auto& a = st.activations.at(v);
      if (a.deactivating)
        continue;
      ++live;
      if (!a.turn_open && a.queue.empty())
        return &a;
      if (best == nullptr || a.queue.size() < best->queue.size())
        best = &a;
    }
  }
  if (live < t.local_limit && st.active) {
    if (t.check) {
      auto why = t.check(g);
      if (!why.empty()) {
        st.failures[g] = why;
        if (best == nullptr) {
          err = failed_activation_error(st, g, why);
          return nullptr;
        }
        return best;
      }
    }
    return &create(self, g, t);
  }
  if (best == nullptr)
    err = not_active_error(st, g);
  return best;
}

/// Registers activation `tag` (first-wins) and answers its `ct_activate` waiter with the
/// winner; retries `directory_unstable` and timeouts every 100 ms until its deadline.
void register_activation(ct_actor* self, uint32_t tag) {
  auto& st = self->state;
  auto i = st.activations.find(tag);
  if (i == st.activations.end())
    return;
  activation_address mine{i->second.grain, st.cfg.self, i->second.tag};
  auto answer = [=](caf::error err, activation_address winner) {
    auto j = self->state.activations.find(tag);
    if (j == self->state.activations.end())
      return;
    auto rp = j->second.registering;
    j->second.registering = caf::response_promise{}; // registered: no longer pending
    if (err || winner != mine)
      deactivate(self, tag, deactivation_reason::lost_registration);
    if (err)
      rp.deliver(std::move(err));
    else
      rp.deliver(winner);
  };
  st.dir.register_activation(
    self, mine, [=](activation_address winner) { answer(caf::error{}, winner); },
    [=](caf::error e) {
      auto j = self->state.activations.find(tag);
      if (j == self->state.activations.end())
        return;
      auto f = to_fault(e);
      bool retry = e == caf::sec::request_timeout || f.code == mesh_errc::directory_unstable;
      if (retry && self->clock().now() + std::chrono::milliseconds(100)
                     < j->second.register_deadline) {
        self->delayed_send(self, std::chrono::milliseconds(100), ct_regretry_atom::value, tag);
        return;
      }
      answer(to_error(f), activation_address{});
    });
}

/// Asked to activate a grain that is already active here: placement found no directory
/// entry for it, which a ring change can lose (a hand-off that never arrived, SPEC §6.10).
/// Registers the activation again (first wins) before answering, so the claim that asked
/// repairs the directory instead of answering an address nobody else can find. If another
/// activation won meanwhile, this one deactivates (`lost_registration`) and the winner is
/// the answer, as for a first registration. A directory that cannot be reached leaves the
/// answer as before: this activation.
void reassert_registration(ct_actor* self, uint32_t tag, caf::response_promise rp) {
  auto& st = self->state;
  auto i = st.activations.find(tag);
  activation_address mine{i->second.grain, st.cfg.self, i->second.tag};
  st.dir.register_activation(
    self, mine,
    [=](activation_address winner) mutable {
      if (winner != mine) {
        self->state.log.info("activation " + mine.to_string() + " lost its directory entry to "
                             + winner.to_string());
        deactivate(self, tag, deactivation_reason::lost_registration);
      }
      rp.deliver(winner);
    },
    [=](caf::error) mutable { rp.deliver(mine); });
}

/// The activation that sent the current message, or nullptr.
catalog_activation* sender_activation(ct_actor* self) {
  auto src = self->current_sender();
  if (!src)
    return nullptr;
  for (auto& kv : self->state.activations)
    if (kv.second.actor.address() == src->address())
      return &kv.second;
  return nullptr;
}

} // namespace

static caf::behavior catalog(ct_actor* self, catalog_config cfg, grain_registry_ptr registry,
                             caf::actor centre, caf::actor placement) {
  auto& st = self->state;
  st.cfg = std::move(cfg);
  st.registry = std::move(registry);
  st.dir = directory_client{st.cfg.self, std::move(centre),
                            directory_resolver{st.registry ? st.registry->manifest()
                                                           : std::vector<grain_type_info>{},
                                               st.cfg.stateless_worker_bypass},
                            directory_client_config{st.cfg.lookup_attempt_timeout_ms}};
  st.placement = std::move(placement);
  st.rng.seed(st.cfg.seed ^ fnv1a64("catalog/" + st.cfg.self.to_string()));
  st.log = log::get("catalog").with_context(st.cfg.self.to_string());
  // Activations are linked to the catalog (they never outlive it). The catalog unlinks an
  // activation before ending it; an exit arriving from a still-linked activation means it
  // ended on its own. Any other exit ends the catalog and, through the links, its
  // activations.
  self->set_exit_handler([=](caf::exit_msg& msg) {
    auto& st = self->state;
    for (auto& kv : st.activations)
      if (kv.second.actor.address() == msg.source) {
        // The activation ended on its own (it quit or failed): it is gone; held messages
        // are rerouted as after a deactivation.
        st.log.warning(tag_of(kv.second) + " exited on its own: "
                       + self->system().render(msg.reason));
        finish(self, kv.first, false);
        return;
      }
    if (msg.reason)
      self->quit(msg.reason);
  });
  return {
    [=](mb_snapshot_atom, const membership_snapshot& v) {
      auto& st = self->state;
      st.active = v.is_active(st.cfg.self);
      st.dir.on_snapshot(v);
    },
    [=](ct_regretry_atom, uint32_t tag) { register_activation(self, tag); },
    [=](ct_activate_atom, const grain_id& g) -> caf::response_promise {
      auto& st = self->state;
      auto rp = self->make_response_promise();
      const grain_type* t = st.registry ? st.registry->find(g.type) : nullptr;
      if (t == nullptr) {
        rp.deliver(to_error(fault{mesh_errc::not_found, "grain type " + g.type
                                                          + " is not registered on silo "
                                                          + st.cfg.self.to_string()}));
        return rp;
      }
      if (t->kind != grain_kind::single_activation) {
        rp.deliver(to_error(fault{mesh_errc::invalid_operation,
                                  "grain type " + g.type + " is a stateless worker"}));
        return rp;
      }
      auto bg = st.by_grain.find(g);
      if (bg != st.by_grain.end()) {
        for (auto v : bg->second) {
          auto& a = st.activations.at(v);
          if (!a.deactivating) {
            if (a.registering.pending()) {
              // Its first registration is still running; the directory is about to know it.
              rp.deliver(activation_address{g, st.cfg.self, a.tag});
              return rp;
            }
            reassert_registration(self, v, rp);
            return rp;
          }
        }
        // Only a deactivating one is here: the caller re-resolves.
        fault f{mesh_errc::activation_deactivated,
                "the activation of " + g.to_string() + " on silo " + st.cfg.self.to_string()
                  + " is deactivating"};
        f.activation_error_recorded = tri_bool::no;
        f.silo = st.cfg.self;
        rp.deliver(to_error(f));
        return rp;
      }
      if (!st.active) {
        rp.deliver(not_active_error(st, g));
        return rp;
      }
      if (t->check) {
        auto why = t->check(g);
        if (!why.empty()) {
          st.failures[g] = why;
          st.log.warning("activation of " + g.to_string() + " failed: " + why);
          rp.deliver(failed_activation_error(st, g, why));
          return rp;
        }
      }
      st.failures.erase(g);
      auto& a = create(self, g, *t);
      a.registering = rp;
      a.register_deadline = self->clock().now()
                            + std::chrono::milliseconds(st.cfg.activation_timeout_ms);
      register_activation(self, a.tag.value);
      return rp;
    },
    [=](ct_invoke_atom, const grain_id& g, activation_tag t, int32_t fwd,
        caf::message& payload) -> caf::response_promise {
      auto& st = self->state;
      auto rp = self->make_response_promise();
      catalog_turn turn{fwd, std::move(payload), rp};
      const grain_type* type = st.registry ? st.registry->find(g.type) : nullptr;
      if (type == nullptr) {
        ++st.stats.refused;
        rp.deliver(to_error(fault{mesh_errc::not_found, "grain type " + g.type
                                                          + " is not registered on silo "
                                                          + st.cfg.self.to_string()}));
        return rp;
      }
      if (type->kind == grain_kind::stateless_worker) {
        caf::error err;
        auto a = pick_worker(self, g, *type, err);
        if (a == nullptr) {
          ++st.stats.refused;
          rp.deliver(std::move(err));
          return rp;
        }
        enqueue(self, *a, std::move(turn));
        return rp;
      }
      auto i = st.activations.find(t.value);
      if (i == st.activations.end() || i->second.grain != g) {
        ++st.stats.refused;
        rp.deliver(missing_error(st, g, t));
        return rp;
      }
      enqueue(self, i->second, std::move(turn)); // held if deactivating
      return rp;
    },
    [=](ct_deact_atom, activation_tag t) -> caf::response_promise {
      auto& st = self->state;
      auto rp = self->make_response_promise();
      auto i = st.activations.find(t.value);
      if (i == st.activations.end()) {
        rp.deliver(caf::ok_atom::value);
        return rp;
      }
      i->second.gone.push_back(rp);
      deactivate(self, t.value, deactivation_reason::request);
      return rp;
    },
    [=](dir_lost_atom, const activation_address& loser, const activation_address& winner) {
      // The directory kept another activation of this grain (a hand-off collision, SPEC
      // §5.2 first-wins): this one deactivates and its held messages go to the winner.
      auto& st = self->state;
      auto i = st.activations.find(loser.tag.value);
      if (loser.silo != st.cfg.self || i == st.activations.end()
          || i->second.grain != loser.grain || i->second.stateless || i->second.deactivating)
        return;
      st.log.warning(tag_of(i->second) + " lost its registration to " + winner.to_string());
      if (i->second.registering.pending())
        i->second.registering.deliver(winner);
      deactivate(self, loser.tag.value, deactivation_reason::lost_registration);
    },
    [=](ct_deact_all_atom) -> caf::response_promise {
      auto& st = self->state;
      auto rp = self->make_response_promise();
      if (st.activations.empty()) {
        rp.deliver(caf::ok_atom::value);
        return rp;
      }
      st.all_gone.push_back(rp);
      std::vector<uint32_t> tags;
      for (auto& kv : st.activations)
        tags.push_back(kv.first);
      for (auto v : tags)
        deactivate(self, v, deactivation_reason::shutting_down);
      return rp;
    },
    [=](ct_abandon_atom, uint32_t tag) {
      auto& st = self->state;
      auto i = st.activations.find(tag);
      if (i == st.activations.end() || !i->second.deactivating || !i->second.turn_open)
        return;
      ++st.stats.abandoned;
      st.log.warning(tag_of(i->second) + " abandoned: its turn did not finish within "
                     + std::to_string(st.cfg.deactivation_timeout_ms)
                     + " ms of deactivation");
      finish(self, tag, true);
    },
    [=](ct_self_atom) -> caf::result<activation_tag> {
      if (auto a = sender_activation(self))
        return a->tag;
      return to_error(fault{mesh_errc::not_found, "the sender is no activation of this catalog"});
    },
    [=](ct_stats_atom) {
      auto& st = self->state;
      catalog_report out;
      out.counters = st.stats;
      std::map<std::string, uint64_t> by_type;
      for (auto& kv : st.activations)
        ++by_type[kv.second.grain.type];
      for (auto& [type, n] : by_type) {
        out.grain_types.push_back(type);
        out.activations.push_back(n);
      }
      return out;
    },
    [=](ct_leave_atom) {
      if (auto a = sender_activation(self))
        deactivate(self, a->tag.value, deactivation_reason::request);
    },
    [=](ct_pin_atom, bool on) {
      if (auto a = sender_activation(self)) {
        a->pinned = on;
        if (!on && !a->turn_open && a->queue.empty() && !a->deactivating)
          arm_idle(self, *a);
      }
    },
    [=](ct_idle_atom, uint32_t tag, uint64_t seq) {
      auto& st = self->state;
      auto i = st.activations.find(tag);
      if (i == st.activations.end())
        return;
      auto& a = i->second;
      if (a.idle_seq != seq || a.turn_open || !a.queue.empty() || a.deactivating || a.pinned)
        return;
      deactivate(self, tag, deactivation_reason::idle);
    },
  };
}

caf::actor spawn_catalog(caf::actor_system& sys, catalog_config cfg, grain_registry_ptr registry,
                         caf::actor centre, caf::actor placement) {
  return sys.spawn(catalog, std::move(cfg), std::move(registry), std::move(centre),
                   std::move(placement));
}

} // namespace cafmesh
