#pragma once

/// @file
/// A throwaway etcd cluster for tests and demos
/// (docs/behaviour/membership.md#the-etcd-provider): `n` members started as child processes of
/// this one (Debian's `etcd` executable on the PATH), on free loopback ports, each with its own data directory under
/// one temporary directory that the destructor removes with the members.

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <sys/types.h>

namespace cafmesh::testing {

/// Members of one local etcd cluster; see the file comment.
class etcd_cluster {
public:
  /// Starts `n` members (not waiting for them: see `wait_healthy`). Throws
  /// `std::runtime_error` if the temporary directory or a process cannot be made.
  explicit etcd_cluster(size_t n);

  /// Kills every member still running and removes the data directories.
  ~etcd_cluster();

  etcd_cluster(const etcd_cluster&) = delete;
  etcd_cluster& operator=(const etcd_cluster&) = delete;

  /// Every member's client URL (`http://127.0.0.1:{port}`), in member order.
  std::vector<std::string> endpoints() const;

  /// Waits until a quorum answers a read through `endpoints()` (the cluster elected a
  /// leader), at most `timeout`; false if it did not.
  bool wait_healthy(std::chrono::milliseconds timeout = std::chrono::seconds{20});

  /// Sends member `i` the signal `sig`. SIGKILL and SIGTERM also wait for its end (it is
  /// then gone for good); SIGSTOP freezes it, SIGCONT resumes it.
  void signal(size_t i, int sig);

  /// The directory holding the members' data directories and logs (`m{i}.log`).
  const std::string& directory() const { return dir_; }

private:
  struct member {
    std::string name;
    uint16_t client_port = 0;
    uint16_t peer_port = 0;
    pid_t pid = -1;
  };

  void start(member& m, const std::string& initial_cluster);

  std::string dir_;
  std::vector<member> members_;
};

} // namespace cafmesh::testing
