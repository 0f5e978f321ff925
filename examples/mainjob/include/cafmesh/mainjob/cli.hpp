#pragma once

/// @file
/// The command lines of cafmesh-node, cafmesh-client and cafmesh-demo (CLI11), kept in the
/// library so that tests can parse them and check `--help`. Every option is documented in
/// its help text; examples/README.md repeats them with the exit codes.

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cafmesh/mainjob/progress.hpp"
#include "cafmesh/mainjob/scenario.hpp"

namespace cafmesh::mainjob {

/// cafmesh-node's options.
struct node_options {
  std::string config_path;   ///< `--config FILE` (required)
  bool print_config = false; ///< `--print-config`
  /// `--demo-control HOST:PORT`: run as a silo of `cafmesh-demo --processes` (demo_process.hpp)
  std::optional<std::string> demo_control;
  std::string demo_silo;     ///< `--demo-silo NAME`: the scenario's silo name (with the above)
  /// `--app NAME`: application hubs a silo hosts; "" = none (not_found), `echo` =
  /// `spawn_echo_hub_factory` (mesh_parts.hpp)
  std::string app;
  /// `--admin-port PORT`: serve the admin endpoint (`/metrics`, `/healthz/*`,
  /// `/cluster/members`) on `admin.host`:PORT; 0 = a port the OS chooses (printed as
  /// `ADMIN host:port`). None: as the configuration's `admin` section says.
  std::optional<uint16_t> admin_port;
  /// `--scheduler auto|stealing|sharing`: CAF's scheduler policy (`scheduler.policy`;
  /// docs/building.md#the-scheduler); `auto` is `node_scheduler_policy`'s choice
  std::string scheduler = "auto";
  /// `--threads N`: `scheduler.max-threads`; 0 = CAF's default, max(cores, 4)
  size_t threads = 0;
};

/// cafmesh-client's options.
struct client_options {
  std::string config_path;                 ///< `--config FILE` (required)
  bool print_config = false;               ///< `--print-config`
  std::optional<std::string> scenario_path; ///< `--scenario FILE` (default: the embedded one)
  std::optional<std::string> trace_path;   ///< `--trace FILE` (replay instead of the mix)
  std::string ledger_path = "ledger.jsonl"; ///< `--ledger FILE`
  std::optional<std::string> plan_out;     ///< `--plan-out FILE`
  std::optional<std::string> report_path;  ///< `--report FILE` (the report as JSON)
  std::optional<std::string> html_path;    ///< `--html FILE` (the report as an HTML page)
  int64_t wait_active_s = 30;              ///< `--wait-active-s N`: bound of the wait for an Active silo
  scenario_overrides overrides;            ///< `--seed`, `--duration-s`, `--rate`, `--time-scale`, ...
};

/// cafmesh-demo's options.
struct demo_options {
  std::optional<std::string> scenario_path; ///< positional `SCENARIO` (default: embedded)
  bool processes = false;                   ///< `--processes`
  /// `--membership oracle|etcd`: the development oracle in the demo's client process, or a
  /// membership table on an etcd member the demo starts (no process special).
  std::string membership = "oracle";
  /// `--tls`: every connection between the processes is mutual TLS, with certificates of a
  /// throwaway CA the demo makes (docs/behaviour/peer-authentication.md#tls).
  bool tls = false;
  scenario_overrides overrides;             ///< `--seed`, `--duration-s`, `--rate`, `--time-scale`, ...
  std::optional<std::string> report_path;   ///< `--report FILE`
  std::optional<std::string> html_path;     ///< `--html FILE` (the report as an HTML page)
  std::optional<std::string> ledger_path;   ///< `--ledger FILE` (ledger events, JSON lines)
  bool print_scenario = false;              ///< `--print-scenario`
  std::optional<std::string> plan_out;      ///< `--plan-out FILE`
  progress_mode progress = progress_mode::automatic; ///< `--progress MODE`
  std::optional<std::string> node_binary;   ///< `--node-binary FILE`
  bool verbose = false; ///< `--verbose`: info lines on standard error (verbosity.hpp)
};

/// The exit-code paragraph every `--help` ends with.
std::string exit_code_help();

/// The scheduler policy `--scheduler` names: `requested` itself unless it is `auto`, which
/// is `sharing` on a machine of at most 4 cores (`cores`) and `stealing` on a larger one
/// (docs/building.md#the-scheduler).
std::string node_scheduler_policy(const std::string& requested, unsigned cores);

/// Declares cafmesh-node's options on `app`, bound to `o`.
void setup_node_cli(CLI::App& app, node_options& o);

/// Declares cafmesh-client's options on `app`, bound to `o`.
void setup_client_cli(CLI::App& app, client_options& o);

/// Declares cafmesh-demo's options on `app`, bound to `o`.
void setup_demo_cli(CLI::App& app, demo_options& o);

/// Parses `args` (argv without the program name). Answers none when the program should go
/// on; else the exit code after printing: 0 for `--help` (help text to `out`), 2
/// (`exit_codes::usage`) for a parse error (CLI11's message and a `--help` hint to `err`).
std::optional<int> parse_command_line(CLI::App& app, std::vector<std::string> args,
                                      std::ostream& out, std::ostream& err);

} // namespace cafmesh::mainjob
