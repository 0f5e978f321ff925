#pragma once

/// @file
/// A typed reference to one grain (docs/hosting.md "Grains"): `grain_ref<Interface>` names
/// a grain id and the placement service its calls go through
/// (docs/behaviour/directory-and-placement.md#placement). `request(self, args...)` is a grain call
/// whose arguments must match a handler of `Interface` (checked at compile time); the answer is the
/// activation's reply, the error a `caf::error` carrying a grain-call `fault` (`to_fault(err)`:
/// `placement_timeout`, `no_compatible_silo`,
/// `response_timeout`, `silo_unavailable`, `departed_silo`, `activation_deactivated`, ...).
/// The placement service bounds every call (placement + response timeout).

#include <cstdint>
#include <utility>

#include <caf/actor.hpp>
#include <caf/detail/implicit_conversions.hpp>
#include <caf/duration.hpp>
#include <caf/message.hpp>
#include <caf/response_type.hpp>

#include "cafmesh/actors/ids.hpp"
#include "cafmesh/actors/placement_atoms.hpp"

namespace cafmesh::lifecycle {

/// See the file comment.
template <class Interface>
class grain_ref {
public:
  grain_ref(caf::actor placement, grain_id id)
    : placement_(std::move(placement)), id_(std::move(id)) {
    // nop
  }

  const grain_id& id() const { return id_; }

  /// Calls the grain from `self` (an event-based actor pointer or a `scoped_actor`) and
  /// returns CAF's response handle (`.then(...)` or `.receive(...)`).
  template <class Self, class... Ts>
  auto request(Self& self, Ts&&... xs) const {
    static_assert(caf::response_type<typename Interface::signatures,
                                     caf::detail::strip_and_convert_t<Ts>...>::valid,
                  "the grain's interface has no handler for these arguments");
    return self->request(placement_, caf::infinite, pl_call_atom::value, id_, int32_t{0},
                         caf::make_message(std::forward<Ts>(xs)...));
  }

private:
  caf::actor placement_;
  grain_id id_;
};

} // namespace cafmesh::lifecycle
