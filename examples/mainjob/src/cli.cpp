#include "cafmesh/mainjob/cli.hpp"

#include <algorithm>
#include <ostream>

#include "cafmesh/mainjob/report.hpp"

namespace cafmesh::mainjob {

namespace {

/// Accepts only decimal digits (CLI11 would otherwise wrap "-1" around to 2^64 - 1).
CLI::Validator unsigned_integer() {
  return CLI::Validator(
    [](std::string& text) -> std::string {
      // Digits only, and no more than 2^64 - 1 (CLI11 would clamp larger values silently).
      static const std::string max_text = "18446744073709551615";
      auto digits = text.find_first_not_of('0') == std::string::npos
                      ? std::string{"0"}
                      : text.substr(text.find_first_not_of('0'));
      if (!text.empty() && text.find_first_not_of("0123456789") == std::string::npos
          && (digits.size() < max_text.size()
              || (digits.size() == max_text.size() && digits <= max_text)))
        return {};
      return "expected an integer from 0 to 18446744073709551615, got " + text;
    },
    "UINT64");
}

void add_overrides(CLI::App& app, scenario_overrides& o, std::vector<CLI::Option*>& added) {
  added.push_back(app.add_option_function<uint64_t>(
    "--seed", [&o](const uint64_t& v) { o.seed = v; },
    "Seed of the traffic generator (std::mt19937_64; overrides the scenario's \"seed\")")
                    ->check(unsigned_integer())
                    ->type_name("N"));
  added.push_back(app.add_option_function<int64_t>(
    "--duration-s", [&o](const int64_t& v) { o.duration_s = v; },
    "Seconds of paced traffic, >= 1 (overrides \"duration_s\")")
                    ->type_name("N"));
  added.push_back(app.add_option_function<int64_t>(
    "--rate", [&o](const int64_t& v) { o.rate_per_s = v; },
    "Paced deliveries per second, 1 to 1000000 (overrides \"rate_per_s\")")
                    ->type_name("N"));
  added.push_back(app.add_option_function<int64_t>(
    "--request-deadline-ms", [&o](const int64_t& v) { o.request_deadline_ms = v; },
    "Deadline of every request in ms, >= 1 (overrides \"traffic.request_deadline_ms\")")
                    ->type_name("MS"));
  added.push_back(app.add_option_function<int64_t>(
    "--time-scale", [&o](const int64_t& v) { o.time_scale = v; },
    "Stretch the run F times, 1 to 100, for a slower machine or an instrumented build: "
    "the traffic's and the roll's times (duration, roll, request deadline, the p99 bound) "
    "times F and the rate divided by F, after the options above; above 1 not for a "
    "scenario with faults or bursts (the silos' timers are not scaled)")
                    ->type_name("F"));
}

} // namespace

std::string node_scheduler_policy(const std::string& requested, unsigned cores) {
  if (requested != "auto")
    return requested;
  // Several processes of a mesh share a small machine's cores: work stealing's polling
  // workers take cycles from the others' work (docs/building.md#the-scheduler).
  return cores <= 4 ? "sharing" : "stealing";
}

std::string exit_code_help() {
  return "Exit codes: " + std::to_string(exit_codes::ok)
         + " clean (checks passed, clean stop, or printed what was asked); "
         + std::to_string(exit_codes::failed)
         + " a report check failed, the stop was not clean, or the client found no Active "
           "gateway silo (nothing was sent); "
         + std::to_string(exit_codes::usage)
         + " bad command line, configuration, scenario or trace file.\n";
}

void setup_node_cli(CLI::App& app, node_options& o) {
  app.description("cafmesh-node: one cafmesh process over CAF io - a silo, a pure client or a "
                  "monolith, as the configuration's mesh.process_role says (docs/architecture.md#process-roles). "
                  "SIGTERM/SIGINT: graceful host stop (docs/behaviour/lifecycle.md#the-host); a second signal: "
                  "non-graceful stop.");
  app.add_option("-c,--config", o.config_path,
                 "JSON configuration file (every key: examples/config/README.md)")
    ->required()
    ->type_name("FILE");
  app.add_flag("--print-config", o.print_config,
               "Print the effective configuration (every key, defaults filled in) and exit");
  auto ctl = app.add_option_function<std::string>(
                  "--demo-control", [&o](const std::string& x) { o.demo_control = x; },
                  "Run as one silo of cafmesh-demo --processes: the demo's control actor "
                  "(set by cafmesh-demo; the silo hosts the demo's co-hosted hubs)")
               ->type_name("HOST:PORT");
  app.add_option("--demo-silo", o.demo_silo,
                 "With --demo-control: the scenario's name of this silo (e.g. A)")
    ->type_name("NAME")
    ->needs(ctl);
  ctl->needs("--demo-silo");
  app.add_option("--scheduler", o.scheduler,
                 "CAF's scheduler policy: stealing (CAF's default: idle workers poll), "
                 "sharing (one queue, idle workers block) or auto (sharing on a machine of "
                 "at most 4 cores, else stealing; docs/building.md#the-scheduler)")
    ->default_val("auto")
    ->check(CLI::IsMember({"auto", "stealing", "sharing"}))
    ->type_name("POLICY");
  app.add_option("--threads", o.threads,
                 "CAF's scheduler.max-threads (default: CAF's, max(cores, 4))")
    ->check(CLI::Range(size_t{1}, size_t{256}))
    ->type_name("N");
  app.add_option("--app", o.app,
                 "Application hubs a silo hosts: \"echo\" = a hub endpoint for every node "
                 "hub it is asked for, answering each request with a response (the peer of "
                 "cafmesh-client); default none (node hubs are NACKed not_found)")
    ->check(CLI::IsMember({"echo"}))
    ->type_name("NAME")
    ->excludes(ctl);
  app.add_option_function<uint16_t>(
       "--admin-port", [&o](const uint16_t& x) { o.admin_port = x; },
       "Serve the admin endpoint (/metrics, /healthz/live, /healthz/ready, /cluster/members; "
       "docs/operations.md) on admin.host:PORT; 0 = a port the OS chooses, printed as "
       "ADMIN host:port")
    ->type_name("PORT");
  app.footer(exit_code_help());
}

void setup_client_cli(CLI::App& app, client_options& o) {
  app.description("cafmesh-client: a pure client that sends the scenario's traffic mix, or "
                  "replays a trace file, and writes every outcome to a ledger file.");
  app.add_option("-c,--config", o.config_path,
                 "JSON configuration file; mesh.process_role must be \"pure_client\"")
    ->required()
    ->type_name("FILE");
  app.add_flag("--print-config", o.print_config,
               "Print the effective configuration (every key, defaults filled in) and exit");
  auto* scenario_opt =
    app.add_option_function<std::string>(
         "--scenario", [&o](const std::string& v) { o.scenario_path = v; },
         "Scenario file whose \"traffic\" section gives the mix; it may have no roll and no "
         "faults (a client cannot stop or stall silos; exit 2) and its traffic.senders must "
         "be pure_client (default: the embedded roll-three-silos scenario without its roll)")
      ->type_name("FILE");
  auto* trace_opt =
    app.add_option_function<std::string>(
         "--trace", [&o](const std::string& v) { o.trace_path = v; },
         "Replay this trace file (JSON lines: t_ms, sender, target, stream, payload_bytes, "
         "kind) instead of generating the mix")
      ->type_name("FILE");
  trace_opt->excludes(scenario_opt);
  std::vector<CLI::Option*> overrides;
  add_overrides(app, o.overrides, overrides);
  for (auto* x : overrides)
    trace_opt->excludes(x);
  app.add_option("--ledger", o.ledger_path,
                 "Outcome ledger file (JSON lines, one per event; default ledger.jsonl)")
    ->type_name("FILE");
  app.add_option_function<std::string>(
       "--report", [&o](const std::string& v) { o.report_path = v; },
       "Also write the final report as JSON (schema: examples/mainjob/REPORT.md)")
    ->type_name("FILE");
  app.add_option_function<std::string>(
       "--html", [&o](const std::string& v) { o.html_path = v; },
       "Also write the report as one self-contained HTML page: per-second charts of the run "
       "with the roll's stops, and the report's tables (examples/README.md)")
    ->type_name("FILE");
  app.add_option("--wait-active-s", o.wait_active_s,
                 "Seconds to wait for at least one Active gateway silo before sending (exit 1 "
                 "without one; default 30)")
    ->check(CLI::Range(1, 3600))
    ->type_name("N");
  app.add_option_function<std::string>(
       "--plan-out", [&o](const std::string& v) { o.plan_out = v; },
       "Write the paced schedule as a trace file and exit without sending anything")
    ->type_name("FILE");
  app.footer(exit_code_help());
}

void setup_demo_cli(CLI::App& app, demo_options& o) {
  app.description(
    "cafmesh-demo: the rolling-restart demo. Silos (each its own CAF actor system, joined over "
    "loopback TCP) and a pure client carry the scenario's traffic while each silo in turn is "
    "stopped gracefully and restarted with a new generation; the final report checks that "
    "nothing accepted was lost.");
  app.add_option_function<std::string>(
       "SCENARIO", [&o](const std::string& v) { o.scenario_path = v; },
       "Scenario file (default: the embedded examples/scenarios/roll-three-silos.json)")
    ->type_name("FILE");
  app.add_flag("--processes", o.processes,
               "Run every silo as a separate cafmesh-node process, rolled with SIGTERM");
  app.add_option("--membership", o.membership,
                 "Where membership lives: oracle (the development oracle, hosted by the demo's "
                 "client process) or etcd (a membership table on an etcd member the demo starts "
                 "itself, Debian package etcd-server; no process is special); default oracle")
    ->check(CLI::IsMember({"oracle", "etcd"}))
    ->type_name("NAME");
  app.add_flag("--tls", o.tls,
               "Mutual TLS 1.3 on every connection between the mesh's processes, with "
               "certificates of a throwaway CA the demo makes with the openssl tool (removed "
               "at the end)");
  std::vector<CLI::Option*> overrides;
  add_overrides(app, o.overrides, overrides);
  app.add_option_function<std::string>(
       "--report", [&o](const std::string& v) { o.report_path = v; },
       "Also write the final report as JSON (schema in examples/mainjob/REPORT.md)")
    ->type_name("FILE");
  app.add_option_function<std::string>(
       "--html", [&o](const std::string& v) { o.html_path = v; },
       "Also write the report as one self-contained HTML page: per-second charts of the run "
       "with the roll's stops, and the report's tables (examples/README.md)")
    ->type_name("FILE");
  app.add_option_function<std::string>(
       "--ledger", [&o](const std::string& v) { o.ledger_path = v; },
       "Write every ledger event (accepted, landed, NACK, ...) as JSON lines to FILE")
    ->type_name("FILE");
  app.add_flag("--print-scenario", o.print_scenario,
               "Print the effective scenario (overrides applied) as JSON and exit");
  app.add_option_function<std::string>(
       "--plan-out", [&o](const std::string& v) { o.plan_out = v; },
       "Write the paced schedule as a trace file (cafmesh-client --trace format) and exit")
    ->type_name("FILE");
  app.add_option_function<std::string>(
       "--progress",
       [&o](const std::string& v) {
         if (!from_string(v, o.progress))
           throw CLI::ValidationError("--progress", "expected auto, terminal, plain or off");
       },
       "Live progress: auto (a rewriting line on a terminal, plain periodic lines otherwise), "
       "terminal, plain or off (default auto)")
    ->type_name("MODE");
  app.add_option_function<std::string>(
       "--node-binary", [&o](const std::string& v) { o.node_binary = v; },
       "cafmesh-node executable for --processes (default: next to cafmesh-demo)")
    ->type_name("FILE");
  app.add_flag("--verbose", o.verbose,
               "Log cafmesh's info lines on standard error too (default: warnings and errors "
               "only)");
  app.footer(exit_code_help());
}

std::optional<int> parse_command_line(CLI::App& app, std::vector<std::string> args,
                                      std::ostream& out, std::ostream& err) {
  std::reverse(args.begin(), args.end()); // CLI11 takes the vector reversed
  try {
    app.parse(args);
  } catch (const CLI::CallForHelp&) {
    out << app.help();
    return exit_codes::ok;
  } catch (const CLI::ParseError& e) {
    err << app.get_name() << ": " << e.what() << "\n"
        << "Run with --help for more information.\n";
    return exit_codes::usage;
  }
  return std::nullopt;
}

} // namespace cafmesh::mainjob
