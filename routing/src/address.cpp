#include "cafmesh/routing/address.hpp"

#include <stdexcept>

namespace cafmesh::routing {

std::string address::to_string() const {
  if (empty())
    return {};
  auto out = path();
  for (const auto& h : hosts) {
    out += '~';
    out += h;
  }
  return out;
}

address address::hosted_by(const address& host) const {
  address out = *this;
  out.hosts.push_back(host.path());
  out.hosts.insert(out.hosts.end(), host.hosts.begin(), host.hosts.end());
  return out;
}

namespace {

bool split_path(const std::string& text, std::string& type, std::string& id) {
  auto slash = text.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 >= text.size())
    return false;
  type = text.substr(0, slash);
  id = text.substr(slash + 1);
  return true;
}

} // namespace

bool address::parse(const std::string& text, address& out) {
  std::vector<std::string> parts;
  size_t pos = 0;
  for (;;) {
    auto tilde = text.find('~', pos);
    parts.push_back(text.substr(pos, tilde == std::string::npos ? std::string::npos : tilde - pos));
    if (tilde == std::string::npos)
      break;
    pos = tilde + 1;
  }
  address tmp;
  if (!split_path(parts[0], tmp.type, tmp.id))
    return false;
  for (size_t i = 1; i < parts.size(); ++i) {
    std::string t, d;
    if (!split_path(parts[i], t, d))
      return false;
    tmp.hosts.push_back(parts[i]);
  }
  out = std::move(tmp);
  return true;
}

address address::from(const std::string& text) {
  address out;
  if (!parse(text, out))
    throw std::invalid_argument("not an address: " + text);
  return out;
}

address host_address(const address& a, const std::string& mesh_type) {
  if (a.hosts.empty())
    return a;
  address outer;
  if (!address::parse(a.hosts.back(), outer) || !outer.hosts.empty())
    return a;
  if (outer.type == mesh_type)
    return a;
  return outer;
}

} // namespace cafmesh::routing
