#include "cafmesh/lifecycle/silo_components.hpp"

#include "cafmesh/actors/whole_ms.hpp"
#include "cafmesh/lifecycle/gateway.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <utility>

#include <caf/all.hpp>

#include "cafmesh/actors/atoms.hpp"
#include "cafmesh/actors/catalog.hpp"
#include "cafmesh/actors/directory.hpp"
#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/log.hpp"
#include "cafmesh/actors/membership.hpp"
#include "cafmesh/actors/message_center.hpp"
#include "cafmesh/actors/placement.hpp"
#include "cafmesh/actors/placement_atoms.hpp"
#include "cafmesh/actors/request_any.hpp"
#include "cafmesh/actors/lifecycle_atoms.hpp"
#include "cafmesh/routing/io_pool.hpp"
#include "cafmesh/routing/pool_teardown_participant.hpp"
#include "cafmesh/lifecycle/quiescence_participant.hpp"
#include "cafmesh/routing/routing_quiescence.hpp"
#include "cafmesh/lifecycle/silo_lifecycle.hpp"
#include "cafmesh/actors/stage.hpp"
#include "cafmesh/actors/stopping_recipient.hpp"
#include "cafmesh/routing/application_hub.hpp"
#include "cafmesh/routing/classify.hpp"
#include "cafmesh/routing/router_core.hpp"
#include "hosting_steps.hpp"
#include "cafmesh/routing/routing_service.hpp"

namespace cafmesh::lifecycle {

using namespace cafmesh::routing;

namespace {

using lifecycle::lifecycle_observer_actor;
using ms = std::chrono::milliseconds;
namespace ev = silo_event_text;

// -- generic stage observer ----------------------------------------------------------------

using observer_ptr = caf::event_based_actor*;
using ok_promise = caf::response_promise;
using stage_fn = std::function<void(observer_ptr, bool graceful, ok_promise)>;

/// An observer (speaking `lifecycle_observer_actor`) whose start and stop run `on_start` /
/// `on_stop`; each answers its promise exactly once. `budget_expired` is ignored: every
/// action bounds its own work.
caf::behavior stage_observer(observer_ptr self, stage_fn on_start, stage_fn on_stop) {
  return {
    [=](lifecycle::start_stage_atom, lifecycle::stage) {
      auto rp = self->make_response_promise();
      if (on_start)
        on_start(self, true, rp);
      else
        rp.deliver(caf::ok_atom::value);
      return rp;
    },
    [=](lifecycle::stop_stage_atom, lifecycle::stage, bool graceful) {
      auto rp = self->make_response_promise();
      if (on_stop)
        on_stop(self, graceful, rp);
      else
        rp.deliver(caf::ok_atom::value);
      return rp;
    },
    [=](lifecycle::budget_expired_atom) {
      // nop
    },
  };
}

/// Sends `(xs...)` to `to` (any handle) as a request bounded by `timeout_ms` (0: none); then
/// `done(err)` (err empty = ok), in `self`'s turn.
template <class Handle, class... Ts>
void call(observer_ptr self, const Handle& to, int64_t timeout_ms,
          std::function<void(caf::error)> done, Ts... xs) {
  request_any(
    self, caf::actor_cast<caf::actor>(to), timeout_ms, caf::make_message(std::move(xs)...),
    [=](caf::message) { done(caf::error{}); }, [=](caf::error e) { done(std::move(e)); });
}

/// `(lifecycle::host_actor)` once, then the agent's `(mb_declared_atom, version)`: the
/// cluster declared this silo Dead while it runs; the message centre blocks application
/// messages at once and the host halts non-gracefully (a halt already under way is joined,
/// its flag ignored). Blocking first matters after a partition heals: the calls a peer sent
/// before the cut can still arrive (TCP retransmits them) while the host's stop has not yet
/// reached its own blocking stage, and a turn they started here would run beside the
/// activation that replaced this one (SPEC C6; docs/behaviour/membership.md#dead-peers).
caf::behavior death_watch(caf::event_based_actor* self, silo_address me, caf::actor centre) {
  auto host = std::make_shared<lifecycle::host_actor>();
  return {
    [=](const lifecycle::host_actor& h) { *host = h; },
    [=](mb_declared_atom, uint64_t version) {
      log::get("membership")
        .with_context(me.to_string())
        .warning("membership v" + std::to_string(version)
                 + " shows this silo Dead: stopping non-gracefully");
      if (centre)
        caf::anon_send(centre, mc_block_atom::value, true);
      if (*host)
        caf::anon_send(*host, lifecycle::host_halt_atom::value, false);
    },
  };
}

} // namespace

// -- silo ------------------------------------------------------------------------------------

std::vector<caf::actor> silo_components::all() const {
  std::vector<caf::actor> xs{centre,
                             caf::actor_cast<caf::actor>(agent),
                             caf::actor_cast<caf::actor>(partition),
                             placement,
                             catalog,
                             routing,
                             caf::actor_cast<caf::actor>(claimer),
                             gateway,
                             death_watch,
                             caf::actor_cast<caf::actor>(grains),
                             caf::actor_cast<caf::actor>(core),
                             caf::actor_cast<caf::actor>(streams),
                             caf::actor_cast<caf::actor>(pool),
                             caf::actor_cast<caf::actor>(gauge)};
  for (auto& o : observers)
    xs.push_back(caf::actor_cast<caf::actor>(o));
  xs.push_back(caf::actor_cast<caf::actor>(subject));
  xs.push_back(caf::actor_cast<caf::actor>(host));
  return xs;
}

void silo_components::stop_all() const {
  for (auto& a : all())
    if (a)
      caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
}

silo_components spawn_silo(caf::actor_system& sys, silo_options opts) {
  silo_components s;
  s.addr = opts.self;
  const auto name = s.addr.to_string();
  const auto& cfg = opts.cfg;
  auto lg = std::make_shared<log::logger>(log::get("silo").with_context(name));

  // -- runtime services
  s.registry = std::make_shared<grain_registry>();
  s.slots = std::make_shared<silo_routing_slots>();
  s.slots->silo = s.addr;
  register_routing_grains(*s.registry, s.slots);
  if (opts.grains)
    opts.grains(*s.registry);
  s.centre = opts.centre ? opts.centre : spawn_message_center(sys, s.addr, opts.link);
  s.agent = spawn_membership_agent(sys, s.addr, opts.oracle, default_carry_bound,
                                   hosting::join_bound_of(cfg));
  caf::anon_send(s.agent, mb_subscribe_atom::value, s.centre);
  s.partition = spawn_directory_partition(sys, s.addr, s.centre, s.agent);
  s.placement = spawn_placement_service(sys, make_placement_config(cfg, s.addr), s.registry,
                                        s.centre);
  auto cc = make_catalog_config(cfg, s.addr);
  cc.idle_deactivation_ms = whole_ms(opts.idle_deactivation);
  s.catalog = spawn_catalog(sys, cc, s.registry, s.centre, s.placement);
  s.gauge = routing::spawn_routing_quiescence(sys, {name});
  s.pool = routing::spawn_io_pool(sys, routing::io_pool_options::from(cfg.pool, name));
  s.streams = spawn_stream_transport(
    sys, {s.addr, s.centre, cfg.routing.stream_transport_timeout_ms, {}});
  caf::anon_send(s.agent, mb_subscribe_atom::value, caf::actor_cast<caf::actor>(s.streams));
  auto ro = routing_service_options::from(cfg);
  ro.streams = s.streams;
  ro.role = config::process_role::silo_host;
  ro.process_name = name;
  s.routing = caf::actor_cast<caf::actor>(spawn_routing_service(sys, ro));
  // The routing service ends the held requests of its hubs whose landing silo departs
  // abruptly (docs/behaviour/routing.md#requests-whose-silo-departs): it learns departures
  // from the centre and graceful leaves from membership.
  caf::anon_send(s.centre, mc_watch_atom::value, s.routing);
  caf::anon_send(s.agent, mb_subscribe_atom::value, s.routing);
  s.grains = spawn_grain_delivery(sys, s.placement, s.addr);
  auto co = router_core_options::from(cfg, s.addr);
  co.gauge = s.gauge;
  co.pool = s.pool;
  co.registry = opts.registry;
  co.grains = opts.wrap_grain_port ? opts.wrap_grain_port(s.grains) : s.grains;
  co.per_channel_fifo = opts.per_channel_fifo;
  co.resolver = opts.resolver;
  co.failure_observer = opts.failure_observer;
  co.local_routes = caf::actor_cast<local_route_port_actor>(s.routing);
  co.streams = caf::actor_cast<stream_port_actor>(s.streams);
  co.centre = s.centre;
  s.core = spawn_router_core(sys, co);
  // A new membership version drops the core's cached resolutions
  // (docs/behaviour/routing.md#cacheable-resolutions).
  caf::anon_send(s.agent, mb_subscribe_atom::value, caf::actor_cast<caf::actor>(s.core));
  s.slots->core = s.core;
  s.slots->routing = s.routing;
  s.slots->hubs = opts.hubs;
  s.slots->centre = s.centre;
  s.claimer = spawn_pod_hub_claimer(sys, s.placement, s.routing, cfg.attach, name, s.slots);
  auto go = gateway_options::from(cfg, s.addr);
  go.placement = s.placement;
  go.centre = s.centre;
  go.streams = s.streams;
  go.core = s.core;
  s.gateway = spawn_gateway(sys, std::move(go));
  s.slots->gateway = s.gateway;
  // What the message centre serves as component `gateway` (the gateway part unless a test
  // bed interposes).
  auto served_gateway = opts.wrap_gateway ? opts.wrap_gateway(s.gateway) : s.gateway;

  // -- stage observers (docs/behaviour/lifecycle.md#stages)
  auto centre = s.centre;
  auto agent = s.agent;
  auto partition = s.partition;
  auto placement = s.placement;
  auto catalog = s.catalog;
  auto claimer = s.claimer;
  auto gateway = s.gateway;
  auto routing = s.routing;
  auto core = s.core;
  auto streams = s.streams;
  auto registry = s.registry;
  const bool is_gateway = opts.gateway;
  // docs/behaviour/routing.md#unserved-addresses
  auto hub_table = opts.hubs_is_table ? caf::actor_cast<caf::actor>(opts.hubs) : caf::actor{};
  if (hub_table)
    caf::anon_send(agent, mb_subscribe_atom::value, hub_table);
  const bool quiescence_wired = opts.subscribe_quiescence;
  const auto grace_ms = cfg.membership.shutdown_grace_ms;
  const auto dead_ms = cfg.membership.dead_publish_ms;
  // Every membership step of a stop is bounded, so that a silo whose oracle is gone (its
  // host process stopped first, or cannot be reached) still stops: ShuttingDown and
  // Stopping within the grace window each, Dead within `dead_ms`, or within the grace
  // window once an earlier step of this stop found the oracle silent. An expired step is
  // logged at warning and skipped.
  auto oracle_silent = std::make_shared<bool>(false);
  auto timed_out = [](const caf::error& e) {
    return e == caf::sec::request_timeout || contains_code(to_fault(e), mesh_errc::response_timeout);
  };
  auto spawn_obs = [&](stage_fn on_start, stage_fn on_stop) {
    return caf::actor_cast<lifecycle_observer_actor>(
      sys.spawn(stage_observer, std::move(on_start), std::move(on_stop)));
  };

  // Active 20000: gateway.
  auto active_obs = spawn_obs(
    [=](observer_ptr self, bool, ok_promise rp) mutable {
      call(self, gateway, 0, [=](caf::error e) mutable {
        if (e) {
          rp.deliver(std::move(e));
          return;
        }
        lg->info(ev::gateway_open);
        rp.deliver(caf::ok_atom::value);
      }, gw_open_atom::value);
    },
    [=](observer_ptr self, bool graceful, ok_promise rp) mutable {
      request_any(
        self, gateway, 0, caf::make_message(gw_stop_send_atom::value, graceful),
        [=](caf::message m) mutable {
          size_t n = 0;
          if (m.match_elements<size_t>())
            n = m.get_as<size_t>(0);
          lg->info(std::string{ev::stop_send} + " " + std::to_string(n)
                   + " pure client(s)");
          rp.deliver(caf::ok_atom::value);
        },
        [=](caf::error e) mutable {
          lg->warning("gateway stop-send failed: " + to_fault(e).text);
          rp.deliver(caf::ok_atom::value);
        });
    });

  // BecomeActive 19999: membership.
  auto become_obs = spawn_obs(
    [=](observer_ptr self, bool, ok_promise rp) mutable {
      call(self, agent, 0, [=](caf::error e) mutable {
        if (e) {
          lg->error("membership: publishing Active failed: " + to_fault(e).text);
          rp.deliver(std::move(e));
          return;
        }
        lg->info(ev::active_published);
        rp.deliver(caf::ok_atom::value);
      }, mb_status_atom::value, silo_status::active);
    },
    [=](observer_ptr self, bool graceful, ok_promise rp) mutable {
      auto publish_stopping = [=]() mutable {
        call(self, agent, grace_ms, [=](caf::error e) mutable {
          if (e && timed_out(e)) {
            *oracle_silent = true;
            lg->warning("membership: Stopping not published within " + std::to_string(grace_ms)
                        + " ms (the membership oracle does not answer); skipped");
          } else if (e) {
            lg->warning("membership: publishing Stopping failed: " + to_fault(e).text);
          } else {
            lg->info(ev::stopping_published);
          }
          rp.deliver(caf::ok_atom::value);
        }, mb_status_atom::value, silo_status::stopping);
      };
      if (!graceful) {
        publish_stopping();
        return;
      }
      call(self, agent, grace_ms, [=](caf::error e) mutable {
        if (!e) {
          lg->info(ev::shutting_down_published);
          rp.deliver(caf::ok_atom::value);
          return;
        }
        if (timed_out(e)) {
          *oracle_silent = true;
          lg->warning("membership: ShuttingDown not published within "
                      + std::to_string(grace_ms) + " ms (" + to_fault(e).text
                      + "); publishing Stopping");
        } else {
          lg->warning("membership: ShuttingDown not published (" + to_fault(e).text
                      + "); publishing Stopping");
        }
        publish_stopping();
      }, mb_status_atom::value, silo_status::shutting_down);
    });

  // GrainDeactivation 19998: catalog, then the gateway stops accepting client messages.
  auto deact_obs = spawn_obs(nullptr, [=](observer_ptr self, bool, ok_promise rp) mutable {
    call(self, catalog, 0, [=](caf::error e) mutable {
      if (e)
        lg->warning("catalog deactivation failed: " + to_fault(e).text);
      else
        lg->info(ev::all_deactivated);
      call(self, gateway, 0, [=](caf::error) mutable {
        lg->info(ev::gateway_closed);
        rp.deliver(caf::ok_atom::value);
      }, gw_close_atom::value);
    }, ct_deact_all_atom::value);
  });

  // ApplicationServices 10000: router core and routing service.
  auto app_obs = spawn_obs(
    [=](observer_ptr, bool, ok_promise rp) mutable {
      caf::anon_send(routing, rs_core_atom::value, core);
      caf::anon_send(streams, st_start_atom::value);
      lg->info(ev::routing_ready);
      rp.deliver(caf::ok_atom::value);
    },
    [=](observer_ptr, bool, ok_promise rp) mutable {
      lg->info(ev::routing_stays_up);
      rp.deliver(caf::ok_atom::value);
    });

  // RuntimeServices 4000: directory partition, catalog, Joining; stop: block, partition.
  auto runtime_obs = spawn_obs(
    [=](observer_ptr self, bool, ok_promise rp) mutable {
      for (auto& sub : {catalog, caf::actor_cast<caf::actor>(claimer)})
        caf::anon_send(agent, mb_subscribe_atom::value, sub);
      caf::anon_send(centre, mc_register_atom::value, component::catalog, catalog);
      caf::anon_send(centre, mc_register_atom::value, component::activation, catalog);
      // Calls to this silo's activations go from placement to the catalog directly.
      caf::anon_send(placement, pl_catalog_atom::value, catalog);
      lg->info(ev::runtime_started);
      auto join = [=](std::vector<grain_type_info> manifest) mutable {
        call(self, agent, 0, [=](caf::error e) mutable {
          if (e) {
            lg->error("joining the cluster failed: " + to_fault(e).render());
            rp.deliver(std::move(e));
            return;
          }
          lg->info(ev::joining_published);
          rp.deliver(caf::ok_atom::value);
        }, mb_join_atom::value, std::move(manifest), is_gateway);
      };
      if (!hub_table) {
        join(registry->manifest());
        return;
      }
      // The row also says which hub patterns this silo serves
      // (docs/behaviour/routing.md#unserved-addresses).
      request_any(
        self, hub_table, 0, caf::make_message(routing::ht_patterns_atom::value),
        [=](caf::message m) mutable {
          auto manifest = registry->manifest();
          if (m.match_elements<std::vector<std::string>>())
            for (auto& e : routing::hub_pattern_manifest(m.get_as<std::vector<std::string>>(0)))
              manifest.push_back(std::move(e));
          join(std::move(manifest));
        },
        [=](caf::error) mutable { join(registry->manifest()); });
    },
    [=](observer_ptr self, bool, ok_promise rp) mutable {
      call(self, centre, 0, [=](caf::error e) mutable {
        if (e)
          lg->warning("message centre block failed: " + to_fault(e).text);
        else
          lg->info(ev::messages_blocked);
        call(self, centre, 0, [=](caf::error) mutable {
          self->send_exit(partition, caf::exit_reason::user_shutdown);
          lg->info(ev::directory_stopped);
          rp.deliver(caf::ok_atom::value);
        }, mc_unregister_atom::value, component::directory);
      }, mc_block_atom::value, true);
    });

  // 2001: placement; stop: placement stops, then Dead (bounded).
  auto placement_obs = spawn_obs(
    [=](observer_ptr, bool, ok_promise rp) mutable {
      caf::anon_send(agent, mb_subscribe_atom::value, placement);
      lg->info(ev::placement_started);
      rp.deliver(caf::ok_atom::value);
    },
    [=](observer_ptr self, bool, ok_promise rp) mutable {
      call(self, placement, 0, [=](caf::error e) mutable {
        if (e)
          lg->warning("placement stop failed: " + to_fault(e).text);
        else
          lg->info(ev::placement_stopped);
        auto bound_ms = *oracle_silent ? std::min(dead_ms, grace_ms) : dead_ms;
        call(self, agent, bound_ms, [=](caf::error e2) mutable {
          if (e2 && timed_out(e2))
            lg->warning("membership: Dead not published within " + std::to_string(bound_ms)
                        + " ms: " + to_fault(e2).text + "; skipped");
          else if (e2)
            lg->warning("membership: Dead not published: " + to_fault(e2).text + "; skipped");
          else
            lg->info(ev::dead_published);
          rp.deliver(caf::ok_atom::value);
        }, mb_status_atom::value, silo_status::dead);
      }, pl_stop_atom::value);
    });

  // RuntimeInitialize 2000: message centre. Its start is the lowest silo stage after First,
  // so the standard-wiring check (docs/behaviour/quiescence.md#the-participant-at-stage-active)
  // fails the start before any service started.
  auto centre_obs = spawn_obs(
    [=](observer_ptr self, bool, ok_promise rp) mutable {
      if (!quiescence_wired) {
        auto f = fault{mesh_errc::config_invalid,
                       "silo " + name
                         + ": the routing quiescence participant is not subscribed at stage"
                           " Active (docs/behaviour/quiescence.md#the-participant-at-stage-active)"};
        lg->error(f.text);
        rp.deliver(to_error(f));
        return;
      }
      call(self, centre, 0, [=](caf::error e) mutable {
        if (e) {
          rp.deliver(std::move(e));
          return;
        }
        lg->info(ev::centre_started);
        rp.deliver(caf::ok_atom::value);
      }, mc_register_atom::value, component::gateway, served_gateway);
    },
    [=](observer_ptr self, bool, ok_promise rp) mutable {
      self->send_exit(centre, caf::exit_reason::user_shutdown);
      lg->info(ev::centre_stopped);
      rp.deliver(caf::ok_atom::value);
    });

  auto qopts = lifecycle::quiescence_participant_options::from(cfg.lifecycle, name);
  qopts.on_hold_ended = opts.on_quiescence_hold;
  s.quiescence = lifecycle::spawn_quiescence_participant(
    sys, s.gauge, std::move(qopts), caf::actor_cast<routing::leg_release_actor>(s.core));
  s.pool_teardown = routing::spawn_pool_teardown_participant(
    sys, s.pool, routing::pool_teardown_options::from(cfg.pool, name));

  // -- lifecycle subject and subscriptions
  lifecycle::silo_lifecycle_options lo;
  lo.silo_name = name;
  lo.slow_observer_log = std::chrono::milliseconds(cfg.lifecycle.slow_observer_log_ms);
  s.subject = lifecycle::spawn_silo_lifecycle(sys, lo);
  namespace st = lifecycle::stages;
  std::vector<std::tuple<lifecycle::stage, std::string, lifecycle_observer_actor>> subs{
    {st::active, "gateway", active_obs},
    {st::become_active, "membership", become_obs},
    {st::grain_deactivation, "catalog", deact_obs},
    {st::application_services, "routing", app_obs},
    {st::runtime_services, "runtime-services", runtime_obs},
    {st::runtime_initialize_plus_1, "placement", placement_obs},
    {st::runtime_initialize, "message-centre", centre_obs},
    {st::first, "pool-teardown", s.pool_teardown},
  };
  if (opts.subscribe_quiescence)
    subs.emplace(subs.begin() + 1, st::active, "routing-quiescence", s.quiescence);
  for (auto& [stg, nm, obs] : subs) {
    caf::anon_send(s.subject, lifecycle::subscribe_atom::value, stg, nm, obs);
    s.observers.push_back(obs);
  }
  if (!opts.subscribe_quiescence)
    s.observers.push_back(s.quiescence);

  s.death_watch = sys.spawn(death_watch, s.addr, s.centre);
  caf::anon_send(s.agent, mb_declared_atom::value, s.death_watch);

  // -- host (docs/behaviour/lifecycle.md#the-host)
  lifecycle::host_options ho;
  ho.silo_name = name;
  ho.subject = s.subject;
  ho.recipients = {caf::actor_cast<lifecycle::stopping_recipient_actor>(s.routing),
                   caf::actor_cast<lifecycle::stopping_recipient_actor>(s.core),
                   caf::actor_cast<lifecycle::stopping_recipient_actor>(s.claimer)};
  for (auto& r : opts.stopping_recipients)
    ho.recipients.push_back(r);
  ho.teardown = opts.teardown;
  ho.registry = opts.registry;
  ho.budgets = cfg.host;
  for (auto& a : s.all())
    if (a && a != caf::actor_cast<caf::actor>(s.subject) && a != caf::actor_cast<caf::actor>(s.host))
      ho.runtime_services.push_back(a);
  s.host = lifecycle::spawn_host(sys, std::move(ho));
  caf::anon_send(s.death_watch, s.host);
  return s;
}

} // namespace cafmesh::lifecycle
