#pragma once

/// @file
/// The main job's scenario model: what cafmesh-demo and
/// cafmesh-client run — topology, traffic mix and rate, the rolling restart, injected faults,
/// configuration overrides and the stated expected outcome. Loaded from JSON with strict
/// validation; examples/README.md ("Scenarios") documents every key, and the files there are the
/// shipped scenarios. `default_scenario_text()` is examples/scenarios/roll-three-silos.json,
/// compiled in at build time (so the file and the embedded default cannot drift).
///
/// Refusals follow the config loader (config/include/cafmesh/config/load.hpp): one line per
/// problem, `{pointer}: expected {what}, got {found}`, `{pointer}: unknown key, did you mean
/// "{known}"?`, `{pointer}: duplicate key`, in document order; missing required keys after the
/// other errors of their object; relations between keys only once every key is valid on its
/// own. Errors inside `config` are the config loader's own lines with `/config` in front.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cafmesh/config/load.hpp"
#include "cafmesh/routing/verdict.hpp"

namespace cafmesh::mainjob {

/// Where the portal hubs (stream subscribers, request and heartbeat senders) live.
enum class sender_placement : uint8_t {
  pure_client, ///< in the pure-client process(es)
  /// in the silo processes, using the co-hosted routing entry (docs/behaviour/routing.md#the-entry)
  co_hosted,
  both,        ///< even portal hubs co-hosted, odd ones in pure clients
};

/// Renders `pure_client`, `co_hosted` or `both`.
std::string to_string(sender_placement x);

/// Relative weights of the three kinds of paced traffic (docs/testing.md#the-simulation-harness
/// "Traffic generators").
struct traffic_weights {
  int64_t frame = 80;     ///< node-stream frames, owner hub -> pod-hub subscribers
  int64_t heartbeat = 10; ///< one-way, answer-suppressed, no key
  int64_t request = 10;   ///< requests to node hubs
};

/// Least payload sizes in bytes (a payload whose natural JSON is longer keeps its length).
struct payload_sizes {
  int64_t frame = 256;
  int64_t heartbeat = 64;
  int64_t request = 128;
};

/// One burst (`traffic.bursts`): `count` requests from the portal hubs to the node hubs,
/// spread evenly over `within_ms` from `at_ms`
/// (docs/behaviour/directory-and-placement.md#the-incidents-behind-this-design "a busy cluster":
/// 331 deliveries within about 50 ms). Delivery k of a burst (k from 0) is due at
/// `at_ms + k * within_ms / count`, from portal hub `k % portal_hubs` to node hub
/// `k % node_hubs`; bursts are on top of the paced rate and draw no random numbers.
struct burst_spec {
  int64_t at_ms = 0;      ///< since the traffic started; < duration_s * 1000
  int64_t count = 1;      ///< 1 .. 100,000
  int64_t within_ms = 50; ///< >= 0
};

/// Section `traffic`.
struct traffic_spec {
  int64_t streams = 100;               ///< owned streams; stream s is owned by owner hub s % owner_hubs
  int64_t subscribers_per_stream = 2;  ///< pod-hub subscribers of every stream (<= portal_hubs)
  int64_t owner_hubs = 10;             ///< node hubs `node/Owner/O{i}` owning the streams
  int64_t node_hubs = 20;              ///< node hubs `node/Org/N{i}`: request and heartbeat targets
  int64_t portal_hubs = 50;            ///< pod hubs `portal/user{i}/tab1`: subscribers and senders
  sender_placement senders = sender_placement::pure_client;
  traffic_weights weights;
  payload_sizes payload_bytes;
  /// the sender's deadline per request delivery (docs/behaviour/routing.md#nacks)
  int64_t request_deadline_ms = 30000;
  /// re-sends after shutting_down / unavailable (docs/testing.md#the-simulation-harness)
  int64_t request_max_resends = 5;
  /// Re-sends of one delivery the entry refused as overloaded (verdict `unavailable`, text
  /// "overloaded"), each after the refusal's `retry_after_ms`; the refusal after the last
  /// one ends the chain (counted in `overload_resends_exhausted`).
  int64_t overload_max_resends = 20;
  std::vector<burst_spec> bursts;      ///< request bursts on top of the paced rate
};

/// One step of `roll.steps`: silo `silo` is stopped gracefully at `at_ms` whatever the
/// other steps are doing (so the stop windows of two steps may overlap) and restarted
/// `restart_delay_ms` after its own stop completed.
struct roll_step_spec {
  std::string silo;
  int64_t at_ms = 0;            ///< since the traffic started; < duration
  int64_t restart_delay_ms = 1000;

  friend bool operator==(const roll_step_spec& x, const roll_step_spec& y) {
    return x.silo == y.silo && x.at_ms == y.at_ms && x.restart_delay_ms == y.restart_delay_ms;
  }
};

/// Section `roll`: each silo in `order` in turn is stopped gracefully
/// (docs/behaviour/lifecycle.md#the-host) and restarted with the next generation
/// (docs/behaviour/envelope.md#silo-addresses-and-activations). Silo i+1 is stopped `interval_ms`
/// after silo i's new incarnation is Active; a silo restarts `restart_delay_ms` after its stop
/// completed. An empty `order` means no sequential roll. `steps` instead gives each stop its own
/// start time, so stops may overlap (`order` and `steps` are not used together).
struct roll_spec {
  std::vector<std::string> order;  ///< silo names; repeats allowed
  std::vector<roll_step_spec> steps; ///< independent stops; each silo at most once
  int64_t first_stop_at_ms = 5000; ///< since the traffic started; < duration
  int64_t restart_delay_ms = 1000;
  int64_t interval_ms = 5000;
};

/// One injected fault (`faults` array), by `kind`:
/// - `stall`: every message to the silo and from its actors is held from `at_ms` for
///   `for_ms` (docs/testing.md#the-simulation-harness fault injection); an undetected stall is
///   never declared Dead by the failure detector (docs/behaviour/membership.md#leaving, S12.59);
/// - `kill`: the silo ends at `at_ms` without a lifecycle stop (a crash, `kill -9` of its
///   process); with `restart_after_ms` it starts again with the next generation that long
///   after the kill;
/// - `second_signal`: a second stop request reaches the silo at `at_ms` (the second SIGTERM
///   of an operator): a stop in progress escalates to non-graceful; without a stop in
///   progress it is a non-graceful stop.
struct fault_spec {
  std::string kind = "stall";
  std::string silo;
  int64_t at_ms = 0;
  int64_t for_ms = 1;      ///< `stall` only
  bool detected = false;   ///< `stall` only
  std::optional<int64_t> restart_after_ms; ///< `kill` only; none: not restarted
};

/// Section `expect`: machine-checked parts of the expected outcome, on top of the fixed rule
/// (lost = 0, order violations = 0, stale drops = 0, no delivery with two terminal outcomes).
struct expectation {
  std::map<routing::verdict, int64_t> max_nacked; ///< at most this many NACKs per verdict
  std::map<routing::verdict, int64_t> min_nacked; ///< at least this many NACKs per verdict
  std::optional<int64_t> max_request_resends_exhausted; ///< requests still transient after all re-sends
  std::vector<std::string> forbidden_nack_texts; ///< no NACK message may contain any of these
  /// Every NACK (and suppressed failure) with this verdict must contain one of these texts,
  /// e.g. `failed` -> {"timed out", "expired"}: the only failures allowed are response
  /// timeouts (docs/behaviour/classification.md#why-a-response-timeout-is-never-resent).
  std::map<routing::verdict, std::vector<std::string>> required_nack_texts;
  /// At most this many requests may end by their deadline (0 for a healthy graceful roll:
  /// every request is answered or NACKed).
  std::optional<int64_t> max_request_deadlines;
  /// The accepted deliveries' latency p99 (first landing - accepted) must not exceed this.
  std::optional<int64_t> max_p99_ms;
  /// At least this many deliveries must have been refused as overloaded (a scenario that
  /// offers more than the mesh carries shows that the bound was reached).
  std::optional<int64_t> min_overload_refusals;
  /// The carried rate must be at least this fraction of the offered rate (report.hpp
  /// `rates`), 0 < r <= 1; none: the report's default (0.95).
  std::optional<double> min_carried_ratio;
};

/// One scenario (see the file comment and examples/README.md, "Scenarios").
struct scenario {
  std::string name;             ///< required, non-empty
  std::string description;
  std::string expected_outcome; ///< required, non-empty: the outcome the scenario states
  /// seeds the traffic generator (docs/testing.md#the-simulation-harness determinism rules)
  uint64_t seed = 42;
  int64_t duration_s = 60;      ///< paced traffic lasts this long; >= 1
  int64_t rate_per_s = 2000;    ///< paced deliveries per second; 1 .. 1,000,000
  std::vector<std::string> silos{"A", "B", "C"}; ///< `topology.silos`: distinct names
  int64_t pure_clients = 1;     ///< `topology.pure_clients`
  traffic_spec traffic;
  roll_spec roll;
  std::vector<fault_spec> faults;
  /// `config`: a partial configuration document (any section except `mesh`, which the demo
  /// sets per process), compact JSON text; `{}` when absent. Validated by the config loader.
  std::string config_json = "{}";
  expectation expect;
};

/// The outcome of a scenario load: `ok` with `value`, or `errors` (lines as described in the
/// file comment) with `value` left at `scenario{}`.
struct scenario_result {
  bool ok = false;
  scenario value;
  std::vector<std::string> errors;

  /// All errors joined by newlines.
  std::string message() const;
};

/// Parses and validates a scenario document given as text.
scenario_result parse_scenario(const std::string& json_text);

/// Reads `path` and parses it; an unreadable file gives the single error
/// `cannot read scenario file "{path}": {strerror text}`.
scenario_result load_scenario_file(const std::string& path);

/// The embedded default scenario's text: examples/scenarios/roll-three-silos.json as it was
/// at build time.
const std::string& default_scenario_text();

/// The embedded default scenario, parsed (it is valid: a unit test checks it).
scenario default_scenario();

/// Command-line overrides (`--seed`, `--duration-s`, `--rate`, `--request-deadline-ms`,
/// `--time-scale`).
struct scenario_overrides {
  std::optional<uint64_t> seed;
  std::optional<int64_t> duration_s;
  std::optional<int64_t> rate_per_s;
  std::optional<int64_t> request_deadline_ms; ///< `--request-deadline-ms` (traffic.request_deadline_ms)
  /// `--time-scale F`, 1 .. 100, applied after the others: every time of the traffic and the
  /// roll is multiplied by F (`duration_s`, the roll's times, the request deadline,
  /// `expect.max_p99_ms`) and the rate divided by F (at least 1 per second), so the same
  /// deliveries are planned over a run F times as long. For a machine F times slower than the
  /// scenario was written for (an instrumented build: docs/testing.md#live-runs-under-instrumentation). The
  /// silos' own timers (`config`) are not scaled, so a scenario with faults or bursts, whose
  /// lengths are measured against those timers, takes no scale above 1.
  std::optional<int64_t> time_scale;
};

/// Applies `o` to `s` and re-checks what they touch. Errors name the option:
/// `--duration-s: expected an integer >= 1, got 0`, `--rate: expected an integer from 1 to
/// 1000000, got 0`, and the relation
/// `--duration-s: expected more than roll.first_stop_at_ms (5000 ms) of traffic, got 5 s`,
/// `--time-scale: expected an integer from 1 to 100, got 0`, `--time-scale: expected a
/// scenario without faults and bursts when above 1 (...), got 1 fault(s) and 0 burst(s)`.
/// On any error `s` is left unchanged. `with_roll` = false skips the roll relation (for
/// cafmesh-client, which sends traffic but rolls nothing).
std::vector<std::string> apply_overrides(scenario& s, const scenario_overrides& o,
                                         bool with_roll = true);

/// Renders the scenario as a JSON document in the shape `parse_scenario` reads (every key,
/// 2-space indent, ending in a newline); `parse_scenario(to_json_text(s))` gives back `s`.
std::string to_json_text(const scenario& s);

/// The configuration of one process of the scenario: the `config` overrides plus
/// `mesh.process_role` = `role` and `mesh.name` = `name`, loaded by the config loader.
config::load_result process_config(const scenario& s, config::process_role role,
                                   const std::string& name);

/// Address of node hub i: `node/Org/N{i}`.
std::string node_hub_address(int64_t i);

/// Address of owner hub i: `node/Owner/O{i}`.
std::string owner_hub_address(int64_t i);

/// Address of portal hub i: `portal/user{i}/tab1`.
std::string portal_hub_address(int64_t i);

/// Stream id (ordering key) of stream s: `stream-{s}`.
std::string stream_id(int64_t s);

/// Where portal hub i lives: `silo:{name}` or `client:{n}` (n from 1), by `traffic.senders`:
/// co_hosted -> silo i % silos; pure_client -> client i % pure_clients + 1; both -> even i
/// on silo (i / 2) % silos, odd i on client (i / 2) % pure_clients + 1.
std::string portal_origin(const scenario& s, int64_t i);

} // namespace cafmesh::mainjob
