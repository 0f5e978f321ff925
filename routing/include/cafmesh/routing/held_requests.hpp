#pragma once

/// @file
/// The requests an entry handed on and still waits the answer of, each with the silos that
/// answer depends on (docs/behaviour/routing.md#requests-whose-silo-departs): the gateway
/// that accepted it (a pure client's dispatch) and the silo whose hub took it (its landing,
/// reported by the router core whose leg landed it). When one of them departs abruptly the
/// answer can no longer come, and the entry ends the request with one NACK `failed` at once,
/// as an Orleans caller fails its calls to a dead silo. No CAF: the routing service owns one.

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cafmesh/actors/ids.hpp"
#include "cafmesh/routing/envelope.hpp"

namespace cafmesh::routing {

/// The answer property a hub grain stamps with the silo whose hub took a delivery (its
/// landing silo), as JSON text: the rendered silo address, quoted.
inline constexpr const char* landed_at_property = "landed_at";

/// Sets `landed_at_property` of `answer` to `silo`.
void stamp_landing(envelope& answer, const silo_address& silo);

/// The landing silo `answer` carries, if any.
std::optional<silo_address> landing_of(const envelope& answer);

/// Reads `S{host}:{port}@{generation}` (silo_address::to_string); none if malformed.
std::optional<silo_address> parse_silo_address(const std::string& text);

/// Why a held request is NACKed.
enum class held_loss : uint8_t {
  gateway, ///< the gateway that accepted it departed
  landing, ///< the silo whose hub took it departed
};

/// The held requests of one entry (see the file comment). Single-threaded; the owner
/// passes its clock in.
class held_requests {
public:
  /// One held request.
  struct entry {
    envelope env;            ///< the request as handed on
    silo_address via;        ///< the gateway that accepted it; empty: a co-hosted router core
    silo_address landed_at;  ///< the silo whose hub took it; empty: not reported
    int64_t deadline_ms = 0; ///< when its sender stops waiting (actor-clock ms)
  };

  /// One request to NACK: the entry and why.
  struct loss {
    entry req;
    held_loss why = held_loss::gateway;
  };

  /// Holds `env` (accepted by `via`) until its answer passes, its deadline, or a departure.
  void hold(envelope env, silo_address via, int64_t deadline_ms, int64_t now_ms);

  /// The answer of request `id` passed the entry: forgotten.
  void answered(const std::string& id) { held_.erase(id); }

  /// Request `id` landed at a hub of silo `at`. False when `id` is not held (answered,
  /// expired or never held: a post).
  bool landed(const std::string& id, const silo_address& at);

  /// Takes request `id` out (a landing at a silo already known to be gone); none if not held
  /// or past its deadline at `now_ms`.
  std::optional<entry> take(const std::string& id, int64_t now_ms);

  /// `s` departed abruptly: takes out every request it accepted or whose hub it hosts,
  /// earliest id first; those past their deadline at `now_ms` are dropped silently.
  std::vector<loss> departed(const silo_address& s, int64_t now_ms);

  /// `s` left gracefully: it finishes what it accepted and answers what its hubs took, so
  /// no held request depends on it any more (nothing is NACKed).
  void left(const silo_address& s);

  /// True if `id` is held.
  bool holds(const std::string& id) const { return held_.count(id) > 0; }

  /// The entry of `id`, if held.
  const entry* find(const std::string& id) const;

  size_t size() const { return held_.size(); }

private:
  void sweep(int64_t now_ms);

  std::map<std::string, entry> held_; ///< delivery id -> entry
  size_t sweep_at_ = 1024;            ///< sweep expired entries when `held_` grows past this
};

} // namespace cafmesh::routing
