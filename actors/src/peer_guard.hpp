#pragma once

// The peer gate's shared state (not installed): the handshake's wire constants and the
// `peer_guard` every connection of one gate shares (docs/behaviour/peer-authentication.md).

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include <caf/actor_addr.hpp>
#include <caf/fwd.hpp>
#include <caf/io/scribe.hpp>

#include "cafmesh/actors/log.hpp"
#include "peer_gate.hpp"

namespace cafmesh {

// -- the handshake (docs/behaviour/peer-authentication.md#the-handshake) -------------------

namespace gate_detail {

using nonce = std::array<uint8_t, 32>;
using digest = std::array<uint8_t, 32>;

/// The first 8 bytes each end sends: `CAFMESH` and the handshake version.
inline constexpr std::array<uint8_t, 8> hello_magic{'C', 'A', 'F', 'M', 'E', 'S', 'H', 1};
inline constexpr size_t max_cluster_id_bytes = 64;

/// The acceptor's verdict on the connector's proof (one byte before its own proof).
enum class verdict : uint8_t { admitted = 0, cluster_id = 1, secret = 2 };

/// HMAC-SHA256(secret, label || 0 || len(cluster id) || cluster id || connector nonce ||
/// acceptor nonce): the label makes the two ends' proofs differ, so neither can be
/// reflected as the other.
digest proof(const std::string& secret, const char* label, const std::string& cluster_id,
             const nonce& connector, const nonce& acceptor);

inline constexpr const char* connector_label = "cafmesh/1 connector";
inline constexpr const char* acceptor_label = "cafmesh/1 acceptor";

/// What `peer_guard` knows of a connection waiting for its handshake's deadline.
class watched_connection {
public:
  virtual ~watched_connection() = default;

  /// Closes the connection unless it authenticated meanwhile.
  virtual void expire() = 0;

  uint64_t watch_id = 0;
};

} // namespace gate_detail

/// What every connection of one gate shares: the credentials, the counters, and the last
/// refusal of each endpoint this process connected to. Thread-safe where the link reads it;
/// the watch list belongs to the multiplexer thread.
class peer_guard {
public:
  peer_guard(std::string cluster_id, std::string secret, int64_t timeout_ms, tls_context_ptr tls)
    : cluster_id_(std::move(cluster_id)),
      secret_(std::move(secret)),
      timeout_ms_(timeout_ms),
      tls_(std::move(tls)),
      log_(log::get("peer_auth")) {
    // nop
  }

  const std::string& cluster_id() const { return cluster_id_; }

  const std::string& secret() const { return secret_; }

  int64_t timeout_ms() const { return timeout_ms_; }

  /// The TLS context every connection runs under; null without TLS.
  const tls_context* tls() const { return tls_.get(); }

  const log::logger& log() const { return log_; }

  void set_deadline_receiver(caf::actor_addr x) { deadline_receiver_ = std::move(x); }

  void admitted() { ++admitted_; }

  /// Counts and logs a refusal by this process; `endpoint` names a connection it opened.
  void refused(peer_refusal why, const std::string& peer, const std::string& text,
               const std::optional<std::pair<std::string, uint16_t>>& endpoint) {
    ++refused_[static_cast<size_t>(why)];
    log_.warning("refused peer " + peer + " (" + to_string(why) + "): " + text);
    if (endpoint)
      note(*endpoint, {"this process refused it (" + to_string(why) + "): " + text,
                       why != peer_refusal::timeout && why != peer_refusal::oversized});
  }

  /// Logs, and notes for a connection this process opened, that the peer refused it.
  void refused_by_peer(const std::string& peer, const std::string& text,
                       const std::optional<std::pair<std::string, uint16_t>>& endpoint) {
    log_.warning("peer " + peer + " refused this process: " + text);
    if (endpoint)
      note(*endpoint, {"the peer refused this process: " + text, true});
  }

  /// Records why the connection to `endpoint` was refused.
  void note(const std::pair<std::string, uint16_t>& endpoint, peer_refusal_note x) {
    std::lock_guard<std::mutex> guard{mtx_};
    refusals_[endpoint] = std::move(x);
  }

  std::optional<peer_refusal_note> take(const std::pair<std::string, uint16_t>& endpoint) {
    std::lock_guard<std::mutex> guard{mtx_};
    auto i = refusals_.find(endpoint);
    if (i == refusals_.end())
      return std::nullopt;
    auto out = std::move(i->second);
    refusals_.erase(i);
    return out;
  }

  peer_auth_stats stats() const {
    peer_auth_stats out;
    out.admitted = admitted_.load();
    for (size_t i = 0; i < peer_refusal_count; ++i)
      out.refused[i] = refused_[i].load();
    return out;
  }

  // Multiplexer thread only: the connections waiting for their handshake's deadline.

  /// Watches `conn`, the connection `keep` refers to, until `unwatch` or its deadline.
  void watch(caf::actor_system& sys, caf::io::scribe_ptr keep,
             gate_detail::watched_connection* conn);

  void unwatch(uint64_t id);

  void expire(uint64_t id);

private:
  std::string cluster_id_;
  std::string secret_;
  int64_t timeout_ms_;
  tls_context_ptr tls_;
  log::logger log_;
  caf::actor_addr deadline_receiver_;
  std::atomic<uint64_t> admitted_{0};
  std::array<std::atomic<uint64_t>, peer_refusal_count> refused_{};
  std::mutex mtx_;
  std::map<std::pair<std::string, uint16_t>, peer_refusal_note> refusals_;
  uint64_t next_watch_ = 0;
  std::map<uint64_t, std::pair<caf::io::scribe_ptr, gate_detail::watched_connection*>> watched_;
};

} // namespace cafmesh
