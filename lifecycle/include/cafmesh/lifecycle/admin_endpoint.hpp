#pragma once

/// @file
/// The admin endpoint of a cafmesh process (docs/operations.md): one small HTTP server per
/// process, off unless asked for (`admin.enabled`, `silo_builder::admin`,
/// `client_builder::admin`, `cafmesh-node --admin-port`).
///
/// | path | answer |
/// |---|---|
/// | `/metrics` | Prometheus text format: the process's meters (docs/operations.md lists them) |
/// | `/healthz/live` | 200 `live` while the process's actors answer within 1 s, else 503 |
/// | `/healthz/ready` | 200 `ready` once the process is Active (a silo reached stage Active, a pure client started) and until its stopping signal; 503 with the phase (`starting`, `stopping`, `stopped`, `failed`) otherwise |
/// | `/cluster/members` | JSON: the membership view of this process (version, and per silo its address, host, port, generation, status, gateway flag) |
///
/// Meters are read when scraped: each component keeps plain counters in its own state and
/// answers a statistics message, so a delivery costs no lock and no message for metrics.

#include <cstdint>
#include <string>

namespace cafmesh::lifecycle {

/// Where a process's admin endpoint listens.
struct admin_address {
  std::string host;  ///< the listening host, e.g. `127.0.0.1`
  uint16_t port = 0; ///< the bound port (the OS's choice when 0 was asked for)
};

/// The readiness phase the admin endpoint reports (`/healthz/ready`).
enum class admin_phase : uint8_t {
  starting = 0, ///< built, not Active yet: not ready
  active = 1,   ///< Active and no stopping signal yet: ready
  stopping = 2, ///< the stopping signal arrived: not ready, so a load balancer drains first
  stopped = 3,  ///< the runtime is torn down
  failed = 4,   ///< the start failed
};

/// Renders `starting`, `active`, `stopping`, `stopped` or `failed`.
std::string to_string(admin_phase x);

} // namespace cafmesh::lifecycle
