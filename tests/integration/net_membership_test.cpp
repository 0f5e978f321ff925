// The membership oracle in network mode (net_process.hpp, net_link.hpp): two actor systems
// in one process; the primary hosts the oracle, the other reaches it through its link and
// an oracle relay over CAF io on 127.0.0.1 (ports chosen by the OS). Every wait is bounded,
// and every actor is sent an exit before its system is destroyed.

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/lifecycle_atoms.hpp"
#include "cafmesh/actors/membership.hpp"
#include "cafmesh/actors/message_center.hpp"
#include "cafmesh/actors/net_link.hpp"
#include "cafmesh/actors/net_process.hpp"
#include "cafmesh/routing/register_types.hpp"

using namespace std::chrono_literals;
using cafmesh::membership_snapshot;
using cafmesh::silo_address;
using cafmesh::silo_status;

namespace {

constexpr auto wait_bound = 10s;

cafmesh::config::network_section fast_network(uint16_t primary_port) {
  cafmesh::config::network_section net;
  net.primary_port = primary_port;
  net.heartbeat_interval_ms = 50;
  net.failure_detection_ms = 600; // suspect after 100 ms, oracle delay 500 ms
  return net;
}

/// One process: actor system with io, `start_net_process`, a probe subscribed to the agent.
struct node {
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> sys;
  cafmesh::net_process p;
  std::unique_ptr<caf::scoped_actor> probe;
  std::vector<membership_snapshot> seen;

  node(const cafmesh::config::network_section& net, uint64_t generation) {
    cafmesh::register_types(cfg);
    cfg.load<caf::io::middleman>();
    cfg.set("scheduler.max-threads", size_t{2});
    sys = std::make_unique<caf::actor_system>(cfg);
    auto started = cafmesh::start_net_process(*sys, net, generation);
    REQUIRE_MESSAGE(started, "start failed: " << sys->render(started.error()));
    p = *started;
    probe = std::make_unique<caf::scoped_actor>(*sys);
    caf::anon_send(p.agent, cafmesh::mb_subscribe_atom::value, caf::actor{*probe});
  }

  /// Joins (with the gateway flag `gateway`) and becomes Active through the agent; answers
  /// the two versions the oracle answered.
  std::vector<uint64_t> join(bool gateway = true) {
    caf::scoped_actor self{*sys};
    std::vector<uint64_t> versions;
    for (int step = 0; step < 2; ++step) {
      bool ok = false;
      auto on_ok = [&](uint64_t v) {
        versions.push_back(v);
        ok = true;
      };
      auto on_err = [&](caf::error& e) { FAIL("membership step failed: " << sys->render(e)); };
      if (step == 0)
        self->request(p.agent, wait_bound, cafmesh::mb_join_atom::value,
                      std::vector<cafmesh::grain_type_info>{}, gateway)
          .receive(on_ok, on_err);
      else
        self->request(p.agent, wait_bound, cafmesh::mb_status_atom::value, silo_status::active)
          .receive(on_ok, on_err);
      REQUIRE(ok);
    }
    return versions;
  }

  /// Receives snapshots until one satisfies `pred` (true) or `wait_bound` passes (false).
  bool await(const std::function<bool(const membership_snapshot&)>& pred) {
    for (auto& s : seen)
      if (pred(s))
        return true;
    auto deadline = std::chrono::steady_clock::now() + wait_bound;
    for (;;) {
      auto left = deadline - std::chrono::steady_clock::now();
      if (left <= 0s)
        return false;
      bool got = false;
      (*probe)->receive(
        [&](cafmesh::mb_snapshot_atom, const membership_snapshot& s) {
          seen.push_back(s);
          got = pred(s);
        },
        caf::after(std::chrono::duration_cast<std::chrono::milliseconds>(left)) >> [] {});
      if (got)
        return true;
    }
  }

  void shutdown() {
    if (!sys)
      return;
    p.stop();
    probe.reset();
    sys.reset();
  }

  ~node() { shutdown(); }
};

std::function<bool(const membership_snapshot&)> active_set_is(std::vector<silo_address> xs) {
  std::sort(xs.begin(), xs.end());
  return [xs](const membership_snapshot& s) { return s.active_set() == xs; };
}

} // namespace

TEST_CASE("net membership: a silo joins the primary's oracle over the network and a vanished one is declared Dead") {
  node primary{fast_network(0), 1};
  node b{fast_network(primary.p.addr.port), 1};
  // B's relay stands for the primary's oracle: a proxy of an actor on another node.
  {
    caf::scoped_actor self{*b.sys};
    bool remote = false;
    for (int i = 0; i < 200 && !remote; ++i)
      // The relay's own question, beside the oracle protocol it stands in for.
      self->request(caf::actor_cast<caf::actor>(b.p.oracle), wait_bound,
                    cafmesh::nl_oracle_atom::value)
        .receive([&](const caf::actor& o) { remote = o.node() != b.sys->node(); },
                 [&](caf::error&) { self->receive(caf::after(10ms) >> [] {}); });
    CHECK(remote);
  }
  primary.join();
  b.join();
  auto both = active_set_is({primary.p.addr, b.p.addr});
  CHECK(primary.await(both));
  CHECK(b.await(both));
  // Both gateways, both Active, versions strictly increasing on each side.
  for (auto* n : {&primary, &b}) {
    for (size_t i = 1; i < n->seen.size(); ++i)
      CHECK(n->seen[i].version > n->seen[i - 1].version);
    CHECK(n->seen.back().gateways() == n->seen.back().active_set());
  }

  // B's process vanishes without leaving: the primary's link sees the connection drop and
  // the oracle declares B Dead after its delay (600 - 100 = 500 ms), via Stopping.
  auto b_addr = b.p.addr;
  auto t0 = std::chrono::steady_clock::now();
  b.shutdown();
  CHECK(primary.await([&](const membership_snapshot& s) {
    auto r = s.find(b_addr);
    return r != nullptr && r->status == silo_status::dead;
  }));
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
              std::chrono::steady_clock::now() - t0)
              .count();
  MESSAGE("B's system destroyed -> Dead in the primary's snapshot after " << ms << " ms");
  CHECK(ms >= cafmesh::oracle_detection_ms(fast_network(0)));
  CHECK(ms <= 600 + 50 + 1000);
  std::vector<silo_status> b_path;
  for (auto& s : primary.seen)
    if (auto r = s.find(b_addr); r != nullptr && (b_path.empty() || b_path.back() != r->status))
      b_path.push_back(r->status);
  CHECK(b_path.back() == silo_status::dead);
  CHECK(b_path.size() >= 2);
  if (b_path.size() >= 2)
    CHECK(b_path[b_path.size() - 2] == silo_status::stopping);
  // The primary's centre fails calls to B as departed.
  caf::scoped_actor self{*primary.sys};
  self->request(primary.p.centre, wait_bound,
                cafmesh::make_call(b_addr, cafmesh::component::membership,
                                   cafmesh::mb_get_atom::value))
    .receive([&](const membership_snapshot&) { FAIL("B is gone"); },
             [&](caf::error& e) {
               CHECK(cafmesh::to_fault(e).code == cafmesh::mesh_errc::departed_silo);
             });
}

TEST_CASE("net membership: a restarted silo with a higher generation supersedes its predecessor") {
  node primary{fast_network(0), 1};
  primary.join();
  silo_address old_addr;
  uint16_t port = 0;
  {
    node b{fast_network(primary.p.addr.port), 7};
    b.join();
    old_addr = b.p.addr;
    port = b.p.addr.port;
    CHECK(primary.await(active_set_is({primary.p.addr, old_addr})));
  }
  // Restart at once on the same port, before the failure detector fires.
  auto net = fast_network(primary.p.addr.port);
  net.port = port;
  node b2{net, 8};
  REQUIRE(b2.p.addr.port == port);
  b2.join();
  CHECK(primary.await([&](const membership_snapshot& s) {
    auto old_row = s.find(old_addr);
    return old_row != nullptr && old_row->status == silo_status::dead
           && active_set_is({primary.p.addr, b2.p.addr})(s);
  }));
  // Calls through the centres reach the new generation, the old one is departed.
  caf::scoped_actor self{*primary.sys};
  self->request(primary.p.centre, wait_bound,
                cafmesh::make_call(b2.p.addr, cafmesh::component::membership,
                                   cafmesh::mb_get_atom::value))
    .receive([&](const membership_snapshot& s) { CHECK(s.is_active(b2.p.addr)); },
             [&](caf::error& e) { FAIL(primary.sys->render(e)); });
  self->request(primary.p.centre, wait_bound,
                cafmesh::make_call(old_addr, cafmesh::component::membership,
                                   cafmesh::mb_get_atom::value))
    .receive([&](const membership_snapshot&) { FAIL("the old generation is gone"); },
             [&](caf::error& e) {
               CHECK(cafmesh::to_fault(e).code == cafmesh::mesh_errc::departed_silo);
             });
}

TEST_CASE("S15.01 net membership: a silo whose primary restarts while the silo stops keeps "
          "reconnecting, and its leave reaches the primary's next table") {
  // Seen in the S15.01 roll (order C A B): B was told to stop while its link had lost the
  // restarting primary, and gave the primary up for good: its view froze, its leave was never
  // published and legs to a client whose gateway had moved held B's stop for the whole
  // shutdown budget. A process that had joined keeps reconnecting while it stops.
  node p1{fast_network(0), 1};
  p1.join();
  auto port = p1.p.addr.port;
  node b{fast_network(port), 2};
  b.join();
  REQUIRE(p1.await(active_set_is({p1.p.addr, b.p.addr})));
  p1.shutdown();
  caf::scoped_actor self{*b.sys};
  // b's link notices the primary's loss within a few heartbeats; then b's stop begins.
  self->receive(caf::after(300ms) >> [] {});
  bool stopping = false;
  self->request(b.p.link, wait_bound, cafmesh::lifecycle::host_stopping_atom::value)
    .receive([&](caf::ok_atom) { stopping = true; },
             [&](caf::error& e) { FAIL("host_stopping: " << b.sys->render(e)); });
  REQUIRE(stopping);
  // While the primary is gone, a membership step fails at once (the stop stays bounded).
  bool failed_at_once = false;
  auto t0 = std::chrono::steady_clock::now();
  self->request(b.p.agent, wait_bound, cafmesh::mb_status_atom::value,
                silo_status::shutting_down)
    .receive([&](uint64_t) {}, [&](caf::error&) { failed_at_once = true; });
  CHECK(failed_at_once);
  CHECK(std::chrono::steady_clock::now() - t0 < 2s);
  // The primary's next incarnation on the same port: b reconnects and its leave lands there.
  auto net = fast_network(0);
  net.port = port;
  node p2{net, 3};
  REQUIRE(p2.p.addr.port == port);
  p2.join();
  bool published = false;
  auto deadline = std::chrono::steady_clock::now() + wait_bound;
  while (!published && std::chrono::steady_clock::now() < deadline) {
    self->request(b.p.agent, wait_bound, cafmesh::mb_status_atom::value,
                  silo_status::shutting_down)
      .receive([&](uint64_t) { published = true; },
               [&](caf::error&) { self->receive(caf::after(100ms) >> [] {}); });
  }
  CHECK(published);
  CHECK(p2.await([&](const membership_snapshot& s) {
    auto row = s.find(b.p.addr);
    return row != nullptr && row->status == silo_status::shutting_down;
  }));
}

TEST_CASE("net membership: a silo whose primary's hello arrives before its own hello to the "
          "primary left learns the oracle all the same") {
  // The primary probes a vanished member's port every heartbeat until it is declared Dead, so
  // its hello can reach a silo restarted on that port before the silo's own connect to the
  // primary finished; the silo's hello, whose answer names the oracle, is then never sent
  // (the peer is already up). Seen once under ThreadSanitizer: the restarted silo never
  // joined. Here the primary's hello is handed to the silo's link directly, while the silo
  // still fails to connect to its primary's endpoint (nobody listens there yet), so the
  // order is certain.
  node primary{fast_network(0), 1};
  uint16_t free_port = 0;
  {
    node tmp{fast_network(0), 1};
    free_port = tmp.p.addr.port;
  }
  node b{fast_network(free_port), 2};
  caf::scoped_actor self{*b.sys};
  silo_address primary_there{"127.0.0.1", free_port, 1};
  self->request(b.p.link, wait_bound, cafmesh::nl_hello_atom::value, primary_there,
                caf::actor_cast<caf::actor>(primary.p.link))
    .receive([&](const silo_address& answered, const caf::actor&) { CHECK(answered == b.p.addr); },
             [&](caf::error& e) { FAIL("hello failed: " << b.sys->render(e)); });
  bool learned = false;
  self->request(b.p.link, 3s, cafmesh::nl_oracle_atom::value)
    .receive([&](const caf::actor& o) { learned = o.node() == primary.sys->node(); },
             [&](caf::error& e) { FAIL_CHECK("no oracle: " << b.sys->render(e)); });
  CHECK(learned);
}

TEST_CASE("net membership: a silo started before its primary joins once the primary listens") {
  uint16_t port = 0;
  {
    // A port that was just free: the one a short-lived primary bound.
    node tmp{fast_network(0), 1};
    port = tmp.p.addr.port;
  }
  node b{fast_network(port), 1};
  caf::scoped_actor self{*b.sys};
  // The join waits in the relay until the link reaches the primary.
  auto join = self->request(b.p.agent, wait_bound, cafmesh::mb_join_atom::value,
                            std::vector<cafmesh::grain_type_info>{}, true);
  self->receive(caf::after(300ms) >> [] {}); // b's link fails to connect a few times
  auto net = fast_network(0);
  net.port = port;
  node primary{net, 1};
  REQUIRE(primary.p.addr.port == port);
  bool joined = false;
  join.receive([&](uint64_t v) { joined = v >= 1; },
               [&](caf::error& e) { FAIL("join failed: " << b.sys->render(e)); });
  CHECK(joined);
  primary.join();
  self->request(b.p.agent, wait_bound, cafmesh::mb_status_atom::value, silo_status::active)
    .receive([](uint64_t) {}, [&](caf::error& e) { FAIL(b.sys->render(e)); });
  auto both = active_set_is({primary.p.addr, b.p.addr});
  CHECK(primary.await(both));
  CHECK(b.await(both));
}

TEST_CASE("net membership: versions count 1 to 4 over two joins, a non-gateway silo is no gateway, and after B's death the active set is the primary alone") {
  node primary{fast_network(0), 1};
  node b{fast_network(primary.p.addr.port), 1};
  CHECK(primary.join() == std::vector<uint64_t>{1, 2});
  CHECK(b.join(false) == std::vector<uint64_t>{3, 4});
  auto both = active_set_is({primary.p.addr, b.p.addr});
  auto is_v4 = [](const membership_snapshot& s) { return s.version == 4; };
  REQUIRE(primary.await(is_v4));
  auto v4 = *std::find_if(primary.seen.begin(), primary.seen.end(), is_v4);
  CHECK(both(v4));
  CHECK(v4.is_active(primary.p.addr));
  CHECK(v4.is_active(b.p.addr));
  CHECK(v4.gateways() == std::vector<silo_address>{primary.p.addr});
  // B's agent holds the same view (pushed over the network).
  {
    caf::scoped_actor self{*b.sys};
    self->request(b.p.agent, wait_bound, cafmesh::mb_get_atom::value)
      .receive([&](const membership_snapshot& s) {
                 CHECK(s.version == 4);
                 CHECK(s.gateways() == std::vector<silo_address>{primary.p.addr});
               },
               [&](caf::error& e) { FAIL(b.sys->render(e)); });
  }
  auto b_addr = b.p.addr;
  b.shutdown();
  auto b_dead = [&](const membership_snapshot& s) {
    auto r = s.find(b_addr);
    return r != nullptr && r->status == silo_status::dead;
  };
  REQUIRE(primary.await(b_dead));
  auto dead = *std::find_if(primary.seen.begin(), primary.seen.end(), b_dead);
  CHECK(dead.active_set() == std::vector<silo_address>{primary.p.addr});
  CHECK(dead.gateways() == std::vector<silo_address>{primary.p.addr});
}
