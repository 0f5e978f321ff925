#pragma once

/// @file
/// Typed grains (docs/hosting.md "Grains"): a grain type is a CAF `typed_actor` interface
/// plus a factory that makes one activation's `Interface::behavior_type`, with optional
/// activation and deactivation hooks (SPEC §13 A9) to load and save the activation's state.
///
/// ```
/// using counter = caf::typed_actor<caf::replies_to<add_atom, int64_t>::with<int64_t>>;
/// add_typed_grain<counter>(registry, "counter",
///   [](caf::event_based_actor*, const grain_id&) -> counter::behavior_type {
///     auto n = std::make_shared<int64_t>(0);
///     return {[n](add_atom, int64_t x) { return *n += x; }};
///   });
/// ```
/// The interface is checked at compile time on both ends: the factory's behaviour must
/// implement exactly `Interface` (CAF's typed behaviour), and `grain_ref<Interface>` calls
/// only what it declares (grain_ref.hpp).

#include <cstdint>
#include <functional>
#include <string>
#include <utility>

#include <caf/event_based_actor.hpp>

#include "cafmesh/actors/grain_registry.hpp"
#include "cafmesh/actors/ids.hpp"
#include "cafmesh/actors/membership.hpp"

namespace cafmesh::lifecycle {

/// How a typed grain type is registered.
struct grain_options {
  /// Single activation (the default): where a new activation goes (SPEC §5.4).
  placement_strategy placement = placement_strategy::random;
  /// A stateless worker (SPEC §5.5) with at most `local_limit` activations per silo.
  bool stateless = false;
  uint32_t local_limit = 1;
  uint32_t interface_version = 1;
  /// Runs in the activation before its first message (load its state here).
  std::function<void(caf::event_based_actor* self, const grain_id& id)> on_activate;
  /// Runs when the activation ends: deactivated at GrainDeactivation, idle collection or a
  /// kill of its silo's actors (save its state here). It runs while the activation ends, so
  /// it must not wait for messages.
  std::function<void(const grain_id& id)> on_deactivate;
};

/// Registers grain type `type` of interface `Interface` in `reg`. `factory(self, id)` answers
/// an `Interface::behavior_type`. False when `reg` refused the type (already registered).
template <class Interface, class Factory>
bool add_typed_grain(grain_registry& reg, const std::string& type, Factory factory,
                     const grain_options& opts = {}) {
  activation_factory make = [factory, opts](caf::event_based_actor* self,
                                            const grain_id& id) -> caf::behavior {
    if (opts.on_activate)
      opts.on_activate(self, id);
    if (opts.on_deactivate)
      self->attach_functor([hook = opts.on_deactivate, id] { hook(id); });
    typename Interface::behavior_type typed = factory(self, id);
    return std::move(typed.unbox());
  };
  if (opts.stateless)
    return reg.add_stateless(type, opts.local_limit, std::move(make), opts.interface_version);
  return reg.add_single(type, opts.placement, std::move(make), opts.interface_version);
}

} // namespace cafmesh::lifecycle
