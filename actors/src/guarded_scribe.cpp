#include "guarded_scribe.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <type_traits>
#include <utility>
#include <vector>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <caf/all.hpp>
#include <caf/io/basp_broker.hpp>
#include <caf/io/middleman.hpp>
#include <caf/io/middleman_actor_impl.hpp>
#include <caf/io/network/default_multiplexer.hpp>
#include <caf/io/network/doorman_impl.hpp>
#include <caf/io/network/stream_impl.hpp>
#include <caf/policy/tcp.hpp>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/log.hpp"
#include "cafmesh/config/text.hpp"
#include "peer_tls.hpp"
#include "peer_guard.hpp"

namespace cafmesh::gate_detail {

namespace {

using caf::io::receive_policy;
using caf::io::network::default_multiplexer;
using caf::io::network::native_socket;

/// A connection that runs the handshake before the BASP broker sees its bytes: until the
/// peer is authenticated, what the broker writes is held, its read configuration is kept
/// for later, and the connection reads only the handshake's fixed-size frames. `Policy` is
/// CAF's `policy::tcp` (plain TCP) or `tls_policy` (the handshake runs inside mutual TLS,
/// docs/behaviour/peer-authentication.md#tls); otherwise this is CAF's `scribe_impl`.
template <class Policy>
class guarded_scribe final : public caf::io::scribe, public watched_connection, public tls_events {
public:
  static constexpr bool uses_tls = std::is_same_v<Policy, tls_policy>;

  using endpoint_type = std::optional<std::pair<std::string, uint16_t>>;

  guarded_scribe(default_multiplexer& mx, native_socket fd, peer_guard_ptr guard,
                 endpoint_type endpoint)
    : guarded_scribe(mx, fd, std::move(guard), std::move(endpoint),
                     std::bool_constant<uses_tls>{}) {
    // nop
  }

  bool authenticated() const { return stage_ == stage::done; }

  // -- caf::io::scribe (as `scribe_impl`, but for the handshake) --------------------------

  void configure_read(receive_policy::config cfg) override {
    if (authenticated()) {
      stream_.configure_read(cfg);
      if (!launched_)
        launch();
      return;
    }
    pending_read_ = cfg;
    if (!launched_)
      start();
  }

  void ack_writes(bool enable) override { stream_.ack_writes(enable); }

  std::vector<char>& wr_buf() override { return authenticated() ? stream_.wr_buf() : held_; }

  std::vector<char>& rd_buf() override { return stream_.rd_buf(); }

  void graceful_shutdown() override {
    stream_.graceful_shutdown();
    detach(&stream_.backend(), false);
  }

  void flush() override {
    if (authenticated()) {
      stream_.flush(this);
      return;
    }
    if (held_.size() > unauthenticated_bound_bytes && !doomed_) {
      // Called from within the broker: refuse from the event loop, not under its feet.
      doomed_ = true;
      held_.clear();
      held_.shrink_to_fit();
      caf::intrusive_ptr<guarded_scribe> self{this};
      stream_.backend().post([self] {
        self->refuse(peer_refusal::oversized, "CAF queued more than "
                                                + std::to_string(unauthenticated_bound_bytes)
                                                + " bytes for it before it authenticated");
      });
    }
  }

  std::string addr() const override {
    auto x = caf::io::network::remote_addr_of_fd(stream_.fd());
    return x ? *x : std::string{};
  }

  uint16_t port() const override {
    auto x = caf::io::network::remote_port_of_fd(stream_.fd());
    return x ? *x : uint16_t{0};
  }

  void add_to_loop() override { stream_.activate(this); }

  void remove_from_loop() override { stream_.passivate(); }

  bool consume(caf::execution_unit* ctx, const void* buf, size_t num_bytes) override {
    if (authenticated())
      return scribe::consume(ctx, buf, num_bytes);
    if (detached() || doomed_)
      return false;
    return step(static_cast<const uint8_t*>(buf), num_bytes);
  }

  // -- watched_connection -----------------------------------------------------------------

  void expire() override {
    if (authenticated() || detached() || doomed_)
      return;
    refuse(peer_refusal::timeout,
           "no authentication within " + std::to_string(guard_->timeout_ms()) + " ms");
  }

  // -- tls_events -------------------------------------------------------------------------

  void tls_established() override {
    if (!doomed_)
      hello();
  }

  void tls_failed(const std::string& text, bool by_peer) override {
    if (authenticated() || doomed_) {
      guard_->log().debug("TLS connection with " + peer_name() + " failed: " + text);
      return;
    }
    // The stream closes the connection (`io_failure`) when this returns.
    doomed_ = true;
    held_.clear();
    if (by_peer)
      guard_->refused_by_peer(peer_name(), "TLS: " + text, endpoint_);
    else
      guard_->refused(peer_refusal::tls, peer_name(), text, endpoint_);
  }

  void tls_wants_write() override { stream_.force_empty_write(this); }

protected:
  void detach_from(caf::io::abstract_broker* ptr) override {
    scribe::detach_from(ptr);
    if (authenticated())
      return;
    // Closed before it authenticated (by either end): no deadline to wait for. Posted, so
    // that the guard's reference is not the last one while this call runs.
    auto g = guard_;
    auto id = watch_id;
    stream_.backend().post([g, id] { g->unwatch(id); });
  }

private:
  enum class stage { idle, tls, magic, fixed, cluster_id, verdict, proof, done };

  guarded_scribe(default_multiplexer& mx, native_socket fd, peer_guard_ptr guard,
                 endpoint_type endpoint, std::false_type)
    : scribe(caf::io::network::conn_hdl_from_socket(fd)),
      guard_(std::move(guard)),
      endpoint_(std::move(endpoint)),
      stream_(mx, fd) {
    // nop
  }

  guarded_scribe(default_multiplexer& mx, native_socket fd, peer_guard_ptr guard,
                 endpoint_type endpoint, std::true_type)
    : scribe(caf::io::network::conn_hdl_from_socket(fd)),
      guard_(std::move(guard)),
      endpoint_(std::move(endpoint)),
      stream_(mx, fd, *guard_->tls(), fd, endpoint_.has_value(), static_cast<tls_events*>(this)) {
    // nop
  }

  void launch() {
    launched_ = true;
    stream_.start(this);
  }

  bool connector() const { return endpoint_.has_value(); }

  /// The peer's host and port, as connected to or as seen when the connection started (a
  /// connection the peer closed has no address any more).
  const std::string& peer_name() {
    if (peer_name_.empty())
      peer_name_ = endpoint_ ? endpoint_->first + ":" + std::to_string(endpoint_->second)
                             : addr() + ":" + std::to_string(port());
    return peer_name_;
  }

  void expect(stage s, size_t n) {
    stage_ = s;
    stream_.configure_read(receive_policy::exactly(n));
  }

  template <class Bytes>
  void send(const Bytes& xs) {
    auto& out = stream_.wr_buf();
    out.insert(out.end(), xs.begin(), xs.end());
  }

  /// Starts reading and the handshake's deadline, and sends the hello; with TLS, once the
  /// TLS handshake completed (`tls_established`).
  void start() {
    peer_name();
    RAND_bytes(own_nonce_.data(), static_cast<int>(own_nonce_.size()));
    expect(stage::magic, hello_magic.size());
    launch();
    guard_->watch(stream_.backend().system(), caf::io::scribe_ptr{this}, this);
    if constexpr (uses_tls) {
      stage_ = stage::tls;
      // An empty write drives the TLS handshake (the connecting end's ClientHello).
      stream_.force_empty_write(this);
    } else {
      hello();
    }
  }

  /// Sends the hello (magic, cluster id length, nonce, cluster id); the peer's is awaited.
  void hello() {
    send(hello_magic);
    auto& id = guard_->cluster_id();
    stream_.wr_buf().push_back(static_cast<char>(id.size()));
    send(own_nonce_);
    send(id);
    stage_ = stage::magic;
    stream_.flush(this);
  }

  const nonce& connector_nonce() const { return connector() ? own_nonce_ : peer_nonce_; }

  const nonce& acceptor_nonce() const { return connector() ? peer_nonce_ : own_nonce_; }

  digest expected_proof() const {
    return proof(guard_->secret(), connector() ? acceptor_label : connector_label,
                 guard_->cluster_id(), connector_nonce(), acceptor_nonce());
  }

  digest own_proof() const {
    return proof(guard_->secret(), connector() ? connector_label : acceptor_label,
                 guard_->cluster_id(), connector_nonce(), acceptor_nonce());
  }

  bool step(const uint8_t* data, size_t n) {
    switch (stage_) {
      case stage::magic:
        if (n == tls_required_magic.size() && std::memcmp(data, tls_required_magic.data(), n) == 0)
          return refuse(peer_refusal::protocol,
                        "it requires TLS (network.tls_*), this process does not use TLS");
        if (n == hello_magic.size() && data[0] == 0x16 && data[1] == 0x03)
          return refuse(peer_refusal::protocol,
                        "its first bytes are a TLS handshake: it uses TLS, this process "
                        "does not (network.tls_*)");
        if (n != hello_magic.size()
            || std::memcmp(data, hello_magic.data(), hello_magic.size() - 1) != 0)
          return refuse(peer_refusal::protocol, "its first bytes are not a cafmesh handshake");
        if (data[hello_magic.size() - 1] != hello_magic.back())
          return refuse(peer_refusal::protocol,
                        "it speaks handshake version " + std::to_string(data[7])
                          + ", this process version " + std::to_string(hello_magic.back()));
        expect(stage::fixed, 1 + peer_nonce_.size());
        return true;
      case stage::fixed:
        if (data[0] == 0 || data[0] > max_cluster_id_bytes)
          return refuse(peer_refusal::protocol, "its cluster id length " + std::to_string(data[0])
                                                  + " is not 1 to "
                                                  + std::to_string(max_cluster_id_bytes));
        std::memcpy(peer_nonce_.data(), data + 1, peer_nonce_.size());
        expect(stage::cluster_id, data[0]);
        return true;
      case stage::cluster_id: {
        std::string id(reinterpret_cast<const char*>(data), n);
        if (id != guard_->cluster_id()) {
          if (!connector())
            answer(verdict::cluster_id);
          return refuse(peer_refusal::cluster_id, "it belongs to cluster \"" + printable(id)
                                                    + "\", this process to \""
                                                    + guard_->cluster_id() + "\"");
        }
        if (connector()) {
          send(own_proof());
          stream_.flush(this);
          expect(stage::verdict, 1);
        } else {
          expect(stage::proof, digest{}.size());
        }
        return true;
      }
      case stage::verdict:
        if (data[0] != static_cast<uint8_t>(verdict::admitted)) {
          auto text = data[0] == static_cast<uint8_t>(verdict::cluster_id)
                        ? std::string{"it belongs to another cluster"}
                      : data[0] == static_cast<uint8_t>(verdict::secret)
                        ? std::string{"this process's proof does not match its cluster "
                                      "secret"}
                        : "verdict " + std::to_string(data[0]);
          return refused_by_peer(text);
        }
        expect(stage::proof, digest{}.size());
        return true;
      case stage::proof: {
        auto want = expected_proof();
        if (CRYPTO_memcmp(data, want.data(), want.size()) != 0) {
          if (!connector())
            answer(verdict::secret);
          return refuse(peer_refusal::secret,
                        "its proof does not match this process's cluster secret");
        }
        if (!connector())
          answer(verdict::admitted);
        admit();
        return true;
      }
      case stage::idle:
      case stage::tls:
      case stage::done: break;
    }
    return false;
  }

  /// The acceptor's verdict; its own proof follows an admission.
  void answer(verdict v) {
    stream_.wr_buf().push_back(static_cast<char>(v));
    if (v == verdict::admitted)
      send(own_proof());
  }

  static std::string printable(const std::string& x) {
    std::string out;
    for (char c : x)
      out += (c >= 0x20 && c < 0x7f && c != '"') ? c : '?';
    return out;
  }

  void admit() {
    stage_ = stage::done;
    guard_->unwatch(watch_id);
    guard_->admitted();
    guard_->log().debug("peer " + peer_name() + " authenticated");
    auto& out = stream_.wr_buf();
    out.insert(out.end(), held_.begin(), held_.end());
    held_.clear();
    held_.shrink_to_fit();
    stream_.flush(this);
    stream_.configure_read(pending_read_);
  }

  bool refused_by_peer(const std::string& text) {
    guard_->refused_by_peer(peer_name(), text, endpoint_);
    close();
    return false;
  }

  bool refuse(peer_refusal why, const std::string& text) {
    guard_->refused(why, peer_name(), text, endpoint_);
    close();
    return false;
  }

  /// Flushes what the handshake wrote (a verdict), then closes; the broker hears
  /// `connection_closed_msg`, so a connect waiting for this connection fails at once.
  void close() {
    doomed_ = true;
    held_.clear();
    stream_.flush(this);
    stream_.graceful_shutdown();
    detach(&stream_.backend(), true);
  }

  peer_guard_ptr guard_;
  endpoint_type endpoint_; ///< set on the connecting end
  std::string peer_name_;
  bool launched_ = false;
  caf::io::network::stream_impl<Policy> stream_;
  stage stage_ = stage::idle;
  bool doomed_ = false;
  nonce own_nonce_{};
  nonce peer_nonce_{};
  receive_policy::config pending_read_ = receive_policy::exactly(1);
  std::vector<char> held_;
};

} // namespace

/// A guarded connection over `fd`, TLS if `guard` has a TLS context; `endpoint` is set on
/// the connecting end.
caf::io::scribe_ptr guarded_connection(default_multiplexer& mx, native_socket fd,
                                       const peer_guard_ptr& guard,
                                       std::optional<std::pair<std::string, uint16_t>> endpoint) {
  if (guard->tls())
    return caf::make_counted<guarded_scribe<tls_policy>>(mx, fd, guard, std::move(endpoint));
  return caf::make_counted<guarded_scribe<caf::policy::tcp>>(mx, fd, guard, std::move(endpoint));
}

} // namespace cafmesh::gate_detail
