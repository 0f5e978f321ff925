#include "peer_gate.hpp"

#include <string>
#include <utility>

#include <caf/all.hpp>
#include <caf/io/basp_broker.hpp>
#include <caf/io/middleman.hpp>
#include <caf/io/middleman_actor_impl.hpp>
#include <caf/io/network/default_multiplexer.hpp>
#include <caf/io/network/doorman_impl.hpp>

#include "guarded_scribe.hpp"
#include "peer_guard.hpp"

namespace cafmesh {

namespace {

using caf::io::network::default_multiplexer;
using caf::io::network::native_socket;
using gate_detail::guarded_connection;

/// The acceptor of a published port: every accepted connection is a `guarded_scribe`.
class guarded_doorman : public caf::io::network::doorman_impl {
public:
  guarded_doorman(default_multiplexer& mx, native_socket fd, peer_guard_ptr guard)
    : doorman_impl(mx, fd), guard_(std::move(guard)) {
    // nop
  }

  bool new_connection() override {
    if (detached())
      return false;
    auto& mx = acceptor_.backend();
    auto fd = acceptor_.accepted_socket();
    caf::io::network::keepalive(fd, true);
    auto scribe = guarded_connection(mx, fd, guard_, std::nullopt);
    auto hdl = scribe->hdl();
    parent()->add_scribe(std::move(scribe));
    return doorman::new_connection(&mx, hdl);
  }

private:
  peer_guard_ptr guard_;
};

/// CAF's middleman actor with guarded connections.
class gate_actor : public caf::io::middleman_actor_impl {
public:
  gate_actor(caf::actor_config& cfg, caf::actor broker, peer_guard_ptr guard)
    : middleman_actor_impl(cfg, std::move(broker)), guard_(std::move(guard)) {
    // nop
  }

  const char* name() const override { return "cafmesh.peer_gate"; }

protected:
  caf::expected<caf::io::scribe_ptr> connect(const std::string& host, uint16_t port) override {
    auto fd = caf::io::network::new_tcp_connection(host, port);
    if (!fd)
      return std::move(fd.error());
    caf::io::network::keepalive(*fd, true);
    return guarded_connection(mx(), *fd, guard_, std::make_pair(host, port));
  }

  caf::expected<caf::io::doorman_ptr> open(uint16_t port, const char* addr, bool reuse) override {
    auto fd = caf::io::network::new_tcp_acceptor_impl(port, addr, reuse);
    if (!fd)
      return std::move(fd.error());
    return caf::io::doorman_ptr{caf::make_counted<guarded_doorman>(mx(), *fd, guard_)};
  }

private:
  default_multiplexer& mx() {
    return static_cast<default_multiplexer&>(system().middleman().backend());
  }

  peer_guard_ptr guard_;
};

} // namespace

peer_gate spawn_peer_gate(caf::actor_system& sys, const caf::actor_addr& deadline_receiver,
                          std::string cluster_id, std::string secret, int64_t timeout_ms,
                          tls_context_ptr tls) {
  peer_gate out;
  out.guard = std::make_shared<peer_guard>(std::move(cluster_id), std::move(secret), timeout_ms,
                                           std::move(tls));
  auto broker = sys.middleman().named_broker<caf::io::basp_broker>(caf::atom("BASP"));
  // Detached like CAF's own middleman actor: a connect blocks until the socket connected.
  out.actor = sys.spawn<gate_actor, caf::detached + caf::hidden>(std::move(broker), out.guard);
  out.guard->set_deadline_receiver(deadline_receiver);
  return out;
}

} // namespace cafmesh
