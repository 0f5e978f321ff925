#pragma once

// Mutual TLS under the peer gate (not installed): one OpenSSL context per gate, and the
// protocol policy that CAF's `stream_impl` reads and writes a connection through
// (docs/behaviour/peer-authentication.md#tls).

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include <openssl/ssl.h>

#include <caf/expected.hpp>
#include <caf/io/network/native_socket.hpp>
#include <caf/io/network/rw_state.hpp>

#include "cafmesh/config/mesh_config.hpp"

namespace cafmesh {

/// What a TLS acceptor answers a cafmesh hello without TLS with before it closes: the
/// hello's first 8 bytes with handshake version 255, so that the peer refuses the
/// connection knowing why (docs/behaviour/peer-authentication.md#tls).
inline constexpr std::array<uint8_t, 8> tls_required_magic{'C', 'A', 'F', 'M', 'E', 'S', 'H', 255};

/// The TLS configuration of one process: its certificate chain and key, the cluster CA that
/// must have issued every peer's certificate, TLS 1.3 at least, no session resumption.
class tls_context {
public:
  /// Takes ownership of `ctx`.
  explicit tls_context(SSL_CTX* ctx) : ctx_(ctx) {
    // nop
  }

  ~tls_context() { SSL_CTX_free(ctx_); }

  tls_context(const tls_context&) = delete;
  tls_context& operator=(const tls_context&) = delete;

  SSL_CTX* get() const { return ctx_; }

private:
  SSL_CTX* ctx_;
};

using tls_context_ptr = std::shared_ptr<const tls_context>;

/// The context `net` configures: null when it sets no `tls_*` key; `config_invalid` when a
/// file cannot be read or holds no PEM certificate or key, the key is not the
/// certificate's, or the CA did not issue the certificate.
caf::expected<tls_context_ptr> make_tls_context(const config::network_section& net);

/// What a TLS connection tells the connection that owns it (on the multiplexer's thread).
class tls_events {
public:
  virtual ~tls_events() = default;

  /// The TLS handshake completed: the peer's certificate chain verified.
  virtual void tls_established() = 0;

  /// The connection failed in TLS before or after its handshake, for `text` (OpenSSL's
  /// error text); `by_peer`: the peer sent the alert that ended it (it refused this
  /// process's certificate, say). Not called for the peer closing the connection.
  virtual void tls_failed(const std::string& text, bool by_peer) = 0;

  /// OpenSSL must write before it can go on reading: the owner subscribes to write events.
  virtual void tls_wants_write() = 0;
};

/// The protocol policy of `caf::io::network::stream_impl<tls_policy>`: reads and writes
/// through one OpenSSL connection over the stream's socket, running the TLS handshake
/// first (the connecting end as the TLS client). An empty write (CAF's
/// `force_empty_write`) drives the handshake.
class tls_policy {
public:
  using native_socket = caf::io::network::native_socket;
  using rw_state = caf::io::network::rw_state;

  tls_policy(const tls_context& ctx, native_socket fd, bool connector, tls_events* owner);

  ~tls_policy();

  tls_policy(const tls_policy&) = delete;
  tls_policy& operator=(const tls_policy&) = delete;

  rw_state read_some(size_t& result, native_socket fd, void* buf, size_t len);

  rw_state write_some(size_t& result, native_socket fd, const void* buf, size_t len);

  /// True if OpenSSL holds at least `threshold` decrypted bytes (the socket may hold none).
  bool must_read_more(native_socket fd, size_t threshold);

private:
  /// Runs the handshake; `success` once it completed (also before, while it waits).
  rw_state handshake(native_socket fd, bool writing);

  /// The state after OpenSSL call `ret` of the handshake, a read or a write failed.
  rw_state failed(int ret, bool writing);

  /// The state after `SSL_read` or `SSL_write` answered `ret`: its byte count in `result`.
  rw_state transferred(int ret, size_t& result, bool writing);

  SSL* ssl_;
  tls_events* owner_;
  bool connector_;
  bool established_ = false;
  bool checked_plaintext_ = false;
};

} // namespace cafmesh
