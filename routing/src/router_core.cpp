#include "cafmesh/routing/router_core.hpp"

#include <utility>

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/send.hpp>

#include "cafmesh/routing/size_guard.hpp"
#include "router_core_state.hpp"

namespace cafmesh::routing {

router_core_options router_core_options::from(const config::mesh_config& cfg, silo_address silo) {
  router_core_options out;
  out.silo = std::move(silo);
  out.routing = cfg.routing;
  out.size = cfg.size;
  out.placement_timeout_ms = cfg.placement.timeout_ms;
  out.grain_response_timeout_ms = cfg.grain_call.response_timeout_ms;
  out.release_bound_ms = cfg.pool.drain_grace_ms;
  return out;
}

address default_router_address(const silo_address& silo) {
  address out;
  out.type = "router";
  out.id = silo.to_string();
  return out;
}

namespace router_core_detail {

const char* core_state::name = "cafmesh.router_core";

void log_sat(pointer self, const std::optional<saturation_event>& ev) {
  if (!ev)
    return;
  log_saturation_event(*ev, self->state.disp.snapshot(), self->state.log);
  // A report below critical waits to see whether the saturation lasts (saturation_report.hpp).
  if (auto due = self->state.sat.lasting_due(*ev))
    self->delayed_send(self, ms(std::max<int64_t>(0, *due - now_ms(self))),
                       rc_sat_lasting_atom::value);
}

ms attempt_timeout(pointer self) {
  auto& o = self->state.opts;
  return ms(o.placement_timeout_ms + o.grain_response_timeout_ms);
}

bool is_request_timeout(const caf::error& e) {
  return e == caf::sec::request_timeout;
}

namespace {

/// A co-hosted delivery from the routing service; `answer_within` > 0 for a request whose
/// requester waits that much more (docs/behaviour/routing.md#a-requests-remaining-time).
void route_co_hosted(pointer self, envelope& env, caf::timespan answer_within) {
  turn_scope turn{self};
  if (over_bound(self, env)) {
    refuse_overloaded(self, env);
    return;
  }
  auto host = leg_host_of(self, env);
  if (auto text = destination_refusal(self, env, host.path)) {
    refuse_for_destination(self, env, *text);
    return;
  }
  bool posted = false;
  if (accept(self, std::move(env), std::move(host), posted, silo_address{}, answer_within))
    ++self->state.stats.accepted_co_hosted;
}

/// One item of a routing-grain batch (`rc_grains_atom`): no error once the core accepted it
/// (its leg is queued or admitted; a routing loop's NACK went to the machinery, or it may not
/// be answered), else the refusal a lone call would get, in the same words.
caf::error take_dispatch(pointer self, dispatch_item& item, const silo_address& client) {
  auto& s = self->state;
  auto& env = item.env;
  if (s.stopping) {
    ++s.stats.refused_stopping;
    fault f{mesh_errc::silo_unavailable, "silo " + s.silo_name + " is leaving; route elsewhere"};
    f.silo = s.opts.silo;
    return to_error(f);
  }
  if (over_bound(self, env)) {
    ++s.stats.refused_overloaded;
    fault f{mesh_errc::overloaded, overload_text(self)};
    f.retry_after_ms = static_cast<uint32_t>(s.opts.routing.overload_retry_after_ms);
    f.silo = s.opts.silo;
    return to_error(f);
  }
  auto host = leg_host_of(self, env);
  if (auto text = destination_refusal(self, env, host.path)) {
    ++s.stats.refused_destination;
    fault f{mesh_errc::overloaded, *text};
    f.retry_after_ms = static_cast<uint32_t>(s.opts.routing.overload_retry_after_ms);
    f.silo = s.opts.silo;
    return to_error(f);
  }
  bool posted = false;
  accept(self, std::move(env), std::move(host), posted, client, item.answer_within);
  return caf::none;
}

impl_actor::behavior_type router_core(pointer self, router_core_options opts) {
  auto& s = self->state;
  if (opts.self_address.empty())
    opts.self_address = default_router_address(opts.silo);
  s.silo_name = opts.silo.to_string();
  s.log = log::get("router_core").with_context(s.silo_name);
  s.policy = router_policy(opts.routing);
  s.sat = saturation_monitor(opts.routing);
  // The legs keep their own times: the monitor asks for the oldest when it needs ages (its
  // events, its reviews while latched, `rc_stats`) and the core walks its legs.
  s.sat.oldest_source([st = &s] {
    oldest_times out;
    st->legs.for_each([&](const leg_rec& leg) {
      if (!leg.sat_link.counted)
        return;
      auto& x = leg.sat_link.phase == leg_phase::queued ? out.queued_since_ms
                                                        : out.dispatched_since_ms;
      auto since = leg.sat_link.phase == leg_phase::queued ? leg.accepted_ms : leg.started_ms();
      if (since < 0)
        return;
      if (!x || since < *x)
        x = since;
    });
    return out;
  });
  s.refusals = refusal_log(opts.routing);
  s.stream_routed.insert(opts.routing.stream_routed_address_types.begin(),
                         opts.routing.stream_routed_address_types.end());
  s.client_hosted.insert(opts.routing.client_hosted_address_types.begin(),
                         opts.routing.client_hosted_address_types.end());
  s.opts = std::move(opts);
  // The core grants its own start permits until the pool's drain takes its legs over
  // (docs/behaviour/quiescence.md#admission-inside-the-router-core); without a pool it has
  // nobody else to ask.
  s.admits_itself = s.opts.own_start_permits || !s.opts.pool;
  // A catalog the core calls directly, or the message centre it sends remote calls to,
  // went down (its silo's teardown): the calls it held fail as a request to an actor that
  // is gone does, and its routes go.
  self->set_down_handler([=](caf::down_msg& dm) {
    turn_scope turn{self};
    if (self->state.opts.centre && dm.source == self->state.opts.centre.address())
      centre_down(self);
    else
      catalog_down(self, dm.source);
  });
  if (s.opts.pool && s.opts.own_start_permits)
    self->send(s.opts.pool, routing::pool_attach_atom::value, owner_of(self));
  return {
    // -- public protocol --
    [=](rc_route_atom, envelope& env) { route_co_hosted(self, env, caf::timespan{0}); },
    [=](rc_route_atom, envelope& env, caf::timespan answer_within) {
      route_co_hosted(self, env, answer_within);
    },
    [=](rc_grains_atom, std::vector<dispatch_item>& items,
        const silo_address& client) -> dispatch_verdicts {
      turn_scope turn{self};
      dispatch_verdicts out;
      out.reserve(items.size());
      for (auto& item : items)
        out.push_back(take_dispatch(self, item, client));
      return out;
    },
    [=](lifecycle::host_stopping_atom) -> caf::ok_atom {
      turn_scope turn{self};
      auto& s = self->state;
      if (!s.stopping) {
        s.stopping = true;
        // Grain attempts take placement's way from now on (its leaving reports).
        drop_local_routes(self);
        drop_remote_routes(self, silo_address{});
        // From now on the participant reads the gauge: every turn publishes its delta.
        s.acct.set_eager();
        s.log.info("router core: stopping signal received; " + std::to_string(s.sat.in_flight())
                   + " leg(s) in flight continue, grain-path deliveries are refused");
      }
      return caf::ok_atom::value;
    },
    [=](routing::q_end_legs_atom, std::string& why) -> caf::result<std::vector<std::string>> {
      turn_scope turn{self};
      auto& s = self->state;
      auto residual = end_unlanded_legs(self, why);
      if (!s.nacks.empty())
        arm_release_bound(self);
      return residual;
    },
    [=](routing::q_nacks_out_atom) -> caf::result<caf::ok_atom> {
      turn_scope turn{self};
      auto& s = self->state;
      if (s.nacks.empty())
        return caf::ok_atom::value;
      auto rp = self->make_response_promise<caf::ok_atom>();
      s.release_waiters.push_back(rp);
      arm_release_bound(self);
      return rp;
    },
    [=](rc_release_atom, uint64_t gen) {
      turn_scope turn{self};
      if (gen != 0 && gen == self->state.release_gen)
        release_bound_passed(self);
    },
    [=](rc_locals_atom, local_route_port_actor& port) {
      turn_scope turn{self};
      self->state.opts.local_routes = std::move(port);
    },
    [=](rc_sync_atom) {
      turn_scope turn{self};
      return caf::ok_atom::value;
    },
    [=](routing::q_oldest_atom, uint64_t n) -> routing::quiescence_sample {
      // The gauge names the core's units (docs/behaviour/quiescence.md#the-router-cores-own-count).
      // A turn like any other: one that finds the mailbox empty publishes the count.
      turn_scope turn{self};
      return oldest_units(self, n);
    },
    [=](rc_drained_atom, std::string& destination,
        const std::string& key) -> caf::result<caf::ok_atom> {
      turn_scope turn{self};
      auto& s = self->state;
      auto channel = make_channel(std::move(destination), key);
      if (!s.disp.head_of(channel))
        return caf::ok_atom::value;
      auto rp = self->make_response_promise<caf::ok_atom>();
      s.drain_waiters[channel].push_back(rp);
      return rp;
    },
    [=](rc_stats_atom) -> router_core_stats {
      turn_scope turn{self};
      auto& s = self->state;
      auto out = s.stats;
      out.in_flight = s.sat.in_flight();
      out.nacks_alive = s.nacks.size();
      out.stopping = s.stopping;
      out.saturation_latched = s.sat.latched();
      out.saturation_reports = s.sat.reports();
      auto ages = s.sat.ages(now_ms(self));
      out.oldest_dispatched_age_ms = ages.oldest_dispatched_age_ms ? *ages.oldest_dispatched_age_ms
                                                                   : -1;
      out.oldest_queued_age_ms = ages.oldest_queued_age_ms ? *ages.oldest_queued_age_ms : -1;
      auto snap = s.disp.snapshot();
      out.channels = snap.channels;
      out.destinations = snap.destinations;
      out.deepest = snap.deepest;
      out.deepest_channel = snap.deepest_channel;
      out.max_dispatch_depth = s.disp.max_depth();
      out.in_flight_ids.reserve(s.legs.size());
      for (auto& entry : legs_in_order(s)) {
        auto& leg = *entry.second;
        out.in_flight_ids.push_back(leg.env.id);
        if (!leg.started && !leg.finished)
          ++out.queued;
      }
      return out;
    },
    // -- internal --
    [=](rc_flush_atom) {
      turn_scope turn{self};
      auto& s = self->state;
      s.flush_armed = false;
      run_work(self);
      flush_direct_calls(self, true);
      publish_delta(self);
    },
    [=](rc_forget_atom, const std::string& host_path) {
      turn_scope turn{self};
      self->state.resolved.forget(host_path);
    },
    [=](rc_local_atom, const grain_id& g, activation_tag tag, caf::actor& catalog) {
      turn_scope turn{self};
      auto& s = self->state;
      if (s.stopping || (g.type != "messagehub" && g.type != "podhub") || !catalog)
        return;
      if (s.local_routes.size() >= 65536)
        drop_local_routes(self); // bounded as the resolution cache is
      if (s.watched_catalogs.insert(catalog.address()).second)
        self->monitor(catalog);
      s.local_routes[remote_route_key(g)] = local_route{std::move(catalog), tag};
    },
    [=](rc_local_atom, const grain_id& g, activation_tag tag) {
      turn_scope turn{self};
      auto& s = self->state;
      auto i = s.local_routes.find(remote_route_key(g));
      if (i != s.local_routes.end() && i->second.tag == tag)
        s.local_routes.erase(i);
    },
    [=](mb_snapshot_atom, const membership_snapshot& v) {
      turn_scope turn{self};
      auto& s = self->state;
      if (v.version != s.membership_version) {
        s.membership_version = v.version;
        s.resolved.clear();
        // A route names an activation of this silo: only this silo's own change ends it.
        if (!v.is_active(s.opts.silo)) {
          drop_local_routes(self);
          drop_remote_routes(self, silo_address{});
        }
      }
      // A remote route names an activation of its silo: it ends when that silo is no longer
      // Active (leaving, Dead, departed).
      if (!s.remote_routes.empty())
        drop_inactive_remote_routes(self, v);
    },
    [=](ct_results_atom, std::vector<ct_result_item>& results) {
      turn_scope turn{self};
      for (auto& r : results) {
        if (r.failure) {
          port_call_fault(self, r.id, r.failure);
        } else if (r.reply.match_elements<envelope>()) {
          port_call_result(self, r.id, r.reply.get_mutable_as<envelope>(0));
        } else {
          auto e = to_error(fault{mesh_errc::application,
                                  "a node hub grain answered something other than an envelope"});
          port_call_fault(self, r.id, e);
        }
      }
    },
    [=](routing::pool_handover_atom) -> std::vector<uint64_t> {
      // The pool's drain takes the core's legs over
      // (docs/behaviour/quiescence.md#admission-inside-the-router-core).
      turn_scope turn{self};
      auto& s = self->state;
      run_work(self);
      std::vector<uint64_t> ids;
      if (!s.admits_itself)
        return ids;
      s.admits_itself = false;
      for (auto [id, leg] : legs_in_order(s))
        if (leg->pooled)
          ids.push_back(id);
      for (auto& kv : s.nacks)
        if (kv.second.pooled)
          ids.push_back(kv.first);
      return ids;
    },
    [=](rc_deadline_atom, int64_t due_ms) {
      turn_scope turn{self};
      expire_deadlines(self, due_ms);
    },
    [=](gp_result_atom, uint64_t call, envelope& result) {
      turn_scope turn{self};
      port_call_result(self, call, result);
    },
    [=](gp_result_atom, uint64_t call, caf::error& failure) {
      turn_scope turn{self};
      port_call_fault(self, call, failure);
    },
    [=](rc_sat_lasting_atom) {
      turn_scope turn{self};
      log_sat(self, self->state.sat.lasting(now_ms(self)));
    },
    [=](rc_timer_atom, uint64_t id, uint64_t tok) {
      turn_scope turn{self};
      if (auto leg = find_leg(self, id, tok)) {
        unpark(self, *leg);
        leg_attempt(self, leg->id);
        return;
      }
      if (auto job = find_nack(self, id, tok))
        if (job->at == rung::node_hub)
          nack_node_attempt(self, id);
    },
    // -- pool owner protocol (docs/behaviour/quiescence.md#the-routing-io-pool) --
    [=](routing::pool_admitted_atom, uint64_t id) {
      turn_scope turn{self};
      on_admitted(self, id);
    },
    [=](routing::pool_refused_atom, uint64_t id, caf::error& err) {
      turn_scope turn{self};
      auto& s = self->state;
      auto* i = s.legs.find(id);
      if (i != nullptr) {
        if (!settle_latch(self, id))
          return;
        auto& leg = *i;
        auto f = to_fault(err);
        s.log.info(leg_name(id) + " (" + leg_label(leg) + ") refused by the pool: " + f.render());
        if (!leg.finished && !is_failed_and_nacked(leg.env)) {
          if (s.stopping) {
            // The silo stops and the draining pool will not run it: one NACK, started
            // without a permit, before the delivery was attempted.
            if (stop_nack(self, leg, true) != 0)
              arm_release_bound(self);
          } else {
            leg.slot_owned = false;
            via_entry_client(self,
                             post_nack(self, routed_env(self, leg), verdict::failed,
                                       before_attempt_text(leg, f.render()), false, caf::none, id),
                             leg);
          }
        }
        leg_terminal(self, id, leg_outcome::refused);
        return;
      }
      auto j = s.nacks.find(id);
      if (j != s.nacks.end()) {
        ++s.stats.nacks_pool_refused;
        s.log.debug("NACK to " + j->second.sender + " (delivery " + j->second.delivery_id
                    + ") not sent: " + to_fault(err).render());
        gauge_release(self);
        s.nacks.erase(j);
      }
    },
    [=](routing::pool_cancel_atom, uint64_t id) {
      turn_scope turn{self};
      auto& s = self->state;
      if (s.legs.count(id) != 0) {
        if (settle_latch(self, id)) {
          auto& leg = s.legs.at(id);
          uint64_t nack = 0;
          // In a silo stop (the stopping signal came first) the leg gets its one NACK; a
          // drain outside a stop abandons it silently as before.
          if (s.stopping && !leg.finished && !is_failed_and_nacked(leg.env)) {
            nack = stop_nack(self, leg, true);
            if (nack != 0) {
              s.nacks.at(nack).pool_leg_id = id;
              arm_release_bound(self);
            }
          }
          s.log.info(leg_name(id) + " (" + leg_label(leg) + ") abandoned by the pool drain; "
                     + (nack != 0 ? "NACKed" : "no NACK"));
          leg_terminal(self, id, leg_outcome::abandoned, nack == 0);
        }
        return;
      }
      if (s.nacks.count(id) != 0) {
        // Still on its ladder (a local route may yet take it); if it has not left when the
        // release bound passes, that bound's error line names it and drops it.
        s.log.info("NACK to " + s.nacks.at(id).sender + " (delivery " + s.nacks.at(id).delivery_id
                   + ") cancelled by the pool drain");
        arm_release_bound(self);
      }
    },
    [=](routing::pool_down_atom, uint64_t id, caf::error& reason) {
      turn_scope turn{self};
      auto& s = self->state;
      auto* i = s.legs.find(id);
      if (i != nullptr) {
        if (!settle_latch(self, id))
          return;
        auto& leg = *i;
        s.log.error(leg_name(id) + " (" + leg_label(leg)
                    + ") crashed: " + self->system().render(reason));
        if (!leg.finished && !is_failed_and_nacked(leg.env)) {
          leg.slot_owned = false;
          via_entry_client(
            self,
            post_nack(self, routed_env(self, leg), verdict::failed,
                      before_attempt_text(leg, "leg crashed: " + self->system().render(reason)),
                      false, caf::none, id),
            leg);
        }
        leg_terminal(self, id, leg_outcome::crashed);
        return;
      }
      if (s.nacks.count(id) != 0)
        nack_done(self, id);
    },
  };
}

} // namespace

} // namespace router_core_detail

router_core_actor spawn_router_core(caf::actor_system& sys, router_core_options opts) {
  return router_core_actor{sys.spawn(router_core_detail::router_core, std::move(opts))};
}

} // namespace cafmesh::routing
