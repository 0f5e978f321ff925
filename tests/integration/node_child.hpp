#pragma once

// One `cafmesh_net_node` child process for the multi-process integration tests
// (net_cluster_test.cpp, peer_auth_test.cpp): started with posix_spawn, a pipe to its stdin
// and one from its stdout (read line by line), stderr to a file. It is killed (SIGKILL)
// and reaped when the object goes, so nothing can leak processes.

#include <doctest/doctest.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

extern char** environ;

namespace cafmesh::testing {

using clock_type = std::chrono::steady_clock;

inline int64_t ms_since(clock_type::time_point t0) {
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

/// The rendered silo address a node printed (`ADDR S127.0.0.1:port@gen`).
inline std::string node_addr(child& c, int64_t timeout_ms = 10000) {
  auto i = c.wait_for([](const std::string& l) { return l.rfind("ADDR ", 0) == 0; },
                      timeout_ms);
  REQUIRE_MESSAGE(i.has_value(), c.name << " printed no address; stderr:\n" << c.log_tail());
  return c.lines[*i].substr(5);
}

inline uint16_t port_of(const std::string& addr) {
  auto colon = addr.rfind(':');
  auto at = addr.rfind('@');
  return static_cast<uint16_t>(std::stoi(addr.substr(colon + 1, at - colon - 1)));
}

inline uint64_t generation_of(const std::string& addr) {
  return std::stoull(addr.substr(addr.rfind('@') + 1));
}

/// `call` arguments for a rendered address: `host port generation`.
inline std::string call_args(const std::string& addr) {
  auto colon = addr.rfind(':');
  auto at = addr.rfind('@');
  return addr.substr(1, colon - 1) + " " + addr.substr(colon + 1, at - colon - 1) + " "
         + addr.substr(at + 1);
}

} // namespace cafmesh::testing
