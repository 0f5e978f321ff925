#include "peer_tls.hpp"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <ctime>
#include <utility>

#include <pthread.h>
#include <sys/socket.h>

#include <openssl/err.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/config/text.hpp"

namespace cafmesh {

namespace {

/// OpenSSL's error queue of this thread as one line (emptied), "" when it holds nothing.
std::string openssl_errors() {
  std::string out;
  while (auto err = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(err, buf, sizeof(buf));
    out += (out.empty() ? "" : "; ") + std::string{buf};
  }
  return out;
}

/// Blocks SIGPIPE on this thread while it lives: OpenSSL writes to the socket with
/// `write`, which raises SIGPIPE on a connection the peer closed (CAF's own writes pass
/// MSG_NOSIGNAL). A SIGPIPE raised meanwhile is taken before the old mask returns.
class sigpipe_blocked {
public:
  sigpipe_blocked() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_, &saved_);
  }

  ~sigpipe_blocked() {
    timespec zero{};
    while (sigtimedwait(&pipe_, nullptr, &zero) > 0) {
      // a SIGPIPE of this thread's write: dropped
    }
    pthread_sigmask(SIG_SETMASK, &saved_, nullptr);
  }

  sigpipe_blocked(const sigpipe_blocked&) = delete;
  sigpipe_blocked& operator=(const sigpipe_blocked&) = delete;

private:
  sigset_t pipe_;
  sigset_t saved_;
};

/// An encrypted key fails to load instead of OpenSSL prompting on the terminal.
int no_passphrase(char*, int, int, void*) {
  return 0;
}

/// Verifies the context's own certificate chain against its CA store for `purpose`:
/// "" if it verifies, else the verifier's reason.
std::string verify_own(SSL_CTX* ctx, int purpose) {
  std::unique_ptr<X509_STORE_CTX, decltype(&X509_STORE_CTX_free)> sc{X509_STORE_CTX_new(),
                                                                     X509_STORE_CTX_free};
  STACK_OF(X509)* chain = nullptr;
  SSL_CTX_get0_chain_certs(ctx, &chain);
  if (!sc
      || X509_STORE_CTX_init(sc.get(), SSL_CTX_get_cert_store(ctx), SSL_CTX_get0_certificate(ctx),
                             chain)
           != 1)
    return "cannot verify it: " + openssl_errors();
  X509_STORE_CTX_set_purpose(sc.get(), purpose);
  if (X509_verify_cert(sc.get()) == 1)
    return "";
  ERR_clear_error();
  return X509_verify_cert_error_string(X509_STORE_CTX_get_error(sc.get()));
}

} // namespace

caf::expected<tls_context_ptr> make_tls_context(const config::network_section& net) {
  using result = caf::expected<tls_context_ptr>;
  auto& cert = net.tls_certificate_file;
  auto& key = net.tls_key_file;
  auto& ca = net.tls_ca_file;
  if (cert.empty() && key.empty() && ca.empty())
    return tls_context_ptr{};
  auto invalid = [](std::string text) {
    return result{to_error(fault{mesh_errc::config_invalid, std::move(text)})};
  };
  if (cert.empty() || key.empty() || ca.empty())
    return invalid("network.tls_certificate_file, network.tls_key_file and "
                   "network.tls_ca_file are set together or not at all");
  const std::pair<const char*, const std::string*> files[]
    = {{"certificate", &cert}, {"key", &key}, {"CA", &ca}};
  for (auto& [what, path] : files) {
    std::string text;
    if (int err = config::read_text_file(*path, text))
      return invalid("cannot read the TLS " + std::string{what} + " file \"" + *path
                     + "\": " + std::strerror(err));
  }
  ERR_clear_error();
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx{SSL_CTX_new(TLS_method()), SSL_CTX_free};
  if (!ctx || SSL_CTX_set_min_proto_version(ctx.get(), TLS1_3_VERSION) != 1)
    return invalid("cannot make a TLS 1.3 context: " + openssl_errors());
  auto* c = ctx.get();
  SSL_CTX_set_default_passwd_cb(c, no_passphrase);
  if (SSL_CTX_use_certificate_chain_file(c, cert.c_str()) != 1)
    return invalid("the TLS certificate file \"" + cert
                   + "\" holds no PEM certificate chain: " + openssl_errors());
  auto mismatch = [&] {
    ERR_clear_error();
    return invalid("the TLS key file \"" + key
                   + "\" does not hold the private key of the certificate in \"" + cert + "\"");
  };
  if (SSL_CTX_use_PrivateKey_file(c, key.c_str(), SSL_FILETYPE_PEM) != 1) {
    if (ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH)
      return mismatch();
    return invalid("the TLS key file \"" + key
                   + "\" holds no unencrypted PEM private key: " + openssl_errors());
  }
  if (SSL_CTX_check_private_key(c) != 1)
    return mismatch();
  if (SSL_CTX_load_verify_locations(c, ca.c_str(), nullptr) != 1)
    return invalid("the TLS CA file \"" + ca + "\" holds no PEM certificate: " + openssl_errors());
  // Every process is both ends of connections: its certificate must serve either.
  for (auto [purpose, end] : {std::pair{X509_PURPOSE_SSL_SERVER, "accepting"},
                              std::pair{X509_PURPOSE_SSL_CLIENT, "connecting"}})
    if (auto why = verify_own(c, purpose); !why.empty())
      return invalid("the certificate in \"" + cert + "\" does not verify against the CA in \"" + ca
                     + "\" for the " + end + " end of a connection: " + why);
  SSL_CTX_set_verify(c, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  SSL_CTX_set_num_tickets(c, 0);
  SSL_CTX_set_session_cache_mode(c, SSL_SESS_CACHE_OFF);
  // CAF's stream writes what is left of its buffer after a partial write, and may append
  // to it between two calls.
  SSL_CTX_set_mode(c, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER
                        | SSL_MODE_RELEASE_BUFFERS);
  return tls_context_ptr{std::make_shared<const tls_context>(ctx.release())};
}

tls_policy::tls_policy(const tls_context& ctx, native_socket fd, bool connector, tls_events* owner)
  : ssl_(SSL_new(ctx.get())), owner_(owner), connector_(connector) {
  if (ssl_ == nullptr)
    return;
  SSL_set_fd(ssl_, fd);
  if (connector)
    SSL_set_connect_state(ssl_);
  else
    SSL_set_accept_state(ssl_);
}

tls_policy::~tls_policy() {
  SSL_free(ssl_);
}

tls_policy::rw_state tls_policy::handshake(native_socket fd, bool writing) {
  if (ssl_ == nullptr) {
    owner_->tls_failed("cannot make a TLS connection: " + openssl_errors(), false);
    return rw_state::failure;
  }
  if (!checked_plaintext_ && !writing) {
    // A peer without TLS opens with the cafmesh hello: say so rather than OpenSSL's
    // "wrong version number".
    char head[7];
    auto n = ::recv(fd, head, sizeof(head), MSG_PEEK);
    if (n > 0) {
      checked_plaintext_ = true;
      if (std::memcmp(head, "CAFMESH", static_cast<size_t>(n)) == 0) {
        if (!connector_) {
          // Its hello (at most a few hundred bytes) is read first, so that closing sends
          // FIN after the answer rather than a reset that may discard it.
          char drain[512];
          for (int i = 0; i < 8 && ::recv(fd, drain, sizeof(drain), MSG_DONTWAIT) > 0; ++i) {
            // dropped
          }
          [[maybe_unused]] auto sent = ::send(fd, tls_required_magic.data(),
                                              tls_required_magic.size(), MSG_NOSIGNAL);
        }
        owner_->tls_failed("it speaks the cafmesh handshake without TLS, this process "
                           "requires TLS (network.tls_*)",
                           false);
        return rw_state::failure;
      }
    }
  }
  ERR_clear_error();
  auto ret = SSL_do_handshake(ssl_);
  if (ret == 1) {
    established_ = true;
    owner_->tls_established();
    return rw_state::success;
  }
  return failed(ret, writing);
}

tls_policy::rw_state tls_policy::failed(int ret, bool writing) {
  switch (SSL_get_error(ssl_, ret)) {
    case SSL_ERROR_WANT_READ: return rw_state::success;
    case SSL_ERROR_WANT_WRITE:
      if (!writing)
        owner_->tls_wants_write();
      return rw_state::success;
    case SSL_ERROR_ZERO_RETURN: // the peer's close_notify
    case SSL_ERROR_SYSCALL:     // the socket failed or the peer closed it
      ERR_clear_error();
      return rw_state::failure;
    default: break;
  }
  auto first = ERR_peek_error();
  if (ERR_GET_LIB(first) == ERR_LIB_SSL
      && ERR_GET_REASON(first) == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
    ERR_clear_error();
    return rw_state::failure;
  }
  // Reasons from SSL_AD_REASON_OFFSET on are alerts the peer sent.
  bool by_peer = ERR_GET_LIB(first) == ERR_LIB_SSL && ERR_GET_REASON(first) >= SSL_AD_REASON_OFFSET;
  auto text = openssl_errors();
  if (auto v = SSL_get_verify_result(ssl_); v != X509_V_OK)
    text += " (its certificate: " + std::string{X509_verify_cert_error_string(v)} + ")";
  owner_->tls_failed(text.empty() ? "a TLS error without OpenSSL text" : text, by_peer);
  return rw_state::failure;
}

tls_policy::rw_state tls_policy::transferred(int ret, size_t& result, bool writing) {
  if (ret <= 0)
    return failed(ret, writing);
  result = static_cast<size_t>(ret);
  return rw_state::success;
}

tls_policy::rw_state tls_policy::read_some(size_t& result, native_socket fd, void* buf,
                                           size_t len) {
  sigpipe_blocked guard;
  result = 0;
  if (!established_) {
    auto st = handshake(fd, false);
    if (st == rw_state::failure || !established_)
      return st;
  }
  ERR_clear_error();
  return transferred(SSL_read(ssl_, buf, static_cast<int>(len)), result, false);
}

tls_policy::rw_state tls_policy::write_some(size_t& result, native_socket fd, const void* buf,
                                            size_t len) {
  sigpipe_blocked guard;
  result = 0;
  if (!established_) {
    auto st = handshake(fd, true);
    if (st == rw_state::failure)
      return st;
    // Waiting for the peer: an empty write ends the write subscription (reads go on).
    if (!established_)
      return len == 0 && !SSL_want_write(ssl_) ? rw_state::indeterminate : rw_state::success;
  }
  if (len == 0)
    return rw_state::indeterminate;
  ERR_clear_error();
  return transferred(SSL_write(ssl_, buf, static_cast<int>(len)), result, true);
}

bool tls_policy::must_read_more(native_socket, size_t threshold) {
  return ssl_ != nullptr && static_cast<size_t>(SSL_pending(ssl_)) >= threshold;
}

} // namespace cafmesh
