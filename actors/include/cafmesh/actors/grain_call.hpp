#pragma once

/// @file
/// Grain calls (docs/behaviour/directory-and-placement.md#placement "Entry", "Response timeout";
/// docs/behaviour/classification.md#codes): `grain_call(self, placement, id, payload)` asks the
/// silo's own placement service to deliver `payload` to grain `id` and answers the activation's
/// reply. Usable from any event-based actor of a silo.
///
/// Every failure is a `caf::error` carrying a `fault` (`to_fault(err)` recovers it) whose
/// code is one of docs/behaviour/classification.md#codes's grain-call codes: `placement_timeout`,
/// `no_compatible_silo`,
/// `response_timeout`, `rejected`, `silo_unavailable`, `departed_silo`,
/// `activation_deactivated`, or the activation's own error. The placement service bounds
/// every call (placement timeout + response timeout), so the request itself needs none.
///
/// Example:
/// ```
/// grain_call(self, placement, grain_id{"echo", "a"}, caf::make_message(echo_atom::value, 21))
///   .then([=](int x) { ... }, [=](caf::error& e) { auto f = to_fault(e); ... });
/// ```

#include <caf/actor.hpp>
#include <caf/message.hpp>
#include <caf/timespan.hpp>

#include "cafmesh/actors/ids.hpp"
#include "cafmesh/actors/placement_atoms.hpp"

namespace cafmesh {

/// Sends a grain call through `placement` (the local placement service) from `self` and
/// returns CAF's response handle (use `.then(...)`). `forward_count` is 0 for a fresh call.
template <class Self>
auto grain_call(Self* self, const caf::actor& placement, const grain_id& id, caf::message payload,
                int32_t forward_count = 0) {
  return self->request(placement, caf::infinite, pl_call_atom::value, id, forward_count,
                       std::move(payload));
}

/// A grain call whose caller waits for the answer only `within` from now: the message
/// leaves placement with a response bound of at most what is left of `within`, and not at
/// all once nothing is (docs/behaviour/routing.md#a-requests-remaining-time).
template <class Self>
auto grain_call_within(Self* self, const caf::actor& placement, const grain_id& id,
                       caf::message payload, caf::timespan within) {
  return self->request(placement, caf::infinite, pl_call_atom::value, id, int32_t{0},
                       std::move(payload), within);
}

} // namespace cafmesh
