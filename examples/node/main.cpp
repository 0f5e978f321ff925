// cafmesh-node: one cafmesh process over CAF io (issue "The main job", item 1).
//
// Loads and validates the configuration (refusals exit 2 with the loader's messages), prints
// it with --print-config, applies the log section and runs the process by
// `mesh.process_role`:
// - `silo_host`: a whole silo (`routing::start_net_silo`: network link on `network.host`:
//   `network.port`, membership through the primary at `network.primary_host`:
//   `network.primary_port`, or hosting the oracle when `primary_port` is 0), started through
//   its host. SIGTERM/SIGINT = graceful host stop (SPEC §3.7); a second signal = non-graceful.
//   Exit 0 once the host reports the silo torn down.
// - `pure_client`: network link, message centre, membership agent and routing service
//   (`routing::spawn_pure_client`); it joins nothing and stops on SIGTERM/SIGINT, exit 0.
// - `monolith`: not built yet (exit 3).
// With `--demo-control HOST:PORT --demo-silo NAME` (set by `cafmesh-demo --processes`) a
// silo_host runs as one silo of the demo's multi-process mesh instead (demo_process.hpp).
// Standard output, one line each: `ADDR {silo address}` once listening, `ACTIVE` (silo
// Active) or `CLIENT` (pure client running), `STOPPED` at the end of a clean run. Start-up
// failures print `FAILED (exit 1; ...)` instead and exit 1.
// Application hubs: without `--app` none (a delivery to a node hub is NACKed `not_found` by the
// hub factory, "cafmesh-node hosts no application hubs"); with `--app echo` a silo hosts an
// echo hub for every node hub it is asked for (`spawn_echo_hub_factory`, mesh_parts.hpp),
// answering every request (every delivery that may be answered) with a response: the peer
// of cafmesh-client.

#include <sys/prctl.h>

#include <csignal>
#include <chrono>
#include <iostream>
#include <thread>

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/log.hpp"
#include "cafmesh/actors/net_process.hpp"
#include "cafmesh/config/load.hpp"
#include "cafmesh/lifecycle/host.hpp"
#include "cafmesh/mainjob/cli.hpp"
#include "cafmesh/mainjob/mesh_parts.hpp"
#include "cafmesh/mainjob/demo_process.hpp"
#include "cafmesh/mainjob/report.hpp"
#include "cafmesh/routing/net_silo.hpp"
#include "cafmesh/routing/node_path_resolver.hpp"
#include "cafmesh/routing/pure_client.hpp"
#include "cafmesh/routing/register_types.hpp"

using namespace cafmesh;
using namespace cafmesh::mainjob;

namespace {

uint64_t wall_generation() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count());
}

void say(const std::string& line) {
  std::cout << line << std::endl;
}

/// No application hubs in this executable.
caf::behavior no_hubs(caf::event_based_actor*) {
  return {
    [](routing::hf_build_atom, const std::string& key) -> caf::result<caf::actor> {
      return to_error(fault{mesh_errc::not_found,
                            "cafmesh-node hosts no application hubs (asked for '" + key + "')"});
    },
  };
}

int run_silo(caf::actor_system& sys, const config::mesh_config& mc, const std::string& app,
             log::logger& lg) {
  routing::silo_options so;
  so.cfg = mc;
  auto hubs = app == "echo" ? spawn_echo_hub_factory(sys, mc.routing) : sys.spawn(no_hubs);
  auto resolver = caf::actor_cast<caf::actor>(routing::spawn_node_path_resolver(sys));
  so.hubs = caf::actor_cast<routing::hub_factory_actor>(hubs);
  so.resolver = caf::actor_cast<routing::path_resolver_actor>(resolver);
  auto stop_helpers = [&] {
    caf::anon_send_exit(hubs, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(resolver, caf::exit_reason::user_shutdown);
  };
  auto started = routing::start_net_silo(sys, so, wall_generation());
  if (!started) {
    lg.error("network endpoint failed: " + sys.render(started.error()));
    stop_helpers();
    return exit_codes::failed;
  }
  auto& ns = *started;
  if (app == "echo")
    caf::anon_send(hubs, mp_routing_atom::value, caf::actor_cast<caf::actor>(ns.s.routing));
  say("ADDR " + ns.s.addr.to_string());
  caf::scoped_actor self{sys};
  caf::error err;
  self->request(ns.s.host, caf::infinite, lifecycle::host_start_atom::value)
    .receive([](caf::ok_atom) {}, [&](caf::error& e) { err = e; });
  if (err) {
    lg.error("silo start failed: " + to_fault(err).render());
    ns.stop_all();
    stop_helpers();
    return exit_codes::failed;
  }
  say("ACTIVE");
  auto guard = lifecycle::install_signal_stop(sys, ns.s.host);
  wait_until_torn_down(sys, ns.s.host, 100);
  ns.stop_all();
  stop_helpers();
  return exit_codes::ok;
}

int run_client(caf::actor_system& sys, const config::mesh_config& mc, log::logger& lg,
               sigset_t& signals) {
  auto ep = start_net_link(sys, mc.network, wall_generation());
  if (!ep) {
    lg.error("network endpoint failed: " + sys.render(ep.error()));
    return exit_codes::failed;
  }
  auto client = spawn_pure_client_on(sys, mc, *ep);
  say("ADDR " + client.addr.to_string());
  say("CLIENT");
  int sig = 0;
  sigwait(&signals, &sig);
  lg.info(std::string{"signal "} + (sig == SIGTERM ? "SIGTERM" : "SIGINT")
          + ": stopping the pure client");
  client.stop_all();
  for (auto& a : {ep->link, ep->oracle})
    if (a)
      caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  return exit_codes::ok;
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
  const auto& mc = loaded.value;
  log::configure(mc.log);
  auto lg = log::get("node");
  auto role = config::to_string(mc.mesh.role);
  lg.info("configuration " + opts.config_path + " loaded: process_role " + role + ", name \""
          + mc.mesh.name + "\"");
  if (!opts.app.empty() && mc.mesh.role != config::process_role::silo_host) {
    std::cerr << "cafmesh-node: --app needs a silo_host configuration\n";
    return exit_codes::usage;
  }
  if (mc.mesh.role == config::process_role::monolith) {
    lg.error("running a monolith over CAF io is not built yet; nothing was started");
    return exit_codes::mesh_not_built;
  }
  // A pure client waits for its signal with sigwait: block both before any thread starts.
  sigset_t signals;
  sigemptyset(&signals);
  if (mc.mesh.role == config::process_role::pure_client) {
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
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
  cfg.load<caf::io::middleman>();
  cfg.set("logger.verbosity", caf::atom("quiet"));
  int rc = exit_codes::ok;
  {
    caf::actor_system sys{cfg};
    if (demo)
      rc = run_demo_silo(sys, mc, *demo, wall_generation(), lg);
    else
      rc = mc.mesh.role == config::process_role::silo_host ? run_silo(sys, mc, opts.app, lg)
                                                           : run_client(sys, mc, lg, signals);
  }
  // `STOPPED` only after a clean run; a start that failed says so instead.
  say(rc == exit_codes::ok ? std::string{"STOPPED"}
                           : "FAILED (exit " + std::to_string(rc) + "; see the error lines above)");
  return rc;
}
