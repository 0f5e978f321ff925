// cafmesh-node: one cafmesh process over CAF io, built by the hosting layer's builders
// (docs/hosting.md).
//
// Loads and validates the configuration (refusals exit 2 with the loader's messages), prints
// it with --print-config and runs the process by `mesh.process_role`:
// - `silo_host`: `silo_builder` over CAF io: listening on `network.host`:`network.port`,
//   joining the primary at `network.primary_host`:`network.primary_port`, or hosting the
//   development membership oracle when `primary_port` is 0;
// - `pure_client`: `client_builder` over CAF io (it hosts no hubs; a dedicated oracle
//   process when `primary_port` is 0);
// - `monolith`: `monolith_builder`: the whole mesh in this process, no network.
// SIGTERM/SIGINT = graceful host stop (docs/behaviour/lifecycle.md#the-host); a second signal =
// non-graceful. Exit 0 once the host reports the runtime torn down.
// With `--demo-control HOST:PORT --demo-silo NAME` (set by `cafmesh-demo --processes`) a
// silo_host runs as one silo of the demo's multi-process mesh instead (demo_process.hpp).
// With `--admin-port PORT` (or `admin.enabled` in the configuration) the process serves its
// admin endpoint (docs/operations.md) and prints `ADMIN {host}:{port}` before `ADDR`.
// Standard output, one line each: `ADDR {address}` once listening, `ACTIVE` (silo Active,
// monolith running) or `CLIENT` (pure client running), `STOPPED` at the end of a clean run.
// The actor system may take 10 s to end after the stop; past that the process logs a warning
// ("the actor system did not end within 10000 ms of the stop ...") and exits without
// `STOPPED` (docs/hosting.md#stopping-and-the-actor-system).
// Start-up failures print `FAILED (exit 1; ...)` instead and exit 1.
// Application hubs: without `--app` none (a delivery to a node hub is NACKed `not_found`, "No
// live process serves '{address}'", once every live silo published its hub patterns, else
// `unavailable`, "no hub handler for '{address}' in this process"); with `--app echo` every node hub (`node/*`) answers every
// request (every delivery that may be answered) with a response `{}`: the peer of
// cafmesh-client.

#include <sys/prctl.h>

#include <chrono>
#include <csignal>
#include <iostream>
#include <optional>
#include <thread>

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/log.hpp"
#include "cafmesh/config/load.hpp"
#include "cafmesh/lifecycle/hosting.hpp"
#include "cafmesh/mainjob/cli.hpp"
#include "cafmesh/mainjob/demo_process.hpp"
#include "cafmesh/mainjob/report.hpp"

using namespace cafmesh;
using namespace cafmesh::mainjob;

namespace {

uint64_t wall_generation() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count());
}

/// How long the actor system may take to end once the process stopped
/// (`lifecycle::system_end_bound`).
constexpr auto system_end_limit = std::chrono::seconds(10);

void say(const std::string& line) {
  std::cout << line << std::endl;
}

/// The echo application of `--app echo`: every node hub answers every request with a
/// response `{}` (the peer of cafmesh-client).
routing::hub_handler echo_handler() {
  return [](const routing::envelope&) { return std::optional<routing::reply>{routing::reply{}}; };
}

/// Starts `p`, prints `ACTIVE` (or `ready`), stops on SIGTERM/SIGINT and waits until the host
/// tore the runtime down.
int run_process(lifecycle::mesh_process& p, const std::string& ready, log::logger& lg) {
  if (auto a = p.admin(); a.port != 0)
    say("ADMIN " + a.host + ":" + std::to_string(a.port));
  say("ADDR " + p.address().to_string());
  p.stop_on_signals();
  if (auto err = p.when_active()) {
    lg.error(p.role() + " start failed: " + to_fault(err).render());
    p.stop(false);
    return exit_codes::failed;
  }
  say(ready);
  p.wait();
  return exit_codes::ok;
}

int run_silo(caf::actor_system& sys, const config::mesh_config& mc, const std::string& app,
             log::logger& lg) {
  lifecycle::silo_builder b{sys};
  // The node's application only answers (it sends nothing): no correlating entry.
  b.config(mc).network().without_entry();
  if (app == "echo")
    b.hub("node/*", echo_handler());
  auto silo = b.build();
  if (!silo) {
    lg.error("silo not built: " + to_fault(silo.error()).render());
    return exit_codes::failed;
  }
  return run_process(*silo, "ACTIVE", lg);
}

int run_client(caf::actor_system& sys, const config::mesh_config& mc, log::logger& lg) {
  // It may be the dedicated oracle process, started before any silo: no gateway wait.
  auto client =
    lifecycle::client_builder{sys}.config(mc).network().wait_for_gateway(false).build();
  if (!client) {
    lg.error("pure client not built: " + to_fault(client.error()).render());
    return exit_codes::failed;
  }
  return run_process(*client, "CLIENT", lg);
}

int run_monolith(caf::actor_system& sys, const config::mesh_config& mc, const std::string& app,
                 log::logger& lg) {
  lifecycle::monolith_builder b{sys};
  b.config(mc);
  if (app == "echo")
    b.hub("node/*", echo_handler());
  auto mono = b.build();
  if (!mono) {
    lg.error("monolith not built: " + to_fault(mono.error()).render());
    return exit_codes::failed;
  }
  return run_process(*mono, "ACTIVE", lg);
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"", "cafmesh-node"};
  node_options opts;
  setup_node_cli(app, opts);
  if (auto code = parse_command_line(app, {argv + 1, argv + argc}, std::cout, std::cerr))
    return *code;
  auto loaded = config::load_file(opts.config_path);
  if (!loaded.ok) {
    std::cerr << "cafmesh-node: invalid configuration " << opts.config_path << ":\n"
              << loaded.message() << "\n";
    return exit_codes::usage;
  }
  if (opts.print_config) {
    std::cout << config::to_json_text(loaded.value);
    return exit_codes::ok;
  }
  auto& mc = loaded.value;
  if (opts.admin_port) {
    mc.admin.enabled = true;
    mc.admin.port = *opts.admin_port;
  }
  log::configure(mc.log);
  auto lg = log::get("node");
  auto role = config::to_string(mc.mesh.role);
  lg.info("configuration " + opts.config_path + " loaded: process_role " + role + ", name \""
          + mc.mesh.name + "\"");
  if (!opts.app.empty() && mc.mesh.role == config::process_role::pure_client) {
    std::cerr << "cafmesh-node: --app needs a silo_host or monolith configuration\n";
    return exit_codes::usage;
  }
  std::optional<demo_link> demo;
  if (opts.demo_control) {
    demo = parse_demo_link(*opts.demo_control, opts.demo_silo);
    if (!demo || mc.mesh.role != config::process_role::silo_host) {
      std::cerr << "cafmesh-node: --demo-control needs HOST:PORT, --demo-silo and a silo_host "
                   "configuration\n";
      return exit_codes::usage;
    }
  }
  if (demo)
    ::prctl(PR_SET_PDEATHSIG, SIGTERM); // a demo that dies stops its silos (graceful stop)
  caf::actor_system_config cfg;
  register_demo_types(cfg);
  lifecycle::prepare(cfg);
  auto policy = node_scheduler_policy(opts.scheduler, std::thread::hardware_concurrency());
  if (policy == "sharing")
    cfg.set("scheduler.policy", caf::atom("sharing"));
  lg.info("scheduler: " + policy + (opts.scheduler == "auto" ? " (auto, " : " (")
          + std::to_string(std::thread::hardware_concurrency()) + " cores)");
  if (opts.threads > 0)
    cfg.set("scheduler.max-threads", opts.threads);
  cfg.set("logger.verbosity", caf::atom("quiet"));
  int rc = exit_codes::ok;
  {
    // Declared before the actor system: its end is bounded once the process stopped.
    lifecycle::system_end_bound end_bound;
    caf::actor_system sys{cfg};
    if (demo)
      rc = run_demo_silo(sys, mc, *demo, wall_generation(), lg);
    else
      switch (mc.mesh.role) {
        case config::process_role::silo_host: rc = run_silo(sys, mc, opts.app, lg); break;
        case config::process_role::pure_client: rc = run_client(sys, mc, lg); break;
        case config::process_role::monolith: rc = run_monolith(sys, mc, opts.app, lg); break;
      }
    end_bound.arm(system_end_limit, rc);
  }
  // `STOPPED` only after a clean run; a start that failed says so instead.
  say(rc == exit_codes::ok ? std::string{"STOPPED"}
                           : "FAILED (exit " + std::to_string(rc) + "; see the error lines above)");
  return rc;
}
