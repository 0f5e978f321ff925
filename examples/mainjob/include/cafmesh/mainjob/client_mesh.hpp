#pragma once

/// @file
/// The mesh of `cafmesh-client`: one pure-client
/// process that joins an EXISTING cluster (`network.primary_host`:`network.primary_port`,
/// e.g. three `cafmesh-node --app echo` silos), hosts the hubs of its traffic and feeds the
/// demo driver (`demo_driver`, the run loop of cafmesh-demo: advance at each wake-up,
/// events to the driver, finish -> report).
///
/// ## What the client hosts
/// Every sender of the plan and every target whose address type is stream-routed
/// (`routing.stream_routed_address_types`, e.g. `portal/user1/tab1`) is a
/// `routing::hub_endpoint` registered as a local route; a hub answers what lands on it
/// (`respond`) only when the trace sends it requests (an answering hub would send a response
/// for every frame too). For the scenario
/// mix that is every portal hub AND every owner hub `node/Owner/O{i}`: the frames' owners
/// live in the client too. Node hubs `node/Org/N{i}` are the silos' application hubs
/// (`cafmesh-node --app echo`).
///
/// The process runs TWO pure clients (each its own network endpoint on an OS-chosen port,
/// message centre, membership agent and routing service): the stream-routed hubs register
/// with the first, which attaches them at its gateway (docs/behaviour/routing.md#the-entry inbound
/// attach), and every other sender (the owners) registers with the second. A delivery whose target
/// has a local route in the sender's own routing service is handed over in-process
/// (docs/behaviour/routing.md#the-entry); with two routing services an owner's frame to a portal
/// hub leaves through `routing/default` at a gateway and comes back through the portal's pod hub,
/// as it would from another process. (A trace in which one stream-routed hub sends to another is
/// still handed over in-process.)

/// ## What the client can observe (docs/behaviour/routing.md#nacks)
/// - requests: the response (counted as landed), a NACK or the deadline;
/// - one-way deliveries to a hub of the client (frames to portal hubs): the landing, or a
///   NACK;
/// - one-way deliveries to a hub in another process (heartbeats, trace posts to node hubs):
///   a landing there sends nothing back and an answer-suppressed delivery is never NACKed.
///   These end in a NACK if one comes, else `unconfirmed` once the run is over
///   (`pace_settings::unconfirmed_settle_ms` after every observable delivery ended):
///   neither landed nor lost (ledger.hpp).
///
/// ## Limits
/// No roll and no faults: the client cannot stop, restart or stall silos
/// (`client_scenario_errors`). The scenario's `config` section is not used: the client runs
/// with its own `--config`. A NACK of an owner's frame travels to the sender's node hub
/// (docs/behaviour/routing.md#nacks rung b: `node/Owner/O{i}` is not stream-routed), which the
/// silos' echo application takes: the client does not see it, and that frame counts as lost.

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cafmesh/config/mesh_config.hpp"
#include "cafmesh/mainjob/report.hpp"
#include "cafmesh/mainjob/run_loop.hpp"
#include "cafmesh/mainjob/scenario.hpp"
#include "cafmesh/mainjob/trace_replay.hpp"
#include "cafmesh/mainjob/traffic.hpp"

namespace cafmesh::mainjob {

/// What the client sends: the scenario's mix, or a trace when `trace` is set (the scenario
/// then only names the run and gives the request deadline).
struct client_traffic {
  scenario s;
  std::optional<std::vector<trace_entry>> trace;
  std::string id_prefix = "client"; ///< ids `{id_prefix}-{n}`: unique in the cluster
  std::string origin = "client:client"; ///< the ledger origin of trace deliveries
};

/// How `run_client` reports progress and ends.
struct client_run_settings {
  /// Progress lines, the drain bound after the traffic, and `unconfirmed_settle_ms`: how
  /// long deliveries without an observable success may still get a NACK, after every
  /// observable delivery ended, before they are recorded `unconfirmed` (2 s here).
  pace_settings pace = default_pace();
  std::ostream* ledger_out = nullptr; ///< every ledger event as a JSON line; null: none
  int64_t wait_active_ms = 30000;     ///< bound of the wait for an Active gateway silo
  /// Called with the report as soon as it is made, before the client is torn down.
  std::function<void(const report&)> on_report;
  int64_t teardown_timeout_ms = 20000; ///< then the process exits with the report's code

  static pace_settings default_pace() {
    pace_settings p;
    p.unconfirmed_settle_ms = 2000;
    return p;
  }
};

/// Why the client refuses scenario `s`, one line each with the JSON pointer (empty: fine):
/// `/roll/order` (a roll), `/faults` (stall faults), `/traffic/senders` (not `pure_client`).
std::vector<std::string> client_scenario_errors(const scenario& s);

/// The addresses the client hosts for `t` (see the file comment), rendered.
std::set<std::string> client_hosted_hubs(const client_traffic& t,
                                         const std::vector<std::string>& stream_routed_types);

/// True when the type of `address` (`type/id`) is one of `types`
/// (`routing.stream_routed_address_types`).
bool is_stream_routed(const std::string& address, const std::vector<std::string>& types);

/// True when the client can observe `d`'s success: a request (its response), or a delivery
/// to one of the client's `hosted` hubs (its landing).
bool client_observes_success(const planned_delivery& d, const std::set<std::string>& hosted);

/// The result of `run_client`.
struct client_result {
  std::optional<report> rep; ///< none: nothing was sent (the reason was printed)
  int exit_code = exit_codes::failed;
};

/// Joins the cluster of `mc` (a pure client; `network.primary_port` > 0), waits until its
/// membership shows an Active gateway silo (else exit 1, printed), hosts the hubs, sends
/// `t`, records every outcome and evaluates the run. Exit code: the report's.
client_result run_client(const config::mesh_config& mc, const client_traffic& t,
                         const client_run_settings& rs);

} // namespace cafmesh::mainjob
