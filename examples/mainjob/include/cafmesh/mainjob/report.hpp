#pragma once

/// @file
/// The final report of cafmesh-demo: a table for people and a
/// JSON document for tools (schema `cafmesh.demo.report/1`, documented in
/// examples/mainjob/REPORT.md), and the exit-code rule.
///
/// Checks, in this order. Fixed (every scenario): `lost = 0`, `order violations = 0`,
/// `stale frames dropped = 0`, `one terminal outcome per delivery` (no delivery with two or
/// more), `no NACK for an answer-suppressed delivery` (docs/behaviour/envelope.md#the-envelope),
/// and when measured
/// `every mirror ends equal to its owner` (S12.58) and `routing/default calls from
/// co-hosted entries = 0` (docs/behaviour/routing.md#the-entry, `report_input::entries`) and `every
/// rolled node process exited 0` (`report_input::node_exits`). Then the scenario's
/// `expect` section: `NACKed {verdict} <= {n}` per `max_nacked` entry, `NACKed {verdict} >=
/// {n}` per `min_nacked` entry, `request chains exhausted <= {n}`, and
/// `no NACK text contains "{text}"` per forbidden text, `requests ended by their deadline <=
/// {n}` (`max_request_deadlines`), `latency p99 <= {n} ms` (`max_p99_ms`), `carried rate >=
/// {r} of offered` (`min_carried_ratio`, 0.95 when not given; `rates`). When deliveries
/// were refused as overloaded, `every overload refusal carries retry_after_ms`; with
/// `kill` / `second_signal` faults, `every fault was injected`. The report passes iff every
/// check holds; exit code 0 then, else 1 (`exit_codes::failed`).

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "cafmesh/mainjob/ledger.hpp"
#include "cafmesh/mainjob/scenario.hpp"
#include "cafmesh/mainjob/timeline.hpp"
#include "cafmesh/mainjob/traffic.hpp"

namespace cafmesh::mainjob {

/// Process exit codes of cafmesh-node, cafmesh-client and cafmesh-demo (examples/README.md).
namespace exit_codes {

inline constexpr int ok = 0;             ///< clean: checks passed / clean stop / printed what was asked
inline constexpr int failed = 1;         ///< a report check failed / the stop was not clean
inline constexpr int usage = 2;          ///< bad command line, configuration, scenario or trace file

} // namespace exit_codes

/// One silo's graceful stop during the roll, as measured by the driver.
struct silo_stop_record {
  std::string name;                 ///< scenario silo name, e.g. `A`
  /// generation that was stopped (docs/behaviour/envelope.md#silo-addresses-and-activations)
  uint64_t generation_before = 0;
  std::optional<uint64_t> generation_after; ///< generation of the restart, none if not restarted
  int64_t stop_started_ms = 0;      ///< when the stopping signal was sent, since traffic start
  /// how long the quiescence participant held
  /// (docs/behaviour/quiescence.md#the-participant-at-stage-active)
  std::optional<int64_t> quiescence_hold_ms;
  /// stopping signal -> host stop complete (docs/behaviour/lifecycle.md#the-host)
  std::optional<int64_t> stop_duration_ms;
  uint64_t landed_while_out = 0; ///< deliveries landed (or answered) from the stopping signal until the new generation was Active
  /// When the restarted generation reported Active, since traffic start; none if it never did.
  std::optional<int64_t> active_again_ms;

  friend bool operator==(const silo_stop_record& x, const silo_stop_record& y) {
    return x.name == y.name && x.generation_before == y.generation_before
           && x.generation_after == y.generation_after && x.stop_started_ms == y.stop_started_ms
           && x.quiescence_hold_ms == y.quiescence_hold_ms
           && x.stop_duration_ms == y.stop_duration_ms
           && x.landed_while_out == y.landed_while_out
           && x.active_again_ms == y.active_again_ms;
  }
};

/// One sender entry of the mesh as its process counted it (docs/behaviour/routing.md#the-entry):
/// the routing service a group of origins sent through, with two of its counters
/// (`routing_service_stats`).
struct entry_use {
  std::string process;  ///< e.g. `silo A gen 1764465600123` or `client-1`
  std::string origins;  ///< ledger origins that send through it, e.g. `grain` or `client:1`
  std::string entry;    ///< `co-hosted` (silo routing service -> router core) or `pure_client`
  uint64_t delivered = 0;             ///< deliveries the entry took (`delivered`)
  /// dispatch attempts it made through `routing/default`, each retry counted (`client_attempts`)
  uint64_t routing_default_calls = 0;

  friend bool operator==(const entry_use& x, const entry_use& y) {
    return x.process == y.process && x.origins == y.origins && x.entry == y.entry
           && x.delivered == y.delivered && x.routing_default_calls == y.routing_default_calls;
  }
};

/// Everything a report is made of.
struct report_input {
  std::string scenario_name;
  uint64_t seed = 0;
  int64_t duration_s = 0;
  int64_t rate_per_s = 0;
  std::string mode; ///< `in_process`, `processes` or `client`
  ledger_summary ledger;
  traffic_counters traffic;
  std::vector<silo_stop_record> silos;
  expectation expect;
  /// Receivers' mirrors whose final version or state differs from their owner's (S12.58
  /// "every mirror ... ends equal to its owner's state"); none when not measured.
  std::optional<uint64_t> mirrors_diverged;
  /// Every sender entry, measured in its process (`cafmesh-demo --processes`); empty when not
  /// measured. With a `co-hosted` one the check `routing/default calls from co-hosted
  /// entries =
  /// 0` is added (docs/behaviour/routing.md#the-entry: co-hosted hubs never place routing/default).
  std::vector<entry_use> entries;
  /// `cafmesh-demo --processes`: node processes stopped by the roll (SIGTERM) that exited
  /// during the run, and how many of them did not exit 0; none when not measured. When
  /// measured the check `every rolled node process exited 0` is added.
  std::optional<uint64_t> node_exits;
  uint64_t node_exits_unclean = 0;
  /// The scenario has `kill` or `second_signal` faults: the check `every fault was injected`
  /// is added, failing when the mesh could not inject `faults_not_injected` of them.
  bool has_faults_to_inject = false;
  uint64_t faults_not_injected = 0;
  /// Every fault step the driver took (kill, restart, stall, unstall, second signal), in order.
  std::vector<fault_mark> faults;
  /// The run per second (`build_timeline`), for `render_html`; empty when not built.
  timeline series;
};

/// Requests by how they ended: `answered` (their response), `unanswered` (a NACK, their
/// deadline, or nothing yet).
struct request_tally {
  uint64_t answered = 0;
  uint64_t unanswered = 0;
};

/// The requests of `in` by how they ended.
request_tally requests_of(const report_input& in);

/// Offered and carried, over the seconds of paced traffic (`duration_s`):
/// - offered: the distinct deliveries the application wanted carried, i.e. every delivery
///   of the schedule (`traffic.paced` + `traffic.burst`, replayed trace lines included).
///   Re-sends, fresh Fulls after a NACK and re-sends after an overload refusal are the
///   sender's repairs of one of these, not more demand, so they are not offered again;
/// - carried: deliveries whose terminal outcome is a landing or a request's response (each
///   stands for the one scheduled delivery of its re-send chain), plus the frames folded
///   into a repair Full that brought their content to the receiver
///   (`traffic.withheld_frames_carried`). Frames and heartbeats a sender shed while backing
///   off after an overload refusal are not carried;
/// - one-way deliveries whose success the sender cannot observe (`unconfirmed`) are taken
///   out of both: the run cannot tell;
/// - sent: deliveries handed to the mesh, re-sends and refused ones included (`accepted`).
/// The ratio carried / offered is what `carried rate >= {r} of offered` checks.
struct rates {
  uint64_t offered = 0;
  uint64_t carried = 0;
  double offered_per_s = 0;
  double carried_per_s = 0;
  double sent_per_s = 0;
  std::optional<double> carried_ratio; ///< carried / offered; none when nothing was offered
};

/// The rates of `in` over its `duration_s`.
rates rates_of(const report_input& in);

/// The carried ratio a scenario expects when its `expect` section does not say
/// (`expect.min_carried_ratio`).
inline constexpr double default_min_carried_ratio = 0.95;

/// One evaluated check.
struct report_check {
  std::string name;   ///< e.g. `lost = 0`
  bool ok = false;
  std::string detail; ///< measured value and samples, e.g. `2 (demo-7, demo-9)`
};

/// An evaluated report.
struct report {
  report_input input;
  std::vector<report_check> checks;
  bool passed = false;
  int exit_code = exit_codes::failed;
};

/// Evaluates every check (see the file comment).
report make_report(report_input in);

/// One table of the report (`report_tables`): rows of cells; with `header` the first row
/// names the columns.
struct report_table {
  bool header = false;
  std::vector<std::vector<std::string>> rows;
};

/// The report's tables in the order the text table prints them (totals, silo stops,
/// origins, node exits, sender entries; the checks come apart, `report::checks`). Tables
/// with nothing to show are left out.
std::vector<report_table> report_tables(const report& r);

/// Renders `x` with up to 3 decimals and no trailing zeros, e.g. `0.95`, `1`, `0.333`.
std::string decimal_text(double x);

/// Renders `x` with exactly one decimal, e.g. `2000.0` (rates in the tables, coordinates of
/// the HTML page's charts).
std::string one_decimal_text(double x);

/// The report as an aligned text table ending in a `result: PASS (exit 0)` or
/// `result: FAIL (exit 1)` line.
std::string render_table(const report& r);

/// The report as JSON (schema `cafmesh.demo.report/1`, see REPORT.md), 2-space indent,
/// ending in a newline.
std::string render_json(const report& r);

/// Writes `render_json(r)` to `path`. False, after the line `{program}: cannot write report
/// file "{path}"` on `err`, when the file cannot be written.
bool write_report_file(const std::string& path, const report& r, const std::string& program,
                       std::ostream& err);

} // namespace cafmesh::mainjob
