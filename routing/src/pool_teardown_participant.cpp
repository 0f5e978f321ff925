#include "cafmesh/routing/pool_teardown_participant.hpp"

#include <chrono>
#include <utility>
#include <vector>

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/log.hpp"
#include "cafmesh/config/mesh_config.hpp"
#include "cafmesh/routing/routing_quiescence.hpp"

namespace cafmesh::routing {

using lifecycle::budget_expired_atom;
using lifecycle::lifecycle_observer_actor;
using lifecycle::stage;
using lifecycle::start_stage_atom;
using lifecycle::stop_stage_atom;
namespace stages = lifecycle::stages;

pool_teardown_options pool_teardown_options::from(const config::pool_section& cfg,
                                                  std::string silo_name) {
  pool_teardown_options out;
  out.silo_name = std::move(silo_name);
  out.teardown_join_ms = cfg.teardown_join_ms;
  return out;
}

namespace {

using ok_promise = caf::typed_response_promise<caf::ok_atom>;

/// The participant's full interface: the observer protocol plus its own budget timer.
using teardown_actor_type = lifecycle_observer_actor::extend<caf::reacts_to<pool_td_timer_atom>>;

enum class td_phase { idle, started, draining, done };

struct teardown_state {
  static const char* name;
  log::logger log;
  pool_teardown_options opts;
  pool_lookup lookup;
  io_pool_actor pool; ///< captured at start
  td_phase ph = td_phase::idle;
  std::vector<ok_promise> pending;
};

const char* teardown_state::name = "cafmesh.pool_teardown_participant";

using teardown_pointer = teardown_actor_type::stateful_pointer<teardown_state>;

void complete(teardown_pointer self) {
  auto& s = self->state;
  s.ph = td_phase::done;
  auto pending = std::move(s.pending);
  s.pending.clear();
  for (auto& rp : pending)
    rp.deliver(caf::ok_atom::value);
}

std::string timeout_line(teardown_pointer self) {
  return "routing I/O pool did not finish draining within "
         + render_budget(self->state.opts.teardown_join_ms);
}

teardown_actor_type::behavior_type teardown_actor(teardown_pointer self, pool_lookup lookup,
                                                  pool_teardown_options opts) {
  auto& st = self->state;
  st.log = opts.silo_name.empty() ? log::get("pool")
                                  : log::get("pool").with_context(opts.silo_name);
  st.opts = std::move(opts);
  st.lookup = std::move(lookup);
  return {
    [=](start_stage_atom, stage) -> caf::result<caf::ok_atom> {
      auto& s = self->state;
      if (s.ph != td_phase::idle)
        return caf::ok_atom::value;
      if (s.lookup)
        s.pool = s.lookup();
      s.lookup = nullptr; // never looked up again
      if (!s.pool)
        return to_error(
          fault{mesh_errc::config_invalid, "pool teardown: no routing I/O pool to capture"});
      s.ph = td_phase::started;
      return caf::ok_atom::value;
    },
    [=](stop_stage_atom, stage, bool) -> ok_promise {
      auto& s = self->state;
      auto rp = self->make_response_promise<caf::ok_atom>();
      switch (s.ph) {
        case td_phase::idle:
          s.log.error("pool teardown stopped without start");
          rp.deliver(caf::ok_atom::value);
          return rp;
        case td_phase::done: rp.deliver(caf::ok_atom::value); return rp;
        case td_phase::draining: s.pending.push_back(rp); return rp;
        case td_phase::started: break;
      }
      s.pending.push_back(rp);
      s.ph = td_phase::draining;
      s.log.info("draining routing I/O pool");
      self->request(s.pool, caf::infinite, pool_drain_atom::value)
        .then(
          [=](uint64_t residual) {
            auto& x = self->state;
            if (x.ph != td_phase::draining)
              return; // the budget already answered
            if (residual == 0)
              x.log.info("routing I/O pool joined");
            else
              x.log.error(std::to_string(residual) + " leg(s) survived the routing I/O pool drain");
            complete(self);
          },
          [=](caf::error& err) {
            auto& x = self->state;
            if (x.ph != td_phase::draining)
              return;
            x.log.error(timeout_line(self) + " (pool unreachable: " + self->system().render(err)
                        + ")");
            complete(self);
          });
      self->delayed_send(self, std::chrono::milliseconds(s.opts.teardown_join_ms),
                         pool_td_timer_atom::value);
      return rp;
    },
    [=](budget_expired_atom) {
      // Ignored: the drain is bounded by teardown_join_ms.
    },
    [=](pool_td_timer_atom) {
      auto& s = self->state;
      if (s.ph != td_phase::draining)
        return;
      s.log.error(timeout_line(self));
      complete(self);
    },
  };
}

} // namespace

lifecycle_observer_actor spawn_pool_teardown_participant(caf::actor_system& sys, pool_lookup lookup,
                                                         pool_teardown_options opts) {
  return lifecycle_observer_actor{sys.spawn(teardown_actor, std::move(lookup), std::move(opts))};
}

lifecycle_observer_actor spawn_pool_teardown_participant(caf::actor_system& sys, io_pool_actor pool,
                                                         pool_teardown_options opts) {
  return spawn_pool_teardown_participant(
    sys, [pool] { return pool; }, std::move(opts));
}

} // namespace cafmesh::routing
