#pragma once

/// @file
/// The state of a hub endpoint: not part of the API. Only its own sources and the testing kit
/// include this header; tests read the state through `state_of(ep)` below
/// (docs/testing.md#reading-an-actors-state).

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include "cafmesh/actors/log.hpp"
#include "cafmesh/config/mesh_config.hpp"
#include "cafmesh/routing/address.hpp"
#include "cafmesh/routing/envelope.hpp"
#include "cafmesh/routing/hub_endpoint.hpp"
#include "cafmesh/routing/outcome_tracker.hpp"

namespace cafmesh::routing::detail {

/// State of a hub endpoint.
struct hub_endpoint_state {
  address self_address;
  caf::actor routing;
  outcome_tracker tracker;
  /// Receiver side: delivery ids already taken in (same window and bound as `tracker`). A
  /// delivery repeated by a retry whose first copy landed but whose acknowledgement was lost
  /// (at-least-once hand-over) is dropped here, told to the observer as `duplicate`.
  outcome_tracker taken;
  bool respond = false;
  /// Most entries each record below keeps (`routing.endpoint_record_max`).
  size_t record_max = 1024;
  std::deque<hub_outcome> outcomes;
  std::deque<hub_received> received;
  std::deque<envelope> entry_answers; ///< what `deliver` answered, in order
  bool timer_armed = false;
  int64_t timer_due_ms = 0;
  log::logger log;
  caf::actor observer; ///< receives `ep_event_atom` messages (entry_atoms.hpp); may be null
  static const char* name;
};

/// Test-only peek at the state of the hub endpoint `ep` (its actor type, with the endpoint's
/// own timer, is private to its source).
hub_endpoint_state& state_of(const hub_endpoint_actor& ep);

} // namespace cafmesh::routing::detail
