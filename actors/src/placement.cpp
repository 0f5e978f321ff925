#include "cafmesh/actors/placement.hpp"

#include <algorithm>
#include <chrono>
#include <optional>

#include <caf/all.hpp>

#include "cafmesh/actors/catalog.hpp"
#include "cafmesh/actors/directory.hpp"
#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/request_any.hpp"
#include "cafmesh/actors/message_center.hpp"
#include "cafmesh/actors/remote_call.hpp"
#include "cafmesh/config/mesh_config.hpp"
#include "cafmesh/actors/detail/placement_state.hpp"
#include "catalog_find.hpp"

namespace cafmesh {

using cafmesh::detail::placement_item;
using cafmesh::detail::placement_local_call;
using cafmesh::detail::placement_state;
using cafmesh::detail::placement_waiter;

const char* placement_state::name = "cafmesh.placement";

placement_config make_placement_config(const config::mesh_config& cfg, const silo_address& self) {
  placement_config out;
  out.self = self;
  out.seed = cfg.simulation.seed;
  out.timeout_ms = cfg.placement.timeout_ms;
  out.worker_count = cfg.placement.worker_count;
  out.max_forward_count = cfg.placement.max_forward_count;
  out.lookup_attempt_timeout_ms = cfg.directory.lookup_attempt_timeout_ms;
  out.stateless_worker_bypass = cfg.directory.stateless_worker_bypass;
  out.response_timeout_ms = cfg.grain_call.response_timeout_ms;
  return out;
}

silo_address pick_silo(placement_strategy strategy, const silo_address& self, bool local_ok,
                       const std::vector<silo_address>& candidates, std::mt19937_64& rng) {
  if (local_ok && strategy != placement_strategy::random)
    return self;
  return candidates[rng() % candidates.size()];
}

namespace {

using pl_actor = caf::stateful_actor<placement_state>;

/// Renders a duration in seconds: `30 s`, or `0.5 s` when not whole.
std::string seconds_text(int64_t ms) {
  if (ms % 1000 == 0)
    return std::to_string(ms / 1000) + " s";
  auto tenths = ms / 100;
  return std::to_string(tenths / 10) + "." + std::to_string(tenths % 10) + " s";
}

caf::error shutting_down_error(const placement_state& st) {
  fault f{mesh_errc::silo_unavailable, "silo " + st.cfg.self.to_string() + " is shutting down"};
  f.silo = st.cfg.self;
  return to_error(f);
}

size_t worker_of(const placement_state& st, const grain_id& g) {
  return static_cast<size_t>(fnv1a64(g.to_string()) % st.workers.size());
}

placement_item* find_item(pl_actor* self, size_t idx, const grain_id& g, uint64_t id) {
  auto& items = self->state.workers[idx];
  auto i = items.find(g);
  if (i == items.end() || i->second.id != id)
    return nullptr;
  return &i->second;
}

void invalidate(pl_actor* self, const grain_id& g, const silo_address& s, activation_tag t) {
  self->state.cache.invalidate(activation_address{g, s, t});
}

/// Sends one message to its activation: it leaves placement now
/// (docs/behaviour/directory-and-placement.md#placement "Response timeout"). A stateless-worker
/// message carries tag 0: the target catalog picks.
int64_t placement_now_ms(pl_actor* self) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(self->clock().now()
                                                               - self->state.origin)
    .count();
}

/// The response-timeout fault of a grain call that left placement `timeout_ms` ago.
fault call_timeout_fault(const grain_id& g, int64_t timeout_ms) {
  return fault{mesh_errc::response_timeout,
               "grain call to " + g.to_string() + " timed out after " + seconds_text(timeout_ms)};
}

/// Ends every call by id whose deadline has passed with its response timeout; `fired` is
/// the due time the timer was armed for (an earlier timer superseded it: nothing to do).
void sweep(pl_actor* self, int64_t fired) {
  auto& st = self->state;
  st.local_deadlines.fire(self, pl_sweep_atom::value, fired, placement_now_ms(self),
                          [self](int64_t, uint64_t id) {
                            auto& st = self->state;
                            auto i = st.local_calls.find(id);
                            if (i == st.local_calls.end())
                              return;
                            auto c = std::move(i->second);
                            st.local_calls.erase(i);
                            c.rp.deliver(to_error(call_timeout_fault(c.grain, c.timeout_ms)));
                          });
}

/// Takes local call `id` out (its deadline dropped); none if it already ended.
std::optional<placement_local_call> take_local_call(pl_actor* self, uint64_t id) {
  auto& st = self->state;
  auto i = st.local_calls.find(id);
  if (i == st.local_calls.end())
    return std::nullopt;
  auto c = std::move(i->second);
  st.local_calls.erase(i);
  st.local_deadlines.remove(c.due_ms, id);
  return c;
}

void send_to(pl_actor* self, const grain_id& g, const silo_address& s, activation_tag t,
             placement_waiter w) {
  auto& st = self->state;
  auto timeout_ms = st.cfg.response_timeout_ms;
  // A caller's bound shortens the call's (docs/behaviour/routing.md#a-requests-remaining-time).
  if (w.answer_by_ms > 0) {
    auto left_ms = w.answer_by_ms - placement_now_ms(self);
    if (left_ms <= 0) {
      w.rp.deliver(
        to_error(fault{mesh_errc::response_timeout,
                       "grain call to " + g.to_string() + " not sent: its caller's time ran out"}));
      return;
    }
    timeout_ms = std::min(timeout_ms, left_ms);
  }
  // Answered by id, bounded by the one sweep timer (SPEC §14 B6, docs/delivery-costs.md).
  auto local = s == st.cfg.self && st.catalog;
  if (!local && !st.centre) {
    w.rp.deliver(to_error(to_fault(caf::make_error(caf::sec::request_receiver_down))));
    return;
  }
  auto id = ++st.next_local_call;
  auto due = placement_now_ms(self) + timeout_ms;
  st.local_calls.emplace(id, placement_local_call{std::move(w.rp), g, t, timeout_ms, due, s});
  st.local_deadlines.add(due, id);
  st.local_deadlines.arm(self, pl_sweep_atom::value, placement_now_ms(self));
  if (local) {
    // An activation of this silo: straight to the catalog. The message centre would hand
    // it to the same catalog.
    self->send(st.catalog, ct_call_atom::value, id, g, t, w.forward_count, std::move(w.payload));
    return;
  }
  // Through the message centre, which sends the frame with the call's time-to-live
  // (remote_call.hpp) and answers by id.
  std::vector<remote_call_item> calls;
  calls.push_back(
    remote_call_item{s, timeout_ms, ct_call_item{id, g, t, w.forward_count, std::move(w.payload)}});
  self->send(st.centre, mc_calls_atom::value, std::move(calls));
}

/// The answer to call by id `id`: its reply, or `err`.
void call_result(pl_actor* self, uint64_t id, caf::message reply, const caf::error& err) {
  auto c = take_local_call(self, id);
  if (!c)
    return; // its deadline ended it already: a late answer changes nothing
  if (!err) {
    c->rp.deliver(std::move(reply));
    return;
  }
  auto f = to_fault(err);
  if (f.code == mesh_errc::departed_silo || f.code == mesh_errc::activation_deactivated)
    invalidate(self, c->grain, c->silo, c->tag);
  c->rp.deliver(to_error(f));
}

/// Fails every call by id to this silo (`local`) or to other silos (`!local`) as a request
/// to an actor that is gone does.
void fail_calls(pl_actor* self, bool local) {
  auto& st = self->state;
  std::vector<uint64_t> ids;
  for (auto& kv : st.local_calls)
    if ((kv.second.silo == st.cfg.self) == local)
      ids.push_back(kv.first);
  std::sort(ids.begin(), ids.end());
  auto err = to_error(to_fault(caf::make_error(caf::sec::request_receiver_down)));
  for (auto id : ids)
    if (auto c = take_local_call(self, id))
      c->rp.deliver(err);
}

/// Ends a work item successfully: caches the address (single-activation) and sends every
/// batched message on.
void complete(pl_actor* self, size_t idx, const grain_id& g, const silo_address& s,
              activation_tag t, bool cache) {
  auto& items = self->state.workers[idx];
  auto i = items.find(g);
  if (i == items.end())
    return;
  auto waiters = std::move(i->second.waiters);
  items.erase(i);
  if (cache)
    self->state.cache.put(activation_address{g, s, t});
  for (auto& w : waiters)
    send_to(self, g, s, t, std::move(w));
}

/// Ends a work item with `f` for every batched message, at this one instant.
void fail_item(pl_actor* self, size_t idx, const grain_id& g, const fault& f) {
  auto& items = self->state.workers[idx];
  auto i = items.find(g);
  if (i == items.end())
    return;
  auto waiters = std::move(i->second.waiters);
  items.erase(i);
  auto err = to_error(f);
  for (auto& w : waiters)
    w.rp.deliver(err);
}

std::string known_with_type(const membership_snapshot& v, const std::string& type) {
  std::vector<std::string> names;
  for (auto& row : v.rows)
    if (row.find_type(type) != nullptr)
      names.push_back(row.silo.to_string());
  std::sort(names.begin(), names.end());
  std::string out;
  for (auto& n : names) {
    if (!out.empty())
      out += ", ";
    out += n;
  }
  return out;
}

fault no_candidate_fault(const membership_snapshot& v, const std::string& type,
                         const std::string& version) {
  return fault{mesh_errc::no_compatible_silo,
               "no active silo is compatible with grain type " + type + " (interface version "
                 + version + "); silos known with this type: [" + known_with_type(v, type)
                 + "]; start a silo that hosts " + type + ", or send again once one is Active"};
}

/// Silos Active in the latest view whose manifest lists `info.type` with the same interface
/// version, ordered by rendered address (docs/behaviour/directory-and-placement.md#placement
/// "Compatibility").
std::vector<silo_address> candidates_for(const placement_state& st, const grain_type_info& info) {
  std::vector<silo_address> candidates;
  for (auto& row : st.view.rows) {
    if (row.status != silo_status::active)
      continue;
    auto e = row.find_type(info.type);
    if (e != nullptr && e->interface_version == info.interface_version)
      candidates.push_back(row.silo);
  }
  std::sort(candidates.begin(), candidates.end());
  return candidates;
}

/// Step (3)-(6) of a work item whose lookup found nothing.
void place_new(pl_actor* self, size_t idx, const grain_id& g, uint64_t id) {
  auto& st = self->state;
  auto item = find_item(self, idx, g, id);
  if (item == nullptr)
    return;
  auto info = item->info;
  auto kind = item->kind;
  auto candidates = candidates_for(st, info);
  if (candidates.empty()) {
    ++st.stats.no_candidate;
    fail_item(self, idx, g,
              no_candidate_fault(st.view, info.type, std::to_string(info.interface_version)));
    return;
  }
  // A silo that told us it is leaving gets no new activation while another one can host it.
  if (!st.leaving.empty()) {
    std::vector<silo_address> staying;
    for (auto& c : candidates)
      if (st.leaving.count(c) == 0)
        staying.push_back(c);
    if (!staying.empty() && staying.size() < candidates.size()) {
      ++st.stats.leaving_skipped;
      candidates = std::move(staying);
    }
  }
  // The local limit of a stateless worker is enforced by the local catalog: it creates
  // activations while all are busy and fewer than the limit exist, and queues beyond.
  bool local_ok = std::find(candidates.begin(), candidates.end(), st.cfg.self) != candidates.end();
  auto target = pick_silo(info.strategy, st.cfg.self, local_ok, candidates, st.rng);
  if (kind == grain_kind::stateless_worker) {
    complete(self, idx, g, target, activation_tag{0}, false);
    return;
  }
  ++st.stats.activations;
  // Bounded by the item's budget: the item has failed by then anyway.
  self
    ->request(st.centre, std::chrono::milliseconds(st.cfg.timeout_ms),
              make_call(target, component::catalog, ct_activate_atom::value, g))
    .then(
      [=](activation_address& a) {
        if (find_item(self, idx, g, id) != nullptr)
          complete(self, idx, g, a.silo, a.tag, true);
      },
      [=](caf::error& e) {
        if (find_item(self, idx, g, id) != nullptr)
          fail_item(self, idx, g, to_fault(e));
      });
}

/// A lookup attempt of a single-activation grain failed: the directory cannot answer now (the
/// partition that owns the id is on a silo that departed and is not declared Dead yet, or
/// does not answer in time). If the silo's own catalog holds a live activation of the grain,
/// that is the answer (docs/behaviour/directory-and-placement.md#own-catalog-when-the-directory-cannot-answer);
/// otherwise, and without a catalog, `retry`.
template <class Retry>
void ask_own_catalog(pl_actor* self, size_t idx, const grain_id& g, uint64_t id, Retry retry) {
  auto& st = self->state;
  auto item = find_item(self, idx, g, id);
  if (item == nullptr)
    return;
  if (!st.catalog || item->kind != grain_kind::single_activation) {
    retry();
    return;
  }
  // At the priority of the router core's calls to the catalog (router_core_calls.cpp): the
  // question holds back every message of the work item, so it does not wait behind their
  // urgent backlog in the catalog's mailbox.
  self->request<caf::message_priority::high>(st.catalog, caf::infinite, ct_find_atom::value, g)
    .then(
      [=](activation_tag t) {
        if (find_item(self, idx, g, id) == nullptr)
          return;
        if (t.value != 0)
          complete(self, idx, g, self->state.cfg.self, t, true);
        else
          retry();
      },
      [=](caf::error&) {
        if (find_item(self, idx, g, id) != nullptr)
          retry();
      });
}

/// Step (1) of a work item: one lookup attempt through the silo's directory client (the
/// resolver's directory: null for stateless workers with the bypass, else the ring).
void start_lookup(pl_actor* self, size_t idx, const grain_id& g, uint64_t id) {
  auto& st = self->state;
  auto item = find_item(self, idx, g, id);
  if (item == nullptr)
    return;
  ++item->lookup_attempts;
  ++st.stats.lookups;
  st.dir.lookup(
    self, g,
    [=](lookup_result r) {
      if (find_item(self, idx, g, id) == nullptr)
        return;
      if (r.registered)
        complete(self, idx, g, r.address.silo, r.address.tag, true);
      else
        place_new(self, idx, g, id);
    },
    [=](caf::error e) {
      if (find_item(self, idx, g, id) == nullptr)
        return;
      if (e == caf::sec::request_timeout) {
        // docs/behaviour/directory-and-placement.md#lookup-registration-cache: retry against the
        // ring as it is by now.
        ask_own_catalog(self, idx, g, id, [=] { start_lookup(self, idx, g, id); });
        return;
      }
      auto& st = self->state;
      auto item = find_item(self, idx, g, id);
      if (candidates_for(st, item->info).empty()) {
        // Nothing Active could host it, and without an Active silo the directory cannot
        // answer either: fail now instead of waiting for the deadline.
        ++st.stats.no_candidate;
        fail_item(self, idx, g,
                  no_candidate_fault(st.view, item->info.type,
                                     std::to_string(item->info.interface_version)));
        return;
      }
      st.log.debug("lookup of " + g.to_string() + " failed, retrying: " + to_fault(e).render());
      ask_own_catalog(self, idx, g, id, [=] {
        self->delayed_send(self, std::chrono::milliseconds(self->state.cfg.unstable_retry_ms),
                           pl_retry_atom::value, static_cast<uint64_t>(idx), g, id);
      });
    });
}

/// A grain call (the protocol's `pl_call`); `within` > 0 bounds it by its caller's remaining
/// time (docs/behaviour/routing.md#a-requests-remaining-time).
caf::response_promise call(pl_actor* self, grain_id& g, int32_t fwd, caf::message payload,
                           caf::timespan within) {
  auto& st = self->state;
  auto rp = self->make_response_promise();
  ++st.stats.calls;
  if (st.stopped) {
    rp.deliver(shutting_down_error(st));
    return rp;
  }
  if (fwd > st.cfg.max_forward_count) {
    rp.deliver(to_error(fault{mesh_errc::rejected, "forward count " + std::to_string(fwd)
                                                     + " exceeds placement.max_forward_count = "
                                                     + std::to_string(st.cfg.max_forward_count)
                                                     + " for " + g.to_string()}));
    return rp;
  }
  const grain_type* t = st.registry ? st.registry->find(g.type) : nullptr;
  if (t == nullptr) {
    rp.deliver(to_error(no_candidate_fault(st.view, g.type, "?")));
    return rp;
  }
  placement_waiter w{fwd, std::move(payload), rp};
  if (within > caf::timespan{0})
    w.answer_by_ms = placement_now_ms(self)
                     + std::chrono::duration_cast<std::chrono::milliseconds>(within).count();
  if (t->kind == grain_kind::single_activation) {
    auto c = st.cache.get(g);
    if (c) {
      ++st.stats.cache_hits;
      send_to(self, g, c->silo, c->tag, std::move(w));
      return rp;
    }
  }
  auto idx = worker_of(st, g);
  auto& items = st.workers[idx];
  auto i = items.find(g);
  if (i != items.end()) {
    ++st.stats.joined;
    i->second.waiters.push_back(std::move(w));
    return rp;
  }
  auto id = ++st.next_item_id;
  placement_item item;
  item.id = id;
  item.grain = g;
  item.info = t->info;
  item.kind = t->kind;
  item.created_ms = placement_now_ms(self);
  item.waiters.push_back(std::move(w));
  items.emplace(g, std::move(item));
  ++st.stats.items_created;
  // A null-directory lookup completes inside this call (no message at all); only an
  // item still pending afterwards needs its deadline timer.
  start_lookup(self, idx, g, id);
  if (find_item(self, idx, g, id) != nullptr)
    self->delayed_send(self, std::chrono::milliseconds(st.cfg.timeout_ms), pl_deadline_atom::value,
                       static_cast<uint64_t>(idx), g, id);
  return rp;
}

} // namespace

static caf::behavior placement_service(pl_actor* self, placement_config cfg,
                                       grain_registry_ptr registry, caf::actor centre) {
  auto& st = self->state;
  st.cfg = std::move(cfg);
  if (st.cfg.worker_count < 1)
    st.cfg.worker_count = 1;
  st.registry = std::move(registry);
  st.centre = std::move(centre);
  st.dir = directory_client{st.cfg.self, st.centre,
                            directory_resolver{st.registry ? st.registry->manifest()
                                                           : std::vector<grain_type_info>{},
                                               st.cfg.stateless_worker_bypass},
                            directory_client_config{st.cfg.lookup_attempt_timeout_ms}};
  st.cache = directory_cache{};
  st.rng.seed(st.cfg.seed ^ fnv1a64("placement/" + st.cfg.self.to_string()));
  st.workers.resize(static_cast<size_t>(st.cfg.worker_count));
  st.log = log::get("placement").with_context(st.cfg.self.to_string());
  st.origin = self->clock().now();
  if (st.centre) {
    self->monitor(st.centre);
    // The centre reports refusals by leaving silos of the calls by id it carries, the router
    // core's included (message_center.cpp `answer`).
    caf::anon_send(st.centre, mc_register_atom::value, component::placement, caf::actor{self});
  }
  // The catalog ended (its silo's teardown): its unanswered calls fail as a request to an
  // actor that is gone does, and later calls take the message centre's way. The message
  // centre ended: the calls it carried fail the same way.
  self->set_down_handler([=](caf::down_msg& dm) {
    auto& st = self->state;
    if (st.catalog && dm.source == st.catalog.address()) {
      st.catalog = nullptr;
      fail_calls(self, true);
    } else if (st.centre && dm.source == st.centre.address()) {
      fail_calls(self, false);
    }
  });
  return {
    [=](pl_call_atom, grain_id& g, int32_t fwd, caf::message& payload) -> caf::response_promise {
      return call(self, g, fwd, std::move(payload), caf::timespan{0});
    },
    [=](pl_call_atom, grain_id& g, int32_t fwd, caf::message& payload, caf::timespan within)
      -> caf::response_promise { return call(self, g, fwd, std::move(payload), within); },
    [=](pl_deadline_atom, uint64_t idx, const grain_id& g, uint64_t id) {
      auto& st = self->state;
      if (find_item(self, idx, g, id) == nullptr)
        return;
      ++st.stats.timeouts;
      auto text = "placement of " + g.to_string() + " timed out after "
                  + seconds_text(st.cfg.timeout_ms);
      st.log.info(text);
      fail_item(self, idx, g, fault{mesh_errc::placement_timeout, text});
    },
    [=](pl_retry_atom, uint64_t idx, const grain_id& g, uint64_t id) {
      start_lookup(self, idx, g, id);
    },
    [=](mb_snapshot_atom, membership_snapshot& v) {
      auto& st = self->state;
      st.view = std::move(v);
      for (auto i = st.leaving.begin(); i != st.leaving.end();) {
        if (st.view.is_active(*i))
          ++i;
        else
          i = st.leaving.erase(i);
      }
      st.dir.on_snapshot(st.view);
      st.cache.on_snapshot(st.view);
    },
    [=](pl_stats_atom) { return self->state.stats; },
    [=](pl_catalog_atom, caf::actor& catalog) {
      auto& st = self->state;
      if (st.catalog)
        self->demonitor(st.catalog);
      st.catalog = std::move(catalog);
      if (st.catalog)
        self->monitor(st.catalog);
    },
    [=](ct_result_atom, uint64_t id, caf::message& reply) {
      call_result(self, id, std::move(reply), caf::error{});
    },
    [=](ct_result_atom, uint64_t id, caf::error& err) {
      call_result(self, id, caf::message{}, err);
    },
    [=](ct_results_atom, std::vector<ct_result_item>& results) {
      for (auto& r : results)
        call_result(self, r.id, std::move(r.reply), r.failure);
    },
    [=](pl_sweep_atom, int64_t due) { sweep(self, due); },
    [=](pl_leaving_atom, const silo_address& s) {
      auto& st = self->state;
      if (!st.view.is_active(s) || !st.leaving.insert(s).second)
        return;
      st.log.info("silo " + s.to_string()
                  + " is leaving: no new activation goes there "
                    "until membership no longer lists it Active");
    },
    [=](pl_inval_atom, const activation_address& a) { self->state.cache.invalidate(a); },
    [=](pl_inval_atom, const grain_id& g) { self->state.cache.invalidate(g); },
    [=](pl_inval_atom, const silo_address& s) {
      auto& st = self->state;
      for (auto& a : st.cache.entries())
        if (a.silo == s)
          st.cache.invalidate(a);
    },
    [=](pl_stop_atom) {
      auto& st = self->state;
      st.stopped = true;
      auto err = shutting_down_error(st);
      for (auto& items : st.workers) {
        for (auto& kv : items)
          for (auto& w : kv.second.waiters)
            w.rp.deliver(err);
        items.clear();
      }
      return caf::ok_atom::value;
    },
  };
}

caf::actor spawn_placement_service(caf::actor_system& sys, placement_config cfg,
                                   grain_registry_ptr registry, caf::actor centre) {
  return sys.spawn(placement_service, std::move(cfg), std::move(registry), std::move(centre));
}

} // namespace cafmesh
