// Three silo PROCESSES in network mode (net_link.hpp, net_process.hpp): each a
// `cafmesh_net_node` started with posix_spawn, talking over CAF io on 127.0.0.1 with ports
// chosen by the OS. They form a cluster through the primary's membership oracle; one
// leaves gracefully, one is killed with SIGKILL and restarted on its old port with a higher
// generation, and a stopped (SIGSTOP) one is detected by heartbeat silence. A pure client
// process receives the snapshots without joining and calls a silo.
// Every wait is bounded, and every child is killed (SIGKILL) and reaped when the test ends
// for any reason, so nothing can hang CI or leak processes.

#include <doctest/doctest.h>

#ifndef CAFMESH_NET_NODE_PATH

TEST_CASE("net cluster: the node executable is built (include net_tests.cmake)") {
  FAIL("tests/integration/net_tests.cmake is not included: cafmesh_net_node is missing");
}

#else

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

extern char** environ;

namespace {

using clock_type = std::chrono::steady_clock;

constexpr int64_t heartbeat_interval_ms = 100;
constexpr int64_t failure_detection_ms = 1500;
constexpr int64_t suspect_ms = 200;         // min(2 * 100, 1500 / 2), net_link.hpp
constexpr int64_t oracle_detection_ms = 1300; // failure_detection_ms - suspect_ms
constexpr int64_t step_bound_ms = 10000;    // any ordinary step (start, join, snapshot)

int64_t ms_since(clock_type::time_point t0) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - t0).count();
}

/// One child process with a pipe to its stdin and one from its stdout; stderr goes to a file.
struct child {
  std::string name;
  std::string log_path;
  pid_t pid = -1;
  int in_fd = -1;
  int out_fd = -1;
  bool reaped = false;
  int status = 0;
  std::string partial;
  std::vector<std::string> lines;

  child(std::string nm, const std::string& config_path, std::string log)
    : name(std::move(nm)), log_path(std::move(log)) {
    int in_pipe[2];
    int out_pipe[2];
    REQUIRE(pipe2(in_pipe, O_CLOEXEC) == 0);
    REQUIRE(pipe2(out_pipe, O_CLOEXEC) == 0);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in_pipe[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1);
    posix_spawn_file_actions_addopen(&fa, 2, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    std::string exe = CAFMESH_NET_NODE_PATH;
    std::vector<char*> argv{const_cast<char*>(exe.c_str()),
                            const_cast<char*>(config_path.c_str()), nullptr};
    int rc = posix_spawn(&pid, exe.c_str(), &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    close(in_pipe[0]);
    close(out_pipe[1]);
    in_fd = in_pipe[1];
    out_fd = out_pipe[0];
    REQUIRE_MESSAGE(rc == 0, "posix_spawn " << exe << ": " << std::strerror(rc));
  }

  child(const child&) = delete;
  child& operator=(const child&) = delete;

  ~child() {
    if (pid > 0 && !reaped) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
    }
    if (in_fd >= 0)
      close(in_fd);
    if (out_fd >= 0)
      close(out_fd);
  }

  /// Reads what is available within `timeout_ms`; false at end of output.
  bool pump(int timeout_ms) {
    if (out_fd < 0)
      return false;
    pollfd pfd{out_fd, POLLIN, 0};
    if (poll(&pfd, 1, timeout_ms) <= 0)
      return true;
    char buf[4096];
    auto n = read(out_fd, buf, sizeof(buf));
    if (n <= 0) {
      close(out_fd);
      out_fd = -1;
      return false;
    }
    partial.append(buf, static_cast<size_t>(n));
    size_t pos;
    while ((pos = partial.find('\n')) != std::string::npos) {
      lines.push_back(partial.substr(0, pos));
      partial.erase(0, pos + 1);
    }
    return true;
  }

  /// Index of the first line at or after `from` satisfying `pred`, waiting up to
  /// `timeout_ms` for it.
  std::optional<size_t> wait_for(const std::function<bool(const std::string&)>& pred,
                                 int64_t timeout_ms, size_t from = 0) {
    auto t0 = clock_type::now();
    for (;;) {
      for (size_t i = from; i < lines.size(); ++i)
        if (pred(lines[i]))
          return i;
      from = std::max(from, lines.size());
      auto left = timeout_ms - ms_since(t0);
      if (left <= 0)
        return std::nullopt;
      if (!pump(static_cast<int>(std::min<int64_t>(left, 50))) && out_fd < 0) {
        // End of output: check once more what arrived, then give up.
        for (size_t i = from; i < lines.size(); ++i)
          if (pred(lines[i]))
            return i;
        return std::nullopt;
      }
    }
  }

  void send(const std::string& line) {
    auto text = line + "\n";
    auto n = write(in_fd, text.data(), text.size());
    CHECK(n == static_cast<ssize_t>(text.size()));
  }

  /// Waits up to `timeout_ms` for the process to exit; true if it did.
  bool wait_exit(int64_t timeout_ms) {
    auto t0 = clock_type::now();
    while (!reaped) {
      if (waitpid(pid, &status, WNOHANG) == pid) {
        reaped = true;
        break;
      }
      if (ms_since(t0) > timeout_ms)
        return false;
      pump(20);
    }
    return true;
  }

  std::string log_tail() const {
    std::ifstream in{log_path};
    std::stringstream ss;
    ss << in.rdbuf();
    auto s = ss.str();
    return s.size() > 3000 ? s.substr(s.size() - 3000) : s;
  }
};

std::string write_config(const std::string& dir, const std::string& name, uint16_t port,
                         uint16_t primary_port, const std::string& role = "silo_host") {
  auto path = dir + "/" + name + ".json";
  std::ofstream out{path};
  out << "{\n"
      << R"(  "mesh": {"process_role": ")" << role << R"(", "name": ")" << name << "\"},\n"
      << R"(  "network": {"host": "127.0.0.1", "port": )" << port
      << R"(, "primary_host": "127.0.0.1", "primary_port": )" << primary_port
      << R"(, "heartbeat_interval_ms": )" << heartbeat_interval_ms
      << R"(, "failure_detection_ms": )" << failure_detection_ms << "}\n}\n";
  return path;
}

/// The rendered silo address a node printed (`ADDR S127.0.0.1:port@gen`).
std::string node_addr(child& c) {
  auto i = c.wait_for([](const std::string& l) { return l.rfind("ADDR ", 0) == 0; },
                      step_bound_ms);
  REQUIRE_MESSAGE(i.has_value(), c.name << " printed no address; stderr:\n" << c.log_tail());
  return c.lines[*i].substr(5);
}

uint16_t port_of(const std::string& addr) {
  auto colon = addr.rfind(':');
  auto at = addr.rfind('@');
  return static_cast<uint16_t>(std::stoi(addr.substr(colon + 1, at - colon - 1)));
}

uint64_t generation_of(const std::string& addr) {
  return std::stoull(addr.substr(addr.rfind('@') + 1));
}

/// `call` arguments for a rendered address: `host port generation`.
std::string call_args(const std::string& addr) {
  auto colon = addr.rfind(':');
  auto at = addr.rfind('@');
  return addr.substr(1, colon - 1) + " " + addr.substr(colon + 1, at - colon - 1) + " "
         + addr.substr(at + 1);
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

} // namespace

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
    // A graceful leave never passes through Stopping.
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
  CHECK(stopping.has_value()); // Active -> Stopping -> Dead (SPEC §4.1)
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
                                                  << failure_detection_ms << " ms + one tick)");
  // Last sign of life at most one heartbeat before the freeze.
  CHECK(stopped_to_dead_ms >= failure_detection_ms - heartbeat_interval_ms - 50);
  CHECK(stopped_to_dead_ms <= failure_detection_ms + 2 * heartbeat_interval_ms + 500);
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
