// cafmesh-client: a pure client that sends the scenario's traffic mix or replays a trace
// file and writes every outcome to a ledger file.
//
// Parses the command line, loads the configuration (which must declare mesh.process_role
// "pure_client"; the loader requires network.primary_port, the cluster's primary), loads
// the scenario (or the trace file, errors naming the line). With --plan-out it writes the
// paced schedule as a trace file; else it runs (client_mesh.hpp): joins the cluster, waits
// until its membership shows an Active gateway silo (--wait-active-s, exit 1 without one),
// sends, writes every ledger event to --ledger, prints the report (and --report as JSON)
// and exits with the report's code: 0 only when every check passes (examples/README.md).
// A scenario with a roll or faults, or with senders other than pure_client, exits 2.

#include <fstream>
#include <iostream>
#include <limits>

#include <unistd.h>

#include "cafmesh/actors/log.hpp"
#include "cafmesh/config/load.hpp"
#include "cafmesh/mainjob/client_mesh.hpp"
#include "cafmesh/mainjob/cli.hpp"
#include "cafmesh/mainjob/html_report.hpp"
#include "cafmesh/mainjob/report.hpp"
#include "cafmesh/mainjob/trace_replay.hpp"
#include "cafmesh/mainjob/traffic.hpp"

using namespace cafmesh;
using namespace cafmesh::mainjob;

namespace {

int write_plan(const std::string& path, const std::vector<planned_delivery>& plan) {
  std::ofstream out{path};
  for (auto& d : plan)
    out << to_trace_line(d) << '\n';
  out.flush();
  if (!out) {
    std::cerr << "cafmesh-client: cannot write plan file \"" << path << "\"\n";
    return exit_codes::usage;
  }
  std::cout << "cafmesh-client: wrote " << plan.size() << " planned deliveries to " << path
            << " (nothing was sent)\n";
  return exit_codes::ok;
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"", "cafmesh-client"};
  client_options opts;
  setup_client_cli(app, opts);
  if (auto code = parse_command_line(app, {argv + 1, argv + argc}, std::cout, std::cerr))
    return *code;
  auto loaded = config::load_file(opts.config_path);
  if (!loaded.ok) {
    std::cerr << "cafmesh-client: invalid configuration " << opts.config_path << ":\n"
              << loaded.message() << "\n";
    return exit_codes::usage;
  }
  if (loaded.value.mesh.role != config::process_role::pure_client) {
    std::cerr << "cafmesh-client: " << opts.config_path
              << ": /mesh/process_role: expected \"pure_client\", got \""
              << config::to_string(loaded.value.mesh.role) << "\"\n";
    return exit_codes::usage;
  }
  if (opts.print_config) {
    std::cout << config::to_json_text(loaded.value);
    return exit_codes::ok;
  }
  auto name = loaded.value.mesh.name.empty() ? std::string{"client"} : loaded.value.mesh.name;
  client_traffic traffic;
  traffic.id_prefix = name;
  traffic.origin = "client:" + name;
  std::vector<planned_delivery> plan;
  if (opts.trace_path) {
    auto trace = load_trace_file(*opts.trace_path);
    if (!trace.ok) {
      std::cerr << "cafmesh-client: invalid trace file " << *opts.trace_path << ":\n"
                << trace.message() << "\n";
      return exit_codes::usage;
    }
    if (opts.plan_out) {
      trace_replay replay{trace.entries, name, traffic.origin};
      plan = replay.take_due(std::numeric_limits<int64_t>::max());
    }
    // The run's name and request settings: the embedded scenario's, without roll or faults.
    auto sc = parse_scenario(default_scenario_text());
    traffic.s = sc.value;
    traffic.s.name = "trace " + *opts.trace_path;
    traffic.s.roll.order.clear();
    traffic.s.faults.clear();
    traffic.s.expect = expectation{};
    int64_t last_ms = trace.entries.empty() ? 0 : trace.entries.back().t_ms;
    traffic.s.duration_s = last_ms / 1000 + 1;
    traffic.s.rate_per_s = static_cast<int64_t>(trace.entries.size()) / traffic.s.duration_s;
    traffic.trace = std::move(trace.entries);
  } else {
    auto sc = opts.scenario_path ? load_scenario_file(*opts.scenario_path)
                                 : parse_scenario(default_scenario_text());
    if (!sc.ok) {
      std::cerr << "cafmesh-client: invalid scenario "
                << (opts.scenario_path ? *opts.scenario_path : std::string{"(embedded)"})
                << ":\n"
                << sc.message() << "\n";
      return exit_codes::usage;
    }
    if (auto errs = apply_overrides(sc.value, opts.overrides, false); !errs.empty()) {
      for (auto& e : errs)
        std::cerr << "cafmesh-client: " << e << "\n";
      return exit_codes::usage;
    }
    if (!opts.scenario_path) {
      // The embedded default is the demo's roll: the client sends its traffic mix only.
      sc.value.roll.order.clear();
      sc.value.faults.clear();
    }
    if (opts.plan_out) {
      traffic_generator gen{sc.value, name};
      plan = gen.take_all();
    }
    if (auto errs = client_scenario_errors(sc.value); !errs.empty() && !opts.plan_out) {
      std::cerr << "cafmesh-client: scenario "
                << (opts.scenario_path ? *opts.scenario_path : std::string{"(embedded)"})
                << " cannot run from a client:\n";
      for (auto& e : errs)
        std::cerr << e << "\n";
      return exit_codes::usage;
    }
    traffic.s = std::move(sc.value);
  }
  if (opts.plan_out)
    return write_plan(*opts.plan_out, plan);
  std::ofstream ledger{opts.ledger_path};
  if (!ledger) {
    std::cerr << "cafmesh-client: cannot write ledger file \"" << opts.ledger_path << "\"\n";
    return exit_codes::usage;
  }
  log::configure(loaded.value.log);
  client_run_settings rs;
  rs.pace.out = &std::cout;
  rs.pace.is_tty = ::isatty(STDOUT_FILENO) != 0;
  rs.pace.width_cols = terminal_width(STDOUT_FILENO);
  rs.ledger_out = &ledger;
  rs.wait_active_ms = opts.wait_active_s * 1000;
  int report_rc = exit_codes::ok;
  rs.on_report = [&](const report& r) {
    ledger.flush();
    std::cout << render_table(r);
    std::cout.flush();
    if (opts.report_path && !write_report_file(*opts.report_path, r, "cafmesh-client", std::cerr))
      report_rc = exit_codes::failed;
    if (opts.html_path && !write_html_file(*opts.html_path, r, "cafmesh-client", std::cerr))
      report_rc = exit_codes::failed;
  };
  auto result = run_client(loaded.value, traffic, rs);
  ledger.flush();
  if (!result.rep)
    return exit_codes::failed;
  return report_rc != exit_codes::ok ? report_rc : result.exit_code;
}
