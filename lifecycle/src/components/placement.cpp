// The placement service at stage 2001, just above the message centre: it subscribes to
// membership at the start; a stop stops it (waiting messages fail `silo_unavailable`), then
// publishes Dead, bounded by `membership.dead_publish_ms`, or by the grace window once an
// earlier step of this stop found the oracle silent (docs/behaviour/membership.md#leaving).

#include "silo_component.hpp"

#include <algorithm>

#include <caf/send.hpp>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/membership.hpp"
#include "cafmesh/actors/placement.hpp"
#include "cafmesh/actors/placement_atoms.hpp"

namespace cafmesh::lifecycle::components {

namespace ev = silo_event_text;

extern const silo_component placement{
  [](silo_wiring& w) {
    w.s.placement = spawn_placement_service(w.sys, make_placement_config(w.cfg(), w.s.addr),
                                            w.s.registry, w.s.centre);
  },
  [](silo_wiring& w) {
    auto agent = w.s.agent;
    auto placement = w.s.placement;
    auto lg = w.lg;
    auto oracle_silent = w.oracle_silent;
    const auto grace_ms = w.cfg().membership.shutdown_grace_ms;
    const auto dead_ms = w.cfg().membership.dead_publish_ms;
    w.subscribe(
      stages::runtime_initialize_plus_1, "placement",
      [=](stage_self, bool, stage_promise rp) mutable {
        caf::anon_send(agent, mb_subscribe_atom::value, placement);
        lg->info(ev::placement_started);
        rp.deliver(caf::ok_atom::value);
      },
      [=](stage_self self, bool, stage_promise rp) mutable {
        call(
          self, placement, 0,
          [=](caf::error e) mutable {
            log_step(*lg, e, "placement stop", ev::placement_stopped);
            auto bound_ms = *oracle_silent ? std::min(dead_ms, grace_ms) : dead_ms;
            call(
              self, agent, bound_ms,
              [=](caf::error e2) mutable {
                if (e2 && timed_out(e2))
                  lg->warning("membership: Dead not published within " + std::to_string(bound_ms)
                              + " ms: " + to_fault(e2).text + "; skipped");
                else if (e2)
                  lg->warning("membership: Dead not published: " + to_fault(e2).text + "; skipped");
                else
                  lg->info(ev::dead_published);
                rp.deliver(caf::ok_atom::value);
              },
              mb_status_atom::value, silo_status::dead);
          },
          pl_stop_atom::value);
      });
  },
  [](const silo_components& s) { return handles(s.placement); },
};

} // namespace cafmesh::lifecycle::components
