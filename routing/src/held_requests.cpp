#include "cafmesh/routing/held_requests.hpp"

#include <algorithm>
#include <utility>

#include "cafmesh/routing/classify.hpp"
#include "cafmesh/routing/size_guard.hpp"

namespace cafmesh::routing {

void stamp_landing(envelope& answer, const silo_address& silo) {
  answer.properties[landed_at_property] = json_quote(silo.to_string());
}

std::optional<silo_address> landing_of(const envelope& answer) {
  auto i = answer.properties.find(landed_at_property);
  if (i == answer.properties.end())
    return std::nullopt;
  return parse_silo_address(unquote_json_string(i->second));
}

std::optional<silo_address> parse_silo_address(const std::string& text) {
  // S{host}:{port}@{generation}; the host may itself hold ':' (IPv6), so split from the end.
  auto at = text.rfind('@');
  if (text.size() < 4 || text[0] != 'S' || at == std::string::npos)
    return std::nullopt;
  auto colon = text.rfind(':', at);
  if (colon == std::string::npos || colon < 1)
    return std::nullopt;
  auto digits = [](const std::string& x) {
    return !x.empty() && x.size() <= 20
           && std::all_of(x.begin(), x.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  auto port = text.substr(colon + 1, at - colon - 1);
  auto gen = text.substr(at + 1);
  if (!digits(port) || !digits(gen) || port.size() > 5)
    return std::nullopt;
  auto p = std::stoul(port);
  if (p > 65535)
    return std::nullopt;
  silo_address out;
  out.host = text.substr(1, colon - 1);
  out.port = static_cast<uint16_t>(p);
  try {
    out.generation = std::stoull(gen);
  } catch (...) {
    return std::nullopt; // beyond 64 bits
  }
  return out;
}

void held_requests::hold(envelope env, silo_address via, int64_t deadline_ms, int64_t now_ms) {
  auto id = env.id;
  held_[id] = entry{std::move(env), std::move(via), silo_address{}, deadline_ms};
  if (held_.size() > sweep_at_)
    sweep(now_ms);
}

bool held_requests::landed(const std::string& id, const silo_address& at) {
  auto i = held_.find(id);
  if (i == held_.end())
    return false;
  i->second.landed_at = at;
  return true;
}

std::optional<held_requests::entry> held_requests::take(const std::string& id, int64_t now_ms) {
  auto i = held_.find(id);
  if (i == held_.end())
    return std::nullopt;
  auto e = std::move(i->second);
  held_.erase(i);
  if (e.deadline_ms <= now_ms)
    return std::nullopt;
  return e;
}

std::vector<held_requests::loss> held_requests::departed(const silo_address& s, int64_t now_ms) {
  std::vector<loss> out;
  for (auto i = held_.begin(); i != held_.end();) {
    auto& e = i->second;
    bool via = !e.via.empty() && e.via == s;
    bool landing = !e.landed_at.empty() && e.landed_at == s;
    if (!via && !landing) {
      ++i;
      continue;
    }
    if (e.deadline_ms > now_ms)
      out.push_back(loss{std::move(e), landing ? held_loss::landing : held_loss::gateway});
    i = held_.erase(i);
  }
  return out;
}

void held_requests::left(const silo_address& s) {
  for (auto& kv : held_) {
    if (kv.second.via == s)
      kv.second.via = silo_address{};
    if (kv.second.landed_at == s)
      kv.second.landed_at = silo_address{};
  }
}

const held_requests::entry* held_requests::find(const std::string& id) const {
  auto i = held_.find(id);
  return i == held_.end() ? nullptr : &i->second;
}

void held_requests::sweep(int64_t now_ms) {
  for (auto i = held_.begin(); i != held_.end();) {
    if (i->second.deadline_ms <= now_ms)
      i = held_.erase(i);
    else
      ++i;
  }
  sweep_at_ = std::max<size_t>(1024, 2 * held_.size());
}

} // namespace cafmesh::routing
