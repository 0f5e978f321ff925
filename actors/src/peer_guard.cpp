#include "peer_guard.hpp"

#include <cstring>
#include <vector>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <caf/all.hpp>
#include <caf/io/middleman.hpp>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/config/text.hpp"

namespace cafmesh {

std::string to_string(peer_refusal x) {
  switch (x) {
    case peer_refusal::protocol: return "protocol";
    case peer_refusal::cluster_id: return "cluster_id";
    case peer_refusal::secret: return "secret";
    case peer_refusal::timeout: return "timeout";
    case peer_refusal::oversized: return "oversized";
    case peer_refusal::tls: return "tls";
  }
  return "protocol";
}

caf::expected<std::string> cluster_secret(const config::network_section& net) {
  auto invalid = [](std::string text) {
    return caf::expected<std::string>{to_error(fault{mesh_errc::config_invalid, std::move(text)})};
  };
  if (net.cluster_secret_file.empty())
    return net.cluster_secret;
  if (!net.cluster_secret.empty())
    return invalid("network.cluster_secret and network.cluster_secret_file are both set: "
                   "give the secret one way");
  std::string text;
  if (int err = config::read_text_file(net.cluster_secret_file, text))
    return invalid("cannot read the cluster secret file \"" + net.cluster_secret_file
                   + "\": " + std::strerror(err));
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r'))
    text.pop_back();
  if (text.empty())
    return invalid("the cluster secret file \"" + net.cluster_secret_file + "\" is empty");
  return text;
}

namespace gate_detail {

digest proof(const std::string& secret, const char* label, const std::string& cluster_id,
             const nonce& connector, const nonce& acceptor) {
  std::vector<uint8_t> msg(label, label + std::strlen(label) + 1);
  msg.push_back(static_cast<uint8_t>(cluster_id.size()));
  msg.insert(msg.end(), cluster_id.begin(), cluster_id.end());
  msg.insert(msg.end(), connector.begin(), connector.end());
  msg.insert(msg.end(), acceptor.begin(), acceptor.end());
  digest out{};
  unsigned int len = static_cast<unsigned int>(out.size());
  // `secret.data()` is never null, also for the empty secret.
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()), msg.data(), msg.size(),
       out.data(), &len);
  return out;
}

} // namespace gate_detail

void peer_guard::watch(caf::actor_system& sys, caf::io::scribe_ptr keep,
                       gate_detail::watched_connection* conn) {
  auto id = ++next_watch_;
  conn->watch_id = id;
  watched_.emplace(id, std::make_pair(std::move(keep), conn));
  // Not the gate: a pending timeout holds its receiver, and `~actor_system` waits until a
  // detached actor such as the gate is destroyed (docs/caf-notes.md "Shutdown").
  auto receiver = caf::actor_cast<caf::strong_actor_ptr>(deadline_receiver_);
  if (!receiver)
    return;
  auto& clock = sys.clock();
  clock.schedule_message(clock.now() + std::chrono::milliseconds(timeout_ms_), std::move(receiver),
                         caf::make_mailbox_element(nullptr, caf::make_message_id(), {},
                                                   pg_expire_atom::value, id));
}

void peer_guard::unwatch(uint64_t id) {
  watched_.erase(id);
}

void peer_guard::expire(uint64_t id) {
  auto i = watched_.find(id);
  if (i == watched_.end())
    return;
  auto s = std::move(i->second);
  watched_.erase(i);
  s.second->expire();
}

void expire_handshake(caf::actor_system& sys, const peer_guard_ptr& guard, uint64_t id) {
  sys.middleman().backend().post([guard, id] { guard->expire(id); });
}

peer_auth_stats stats_of(const peer_guard& guard) {
  return guard.stats();
}

std::optional<peer_refusal_note> take_refusal(peer_guard& guard, const std::string& host,
                                              uint16_t port) {
  return guard.take({host, port});
}

} // namespace cafmesh
