#pragma once

/// @file
/// The state of the placement service: not part of the API. Only its own sources and the testing
/// kit include this header; tests read the state through `testing::fixture::state_of`
/// (docs/testing.md#reading-an-actors-state).

#include <cstdint>
#include <deque>
#include <map>
#include <random>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_clock.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/fwd.hpp>
#include <caf/message.hpp>
#include <caf/response_promise.hpp>

#include "cafmesh/actors/activation_address.hpp"
#include "cafmesh/actors/deadline_sweep.hpp"
#include "cafmesh/actors/directory.hpp"
#include "cafmesh/actors/grain_registry.hpp"
#include "cafmesh/actors/ids.hpp"
#include "cafmesh/actors/log.hpp"
#include "cafmesh/actors/membership.hpp"
#include "cafmesh/actors/placement.hpp"
#include "cafmesh/actors/placement_atoms.hpp"

namespace cafmesh::detail {

/// One message waiting in a work item.
struct placement_waiter {
  int32_t forward_count = 0;
  caf::message payload;
  caf::response_promise rp;
  /// Placement-clock ms (since the service started) by which the caller stops waiting;
  /// 0: the caller set no bound.
  int64_t answer_by_ms = 0;
};

/// One pending placement of one grain id (docs/behaviour/directory-and-placement.md#placement).
struct placement_item {
  uint64_t id = 0;
  grain_id grain;
  grain_type_info info; ///< the type as the local registry knows it
  grain_kind kind = grain_kind::single_activation;
  int64_t created_ms = 0; ///< virtual ms (service clock) at creation
  uint32_t lookup_attempts = 0;
  std::vector<placement_waiter> waiters;
};

/// A grain call answered by id: to an activation of this silo through the catalog
/// (`ct_call`), or of another silo through the message centre (`mc_calls`, remote_call.hpp).
struct placement_local_call {
  caf::response_promise rp;
  grain_id grain;
  activation_tag tag;
  int64_t timeout_ms = 0;
  int64_t due_ms = 0; ///< placement-clock ms
  silo_address silo;  ///< the activation's silo
};

/// The state of the placement service.
struct placement_state {
  placement_config cfg;
  grain_registry_ptr registry;
  caf::actor centre;
  directory_client dir;
  membership_snapshot view;
  std::mt19937_64 rng;
  std::vector<std::map<grain_id, placement_item>> workers;
  /// Cached single-activation addresses
  /// (docs/behaviour/directory-and-placement.md#lookup-registration-cache "Cache").
  directory_cache cache;
  uint64_t next_item_id = 0;
  bool stopped = false;
  /// Silos that said they are leaving while still Active in `view` (`pl_leaving_atom`).
  std::set<silo_address> leaving;
  placement_stats stats;
  /// The silo's own catalog (`pl_catalog_atom`; null: every call goes through the message
  /// centre).
  caf::actor catalog;
  /// Grain calls by id (to local activations through the catalog, to remote ones through
  /// the message centre), and their deadlines in order; one timer, armed at the earliest
  /// deadline, bounds them all (no CAF request timeout per call, SPEC §14 B6).
  std::unordered_map<uint64_t, placement_local_call> local_calls;
  deadline_sweep<uint64_t> local_deadlines;
  uint64_t next_local_call = 0;
  log::logger log = log::get("placement");
  caf::actor_clock::time_point origin;

  static const char* name;
};

} // namespace cafmesh::detail
