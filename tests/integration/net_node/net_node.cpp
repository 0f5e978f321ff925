// cafmesh_net_node: one network-mode process for the multi-process integration test
// (net_cluster_test.cpp). Usage: `cafmesh_net_node <config.json>`.
//
// Starts an actor system with the io middleman, then `start_net_process` (link, message
// centre, membership agent; the oracle too when `network.primary_port` is 0), registers a
// `component::test` echo, joins the cluster and becomes Active. Generation = wall-clock ms
// since the epoch at start (SPEC §2.3, production rule).
//
// stdout, one line each, flushed:
//   `ADDR {silo address}` once listening;  `ACTIVE` after the join (a `silo_host`) or
//   `CLIENT` (a `pure_client`: it never joins, but its agent receives every snapshot);
//   `SNAP v{n} | {silo} {status}[ gateway] | ...` for every snapshot the agent applies;
//   `REPLY {text}` / `CALLERR {rendered error}` for `call` commands;  `STOPPED` at the end.
// stdin commands: `call {host} {port} {generation} {text}` (a call to that silo's echo);
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

#include "cafmesh/actors/membership.hpp"
#include "cafmesh/actors/message_center.hpp"
#include "cafmesh/actors/net_process.hpp"
#include "cafmesh/config/load.hpp"
#include "cafmesh/routing/register_types.hpp"

namespace {

using nn_echo_atom = caf::atom_constant<caf::atom("nnecho")>;

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
    say("ADDR " + p.addr.to_string());
    caf::scoped_actor self{sys};
    caf::error err;
    bool silo = mc.mesh.role == cafmesh::config::process_role::silo_host;
    if (silo) {
      self->request(p.agent, bound, cafmesh::mb_join_atom::value,
                    std::vector<cafmesh::grain_type_info>{}, true)
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
      }
      // Graceful leave (SPEC §4.3): ShuttingDown, then Dead. A pure client has no row.
      for (auto to : {cafmesh::silo_status::shutting_down, cafmesh::silo_status::dead})
        if (silo)
          self->request(p.agent, bound, cafmesh::mb_status_atom::value, to)
            .receive([](uint64_t) {},
                     [&](caf::error& e) { std::cerr << "leave: " << sys.render(e) << "\n"; });
    }
    p.stop();
    caf::anon_send_exit(print, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(echo_actor, caf::exit_reason::user_shutdown);
  }
  say("STOPPED");
  return rc;
}
