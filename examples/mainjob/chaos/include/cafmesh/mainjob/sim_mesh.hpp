#pragma once

/// @file
/// The main job's traffic driver on whole simulated silos in virtual time
/// (docs/testing.md#chaos): `run_sim` drives a `mainjob::mesh_port` built over the test
/// world of whole silos (silo_world.hpp) on the virtual-time fixture. The topology is the
/// one of the in-process network mesh (examples/mainjob/src/in_process_mesh.cpp): the pure clients
/// host their portal hubs (local routes of their routing services, reached through
/// client-hosted pod hubs); co-hosted portal hubs are local routes of their home silo's
/// routing service; owner hubs `node/Owner/O{i}` are hub endpoints handed to the node-hub
/// grains by every silo's hub factory. Owners send their frames through the co-hosted entry
/// of a home silo; when it stops they hold their frames until its stage Active has stopped
/// and then move (lifecycle/hub_homing.hpp).
///
/// Where the answering node hubs `node/Org/N{i}` live (`sim_topology`):
/// - shared: one hub endpoint per node hub, handed to every silo's hub factory and moved to
///   another silo's routing service when its home stops;
/// - in silos (the users' topology): every silo incarnation has its own application, which
///   creates the answering hub of a key inside that silo on its first activation there and
///   ends with the silo's process (host stop answered). The application is the echo hub
///   factory of `cafmesh-node --app echo`, or the user's own hub handlers and grains
///   (`sim_application`).
///
/// The run also applies the fault steps of the scenario (mainjob::fault_spec: stall, kill,
/// second signal) and timed network faults (`net_fault`: link delays, drops, partitions).
///
/// Diagnostics: SIMROLL_LEDGER_DUMP, SIMROLL_LOG_DUMP, SIMROLL_NET_DUMP and SIMROLL_DIR_DUMP
/// name files that receive a run's ledger lines, captured log, network trace and final
/// directory entries (the log as `{file}.{seed}`, one file per seed of a test that runs several).

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "cafmesh/actors/grain_registry.hpp"
#include "cafmesh/lifecycle/silo_components.hpp"
#include "cafmesh/mainjob/report.hpp"
#include "cafmesh/mainjob/scenario.hpp"
#include "cafmesh/routing/application_hub.hpp"

namespace cafmesh::mainjob {

/// Makes a hub handler for one silo incarnation from its components (e.g. a hub that calls
/// grains through `s.placement`).
using sim_hub_maker = std::function<routing::async_hub_handler(const lifecycle::silo_components& s)>;

/// The user's application in every silo incarnation (the users' topology). Empty `hubs`: the
/// echo application (`mainjob::spawn_echo_hub_factory`).
struct sim_application {
  /// Grain types of every silo; null: silo_world's test grains.
  std::function<void(grain_registry&, const silo_address&)> grains;
  /// The application's hubs, by pattern (application_hub.hpp `spawn_hub_table`). The
  /// driver's requests and heartbeats go to the node hubs `node/Org/N{i}`, so a pattern
  /// `node/Org/*` serves them. Landings at these hubs are not observed: a request ends with
  /// its response or NACK, a heartbeat to them with a NACK or `unconfirmed`.
  std::vector<std::pair<std::string, sim_hub_maker>> hubs;
};

/// Where the application's answering node hubs live in a simulated run (file comment).
struct sim_topology {
  /// False: shared node hub endpoints. True: the users' topology (hubs inside silos).
  bool answering_hubs_in_silos = false;
  /// With `answering_hubs_in_silos`: the application of every silo incarnation.
  sim_application app;

  /// The users' topology with the echo application.
  static sim_topology users() {
    sim_topology t;
    t.answering_hubs_in_silos = true;
    return t;
  }
};

/// One timed network fault of a simulated run (sim_network.hpp). Endpoints are scenario
/// silo names or pure clients `client{k}`, resolved to their incarnation when applied.
struct net_fault {
  enum class what : uint8_t {
    delay,     ///< link a -> b takes [min_ms, max_ms] per frame from now on
    partition, ///< frames between a and b are held (both directions)
    heal,      ///< the partition between a and b ends
    drop,      ///< the next `count` frames a -> b are discarded
  };
  what kind = what::delay;
  int64_t at_ms = 0; ///< since the traffic started
  std::string a;
  std::string b;
  int64_t min_ms = 0;
  int64_t max_ms = 0;
  uint64_t count = 1;
};

/// Renders `at_ms kind a b ...` (one line, for event lists and traces).
std::string to_string(const net_fault& f);

/// Options of one simulated run.
struct sim_options {
  sim_topology topology;
  std::vector<net_fault> net_faults; ///< applied in `at_ms` order
  /// Link latencies (ms, per frame from the seeded PRNG): a graceful stop then takes virtual
  /// time (the quiescence hold waits for legs on the wire), so traffic flows during it.
  int64_t link_latency_min_ms = 2;
  int64_t link_latency_max_ms = 10;
  /// After the traffic and every roll and fault step: at most this long until quiescent.
  int64_t drain_ms = 60000;
};

/// What one simulated run produced.
struct sim_run {
  mainjob::report rep;
  std::string ledger_lines;        ///< every ledger event as a JSON line
  uint64_t ledger_digest = 0;      ///< FNV-1a 64 of `ledger_lines`
  uint64_t network_digest = 0;     ///< `sim_network` trace digest
  bool quiescent = false;          ///< the driver ended with nothing in flight
  int64_t end_ms = 0;              ///< driver time at the end
  std::vector<std::string> stop_log_failures; ///< stopped silos without the quiescence line
  std::vector<std::string> abandoned;         ///< lines about abandoned or stuck legs
  std::vector<std::string> resent_not_landed; ///< re-sent requests whose chain did not land
  std::vector<std::string> deadline_not_landed; ///< requests ended by their deadline, never landed
  uint64_t deadlines = 0;          ///< requests ended by their deadline
  uint64_t resent_requests = 0;    ///< re-sent requests seen in the ledger
  size_t stops = 0;                ///< gracefully stopped incarnations
  /// Kills applied, in order: (silo name, driver ms).
  std::vector<std::pair<std::string, int64_t>> kills;
  /// Host stop answers per incarnation (`{name}#{generation}` -> driver ms of the first);
  /// a second signal's answer is counted in `second_answers`.
  std::vector<std::pair<std::string, int64_t>> stop_answers;
  size_t second_answers = 0;
  /// Log lines of a silo's routing components after its host stop answered (`{silo} +{ms}
  /// ms {component}: {text}`): routing code that still ran.
  std::vector<std::string> routing_after_stop;
  int64_t real_ms = 0;
};

/// The main job's roll scenario, small enough for a unit test (S12.58): 3 silos, 2 pure
/// clients hosting the portal hubs (heartbeat and request senders, stream subscribers),
/// co-hosted owner hubs (frame senders, through the co-hosted entry) and node hubs (request
/// targets answering through their silo), 20 streams, 500 paced deliveries/s for 16 s of
/// virtual traffic; A, B and C in turn are stopped gracefully and restarted with the next
/// generation. A request may end by its deadline (no `expect.max_request_deadlines`).
mainjob::scenario sim_roll_scenario(uint64_t seed);

/// Runs `s` on a fresh fixture and world (seed = the scenario's seed). Throws
/// `std::runtime_error` when the world cannot be set up (a silo that does not start).
sim_run run_sim(const mainjob::scenario& s, const sim_options& o = {});

/// `run_sim` with only a topology.
sim_run run_sim(const mainjob::scenario& s, sim_topology topo);

} // namespace cafmesh::mainjob
