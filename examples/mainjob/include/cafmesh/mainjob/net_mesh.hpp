#pragma once

/// @file
/// The in-process mesh of cafmesh-demo: the scenario's silos,
/// each its own CAF actor system whose message centre talks to the others over loopback TCP
/// through the io middleman (`lifecycle::silo_builder` with `network()`), plus one pure-client actor system,
/// all in this process, driven by `demo_driver` in wall-clock time.
///
/// ## Topology
/// The users' topology: the hubs that answer requests live inside the silos that are rolled.
/// - **Client system** (`client-1`): the membership oracle's host (the network's primary; a
///   development oracle may live in any process, and the pure client is where a user would
///   keep it: it hosts no hub that answers requests, and a production cluster keeps the
///   table on an external store instead), a pure client (message centre, membership agent,
///   routing service with role `pure_client` on its own network link), the portal hubs
///   whose `portal_origin` is a client (local routes of the client's routing service) and
///   the owner hubs `node/Owner/O{i}` (which send through a home silo's co-hosted entry).
/// - **Silo systems** A, B, C …: one `silo_builder` silo each, with the silo's own application
///   in the silo's actor system: an echo hub factory (`spawn_echo_hub_factory`) that creates
///   the answering hub of a node hub `node/Org/N{i}` on its first activation on that silo,
///   sending its responses through that silo; the owner hubs are handed over from the shared
///   map. When a silo's host stop has answered, its application ends (its hubs with it);
///   a node hub activated there re-activates on another silo, whose application creates a
///   hub of its own. Every silo-to-silo and client-to-gateway message crosses TCP.
///
/// ## Hubs and homes
/// Owner hubs send their frames through the co-hosted entry (docs/behaviour/routing.md#the-entry)
/// of a home silo (owner i starts on silo i % n), where they are registered as local routes. When
/// a silo is stopped its owner hubs hold their frames until the silo's stage Active has stopped
/// (the quiescence hold released: every leg the old home accepted has ended) and then move,
/// so a stream's frames never enter two router cores at once and per-stream order holds
/// across the move (docs/behaviour/routing.md#the-ordered-dispatcher,
/// docs/behaviour/sync-guard.md). A killed silo's owners move at once.
///
/// ## `--processes`
/// `run_processes` runs the same driver on a mesh whose silos are `cafmesh-node` processes
/// (demo_process.hpp has the protocol): this process keeps the client system (and the
/// oracle) and the driver; every node process hosts its own answering node hubs, and owner
/// hubs (and co-hosted portal hubs) live in their home silo's process. A roll stop is
/// SIGTERM; a stop has ended when the process has exited; a `kill` fault is SIGKILL and a
/// `second_signal` a second SIGTERM.
///
/// ## Timing and the end of the run
/// The driver's clock is milliseconds since the traffic started (steady clock). Once the
/// paced traffic, the roll and the faults are done, the run waits for the last outcomes up
/// to `drain_timeout_ms`; anything still without a terminal outcome then counts as lost.

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>

#include "cafmesh/mainjob/progress.hpp"
#include "cafmesh/mainjob/report.hpp"
#include "cafmesh/mainjob/scenario.hpp"

namespace cafmesh::mainjob {

/// How `run_in_process` reports progress and ends.
struct run_settings {
  progress_mode progress = progress_mode::automatic; ///< `--progress`
  bool is_tty = false;                               ///< standard output is a terminal
  int width_cols = 0; ///< the terminal's width (progress_printer); 0: unknown or no terminal
  std::ostream* out = nullptr;                       ///< progress lines; null: none
  std::ostream* ledger_out = nullptr; ///< every ledger event as a JSON line; null: none
  int64_t drain_timeout_ms = 60000; ///< after the traffic: bound of the wait for outcomes
  int64_t progress_interval_ms = 1000; ///< plain progress lines (a terminal: 250 ms)
  /// Called with the report as soon as it is made, before the mesh is torn down.
  std::function<void(const report&)> on_report;
  /// Bound of the teardown after the report: when the actor systems are not down by then,
  /// the process exits at once (`std::_Exit`) with the report's exit code.
  int64_t teardown_timeout_ms = 20000;
};

/// Runs scenario `s` on the in-process mesh (see the file comment) and evaluates it. None
/// when the mesh could not start (a port that cannot be bound, a silo whose start failed
/// within 30 s): the reason is printed on standard error and no traffic was sent.
std::optional<report> run_in_process(const scenario& s, const run_settings& rs);

/// Runs scenario `s` on the multi-process mesh (`cafmesh-demo --processes`):
/// every silo is a `cafmesh-node` process started from `node_binary` (demo_process.hpp; its
/// configuration file and output go to a fresh `/tmp/cafmesh-demo-*` directory, removed
/// after a clean run), this process is the pure client: it hosts the oracle (the primary),
/// the client's portal hubs and the driver. Each node process hosts its own answering node
/// hubs; owner hubs (and co-hosted portal
/// hubs) live in their home silo's process and send through its co-hosted entry; the demo
/// reaches them and receives their events through CAF io. A roll stop is SIGTERM to the
/// node process (graceful host stop); the stop has ended when the process exits; the restart
/// is a new process with a new generation. Owners homed on a stopping silo move (a new hub
/// endpoint in the next available silo's process) once its stage Active has stopped. The
/// report's `entries` are read from every silo's routing service. None when the mesh could
/// not start (printed).
std::optional<report> run_processes(const scenario& s, const run_settings& rs,
                                    const std::string& node_binary);

} // namespace cafmesh::mainjob
