#include "catalog_detail.hpp"
#include "catalog_find.hpp"

#include <algorithm>
#include <chrono>

#include <caf/all.hpp>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/request_any.hpp"
#include "cafmesh/config/mesh_config.hpp"
#include "cafmesh/actors/detail/catalog_state.hpp"

namespace cafmesh {

using cafmesh::detail::catalog_state;
using cafmesh::detail::catalog_turn;
using cafmesh::detail::turn_reply;

using namespace catalog_detail;

const char* catalog_state::name = "cafmesh.catalog";

std::string to_string(deactivation_reason x) {
  switch (x) {
    case deactivation_reason::idle: return "idle";
    case deactivation_reason::shutting_down: return "shutting_down";
    case deactivation_reason::lost_registration: return "lost_registration";
    case deactivation_reason::request: return "request";
  }
  return "deactivation_reason(" + std::to_string(static_cast<int>(x)) + ")";
}

catalog_config make_catalog_config(const config::mesh_config& cfg, const silo_address& self) {
  catalog_config out;
  out.self = self;
  out.seed = cfg.simulation.seed;
  out.deactivation_timeout_ms = cfg.catalog.deactivation_timeout_ms;
  out.activation_timeout_ms = cfg.catalog.activation_timeout_ms;
  out.idle_deactivation_ms = cfg.catalog.idle_deactivation_ms;
  out.max_forward_count = cfg.placement.max_forward_count;
  out.lookup_attempt_timeout_ms = cfg.directory.lookup_attempt_timeout_ms;
  out.stateless_worker_bypass = cfg.directory.stateless_worker_bypass;
  return out;
}

namespace {

/// One turn of activation `t` of `g` (`ct_invoke`, `ct_call`), answered through `reply`.
void invoke(ct_actor* self, const grain_id& g, activation_tag t, int32_t fwd, caf::message payload,
            turn_reply reply) {
  auto& st = self->state;
  const grain_type* type = st.registry ? st.registry->find(g.type) : nullptr;
  if (type == nullptr) {
    ++st.stats.refused;
    reply.deliver(
      to_error(fault{mesh_errc::not_found, "grain type " + g.type + " is not registered on silo "
                                             + st.cfg.self.to_string()}));
    return;
  }
  catalog_turn turn{fwd, std::move(payload), std::move(reply)};
  if (type->kind == grain_kind::stateless_worker) {
    caf::error err;
    auto a = pick_worker(self, g, *type, err);
    if (a == nullptr) {
      ++st.stats.refused;
      turn.rp.deliver(std::move(err));
      return;
    }
    enqueue(self, *a, std::move(turn));
    return;
  }
  auto i = st.activations.find(t.value);
  if (i == st.activations.end() || i->second.grain != g) {
    ++st.stats.refused;
    forget_stale_entry(self, g, t);
    turn.rp.deliver(missing_error(st, g, t));
    return;
  }
  enqueue(self, i->second, std::move(turn)); // held if deactivating
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
        st.log.warning(tag_of(kv.second)
                       + " exited on its own: " + self->system().render(msg.reason));
        finish(self, kv.first, false);
        settle_results(self);
        return;
      }
    if (msg.reason) {
      flush_results(self);
      self->quit(msg.reason);
    }
  });
  return {
    [=](mb_snapshot_atom, const membership_snapshot& v) {
      auto& st = self->state;
      st.active = v.is_active(st.cfg.self);
      auto before = st.dir.ring();
      st.dir.on_snapshot(v);
      reregister_orphans(self, before, v);
    },
    [=](ct_regretry_atom, uint32_t tag) { register_activation(self, tag); },
    [=](ct_rereg_atom, uint32_t tag, int64_t attempt) { reregister(self, tag, attempt); },
    [=](ct_activate_atom, const grain_id& g) -> caf::response_promise {
      auto& st = self->state;
      auto rp = self->make_response_promise();
      const grain_type* t = st.registry ? st.registry->find(g.type) : nullptr;
      if (t == nullptr) {
        rp.deliver(to_error(
          fault{mesh_errc::not_found,
                "grain type " + g.type + " is not registered on silo " + st.cfg.self.to_string()}));
        return rp;
      }
      if (t->kind != grain_kind::single_activation) {
        rp.deliver(to_error(
          fault{mesh_errc::invalid_operation, "grain type " + g.type + " is a stateless worker"}));
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
        fault f{mesh_errc::activation_deactivated, "the activation of " + g.to_string()
                                                     + " on silo " + st.cfg.self.to_string()
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
    [=](ct_find_atom, const grain_id& g) { return find_live(self, g); },
    [=](ct_invoke_atom, const grain_id& g, activation_tag t, int32_t fwd,
        caf::message& payload) -> caf::response_promise {
      auto rp = self->make_response_promise();
      invoke(self, g, t, fwd, std::move(payload), turn_reply{rp});
      return rp;
    },
    [=](ct_call_atom, uint64_t id, const grain_id& g, activation_tag t, int32_t fwd,
        caf::message& payload) {
      invoke(self, g, t, fwd, std::move(payload), turn_reply{self, id});
    },
    [=](ct_calls_atom, std::vector<ct_call_item>& calls) {
      auto caller = self->current_sender();
      for (auto& c : calls)
        invoke(self, c.grain, c.tag, c.forward_count, std::move(c.payload),
               turn_reply{self->state.results, caller, c.id});
      settle_results(self);
    },
    [=](ct_flush_atom) {
      self->state.flush_queued = false;
      flush_results(self);
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
      // The directory kept another activation of this grain (a hand-off collision; the first registration
      // wins: docs/behaviour/directory-and-placement.md#lookup-registration-cache): this one
      // deactivates and its held messages go to the winner.
      auto& st = self->state;
      auto i = st.activations.find(loser.tag.value);
      if (loser.silo != st.cfg.self || i == st.activations.end() || i->second.grain != loser.grain
          || i->second.stateless || i->second.deactivating)
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
      if (i == st.activations.end() || !i->second.deactivating || !i->second.busy())
        return;
      ++st.stats.abandoned;
      st.log.warning(tag_of(i->second) + " abandoned: its turn did not finish within "
                     + std::to_string(st.cfg.deactivation_timeout_ms) + " ms of deactivation");
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
        if (!on && !a->busy() && a->queue.empty() && !a->deactivating)
          arm_idle(self, *a);
      }
    },
    [=](ct_idle_atom, uint32_t tag, uint64_t seq) {
      auto& st = self->state;
      auto i = st.activations.find(tag);
      if (i == st.activations.end())
        return;
      auto& a = i->second;
      if (a.idle_seq != seq || a.busy() || !a.queue.empty() || a.deactivating || a.pinned)
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
