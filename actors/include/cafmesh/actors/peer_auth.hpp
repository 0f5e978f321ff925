#pragma once

/// @file
/// Peer authentication of the network link's connections
/// (docs/behaviour/peer-authentication.md): what a refused connection is counted as, the
/// bound on what an unauthenticated peer can make a process hold, and where the cluster
/// secret comes from. The handshake itself lives with the link (`spawn_net_link`); this
/// header has no CAF io dependency.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include <caf/expected.hpp>
#include <caf/meta/type_name.hpp>

#include "cafmesh/config/mesh_config.hpp"

namespace cafmesh {

/// Most bytes a process holds for one connection that has not authenticated (its
/// handshake frames, and what CAF's broker queued for it); the handshake never needs more
/// than a few hundred, and a connection that would make it hold more is closed.
inline constexpr size_t unauthenticated_bound_bytes = 65536;

/// Why this process refused a connection before any cafmesh message crossed it.
enum class peer_refusal : uint8_t {
  protocol = 0, ///< not the cafmesh handshake (other bytes, another version, a bad length)
  cluster_id,   ///< the peer names another cluster
  secret,       ///< the peer's proof does not match this process's secret
  timeout,      ///< no authentication within `network.authentication_timeout_ms`
  oversized,    ///< it would make this process hold more than `unauthenticated_bound_bytes`
  /// TLS failed before the handshake (`network.tls_*`): no TLS, a certificate the cluster
  /// CA did not issue, or none
  tls,
};

/// Number of `peer_refusal` values (`inspect` below lists each).
inline constexpr size_t peer_refusal_count = 6;

/// Renders `protocol`, `cluster_id`, `secret`, `timeout`, `oversized` or `tls`.
std::string to_string(peer_refusal x);

/// Counters of one process's handshakes, both directions (connections it accepted and
/// connections it opened).
struct peer_auth_stats {
  uint64_t admitted = 0; ///< handshakes completed: the connection carries cafmesh messages
  std::array<uint64_t, peer_refusal_count> refused{}; ///< by `peer_refusal`
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, peer_auth_stats& x) {
  return f(caf::meta::type_name("cafmesh.peer_auth_stats"), x.admitted, x.refused[0], x.refused[1],
           x.refused[2], x.refused[3], x.refused[4], x.refused[5]);
}

/// The cluster secret `net` configures: `cluster_secret`, or the content of
/// `cluster_secret_file` without its trailing line breaks, or "" when neither is set.
/// Fails `config_invalid` when both are set, or the file cannot be read or holds nothing.
caf::expected<std::string> cluster_secret(const config::network_section& net);

} // namespace cafmesh
