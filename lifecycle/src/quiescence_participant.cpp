#include "cafmesh/lifecycle/quiescence_participant.hpp"

#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "cafmesh/actors/log.hpp"
#include "cafmesh/actors/whole_ms.hpp"
#include "cafmesh/config/mesh_config.hpp"
#include "cafmesh/routing/leg_release.hpp"
#include "cafmesh/routing/routing_quiescence.hpp"

namespace cafmesh::lifecycle {

using namespace cafmesh::routing;

quiescence_participant_options
quiescence_participant_options::from(const config::lifecycle_section& cfg, std::string silo_name) {
  quiescence_participant_options out;
  out.silo_name = std::move(silo_name);
  out.quiescence_hold = std::chrono::milliseconds(cfg.quiescence_hold_ms);
  out.quiescence_residual_sample = cfg.quiescence_residual_sample;
  return out;
}

namespace {

/// The hold budget in whole ms, as the hold and expiry lines render it.
int64_t hold_ms(const quiescence_participant_options& opts) {
  return whole_ms(opts.quiescence_hold);
}

using ok_promise = caf::typed_response_promise<caf::ok_atom>;

/// The participant's full interface: the observer protocol plus its own hold timer.
using participant_actor_type
  = lifecycle_observer_actor::extend<caf::reacts_to<q_hold_expired_atom, uint64_t>>;

/// Where the participant stands in one stop.
enum class phase {
  idle,      ///< no stop open
  sampling,  ///< waiting for the first gauge sample
  holding,   ///< await_zero and hold timer armed
  releasing, ///< the hold ended; waiting for the gauge sample the final line needs
};

struct participant_state {
  static const char* name;
  log::logger log;
  quiescence_participant_options opts;
  routing_quiescence_actor gauge;
  leg_release_actor legs; ///< the owner of the silo's legs; may be null
  phase ph = phase::idle;
  std::vector<ok_promise> pending;
  uint64_t hold_id = 0;        ///< names the current hold; stale timers are ignored
  int64_t stop_began_ms = 0;   ///< actor clock, when stop_stage arrived
  bool budget_expired = false; ///< budget_expired arrived while sampling
};

const char* participant_state::name = "cafmesh.quiescence_participant";

using participant_pointer = participant_actor_type::stateful_pointer<participant_state>;

int64_t clock_ms(participant_pointer self) {
  auto d = self->clock().now().time_since_epoch();
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

uint64_t sample_size(participant_pointer self) {
  auto n = self->state.opts.quiescence_residual_sample;
  return n > 0 ? static_cast<uint64_t>(n) : 0;
}

/// Answers every open stop_stage (from the participant's own turn) and closes the stop.
void answer(participant_pointer self) {
  auto& s = self->state;
  if (s.ph != phase::idle && s.opts.on_hold_ended)
    s.opts.on_hold_ended(std::chrono::milliseconds(clock_ms(self) - s.stop_began_ms));
  s.ph = phase::idle;
  s.budget_expired = false;
  ++s.hold_id; // a still pending hold timer of this stop is stale from now on
  auto pending = std::move(s.pending);
  s.pending.clear();
  for (auto& rp : pending)
    rp.deliver(caf::ok_atom::value);
}

/// `e1; e2; ...` for the first `limit` entries, plus ` (+k more)` for the rest of the count.
std::string render_list(const quiescence_sample& x, int64_t now_ms, bool labels_only,
                        uint64_t limit) {
  std::string out;
  uint64_t shown = 0;
  for (auto& e : x.entries) {
    if (shown == limit)
      break;
    if (!out.empty())
      out += "; ";
    out += labels_only ? e.label : render_entry(e, now_ms);
    ++shown;
  }
  if (x.count > shown)
    out += " (+" + std::to_string(x.count - shown) + " more)";
  return out;
}

/// The stop lets go with work in flight. With an owner of the legs, the owner ends each one
/// that has not landed with one NACK while the transports still exist and answers the
/// residual's delivery ids; the release line `line` then names them and the stop is
/// answered. Without one (a participant on its own, whose gauge labels name each leg) the
/// line is logged as it is and the stop answered at once. `warn`: warning, else error.
void release(participant_pointer self, const std::string& why, std::string line, bool warn) {
  auto& s = self->state;
  auto log_line = [=](const std::string& text) {
    if (warn)
      self->state.log.warning(text);
    else
      self->state.log.error(text);
  };
  if (!s.legs) {
    log_line(line);
    answer(self);
    return;
  }
  s.ph = phase::releasing;
  self->request(s.legs, caf::infinite, q_end_legs_atom::value, why)
    .then(
      [=](const std::vector<std::string>& ids) {
        log_line(line + "; residual: " + render_delivery_ids(ids, ids.size()));
        // The stop goes on only once those NACKs left (or their bound passed): lower stages
        // stop the message centre they may need.
        self->request(self->state.legs, caf::infinite, q_nacks_out_atom::value)
          .then([=](caf::ok_atom) { answer(self); }, [=](caf::error&) { answer(self); });
      },
      [=](caf::error& err) {
        log_line(line);
        self->state.log.warning("routing quiescence: the router core did not end its legs ("
                                + self->system().render(err) + ")");
        answer(self);
      });
}

void gauge_unreachable(participant_pointer self, const caf::error& err) {
  self->state.log.warning("routing quiescence: gauge unreachable (" + self->system().render(err)
                          + "); not holding");
  answer(self);
}

/// The hold budget ran out: name the residual legs at error and let the stop proceed.
void on_hold_expired(participant_pointer self) {
  auto& s = self->state;
  s.ph = phase::releasing;
  self->request(s.gauge, caf::infinite, q_oldest_atom::value, sample_size(self))
    .then(
      [=](const quiescence_sample& x) {
        auto& st = self->state;
        release(self, "hold budget expired",
                std::to_string(x.count) + " route leg(s) did not land within "
                  + render_budget(hold_ms(st.opts)) + ": "
                  + render_list(x, clock_ms(self), false, sample_size(self)),
                false);
      },
      [=](caf::error& err) { gauge_unreachable(self, err); });
}

/// The host budget expired while holding: release at warning. Only the count is named, so
/// the gauge is asked for the count alone (it answers at once; names would wait for the
/// router core, docs/behaviour/quiescence.md#the-router-cores-own-count).
void on_budget_expired(participant_pointer self) {
  auto& s = self->state;
  s.ph = phase::releasing;
  self->request(s.gauge, caf::infinite, q_count_atom::value)
    .then(
      [=](uint64_t count) {
        release(self, "shutdown budget expired",
                "routing quiescence: shutdown budget expired while holding; releasing with "
                  + std::to_string(count) + " route leg(s) in flight",
                true);
      },
      [=](caf::error& err) { gauge_unreachable(self, err); });
}

void begin_hold(participant_pointer self, const quiescence_sample& x) {
  auto& s = self->state;
  s.ph = phase::holding;
  auto id = ++s.hold_id;
  s.log.info("routing quiescence: holding silo stop for " + std::to_string(x.count)
             + " route leg(s) (budget " + render_budget(hold_ms(s.opts)) + ")");
  self->request(s.gauge, caf::infinite, q_await_atom::value)
    .then(
      [=](caf::ok_atom) {
        auto& st = self->state;
        if (st.ph != phase::holding || st.hold_id != id)
          return; // the hold already ended another way
        st.log.info("routing quiescence: work landed after "
                    + std::to_string(clock_ms(self) - st.stop_began_ms) + " ms");
        answer(self);
      },
      [=](caf::error& err) {
        auto& st = self->state;
        if (st.ph == phase::holding && st.hold_id == id)
          gauge_unreachable(self, err);
      });
  self->delayed_send(self, s.opts.quiescence_hold, q_hold_expired_atom::value, id);
}

[[maybe_unused]] // unused in the S12.20 mutation build
void on_sample(participant_pointer self, bool graceful, const quiescence_sample& x) {
  auto& s = self->state;
  if (!graceful) {
    if (x.count == 0) {
      answer(self);
      return;
    }
    release(self, "non-graceful stop",
            "stopping NON-gracefully with " + std::to_string(x.count)
              + " route leg(s) in flight; abandoning: "
              + render_list(x, clock_ms(self), true, sample_size(self)),
            true);
    return;
  }
  if (x.count == 0) {
    s.log.info("routing quiescence: no routing work in flight");
    answer(self);
    return;
  }
  if (s.budget_expired) {
    release(self, "shutdown budget expired",
            "routing quiescence: shutdown budget expired while holding; releasing with "
              + std::to_string(x.count) + " route leg(s) in flight",
            true);
    return;
  }
  begin_hold(self, x);
}

participant_actor_type::behavior_type
participant_actor(participant_pointer self, routing_quiescence_actor gauge,
                  quiescence_participant_options opts, leg_release_actor legs) {
  auto& s = self->state;
  s.legs = std::move(legs);
  s.log = opts.silo_name.empty() ? log::get("quiescence")
                                 : log::get("quiescence").with_context(opts.silo_name);
  s.opts = std::move(opts);
  s.gauge = std::move(gauge);
  return {
    [=](start_stage_atom, stage) -> caf::ok_atom { return caf::ok_atom::value; },
    [=](stop_stage_atom, stage, bool graceful) -> ok_promise {
      auto rp = self->make_response_promise<caf::ok_atom>();
      auto& st = self->state;
      st.pending.push_back(rp);
      if (st.ph != phase::idle)
        return rp; // joins the open stop
      st.ph = phase::sampling;
      st.stop_began_ms = clock_ms(self);
      st.budget_expired = false;
      // A graceful stop decides on the count alone (it answers at once); a non-graceful one
      // names what it abandons.
      if (graceful)
        self->request(st.gauge, caf::infinite, q_count_atom::value)
          .then(
            [=](uint64_t count) {
              quiescence_sample x;
              x.count = count;
              on_sample(self, true, x);
            },
            [=](caf::error& err) { gauge_unreachable(self, err); });
      else
        self->request(st.gauge, caf::infinite, q_oldest_atom::value, sample_size(self))
          .then([=](const quiescence_sample& x) { on_sample(self, false, x); },
                [=](caf::error& err) { gauge_unreachable(self, err); });
      return rp;
    },
    [=](budget_expired_atom) {
      auto& st = self->state;
      if (st.ph == phase::holding)
        on_budget_expired(self);
      else if (st.ph == phase::sampling)
        st.budget_expired = true;
    },
    [=](q_hold_expired_atom, uint64_t id) {
      auto& st = self->state;
      if (st.ph == phase::holding && st.hold_id == id)
        on_hold_expired(self);
    },
  };
}

} // namespace

lifecycle_observer_actor
spawn_quiescence_participant(caf::actor_system& sys, routing_quiescence_actor gauge,
                             quiescence_participant_options opts, leg_release_actor legs) {
  return lifecycle_observer_actor{
    sys.spawn(participant_actor, std::move(gauge), std::move(opts), std::move(legs))};
}

} // namespace cafmesh::lifecycle
