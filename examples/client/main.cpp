// cafmesh-client: a pure client that sends the scenario's traffic mix or replays a trace
// file and writes every outcome to a ledger file (issue "The main job", item 2).
//
// What it does today: parses the command line, loads the configuration (which must declare
// mesh.process_role "pure_client"), loads the scenario (or validates the trace file, with
// errors naming the line), and with --plan-out writes the paced schedule as a trace file.
// Sending traffic needs the mesh, which is not built yet: without --plan-out or
// --print-config it says so and exits 3 (examples/README.md, "Exit codes").

#include <fstream>
#include <iostream>

#include "cafmesh/actors/log.hpp"
#include "cafmesh/config/load.hpp"
#include "cafmesh/mainjob/cli.hpp"
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
  std::vector<planned_delivery> plan;
  if (opts.trace_path) {
    auto trace = load_trace_file(*opts.trace_path);
    if (!trace.ok) {
      std::cerr << "cafmesh-client: invalid trace file " << *opts.trace_path << ":\n"
                << trace.message() << "\n";
      return exit_codes::usage;
    }
    if (opts.plan_out) {
      trace_replay replay{trace.entries, name, "client:" + name};
      plan = replay.take_due(std::numeric_limits<int64_t>::max());
    }
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
    if (opts.plan_out) {
      traffic_generator gen{sc.value, name};
      plan = gen.take_all();
    }
  }
  if (opts.plan_out)
    return write_plan(*opts.plan_out, plan);
  log::configure(loaded.value.log);
  log::get("client").error(
    "sending traffic needs the mesh (a gateway silo over CAF io and routing), which is not "
    "built yet; nothing was sent and no ledger was written to "
    + opts.ledger_path);
  return exit_codes::mesh_not_built;
}
