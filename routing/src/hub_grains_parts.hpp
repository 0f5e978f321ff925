#pragma once
/// @file
/// What the hub grains share (private to the routing library): an activation's knowledge of
/// itself and the pod hub's behaviour, which lives in pod_hub_grain.cpp while the node hub and
/// the registration of every routing grain live in hub_grains.cpp.
/// docs/behaviour/routing.md#hubs

#include <chrono>
#include <memory>

#include <caf/event_based_actor.hpp>
#include <caf/optional.hpp>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/routing/hub_grains.hpp"

namespace cafmesh::routing::hub_grains_detail {

using ms = std::chrono::milliseconds;

/// What an activation knows about itself: its catalog (the sender of its turns) and tag.
struct activation_self {
  caf::actor catalog;
  caf::optional<activation_tag> tag;
  bool pinned = false;
};

/// Learns the catalog from the current turn and asks for the tag once.
void learn(caf::event_based_actor* self, const std::shared_ptr<activation_self>& me);

/// Asks the catalog to pin (`on`) or unpin the activation, once per change.
void pin(caf::event_based_actor* self, const std::shared_ptr<activation_self>& me, bool on);

/// Asks the catalog to deactivate the activation.
void leave(caf::event_based_actor* self, const std::shared_ptr<activation_self>& me);

/// The refusal of new work by a hub grain of a stopping silo.
fault leaving_fault(const silo_routing_slots& slots);

/// True once the silo's stopping signal reached its routing grains.
bool silo_stopping(const silo_routing_slots& slots);

/// The pod hub grain `podhub/{path}` (hub_grains.hpp, pod_hub_grain.cpp).
caf::behavior pod_hub_behavior(caf::event_based_actor* self, const grain_id& id,
                               silo_routing_slots_ptr slots);

} // namespace cafmesh::routing::hub_grains_detail
