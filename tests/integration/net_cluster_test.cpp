// Three silo PROCESSES in network mode (net_link.hpp): each a `cafmesh_net_node` (a
// `silo_builder` silo over CAF io, docs/hosting.md) started with posix_spawn, talking on
// 127.0.0.1 with ports chosen by the OS. They form a cluster through the primary's
// membership oracle; one leaves gracefully, one is killed with SIGKILL and restarted on its
// old port with a higher generation, and a stopped (SIGSTOP) one is detected by heartbeat
// silence. A pure client process (a `client_builder` client) receives the snapshots without
// joining and calls a silo.
// A second case makes grain calls (placement service + catalog + directory in every node)
// across the processes: a key placed on B from A, a kill -9 of C and its restart with a
// higher generation, after which no answer names the old C and a fresh key reaches the new C.
// With CAFMESH_NET_DEBUG set in the environment the nodes log at debug level (`log.level`)
// and the grain case keeps its temporary directory (configs and stderr logs).
// Every wait is bounded, and every child is killed (SIGKILL) and reaped when the test ends
// for any reason, so nothing can hang CI or leak processes.

#include <doctest/doctest.h>

#ifndef CAFMESH_NET_NODE_PATH

TEST_CASE("net cluster: the node executable is built (include net_tests.cmake)") {
  FAIL("tests/integration/net_tests.cmake is not included: cafmesh_net_node is missing");
}

#else

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cafmesh/actors/directory.hpp"
#include "cafmesh/actors/ids.hpp"
#include "node_child.hpp"

namespace {

using namespace cafmesh::testing; // child, node_addr, port_of, ...

constexpr int64_t heartbeat_interval_ms = 100;
constexpr int64_t failure_detection_ms = 1500;
constexpr int64_t suspect_ms = 200;         // min(2 * 100, 1500 / 2), net_link.hpp
constexpr int64_t oracle_detection_ms = 1300; // failure_detection_ms - suspect_ms
constexpr int64_t step_bound_ms = 10000;    // any ordinary step (start, join, snapshot)

std::string write_config(const std::string& dir, const std::string& name, uint16_t port,
                         uint16_t primary_port, const std::string& role = "silo_host") {
  auto path = dir + "/" + name + ".json";
  std::ofstream out{path};
  out << "{\n"
      << R"(  "mesh": {"process_role": ")" << role << R"(", "name": ")" << name << "\"},\n"
      << R"(  "network": {"host": "127.0.0.1", "port": )" << port
      << R"(, "primary_host": "127.0.0.1", "primary_port": )" << primary_port
      << R"(, "heartbeat_interval_ms": )" << heartbeat_interval_ms
      << R"(, "failure_detection_ms": )" << failure_detection_ms << "}"
      << (std::getenv("CAFMESH_NET_DEBUG") ? ",\n  \"log\": {\"level\": \"debug\"}\n}\n" : "\n}\n");
  return path;
}

/// The status a `SNAP` line gives `addr`, or "" if the line has no row for it.
std::string status_in(const std::string& line, const std::string& addr) {
  if (line.rfind("SNAP ", 0) != 0)
    return "";
  auto key = "| " + addr + " ";
  auto pos = line.find(key);
  if (pos == std::string::npos)
    return "";
  auto rest = line.substr(pos + key.size());
  return rest.substr(0, rest.find(' '));
}

size_t count_active(const std::string& line) {
  size_t n = 0;
  for (auto pos = line.find(" Active"); pos != std::string::npos;
       pos = line.find(" Active", pos + 1))
    ++n;
  return n;
}

/// Predicate: a snapshot in which exactly `addrs` are Active.
std::function<bool(const std::string&)> active_exactly(std::vector<std::string> addrs) {
  return [addrs](const std::string& l) {
    if (l.rfind("SNAP ", 0) != 0 || count_active(l) != addrs.size())
      return false;
    for (auto& a : addrs)
      if (status_in(l, a) != "Active")
        return false;
    return true;
  };
}

std::function<bool(const std::string&)> shows(const std::string& addr, const std::string& st) {
  return [=](const std::string& l) { return status_in(l, addr) == st; };
}

/// The silo address a rendered address (`S{host}:{port}@{generation}`) names.
cafmesh::silo_address parse_addr(const std::string& addr) {
  auto colon = addr.rfind(':');
  return cafmesh::silo_address{addr.substr(1, colon - 1), port_of(addr), generation_of(addr)};
}

/// The rendered directory owner (`hash_ring`, rendezvous hashing) of `echo/{key}`
/// over the silos `addrs`.
std::string ring_owner(const std::vector<std::string>& addrs, const std::string& key) {
  std::vector<cafmesh::silo_address> members;
  for (auto& a : addrs)
    members.push_back(parse_addr(a));
  auto o = cafmesh::hash_ring{members}.owner(cafmesh::grain_id{"echo", key});
  return o ? o->to_string() : std::string{};
}

/// Sends `grain echo {key}` to `n` and returns what it answered: the hosting silo's
/// rendered address, or `ERR {code}: {text}`; "" if no answer within the step bound.
/// `instance` (if given) receives the activation's `#{actor id}` on that silo.
std::string grain_echo(child& n, const std::string& key, std::string* instance = nullptr) {
  auto mark = n.lines.size();
  auto ok = "GRAIN echo/" + key + " ";
  auto bad = "GRAINERR echo/" + key + " ";
  n.send("grain echo " + key);
  auto i = n.wait_for(
    [&](const std::string& l) { return l.rfind(ok, 0) == 0 || l.rfind(bad, 0) == 0; },
    step_bound_ms, mark);
  if (!i)
    return "";
  auto& l = n.lines[*i];
  if (l.rfind(bad, 0) == 0)
    return "ERR " + l.substr(bad.size());
  auto rest = l.substr(ok.size());
  auto sp = rest.find(" #");
  if (instance)
    *instance = sp == std::string::npos ? "" : rest.substr(sp + 1);
  return rest.substr(0, sp);
}

} // namespace

TEST_CASE("net cluster: grain calls cross silo processes and never reach a restarted silo's old generation") {
  signal(SIGPIPE, SIG_IGN);
  auto t0 = clock_type::now();
  char tmpl[] = "/tmp/cafmesh_netgrain_XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  std::string dir = tmpl;
  MESSAGE("node configs and stderr logs in " << dir);

  // -- form the cluster: A (primary), B, C ----------------------------------------
  auto a = std::make_unique<child>("A", write_config(dir, "A", 0, 0), dir + "/A.log");
  auto a_addr = node_addr(*a);
  auto a_port = port_of(a_addr);
  auto b = std::make_unique<child>("B", write_config(dir, "B", 0, a_port), dir + "/B.log");
  auto c = std::make_unique<child>("C", write_config(dir, "C", 0, a_port), dir + "/C.log");
  auto b_addr = node_addr(*b);
  auto c_addr = node_addr(*c);
  for (auto* n : {a.get(), b.get(), c.get()}) {
    auto i = n->wait_for(active_exactly({a_addr, b_addr, c_addr}), step_bound_ms);
    REQUIRE_MESSAGE(i.has_value(), n->name << " never saw 3 Active; stderr:\n" << n->log_tail());
  }

  // -- from A, grain keys until one activation is on B and one on C ----------------
  // `echo` is single-activation with random placement
  // (docs/behaviour/directory-and-placement.md#placement): A's placement picks among the 3 Active
  // silos with its own seeded PRNG, so which key lands where differs from run to run; 40 keys leave
  // a chance of (2/3)^40 that B (or C) gets none.
  std::string b_key;
  std::vector<std::string> c_keys;
  int next_key = 0;
  for (; next_key < 40 && (b_key.empty() || c_keys.empty()); ++next_key) {
    auto key = "k" + std::to_string(next_key);
    auto host = grain_echo(*a, key);
    REQUIRE_MESSAGE((host == a_addr || host == b_addr || host == c_addr),
                    "grain echo/" << key << " from A answered '" << host << "'; A stderr:\n"
                                  << a->log_tail());
    if (host == b_addr && b_key.empty())
      b_key = key;
    if (host == c_addr)
      c_keys.push_back(key);
  }
  REQUIRE_MESSAGE(!b_key.empty(), "no key of " << next_key << " was placed on B");
  REQUIRE_MESSAGE(!c_keys.empty(), "no key of " << next_key << " was placed on C");
  MESSAGE("echo/" << b_key << " placed on B " << b_addr << ", echo/" << c_keys.front()
                  << " on C " << c_addr << " (" << next_key << " keys tried)");
  // Single activation cluster-wide: B and C reach the same activation through the
  // directory (their own placement caches are empty for this key).
  std::string b_inst;
  std::string inst;
  REQUIRE(grain_echo(*a, b_key, &b_inst) == b_addr);
  CHECK(grain_echo(*b, b_key, &inst) == b_addr);
  CHECK(inst == b_inst);
  CHECK(grain_echo(*c, b_key, &inst) == b_addr);
  CHECK(inst == b_inst);
  std::string c_inst;
  REQUIRE(grain_echo(*a, c_keys.front(), &c_inst) == c_addr);
  CHECK(grain_echo(*b, c_keys.front(), &inst) == c_addr);
  CHECK(inst == c_inst);

  // -- C is killed (SIGKILL) and declared Dead --------------------------------------
  auto a_mark = a->lines.size();
  auto b_mark = b->lines.size();
  REQUIRE(kill(c->pid, SIGKILL) == 0);
  for (auto [n, mark] : {std::make_pair(a.get(), a_mark), std::make_pair(b.get(), b_mark)}) {
    auto dead = n->wait_for(shows(c_addr, "Dead"), step_bound_ms, mark);
    REQUIRE_MESSAGE(dead.has_value(), n->name << " never saw C Dead; stderr:\n" << n->log_tail());
  }
  CHECK(c->wait_exit(step_bound_ms));

  // -- C restarts on its old port with a higher generation --------------------------
  a_mark = a->lines.size();
  b_mark = b->lines.size();
  c = std::make_unique<child>("C2", write_config(dir, "C2", port_of(c_addr), a_port),
                              dir + "/C2.log");
  auto c2_addr = node_addr(*c);
  REQUIRE(port_of(c2_addr) == port_of(c_addr));
  REQUIRE(generation_of(c2_addr) > generation_of(c_addr));
  for (auto [n, mark] : {std::make_pair(a.get(), a_mark), std::make_pair(b.get(), b_mark),
                         std::make_pair(c.get(), size_t{0})}) {
    auto i = n->wait_for(
      [&](const std::string& l) {
        return active_exactly({a_addr, b_addr, c2_addr})(l) && status_in(l, c_addr) == "Dead";
      },
      step_bound_ms, mark);
    REQUIRE_MESSAGE(i.has_value(), n->name << " never saw A, B, C2 Active with C Dead; stderr:\n"
                                           << n->log_tail());
  }

  // -- no call ever reaches the old C ---------------------------------------------
  // The activation on B is still alive, but
  // docs/behaviour/directory-and-placement.md#lookup-registration-cache does not make every caller
  // find it: the ring changed twice (C gone, C2 added) and an entry held by the old C's partition
  // died with it, so a caller whose lookup misses places the key again. Only "a live silo answers"
  // is asserted; a second activation is reported with the directory owners.
  for (auto* n : {a.get(), c.get()}) {
    auto host = grain_echo(*n, b_key, &inst);
    CHECK_MESSAGE((host == a_addr || host == b_addr || host == c2_addr),
                  "echo/" << b_key << " from " << n->name << " answered '" << host << "'");
    if (host != b_addr || inst != b_inst)
      MESSAGE("echo/" << b_key << " (activation " << b_inst << " on B) answered " << host << " "
                      << inst << " from " << n->name
                      << ": directory owner over {A,B,C} " << ring_owner({a_addr, b_addr, c_addr}, b_key)
                      << ", over {A,B,C2} " << ring_owner({a_addr, b_addr, c2_addr}, b_key)
                      << " (A " << a_addr << ", B " << b_addr << ", C " << c_addr << ", C2 "
                      << c2_addr << ")");
  }
  // The keys whose activation died with C are placed again, on a live silo.
  for (auto& key : c_keys) {
    auto host = grain_echo(*a, key);
    CHECK_MESSAGE((host == a_addr || host == b_addr || host == c2_addr),
                  "echo/" << key << " (was on the old C) answered '" << host << "'");
    CHECK(host != c_addr);
  }
  // Fresh keys until one lands on the new C; none may name the old generation.
  std::string c2_key;
  for (int n = 0; n < 40 && c2_key.empty(); ++n, ++next_key) {
    auto key = "k" + std::to_string(next_key);
    auto host = grain_echo(*a, key);
    CHECK_MESSAGE((host == a_addr || host == b_addr || host == c2_addr),
                  "echo/" << key << " answered '" << host << "'");
    CHECK(host != c_addr);
    if (host == c2_addr)
      c2_key = key;
  }
  REQUIRE_MESSAGE(!c2_key.empty(), "no fresh key was placed on the restarted C");
  MESSAGE("echo/" << c2_key << " placed on the restarted C " << c2_addr);
  CHECK(grain_echo(*b, c2_key) == c2_addr);
  // Every grain answer (or error) printed since the restart, on any node: none names the
  // old C (a different generation renders differently: `@{generation}`).
  for (auto [n, mark] : {std::make_pair(a.get(), a_mark), std::make_pair(b.get(), b_mark),
                         std::make_pair(c.get(), size_t{0})})
    for (size_t i = mark; i < n->lines.size(); ++i)
      if (n->lines[i].rfind("GRAIN", 0) == 0)
        CHECK_MESSAGE(n->lines[i].find(c_addr) == std::string::npos,
                      n->name << " printed the old C after its restart: " << n->lines[i]);

  // -- everyone leaves gracefully -----------------------------------------------------
  for (auto* n : {c.get(), b.get(), a.get()}) {
    n->send("stop");
    CHECK(n->wait_exit(step_bound_ms));
    CHECK(WIFEXITED(n->status));
    CHECK(WEXITSTATUS(n->status) == 0);
  }
  MESSAGE("grain cluster test took " << ms_since(t0) << " ms");
  std::error_code ec;
  if (!std::getenv("CAFMESH_NET_DEBUG"))
    std::filesystem::remove_all(dir, ec);
}

TEST_CASE("net cluster: 3 silo processes join through the primary, leave, crash and restart") {
  signal(SIGPIPE, SIG_IGN);
  char tmpl[] = "/tmp/cafmesh_net_XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  std::string dir = tmpl;
  MESSAGE("node configs and stderr logs in " << dir);

  // -- form the cluster -----------------------------------------------------------
  auto p = std::make_unique<child>("P", write_config(dir, "P", 0, 0), dir + "/P.log");
  auto p_addr = node_addr(*p);
  auto p_port = port_of(p_addr);
  auto b = std::make_unique<child>("B", write_config(dir, "B", 0, p_port), dir + "/B.log");
  auto c = std::make_unique<child>("C", write_config(dir, "C", 0, p_port), dir + "/C.log");
  auto b_addr = node_addr(*b);
  auto c_addr = node_addr(*c);
  for (auto* n : {p.get(), b.get(), c.get()}) {
    auto i = n->wait_for(active_exactly({p_addr, b_addr, c_addr}), step_bound_ms);
    CHECK_MESSAGE(i.has_value(), n->name << " never saw 3 Active; stderr:\n" << n->log_tail());
  }

  // -- calls between processes through the message centres ------------------------
  p->send("call " + call_args(b_addr) + " ping");
  auto r = p->wait_for([](const std::string& l) { return l.rfind("REPLY ", 0) == 0
                                                         || l.rfind("CALLERR ", 0) == 0; },
                       step_bound_ms);
  REQUIRE(r.has_value());
  CHECK(p->lines[*r] == "REPLY ping from " + b_addr);
  b->send("call " + call_args(c_addr) + " pong");
  r = b->wait_for([](const std::string& l) { return l.rfind("REPLY ", 0) == 0
                                                    || l.rfind("CALLERR ", 0) == 0; },
                  step_bound_ms);
  REQUIRE(r.has_value());
  CHECK(b->lines[*r] == "REPLY pong from " + c_addr);

  // -- a pure client: receives snapshots without a row, calls a silo -----------------
  {
    child q{"Q", write_config(dir, "Q", 0, p_port, "pure_client"), dir + "/Q.log"};
    auto q_addr = node_addr(q);
    CHECK(q.wait_for([](const std::string& l) { return l == "CLIENT"; }, step_bound_ms)
            .has_value());
    auto i = q.wait_for(active_exactly({p_addr, b_addr, c_addr}), step_bound_ms);
    REQUIRE_MESSAGE(i.has_value(), "the client never saw 3 Active; stderr:\n" << q.log_tail());
    CHECK(q.lines[*i].find(q_addr) == std::string::npos);
    q.send("call " + call_args(c_addr) + " from-client");
    r = q.wait_for([](const std::string& l) { return l.rfind("REPLY ", 0) == 0
                                                     || l.rfind("CALLERR ", 0) == 0; },
                   step_bound_ms);
    REQUIRE(r.has_value());
    CHECK(q.lines[*r] == "REPLY from-client from " + c_addr);
    q.send("stop");
    CHECK(q.wait_exit(step_bound_ms));
    CHECK(WEXITSTATUS(q.status) == 0);
    for (auto* n : {p.get(), b.get(), c.get()})
      for (auto& l : n->lines)
        CHECK(l.find(q_addr) == std::string::npos);
  }

  // -- C leaves gracefully: ShuttingDown, then Dead, seen by P and B ---------------
  // The silo's graceful host stop (docs/behaviour/membership.md "Leaving"): ShuttingDown at
  // the BecomeActive stop, Dead at stage 2001.
  auto p_mark = p->lines.size();
  auto b_mark = b->lines.size();
  c->send("stop");
  CHECK(c->wait_exit(step_bound_ms));
  CHECK(WIFEXITED(c->status));
  CHECK(WEXITSTATUS(c->status) == 0);
  for (auto [n, mark] : {std::make_pair(p.get(), p_mark), std::make_pair(b.get(), b_mark)}) {
    auto leaving = n->wait_for(shows(c_addr, "ShuttingDown"), step_bound_ms, mark);
    auto dead = n->wait_for(shows(c_addr, "Dead"), step_bound_ms, mark);
    CHECK_MESSAGE(leaving.has_value(), n->name << " never saw C ShuttingDown");
    CHECK_MESSAGE(dead.has_value(), n->name << " never saw C Dead");
    if (leaving && dead)
      CHECK(*leaving < *dead);
    // A graceful leave passes through Stopping only when ShuttingDown misses its grace
    // window (`membership.shutdown_grace_ms`, 5 s); here the oracle answers at once.
    CHECK_FALSE(n->wait_for(shows(c_addr, "Stopping"), 0, mark).has_value());
  }
  // A call to the departed C fails departed_silo.
  p_mark = p->lines.size();
  p->send("call " + call_args(c_addr) + " late");
  r = p->wait_for([](const std::string& l) { return l.rfind("REPLY ", 0) == 0
                                                    || l.rfind("CALLERR ", 0) == 0; },
                  step_bound_ms, p_mark);
  REQUIRE(r.has_value());
  CHECK(p->lines[*r].find("departed_silo") != std::string::npos);
  CHECK(p->lines[*r].find("silo " + c_addr + " has departed") != std::string::npos);

  // -- B is killed (SIGKILL): declared Dead within the configured bound --------------
  p_mark = p->lines.size();
  auto t_kill = clock_type::now();
  REQUIRE(kill(b->pid, SIGKILL) == 0);
  auto dead = p->wait_for(shows(b_addr, "Dead"), step_bound_ms, p_mark);
  auto killed_to_dead_ms = ms_since(t_kill);
  REQUIRE_MESSAGE(dead.has_value(), "P never declared B Dead; stderr:\n" << p->log_tail());
  MESSAGE("SIGKILL -> Dead in P's snapshot after " << killed_to_dead_ms << " ms (oracle delay "
                                                  << oracle_detection_ms << " ms)");
  CHECK(killed_to_dead_ms >= oracle_detection_ms - 50);
  CHECK(killed_to_dead_ms <= failure_detection_ms + 2 * heartbeat_interval_ms + 500);
  auto stopping = p->wait_for(shows(b_addr, "Stopping"), 0, p_mark);
  CHECK(stopping.has_value()); // Active -> Stopping -> Dead (docs/behaviour/membership.md#statuses)
  if (stopping)
    CHECK(*stopping < *dead);
  CHECK(b->wait_exit(step_bound_ms));

  // -- B restarts on its old port with a higher generation -------------------------
  auto b_port = port_of(b_addr);
  p_mark = p->lines.size();
  b = std::make_unique<child>("B2", write_config(dir, "B2", b_port, p_port), dir + "/B2.log");
  auto b2_addr = node_addr(*b);
  CHECK(port_of(b2_addr) == b_port);
  CHECK(generation_of(b2_addr) > generation_of(b_addr));
  for (auto* n : {p.get(), b.get()}) {
    auto i = n->wait_for(
      [&](const std::string& l) {
        return active_exactly({p_addr, b2_addr})(l) && status_in(l, b_addr) == "Dead";
      },
      step_bound_ms, n == p.get() ? p_mark : 0);
    CHECK_MESSAGE(i.has_value(), n->name << " never saw P and B2 Active with B Dead; stderr:\n"
                                         << n->log_tail());
  }
  p_mark = p->lines.size();
  p->send("call " + call_args(b2_addr) + " again");
  r = p->wait_for([](const std::string& l) { return l.rfind("REPLY ", 0) == 0
                                                    || l.rfind("CALLERR ", 0) == 0; },
                  step_bound_ms, p_mark);
  REQUIRE(r.has_value());
  CHECK(p->lines[*r] == "REPLY again from " + b2_addr);

  // -- B2 is frozen (SIGSTOP): its connection stays up, its heartbeats stop ----------
  p_mark = p->lines.size();
  auto t_stop = clock_type::now();
  REQUIRE(kill(b->pid, SIGSTOP) == 0);
  dead = p->wait_for(shows(b2_addr, "Dead"), step_bound_ms, p_mark);
  auto stopped_to_dead_ms = ms_since(t_stop);
  REQUIRE_MESSAGE(dead.has_value(), "P never declared the frozen B2 Dead; stderr:\n"
                                      << p->log_tail());
  MESSAGE("SIGSTOP -> Dead in P's snapshot after " << stopped_to_dead_ms << " ms (bound "
                                                  << failure_detection_ms << " ms)");
  // Dead failure_detection_ms after the last sign of life, which came at most one heartbeat
  // before the freeze (docs/behaviour/membership.md#the-failure-detection-bound); 500 ms for
  // the snapshot to reach P's log and this test on a loaded machine.
  CHECK(stopped_to_dead_ms >= failure_detection_ms - heartbeat_interval_ms - 50);
  CHECK(stopped_to_dead_ms <= failure_detection_ms + 500);
  kill(b->pid, SIGKILL);
  CHECK(b->wait_exit(step_bound_ms));

  // -- the primary stops gracefully ------------------------------------------------
  p->send("stop");
  CHECK(p->wait_exit(step_bound_ms));
  CHECK(WIFEXITED(p->status));
  CHECK(WEXITSTATUS(p->status) == 0);
  CHECK(p->wait_for([](const std::string& l) { return l == "STOPPED"; }, step_bound_ms)
          .has_value());
  // Reached only when no REQUIRE failed; CHECK failures above print the logs they need.
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

#endif
