// The membership agent at BecomeActive 19999 (docs/behaviour/membership.md#leaving): it
// publishes Active; a stop publishes ShuttingDown (graceful) or Stopping, each bounded by
// `membership.shutdown_grace_ms`, so that a silo whose oracle is gone (its host process
// stopped first, or cannot be reached) still stops. An expired step is logged at warning and
// skipped, and the later steps of the stop take the grace window as bound (`oracle_silent`).

#include "silo_component.hpp"

#include <caf/send.hpp>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/membership.hpp"
#include "../hosting_steps.hpp"

namespace cafmesh::lifecycle::components {

namespace ev = silo_event_text;

extern const silo_component membership{
  [](silo_wiring& w) {
    w.s.agent = spawn_membership_agent(w.sys, w.s.addr, w.opts.oracle, default_carry_bound,
                                       hosting::join_bound_of(w.cfg()));
    caf::anon_send(w.s.agent, mb_subscribe_atom::value, w.s.centre);
  },
  [](silo_wiring& w) {
    auto agent = w.s.agent;
    auto lg = w.lg;
    auto oracle_silent = w.oracle_silent;
    const auto grace_ms = w.cfg().membership.shutdown_grace_ms;
    w.subscribe(
      stages::become_active, "membership",
      [=](stage_self self, bool, stage_promise rp) mutable {
        call(
          self, agent, 0,
          [=](caf::error e) mutable {
            if (e) {
              lg->error("membership: publishing Active failed: " + to_fault(e).text);
              rp.deliver(std::move(e));
              return;
            }
            lg->info(ev::active_published);
            rp.deliver(caf::ok_atom::value);
          },
          mb_status_atom::value, silo_status::active);
      },
      [=](stage_self self, bool graceful, stage_promise rp) mutable {
        auto publish_stopping = [=]() mutable {
          call(
            self, agent, grace_ms,
            [=](caf::error e) mutable {
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
            },
            mb_status_atom::value, silo_status::stopping);
        };
        if (!graceful) {
          publish_stopping();
          return;
        }
        call(
          self, agent, grace_ms,
          [=](caf::error e) mutable {
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
          },
          mb_status_atom::value, silo_status::shutting_down);
      });
  },
  [](const silo_components& s) { return handles(s.agent); },
};

} // namespace cafmesh::lifecycle::components
