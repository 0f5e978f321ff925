#include "cafmesh/testing/etcd_cluster.hpp"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <thread>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cafmesh/actors/etcd_membership_table.hpp"

namespace cafmesh::testing {

namespace {

/// A loopback TCP port nothing listens on right now (the OS chooses it).
uint16_t free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0)
    throw std::runtime_error(std::string{"socket: "} + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0
      || ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(fd);
    throw std::runtime_error(std::string{"bind: "} + std::strerror(errno));
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

std::string url(uint16_t port) {
  return "http://127.0.0.1:" + std::to_string(port);
}

} // namespace

etcd_cluster::etcd_cluster(size_t n) {
  char tmpl[] = "/tmp/cafmesh-etcd-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr)
    throw std::runtime_error(std::string{"mkdtemp: "} + std::strerror(errno));
  dir_ = tmpl;
  std::string initial;
  for (size_t i = 0; i < n; ++i) {
    member m;
    m.name = "m" + std::to_string(i);
    m.client_port = free_port();
    m.peer_port = free_port();
    initial += (initial.empty() ? "" : ",") + m.name + "=" + url(m.peer_port);
    members_.push_back(m);
  }
  for (auto& m : members_)
    start(m, initial);
}

etcd_cluster::~etcd_cluster() {
  for (size_t i = 0; i < members_.size(); ++i) {
    signal(i, SIGCONT);
    signal(i, SIGKILL);
  }
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

std::vector<std::string> etcd_cluster::endpoints() const {
  std::vector<std::string> out;
  for (const auto& m : members_)
    out.push_back(url(m.client_port));
  return out;
}

bool etcd_cluster::wait_healthy(std::chrono::milliseconds timeout) {
  etcd_table_options opts;
  opts.endpoints = endpoints();
  opts.prefix = "/cafmesh-health/";
  opts.request_timeout_ms = 500;
  etcd_membership_table probe{opts};
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    table_snapshot t;
    if (probe.read_all(t).ok())
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds{100});
  }
  return false;
}

void etcd_cluster::signal(size_t i, int sig) {
  auto& m = members_.at(i);
  if (m.pid <= 0)
    return;
  ::kill(m.pid, sig);
  if (sig == SIGKILL || sig == SIGTERM) {
    ::waitpid(m.pid, nullptr, 0);
    m.pid = -1;
  }
}

void etcd_cluster::start(member& m, const std::string& initial) {
  auto data = dir_ + "/" + m.name;
  auto log = dir_ + "/" + m.name + ".log";
  auto client = url(m.client_port);
  auto peer = url(m.peer_port);
  std::vector<std::string> args = {"etcd",
                                   "--name", m.name,
                                   "--data-dir", data,
                                   "--listen-client-urls", client,
                                   "--advertise-client-urls", client,
                                   "--listen-peer-urls", peer,
                                   "--initial-advertise-peer-urls", peer,
                                   "--initial-cluster", initial,
                                   "--initial-cluster-state", "new",
                                   "--initial-cluster-token", "cafmesh-" + std::to_string(::getpid())};
  std::vector<char*> argv;
  for (auto& a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  auto pid = ::fork();
  if (pid < 0)
    throw std::runtime_error(std::string{"fork: "} + std::strerror(errno));
  if (pid == 0) {
    auto fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    ::execvp("etcd", argv.data());
    ::_exit(127);
  }
  m.pid = pid;
}

} // namespace cafmesh::testing
