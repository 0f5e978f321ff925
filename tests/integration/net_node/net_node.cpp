// cafmesh_net_node: one network-mode process for the multi-process integration test
// (net_cluster_test.cpp). Usage: `cafmesh_net_node <config.json>`.
//
// Starts an actor system with the io middleman, then `start_net_process` (link, message
// centre, membership agent; the oracle too when `network.primary_port` is 0), registers a
// `component::test` echo; a silo host also runs a directory partition, a placement service
// and a catalog (placement.hpp, catalog.hpp) hosting the grain types `echo` and `pecho`,
// publishes them in its manifest, joins the cluster and becomes Active. Generation = wall-clock ms
// since the epoch at start (SPEC §2.3, production rule).
//
// stdout, one line each, flushed:
//   `ADDR {silo address}` once listening;  `ACTIVE` after the join (a `silo_host`) or
//   `CLIENT` (a `pure_client`: it never joins, but its agent receives every snapshot);
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
// `stop` or end of input: graceful leave (ShuttingDown, then Dead), exit code 0.
// Exit code 2: bad usage or config; 3: start-up failed. The node dies with its parent
// (PR_SET_PDEATHSIG), so a crashed driver leaves no process behind.

#include <sys/prctl.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <sstream>
#include <string>

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include "cafmesh/actors/catalog.hpp"
#include "cafmesh/actors/directory.hpp"
#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/grain_call.hpp"
#include "cafmesh/actors/grain_registry.hpp"
#include "cafmesh/actors/log.hpp"
#include "cafmesh/actors/membership.hpp"
#include "cafmesh/actors/message_center.hpp"
#include "cafmesh/actors/net_process.hpp"
#include "cafmesh/actors/placement.hpp"
#include "cafmesh/config/load.hpp"
#include "cafmesh/routing/register_types.hpp"

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

/// Grain `echo`/`pecho`: `(nn_where_atom) -> (std::string silo, uint64_t actor id)`.
cafmesh::activation_factory where_grain(const cafmesh::silo_address& s) {
  auto name = s.to_string();
  return [name](caf::event_based_actor* self, const cafmesh::grain_id&) -> caf::behavior {
    auto instance = static_cast<uint64_t>(self->id());
    return {[name, instance](nn_where_atom) { return caf::make_message(name, instance); }};
  };
}

constexpr auto bound = std::chrono::seconds(10);

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
  cafmesh::log::configure(mc.log); // `log.level` of the config file (stderr)
  auto generation = static_cast<uint64_t>(
    std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::system_clock::now().time_since_epoch())
      .count());
  caf::actor_system_config cfg;
  cafmesh::register_types(cfg);
  cfg.load<caf::io::middleman>();
  cfg.set("scheduler.max-threads", size_t{2});
  int rc = 0;
  {
    caf::actor_system sys{cfg};
    auto started = cafmesh::start_net_process(sys, mc.network, generation);
    if (!started) {
      std::cerr << "start failed: " << sys.render(started.error()) << "\n";
      return 3;
    }
    auto p = *started;
    auto print = sys.spawn(printer);
    auto echo_actor = sys.spawn(echo, p.addr);
    caf::anon_send(p.agent, cafmesh::mb_subscribe_atom::value, print);
    caf::anon_send(p.centre, cafmesh::mc_register_atom::value, cafmesh::component::test,
                   echo_actor);
    bool silo = mc.mesh.role == cafmesh::config::process_role::silo_host;
    // Grain hosting (silo hosts only): directory partition, placement service, catalog.
    auto registry = std::make_shared<cafmesh::grain_registry>();
    caf::actor partition;
    caf::actor placement;
    caf::actor catalog;
    if (silo) {
      registry->add_single("echo", cafmesh::placement_strategy::random, where_grain(p.addr));
      registry->add_single("pecho", cafmesh::placement_strategy::prefer_local,
                           where_grain(p.addr));
      partition = cafmesh::spawn_directory_partition(sys, p.addr, p.centre, p.agent);
      placement = cafmesh::spawn_placement_service(
        sys, cafmesh::make_placement_config(mc, p.addr), registry, p.centre);
      catalog = cafmesh::spawn_catalog(sys, cafmesh::make_catalog_config(mc, p.addr), registry,
                                       p.centre, placement);
      for (auto comp : {cafmesh::component::catalog, cafmesh::component::activation})
        caf::anon_send(p.centre, cafmesh::mc_register_atom::value, comp, catalog);
      for (auto& sub : {placement, catalog})
        caf::anon_send(p.agent, cafmesh::mb_subscribe_atom::value, sub);
    }
    say("ADDR " + p.addr.to_string());
    caf::scoped_actor self{sys};
    caf::error err;
    if (silo) {
      self->request(p.agent, bound, cafmesh::mb_join_atom::value, registry->manifest(), true)
        .receive([](uint64_t) {}, [&](caf::error& e) { err = e; });
      if (!err)
        self
          ->request(p.agent, bound, cafmesh::mb_status_atom::value,
                    cafmesh::silo_status::active)
          .receive([](uint64_t) {}, [&](caf::error& e) { err = e; });
    }
    if (err) {
      std::cerr << "join failed: " << sys.render(err) << "\n";
      rc = 3;
    } else {
      say(silo ? "ACTIVE" : "CLIENT");
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
          self->request(p.centre, bound,
                        cafmesh::make_call(dst, cafmesh::component::test, nn_echo_atom::value,
                                           text))
            .receive([](const std::string& reply) { say("REPLY " + reply); },
                     [&](caf::error& e) { say("CALLERR " + sys.render(e)); });
        }
        if (cmd == "grain") {
          cafmesh::grain_id id;
          in >> id.type >> id.key;
          if (!placement) {
            say("GRAINERR " + id.to_string() + " no placement service (not a silo host)");
            continue;
          }
          // The placement service always answers (placement and response timeouts).
          self->request(placement, caf::infinite, cafmesh::pl_call_atom::value, id, int32_t{0},
                        caf::make_message(nn_where_atom::value))
            .receive(
              [&](const std::string& host_silo, uint64_t instance) {
                say("GRAIN " + id.to_string() + " " + host_silo + " #"
                    + std::to_string(instance));
              },
              [&](caf::error& e) {
                auto f = cafmesh::to_fault(e);
                say("GRAINERR " + id.to_string() + " " + cafmesh::to_string(f.code) + ": "
                    + f.text);
              });
        }
      }
      // Graceful leave (SPEC §4.3): ShuttingDown, then Dead. A pure client has no row.
      for (auto to : {cafmesh::silo_status::shutting_down, cafmesh::silo_status::dead})
        if (silo)
          self->request(p.agent, bound, cafmesh::mb_status_atom::value, to)
            .receive([](uint64_t) {},
                     [&](caf::error& e) { std::cerr << "leave: " << sys.render(e) << "\n"; });
    }
    for (auto& a : {catalog, placement, partition})
      if (a)
        caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    p.stop();
    caf::anon_send_exit(print, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(echo_actor, caf::exit_reason::user_shutdown);
  }
  say("STOPPED");
  return rc;
}
