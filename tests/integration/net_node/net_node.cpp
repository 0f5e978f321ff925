// cafmesh_net_node: one network-mode process for the multi-process integration test
// (net_cluster_test.cpp), built by the hosting layer's builders (docs/hosting.md). Usage:
// `cafmesh_net_node <config.json>`.
//
// By `mesh.process_role`: a `silo_host` is a `silo_builder` silo over CAF io (`network()`,
// listening on `network.host`:`network.port`, joining the primary at `network.primary_port`
// or hosting the development oracle when that is 0) with the grain types `echo` and `pecho`
// registered through the builder; a `pure_client` is a `client_builder` client over CAF io.
// Either is started with `start()` / `when_active()`; a `component::test` echo is registered
// at its message centre, and a printer subscribed to its membership agent. Generation =
// wall-clock ms since the epoch at start (the builders' default,
// docs/behaviour/envelope.md#silo-addresses-and-activations production rule).
//
// stdout, one line each, flushed:
//   `ADDR {silo address}` once listening;  `ACTIVE` once the silo is Active (a `silo_host`) or
//   `CLIENT` once the client started (a `pure_client`: it never joins, and does not wait for
//   a gateway, but its agent receives every snapshot);
//   `SNAP v{n} | {silo} {status}[ gateway] | ...` for every snapshot the agent applies;
//   `REPLY {text}` / `CALLERR {rendered error}` for `call` commands;
//   `GRAIN {type}/{key} {silo} #{n}` / `GRAINERR {type}/{key} {code}: {fault text}` for
//   `grain` commands ({silo}: the rendered address of the silo hosting the activation that
//   answered, as the activation itself reports it; {n}: the activation's CAF actor id in
//   that process, so two activations on one silo differ);  `STOPPED` at the end.
// stdin commands: `call {host} {port} {generation} {text}` (a call to that silo's echo);
// `grain {type} {key}`: a grain call through this process's placement service (silo hosts
// only; type `echo` is single-activation with random placement, `pecho` single-activation
// prefer-local, both answering `(silo, actor id)`);
// `auth`: `AUTH admitted {n} refused {protocol} {cluster_id} {secret} {timeout} {oversized}
// {tls}`,
// the process's handshake counters (peer_auth.hpp);
// `stop` or end of input: the handle's graceful `stop()` (host stop,
// docs/behaviour/lifecycle.md#the-host; a silo publishes ShuttingDown, then Dead, and Stopping only
// if ShuttingDown misses
// `membership.shutdown_grace_ms`: docs/behaviour/membership.md "Leaving"), exit code 0.
// Exit code 2: bad usage or config (also `monolith`, not a network process); 3: start-up
// failed (a build that failed, e.g. a port in use, prints no `STOPPED`). The node dies with
// its parent (PR_SET_PDEATHSIG), so a crashed driver leaves no process behind.

#include <sys/prctl.h>

#include <chrono>
#include <csignal>
#include <iostream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>

#include <caf/all.hpp>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/grain_registry.hpp"
#include "cafmesh/actors/membership.hpp"
#include "cafmesh/actors/message_center.hpp"
#include "cafmesh/actors/net_link.hpp"
#include "cafmesh/actors/peer_auth.hpp"
#include "cafmesh/actors/placement.hpp"
#include "cafmesh/config/load.hpp"
#include "cafmesh/lifecycle/hosting.hpp"

namespace {

using nn_echo_atom = caf::atom_constant<caf::atom("nnecho")>;
using nn_where_atom = caf::atom_constant<caf::atom("nnwhere")>;

std::mutex out_mtx;

void say(const std::string& line) {
  std::lock_guard<std::mutex> guard{out_mtx};
  std::cout << line << std::endl;
}

caf::behavior printer(caf::event_based_actor*) {
  return {
    [](cafmesh::mb_snapshot_atom, const cafmesh::membership_snapshot& snap) {
      auto text = snap.render();
      std::string line = "SNAP ";
      for (char c : text)
        line += c == '\n' ? std::string{" | "} : std::string(1, c);
      say(line);
    },
  };
}

caf::behavior echo(caf::event_based_actor*, cafmesh::silo_address self_addr) {
  return {
    [=](nn_echo_atom, const std::string& text) {
      return text + " from " + self_addr.to_string();
    },
  };
}

/// Grain `echo`/`pecho`: `(nn_where_atom) -> (std::string silo, uint64_t actor id)`. The
/// silo's address is known once the builder bound its port: `where` is set after `build()`,
/// before `start()`, so every activation reads it set.
cafmesh::activation_factory where_grain(std::shared_ptr<const std::string> where) {
  return [where](caf::event_based_actor* self, const cafmesh::grain_id&) -> caf::behavior {
    auto name = *where;
    auto instance = static_cast<uint64_t>(self->id());
    return {[name, instance](nn_where_atom) { return caf::make_message(name, instance); }};
  };
}

constexpr auto bound = std::chrono::seconds(10);

/// What the stdin commands use of a built process.
struct node_parts {
  caf::actor centre;
  cafmesh::membership_agent_actor agent;
  caf::actor placement; ///< null in a pure client
  cafmesh::net_link_actor link;
};

/// Prints the snapshots, registers the echo, starts `p`, runs the stdin commands and stops
/// `p` gracefully. Answers the exit code.
int serve(caf::actor_system& sys, cafmesh::lifecycle::mesh_process& p, const node_parts& parts,
          bool silo) {
  auto print = sys.spawn(printer);
  auto echo_actor = sys.spawn(echo, p.address());
  caf::anon_send(parts.agent, cafmesh::mb_subscribe_atom::value, print);
  caf::anon_send(parts.centre, cafmesh::mc_register_atom::value, cafmesh::component::test,
                 echo_actor);
  say("ADDR " + p.address().to_string());
  int rc = 0;
  if (auto err = p.when_active()) {
    std::cerr << "start failed: " << sys.render(err) << "\n";
    p.stop(false);
    rc = 3;
  } else {
    say(silo ? "ACTIVE" : "CLIENT");
    caf::scoped_actor self{sys};
    std::string line;
    while (std::getline(std::cin, line)) {
      std::istringstream in{line};
      std::string cmd;
      in >> cmd;
      if (cmd == "stop")
        break;
      if (cmd == "call") {
        cafmesh::silo_address dst;
        std::string text;
        in >> dst.host >> dst.port >> dst.generation >> text;
        self->request(parts.centre, bound,
                      cafmesh::make_call(dst, cafmesh::component::test, nn_echo_atom::value,
                                         text))
          .receive([](const std::string& reply) { say("REPLY " + reply); },
                   [&](caf::error& e) { say("CALLERR " + sys.render(e)); });
      }
      if (cmd == "auth") {
        self->request(parts.link, bound, cafmesh::nl_auth_atom::value)
          .receive(
            [](const cafmesh::peer_auth_stats& x) {
              std::string line = "AUTH admitted " + std::to_string(x.admitted) + " refused";
              for (auto n : x.refused)
                line += " " + std::to_string(n);
              say(line);
            },
            [&](caf::error& e) { say("AUTHERR " + sys.render(e)); });
      }
      if (cmd == "grain") {
        cafmesh::grain_id id;
        in >> id.type >> id.key;
        if (!parts.placement) {
          say("GRAINERR " + id.to_string() + " no placement service (not a silo host)");
          continue;
        }
        // The placement service always answers (placement and response timeouts).
        self->request(parts.placement, caf::infinite, cafmesh::pl_call_atom::value, id,
                      int32_t{0}, caf::make_message(nn_where_atom::value))
          .receive(
            [&](const std::string& host_silo, uint64_t instance) {
              say("GRAIN " + id.to_string() + " " + host_silo + " #" + std::to_string(instance));
            },
            [&](caf::error& e) {
              auto f = cafmesh::to_fault(e);
              say("GRAINERR " + id.to_string() + " " + cafmesh::to_string(f.code) + ": "
                  + f.text);
            });
      }
    }
    // Graceful host stop (docs/behaviour/lifecycle.md#the-host); blocks until the process's runtime
    // is torn down.
    if (auto err = p.stop())
      std::cerr << "stop: " << sys.render(err) << "\n";
  }
  caf::anon_send_exit(print, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(echo_actor, caf::exit_reason::user_shutdown);
  return rc;
}

/// Builds and serves a silo; `built` is false when the build failed (exit code 3).
int run_silo(caf::actor_system& sys, const cafmesh::config::mesh_config& mc, bool& built) {
  auto where = std::make_shared<std::string>();
  cafmesh::lifecycle::silo_builder b{sys};
  // The node only answers and calls through its centre and placement: no correlating entry
  // (with one, a silo whose oracle's process stopped first can hang in ~actor_system,
  // docs/caf-notes.md#the-io-middlemans-stop).
  b.config(mc).network().without_entry().grains([where](cafmesh::grain_registry& reg) {
    return reg.add_single("echo", cafmesh::placement_strategy::random, where_grain(where))
           && reg.add_single("pecho", cafmesh::placement_strategy::prefer_local,
                             where_grain(where));
  });
  auto silo = b.build();
  if (!silo) {
    std::cerr << "start failed: " << sys.render(silo.error()) << "\n";
    built = false;
    return 3;
  }
  *where = silo->address().to_string();
  const auto& c = silo->components();
  return serve(sys, *silo, node_parts{c.centre, c.agent, silo->placement(), silo->endpoint().link},
               true);
}

/// Builds and serves a pure client; `built` as for `run_silo`.
int run_client(caf::actor_system& sys, const cafmesh::config::mesh_config& mc, bool& built) {
  // It may host the oracle and start before any silo: no gateway wait.
  auto client =
    cafmesh::lifecycle::client_builder{sys}.config(mc).network().wait_for_gateway(false).build();
  if (!client) {
    std::cerr << "start failed: " << sys.render(client.error()) << "\n";
    built = false;
    return 3;
  }
  const auto& c = client->components();
  return serve(sys, *client,
               node_parts{c.centre, c.agent, caf::actor{}, client->endpoint().link}, false);
}

} // namespace

int main(int argc, char** argv) {
  // A test driver that dies (even by SIGKILL) takes its nodes with it.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (argc != 2) {
    std::cerr << "usage: cafmesh_net_node <config.json>\n";
    return 2;
  }
  auto loaded = cafmesh::config::load_file(argv[1]);
  if (!loaded.ok) {
    std::cerr << loaded.message() << "\n";
    return 2;
  }
  const auto& mc = loaded.value;
  using role = cafmesh::config::process_role;
  if (mc.mesh.role == role::monolith) {
    std::cerr << "cafmesh_net_node: process_role monolith is not a network process\n";
    return 2;
  }
  caf::actor_system_config cfg;
  cafmesh::lifecycle::prepare(cfg); // cafmesh's types and the io middleman
  cfg.set("scheduler.max-threads", size_t{2});
  int rc = 0;
  bool built = true;
  {
    caf::actor_system sys{cfg};
    // The builders apply the configuration's `log.level` (stderr).
    rc = mc.mesh.role == role::silo_host ? run_silo(sys, mc, built) : run_client(sys, mc, built);
  }
  // A process that was never built ends without `STOPPED`, as before it listened.
  if (built)
    say("STOPPED");
  return rc;
}
