#pragma once

/// @file
/// The state of the grain-delivery adapter and the pod-hub claimer: not part of the API. Only its
/// own sources and the testing kit include this header; tests read the state through
/// `testing::fixture::state_of` (docs/testing.md#reading-an-actors-state).

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include "cafmesh/actors/grain_registry.hpp"
#include "cafmesh/actors/ids.hpp"
#include "cafmesh/actors/log.hpp"
#include "cafmesh/actors/stopping_recipient.hpp"
#include "cafmesh/config/mesh_config.hpp"
#include "cafmesh/routing/address.hpp"
#include "cafmesh/routing/hub_grains.hpp"
#include "cafmesh/routing/hub_protocol.hpp"
#include "cafmesh/routing/retry_policy.hpp"
#include "cafmesh/routing/router_core_actor.hpp"
#include "cafmesh/routing/router_ports.hpp"

namespace cafmesh::routing::detail {

/// Counters of the grain-delivery adapter.
struct grain_delivery_state {
  caf::actor placement;
  std::map<grain_id, std::string> act_errors;
  uint64_t attempts = 0;
  uint64_t invalidations = 0;
  uint64_t leaving_reports = 0; ///< `pl_leaving_atom` messages sent to placement
  static const char* name;
};

/// One claim of the pod-hub claimer.
struct pod_claim {
  address addr;
  retry_state retry{retry_policy{}};
  uint64_t token = 0;
  bool attached = false;
  /// Attempts of the current assertion re-placed at once because the directory named an
  /// activation on another silo that had already left (bounded by
  /// `pod_claim_max_prompt_replacements`).
  uint32_t prompt_replacements = 0;
};

/// State of the pod-hub claimer.
struct pod_hub_claimer_state {
  caf::actor placement;
  caf::actor routing;
  retry_policy policy;
  bool stopping = false;
  /// The claimer's own silo (from its routing slots); unknown without them.
  std::optional<silo_address> self_silo;
  std::map<std::string, pod_claim> claims;
  uint64_t attaches = 0;            ///< attach calls issued (each retry counts)
  uint64_t attached_ok = 0;         ///< attaches answered true
  uint64_t prompt_replacements = 0; ///< attempts re-placed at once (see `pod_claim`)
  uint64_t lost = 0;                ///< attached activations that went (`pc_lost_atom`)
  uint64_t detaches = 0;
  log::logger log;
  static const char* name;
};

} // namespace cafmesh::routing::detail
