#pragma once

// The guarded connection (not installed): a CAF scribe that runs the cafmesh handshake, in
// plain TCP or inside mutual TLS, before the BASP broker reads a byte of it
// (docs/behaviour/peer-authentication.md#the-handshake).

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include <caf/io/network/default_multiplexer.hpp>
#include <caf/io/scribe.hpp>

#include "peer_gate.hpp"

namespace cafmesh::gate_detail {

/// A guarded connection over `fd`, TLS if `guard` has a TLS context; `endpoint` is set on
/// the connecting end.
caf::io::scribe_ptr guarded_connection(caf::io::network::default_multiplexer& mx,
                                       caf::io::network::native_socket fd,
                                       const peer_guard_ptr& guard,
                                       std::optional<std::pair<std::string, uint16_t>> endpoint);

} // namespace cafmesh::gate_detail
