#pragma once

// The peer gate (not installed): the middleman actor a network link publishes and connects
// through, whose connections authenticate before CAF's BASP broker reads a byte of them
// (docs/behaviour/peer-authentication.md).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <caf/actor.hpp>
#include <caf/actor_addr.hpp>
#include <caf/io/middleman_actor.hpp>
#include <caf/atom.hpp>
#include <caf/fwd.hpp>

#include "cafmesh/actors/peer_auth.hpp"
#include "peer_tls.hpp"

namespace cafmesh {

/// What every connection of one gate shares: the credentials, the counters, and the last
/// refusal of each endpoint this process connected to (so the link can say why a connect
/// failed). Thread-safe: connections live on CAF's multiplexer thread, the link reads it.
class peer_guard;

using peer_guard_ptr = std::shared_ptr<peer_guard>;

/// A gate and its shared state.
struct peer_gate {
  caf::io::middleman_actor actor; ///< exit it when its link is gone
  peer_guard_ptr guard;
};

/// `(pg_expire_atom, uint64_t id)`: the handshake deadline of connection `id` passed; its
/// receiver hands it to `expire_handshake`.
using pg_expire_atom = caf::atom_constant<caf::atom("pgexpire")>;

/// Spawns a gate for a process of cluster `cluster_id` holding `secret` ("" = none), whose
/// connections must authenticate within `timeout_ms`; each deadline is sent to
/// `deadline_receiver` (an event-based actor: the link). With `tls` (not null) every
/// connection is mutual TLS and the handshake runs inside it. Requires the io middleman.
peer_gate spawn_peer_gate(caf::actor_system& sys, const caf::actor_addr& deadline_receiver,
                          std::string cluster_id, std::string secret, int64_t timeout_ms,
                          tls_context_ptr tls);

/// Closes connection `id` of `guard` (on the multiplexer's thread) unless it authenticated.
void expire_handshake(caf::actor_system& sys, const peer_guard_ptr& guard, uint64_t id);

/// The counters of `guard`.
peer_auth_stats stats_of(const peer_guard& guard);

/// Why a connection this process opened was refused before it authenticated.
struct peer_refusal_note {
  std::string text;
  /// The refusal will repeat on every attempt (another cluster id, secret or CA, not the
  /// cafmesh handshake), unlike a timeout.
  bool permanent = false;
};

/// Why the last connection this process opened to `host`:`port` through `guard` was
/// refused, by either end, before it authenticated; erased by reading. None if it was not.
std::optional<peer_refusal_note> take_refusal(peer_guard& guard, const std::string& host,
                                              uint16_t port);

} // namespace cafmesh
