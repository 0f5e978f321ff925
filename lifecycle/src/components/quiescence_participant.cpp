// The quiescence participant at Active 20000
// (docs/behaviour/quiescence.md#the-participant-at-stage-active): a stop holds until the gauge
// reads zero, bounded by `lifecycle.quiescence_hold_ms`. Unsubscribed only for the negative
// test (`silo_seams::subscribe_quiescence`): the message centre's start then fails.

#include "silo_component.hpp"

#include "cafmesh/lifecycle/quiescence_participant.hpp"
#include "cafmesh/routing/leg_release.hpp"

namespace cafmesh::lifecycle::components {

extern const silo_component quiescence_participant{
  [](silo_wiring& w) {
    auto qopts = quiescence_participant_options::from(w.cfg().lifecycle, w.name);
    qopts.on_hold_ended = w.opts.on_quiescence_hold;
    w.s.quiescence = spawn_quiescence_participant(w.sys, w.s.gauge, std::move(qopts),
                                                  routing::leg_release_actor{w.s.core});
  },
  [](silo_wiring& w) {
    if (seams_of(w.opts).subscribe_quiescence)
      w.subscribe(stages::active, "routing-quiescence", w.s.quiescence);
    else
      w.keep(w.s.quiescence);
  },
  nullptr,
};

} // namespace cafmesh::lifecycle::components
