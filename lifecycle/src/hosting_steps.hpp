#pragma once

// Steps every builder takes (not installed): the configuration check, the log level, the
// application hubs, the correlating entry.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <caf/actor.hpp>
#include <caf/error.hpp>
#include <caf/expected.hpp>
#include <caf/fwd.hpp>

#include "cafmesh/actors/ids.hpp"
#include "cafmesh/actors/log.hpp"
#include "cafmesh/actors/membership.hpp"
#include "cafmesh/actors/observer.hpp"
#include "cafmesh/config/mesh_config.hpp"
#include "cafmesh/routing/application_hub.hpp"
#include "cafmesh/routing/correlating_entry.hpp"

namespace cafmesh::lifecycle::hosting {

/// The configuration to build from: read from `path` when set, else `cfg`; validated exactly
/// as the JSON loader validates (same messages, same JSON pointers); its role must be `role`.
/// Errors are `config_invalid` faults naming `builder`.
caf::expected<config::mesh_config>
checked_config(const config::mesh_config& cfg, const std::string& path, config::process_role role,
               const std::string& builder);

/// Sets cafmesh's level: `explicit_level` when given, else the configuration's `log.level`
/// when the application gave a configuration, else `warning` (the embedded default). Without
/// a configuration from the application, `cfg` also gets the other embedded defaults:
/// `routing.saturation_warn_after_ms` = 1,000 (a brief burst is no warning).
void apply_embedded_defaults(config::mesh_config& cfg, std::optional<log::level> explicit_level,
                             bool config_given);

/// Checks every pattern (the first invalid one is the error, nothing is added) and adds every
/// (pattern, handler) to the hub table `table`. Does not block.
caf::error add_hubs(const routing::hub_table_actor& table,
                    const std::vector<std::pair<std::string, routing::async_hub_handler>>& hubs);

/// The bound of the process's membership join (docs/behaviour/membership.md#a-join-that-cannot-reach-the-table):
/// `membership.max_join_time_ms` (0: no bound), the table it looks for (the etcd endpoints
/// with provider `etcd`, else `network.primary_host`:`network.primary_port`, or this process
/// when it is the primary) and what to do when it is not reached.
membership_join_bound join_bound_of(const config::mesh_config& cfg);

/// The wall-clock ms since the epoch: a network process's generation
/// (docs/behaviour/envelope.md#silo-addresses-and-activations).
uint64_t wall_generation();

/// The correlating entry of the process at `addr`: `client/{name}-{port}-{generation}`
/// (`name` = `mesh.name`, or `process`), registered at `routing`, its pod hub claimed at
/// `claimer` when there is one.
routing::correlating_entry_actor spawn_entry(caf::actor_system& sys, const config::mesh_config& cfg,
                                             const silo_address& addr, const caf::actor& routing,
                                             const caf::actor& claimer);

/// The address `spawn_entry` gives the entry of the process at `addr`.
routing::address entry_address(const config::mesh_config& cfg, const silo_address& addr);

/// A lifecycle observer (subscribe it at stage Active) that claims the pod hub of `addr` at
/// `claimer` when its stage starts, and does nothing when it stops.
lifecycle_observer_actor spawn_claim_at_active(caf::actor_system& sys, caf::actor claimer,
                                               routing::address addr);

} // namespace cafmesh::lifecycle::hosting
