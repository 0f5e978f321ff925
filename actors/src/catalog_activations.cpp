#include "catalog_detail.hpp"
#include "cafmesh/actors/detail/catalog_state.hpp"
#include "cafmesh/actors/whole_ms.hpp"

#include <algorithm>
#include <chrono>
#include <type_traits>

namespace cafmesh::detail {

turn_reply::turn_reply(caf::local_actor* from, uint64_t id) : from_(from), id_(id) {
  if (auto* e = from->current_mailbox_element()) {
    caller_ = e->sender;
    urgent_ = e->mid.is_urgent_message();
  }
}

turn_reply::turn_reply(
  std::shared_ptr<std::vector<std::pair<caf::strong_actor_ptr, ct_result_item>>> outbox,
  caf::strong_actor_ptr caller, uint64_t id)
  : outbox_(std::move(outbox)), caller_(std::move(caller)), id_(id) {
  // nop
}

template <class T>
void turn_reply::answer(T&& x) {
  if (outbox_) {
    if (caller_) {
      ct_result_item item{id_, {}, {}};
      if constexpr (std::is_same<std::decay_t<T>, caf::error>::value)
        item.failure = std::forward<T>(x);
      else
        item.reply = std::forward<T>(x);
      outbox_->emplace_back(std::move(caller_), std::move(item));
    }
    caller_ = nullptr;
    return;
  }
  if (from_ == nullptr) {
    rp_.deliver(std::forward<T>(x));
    return;
  }
  if (!caller_)
    return;
  auto prio = urgent_ ? caf::message_priority::high : caf::message_priority::normal;
  caller_->enqueue(caf::make_mailbox_element(caf::strong_actor_ptr{from_->ctrl()},
                                             caf::make_message_id(prio), {}, ct_result_atom::value,
                                             id_, std::forward<T>(x)),
                   from_->context());
  caller_ = nullptr;
}

void turn_reply::deliver(caf::message reply) {
  answer(std::move(reply));
}

void turn_reply::deliver(caf::error failure) {
  answer(std::move(failure));
}

} // namespace cafmesh::detail

namespace cafmesh::catalog_detail {

using cafmesh::detail::catalog_activation;
using cafmesh::detail::catalog_turn;

/// Spawns one activation. The activation is linked to the catalog so it never outlives
/// it; the catalog traps exits of its activations.
catalog_activation& create(ct_actor* self, const grain_id& g, const grain_type& t) {
  auto& st = self->state;
  auto tag = next_tag(st);
  catalog_activation a;
  a.grain = g;
  a.tag = tag;
  a.stateless = t.kind == grain_kind::stateless_worker;
  a.hook_ms = whole_ms(t.deactivation_hook);
  a.may_interleave = t.may_interleave;
  auto factory = t.factory;
  a.actor = self->spawn<caf::linked>(
    [factory, g](caf::event_based_actor* act) -> caf::behavior { return factory(act, g); });
  ++st.stats.activated;
  st.by_grain[g].push_back(tag.value);
  st.log.debug("activated " + tag.to_string() + " of " + g.to_string());
  return st.activations.emplace(tag.value, std::move(a)).first->second;
}

void flush_results(ct_actor* self) {
  auto& out = *self->state.results;
  if (out.empty())
    return;
  auto items = std::move(out);
  out.clear();
  // By caller, each caller's answers in the order they came.
  std::vector<std::pair<caf::strong_actor_ptr, std::vector<ct_result_item>>> by_caller;
  for (auto& [caller, item] : items) {
    auto i = std::find_if(by_caller.begin(), by_caller.end(),
                          [&](const auto& x) { return x.first == caller; });
    if (i == by_caller.end()) {
      by_caller.emplace_back(caller, std::vector<ct_result_item>{});
      i = by_caller.end() - 1;
    }
    i->second.push_back(std::move(item));
  }
  for (auto& [caller, batch] : by_caller)
    caller->enqueue(caf::make_mailbox_element(caf::strong_actor_ptr{self->ctrl()},
                                              caf::make_message_id(caf::message_priority::high), {},
                                              ct_results_atom::value, std::move(batch)),
                    self->context());
}

void settle_results(ct_actor* self) {
  auto& st = self->state;
  if (st.results->empty())
    return;
  if (st.results->size() >= 64 || self->mailbox().empty()) {
    flush_results(self);
    return;
  }
  if (!st.flush_queued) {
    st.flush_queued = true;
    self->send(self, ct_flush_atom::value);
  }
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
          caf::make_message(pl_call_atom::value, g, turn.forward_count + 1,
                            std::move(turn.payload)),
          [=](caf::message reply, caf::error err) mutable {
            --self->state.reroutes_in_flight;
            check_all_gone(self);
            if (err)
              rp.deliver(std::move(err));
            else
              rp.deliver(std::move(reply));
            settle_results(self);
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
    st.dir.unregister(
      self, addr, [] {}, [](caf::error) {});
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

void forget_stale_entry(ct_actor* self, const grain_id& g, activation_tag t) {
  auto& st = self->state;
  if (t.value == 0)
    return;
  ++st.stats.stale_unregistered;
  activation_address addr{g, st.cfg.self, t};
  st.log.debug("a call named " + t.to_string() + " of " + g.to_string()
               + ", which is not here: removing its directory entry");
  st.dir.unregister(
    self, addr, [] {}, [](caf::error) {});
  self->send(st.placement, pl_inval_atom::value, addr);
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
            self->state.log.warning("deactivation hook of " + what
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
  if (!a.busy()) {
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

/// Starts the waiting turns that may start now, in arrival order
/// (docs/behaviour/directory-and-placement.md#turns-and-interleaving): an exclusive turn only
/// when no turn is open; an interleaving one while no exclusive turn is open. The first that
/// must wait holds everything behind it.
void pump(ct_actor* self, uint32_t tag) {
  auto& st = self->state;
  for (;;) {
    auto i = st.activations.find(tag);
    if (i == st.activations.end())
      return;
    auto& a = i->second;
    if (a.deactivating || a.queue.empty() || a.exclusive_open)
      return;
    bool interleaves = a.may_interleave && a.may_interleave(a.queue.front().payload);
    if (!interleaves && a.busy())
      return;
    auto turn = std::move(a.queue.front());
    a.queue.pop_front();
    ++a.turns_open;
    a.exclusive_open = !interleaves;
    st.last_forward_count = turn.forward_count;
    ++a.idle_seq; // a pending idle timer is stale now
    auto rp = turn.rp;
    ask_any(self, a.actor, 0, std::move(turn.payload),
            [=](caf::message reply, caf::error err) mutable {
              if (err)
                rp.deliver(to_error(to_fault(err)));
              else
                rp.deliver(std::move(reply));
              // The answer leaves with the others of its batch (SPEC B1).
              struct settle_at_end {
                ct_actor* self;
                ~settle_at_end() { settle_results(self); }
              } at_end{self};
              auto& st = self->state;
              auto j = st.activations.find(tag);
              if (j == st.activations.end())
                return; // abandoned
              auto& act = j->second;
              --act.turns_open;
              if (!interleaves)
                act.exclusive_open = false;
              ++st.stats.turns;
              if (act.deactivating) {
                if (!act.busy())
                  release(self, tag);
                return;
              }
              if (act.queue.empty()) {
                if (!act.busy())
                  arm_idle(self, act);
              } else {
                pump(self, tag);
              }
            });
    if (!interleaves)
      return;
  }
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
      if (!a.busy() && a.queue.empty())
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
      if (retry
          && self->clock().now() + std::chrono::milliseconds(100) < j->second.register_deadline) {
        self->delayed_send(self, std::chrono::milliseconds(100), ct_regretry_atom::value, tag);
        return;
      }
      answer(to_error(f), activation_address{});
    });
}

/// Asked to activate a grain that is already active here: placement found no directory
/// entry for it, which a ring change can lose (a hand-off that never arrived,
/// docs/behaviour/routing.md#hubs). Registers the activation again (first wins) before answering,
/// so the claim that asked repairs the directory instead of answering an address nobody else can
/// find. If another activation won meanwhile, this one deactivates (`lost_registration`) and the
/// winner is the answer, as for a first registration. A directory that cannot be reached leaves the
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

void reregister_orphans(ct_actor* self, const hash_ring& before, const membership_snapshot& v) {
  auto& st = self->state;
  // The rings seen lately: an entry can sit with an owner of an older ring whose hand-off to
  // a later one never came (it was silent, then declared gone).
  constexpr size_t kept_rings = 8;
  if (st.recent_rings.empty() || st.recent_rings.back() != before) {
    st.recent_rings.push_back(before);
    if (st.recent_rings.size() > kept_rings)
      st.recent_rings.pop_front();
  }
  if (v.departed(st.cfg.self))
    return;
  // Members of the previous ring that left it without handing their entries off: a kill
  // (Active -> Stopping -> Dead) or a restart on its address (superseded), not a graceful stop
  // (ShuttingDown). Their entries died with them, and so did the entries a silo that joined
  // while one of them was silent waited for in vain.
  std::vector<silo_address> gone;
  for (const auto& m : before.members()) {
    auto s = v.status_of(m);
    if (s == silo_status::stopping || s == silo_status::dead)
      gone.push_back(m);
  }
  if (gone.empty())
    return;
  auto owned_by_gone = [&](const grain_id& g) {
    for (const auto& r : st.recent_rings)
      if (auto o = r.owner_of(g); o != nullptr)
        if (std::find(gone.begin(), gone.end(), *o) != gone.end())
          return true;
    return false;
  };
  std::vector<uint32_t> tags;
  for (auto& kv : st.activations) {
    auto& a = kv.second;
    if (a.stateless || a.deactivating || a.registering.pending())
      continue;
    auto new_owner = st.dir.ring().owner_of(a.grain);
    if (new_owner != nullptr && owned_by_gone(a.grain))
      tags.push_back(kv.first);
  }
  if (tags.empty())
    return;
  st.log.info("registering " + std::to_string(tags.size())
              + " activation(s) again: their directory partition departed");
  for (auto t : tags)
    reregister(self, t, 0);
}

void reregister(ct_actor* self, uint32_t tag, int64_t attempt) {
  auto& st = self->state;
  auto i = st.activations.find(tag);
  if (i == st.activations.end() || i->second.deactivating)
    return;
  activation_address mine{i->second.grain, st.cfg.self, i->second.tag};
  st.dir.register_activation(
    self, mine,
    [=](activation_address winner) {
      if (winner == mine)
        return;
      auto j = self->state.activations.find(tag);
      if (j == self->state.activations.end() || j->second.deactivating)
        return;
      self->state.log.info("activation " + mine.to_string() + " registered again lost to "
                           + winner.to_string() + "; its messages go there");
      deactivate(self, tag, deactivation_reason::lost_registration);
    },
    [=](caf::error e) {
      auto f = to_fault(e);
      bool retry = e == caf::sec::request_timeout || f.code == mesh_errc::directory_unstable;
      auto bound = self->state.cfg.activation_timeout_ms / 100;
      if (retry && attempt + 1 < bound) {
        self->delayed_send(self, std::chrono::milliseconds(100), ct_rereg_atom::value, tag,
                           attempt + 1);
        return;
      }
      self->state.log.info("activation " + mine.to_string()
                           + " could not be registered again: " + f.render());
    });
}

activation_tag find_live(ct_actor* self, const grain_id& g) {
  auto& st = self->state;
  auto bg = st.by_grain.find(g);
  if (bg == st.by_grain.end())
    return activation_tag{0};
  for (auto v : bg->second) {
    auto& a = st.activations.at(v);
    if (!a.stateless && !a.deactivating)
      return a.tag;
  }
  return activation_tag{0};
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

} // namespace cafmesh::catalog_detail
