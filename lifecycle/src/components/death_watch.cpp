// The death watch (docs/behaviour/membership.md#dead-peers): stops the silo non-gracefully
// once its membership view shows this incarnation Dead while it still runs.

#include "silo_component.hpp"

#include <caf/send.hpp>

#include "cafmesh/actors/atoms.hpp"
#include "cafmesh/actors/lifecycle_atoms.hpp"
#include "cafmesh/actors/membership.hpp"

namespace cafmesh::lifecycle::components {

namespace {

/// `(host_actor)` once, then the agent's `(mb_declared_atom, version)`: the cluster declared
/// this silo Dead while it runs; the message centre blocks application messages at once and
/// the host halts non-gracefully (a halt already under way is joined, its flag ignored).
/// Blocking first matters after a partition heals: the calls a peer sent before the cut can
/// still arrive (TCP retransmits them) while the host's stop has not yet reached its own
/// blocking stage, and a turn they started here would run beside the activation that replaced
/// this one (SPEC C6; docs/behaviour/membership.md#dead-peers).
caf::behavior watch(caf::event_based_actor*, silo_address me, caf::actor centre) {
  auto host = std::make_shared<host_actor>();
  return {
    [=](const host_actor& h) { *host = h; },
    [=](mb_declared_atom, uint64_t version) {
      log::get("membership")
        .with_context(me.to_string())
        .warning("membership v" + std::to_string(version)
                 + " shows this silo Dead: stopping non-gracefully");
      if (centre)
        caf::anon_send(centre, mc_block_atom::value, true);
      if (*host)
        caf::anon_send(*host, host_halt_atom::value, false);
    },
  };
}

} // namespace

extern const silo_component death_watch{
  [](silo_wiring& w) {
    auto dw = w.sys.spawn(watch, w.s.addr, w.s.centre);
    w.s.death_watch = dw;
    caf::anon_send(w.s.agent, mb_declared_atom::value, dw);
    w.host_watchers.push_back([dw](const host_actor& host) { caf::anon_send(dw, host); });
  },
  nullptr,
  [](const silo_components& s) { return handles(s.death_watch); },
};

} // namespace cafmesh::lifecycle::components
