#pragma once

/// @file
/// The protocol between `cafmesh-demo --processes` and the `cafmesh-node` silo processes it
/// starts (the multi-process mesh), and the node side of it.
///
/// ## Start of one silo process
/// The demo publishes its *control* actor on an OS-chosen loopback port (CAF io, network
/// transparency) and starts `cafmesh-node --config F --demo-control 127.0.0.1:P
/// --demo-silo NAME`. The node (`run_demo_silo`):
/// 1. connects to the control actor (`remote_actor`) and asks
///    `(dp_join_atom, std::string silo) -> (std::vector<std::string> keys,
///    std::vector<caf::actor> hubs, caf::actor sink)`: the application's hub map (node
///    prefix -> hub, the demo's node hubs and owner-hub proxies, remote handles) and the
///    actor that takes the node's events;
/// 2. starts its silo (`lifecycle::silo_builder` over CAF io, port 0: the OS chooses) with a hub factory
///    over that map and `sink` as the router core's failure observer (router failures of
///    answer-suppressed deliveries, which no NACK carries, reach the demo's ledger as
///    `ep_event` "suppressed"), subscribes a stage probe (`spawn_stage_probe`, sink = `sink`) at
///    `demo_probe_stages()`, spawns its *agent* and tells the control
///    `(dp_hello_atom, std::string silo, uint64_t generation, caf::actor agent,
///    caf::actor routing, caf::actor link)` (the silo's routing service and network link:
///    node hubs send their responses through it; `stall` faults go to the link);
/// 3. starts its host and tells `sink` `(dm_up_atom, silo, generation, bool ok)`;
/// 4. runs until its host is torn down (SIGTERM/SIGINT: graceful host stop,
/// docs/behaviour/lifecycle.md#the-host; a
///    second signal: non-graceful), then exits 0. The demo sees the stop's end as the exit.
///
/// ## The agent (untyped actor, in the node process)
/// | message | answer |
/// |---|---|
/// | `(dp_spawn_atom, routing::address a)` | a new hub endpoint for `a` in this process, registered
/// as a local route of the silo's routing service (the co-hosted entry,
/// docs/behaviour/routing.md#the-entry) and reporting to `sink`: `caf::actor` |
/// | `(dp_claim_atom, routing::address a)` | one-way: claim the pod hub of `a` for this silo (pod-hub claimer) |
/// | `(dp_stats_atom)` | the silo routing service's counters: `routing::routing_service_stats` |

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <caf/atom.hpp>
#include <caf/fwd.hpp>

#include "cafmesh/actors/log.hpp"
#include "cafmesh/config/mesh_config.hpp"
#include "cafmesh/actors/stage.hpp"

namespace cafmesh::mainjob {

using dp_join_atom = caf::atom_constant<caf::atom("dpjoin")>;
using dp_hello_atom = caf::atom_constant<caf::atom("dphello")>;
using dp_spawn_atom = caf::atom_constant<caf::atom("dpspawn")>;
using dp_claim_atom = caf::atom_constant<caf::atom("dpclaim")>;
using dp_stats_atom = caf::atom_constant<caf::atom("dpstats")>;
/// `(dm_up_atom, std::string silo, uint64_t generation, bool ok)`: host start answered.
using dm_up_atom = caf::atom_constant<caf::atom("dmup")>;

/// The stages a demo's stage probe watches (the progress line and the owners' move).
const std::vector<lifecycle::stage>& demo_probe_stages();

/// `register_types` plus the types only the demo protocol sends between processes
/// (`routing::routing_service_stats`). Call it in the demo and in every node.
void register_demo_types(caf::actor_system_config& cfg);

/// Where a node reaches its demo.
struct demo_link {
  std::string host;
  uint16_t port = 0;
  std::string silo; ///< the scenario's silo name, e.g. `A`
};

/// Parses `HOST:PORT`; none when malformed.
std::optional<demo_link> parse_demo_link(const std::string& host_port, const std::string& silo);

/// Runs one silo of a `cafmesh-demo --processes` run (see the file comment); prints `ADDR`,
/// `ACTIVE` like a plain silo node. Answers the process exit code: 0 after a clean stop, 1
/// when the demo cannot be reached or the silo does not start.
int run_demo_silo(caf::actor_system& sys, const config::mesh_config& mc, const demo_link& link,
                  uint64_t generation, log::logger& lg);

} // namespace cafmesh::mainjob
