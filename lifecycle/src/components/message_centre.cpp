// The message centre (docs/architecture.md#one-silo) at RuntimeInitialize 2000: it serves the
// silo's components from the start and stops last but the pool. Its start is the lowest silo
// stage after First, so the standard-wiring check
// (docs/behaviour/quiescence.md#the-participant-at-stage-active) fails the start before any
// service started.

#include "silo_component.hpp"

#include <caf/send.hpp>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/message_center.hpp"

namespace cafmesh::lifecycle::components {

namespace ev = silo_event_text;

extern const silo_component message_centre{
  [](silo_wiring& w) {
    w.s.centre = w.opts.centre ? w.opts.centre : spawn_message_center(w.sys, w.s.addr, w.opts.link);
  },
  [](silo_wiring& w) {
    auto centre = w.s.centre;
    auto served_gateway = w.served_gateway;
    auto lg = w.lg;
    auto name = w.name;
    const bool quiescence_wired = seams_of(w.opts).subscribe_quiescence;
    w.subscribe(
      stages::runtime_initialize, "message-centre",
      [=](stage_self self, bool, stage_promise rp) mutable {
        if (!quiescence_wired) {
          auto f
            = fault{mesh_errc::config_invalid,
                    "silo " + name
                      + ": the routing quiescence participant is not subscribed at stage"
                        " Active (docs/behaviour/quiescence.md#the-participant-at-stage-active)"};
          lg->error(f.text);
          rp.deliver(to_error(f));
          return;
        }
        call_then_answer(self, centre, lg, ev::centre_started, rp, mc_register_atom::value,
                         component::gateway, served_gateway);
      },
      [=](stage_self self, bool, stage_promise rp) mutable {
        self->send_exit(centre, caf::exit_reason::user_shutdown);
        lg->info(ev::centre_stopped);
        rp.deliver(caf::ok_atom::value);
      });
  },
  [](const silo_components& s) { return handles(s.centre); },
};

} // namespace cafmesh::lifecycle::components
