#include "cafmesh/lifecycle/hub_homing.hpp"

#include <algorithm>

#include <caf/all.hpp>

#include "cafmesh/routing/entry_atoms.hpp"

namespace cafmesh::lifecycle {

std::string next_available_in(const std::vector<std::string>& order, const std::string& name,
                              const std::function<bool(const std::string&)>& available) {
  auto i = std::find(order.begin(), order.end(), name);
  auto start = i == order.end() ? 0 : static_cast<size_t>(i - order.begin());
  for (size_t k = 1; k <= order.size(); ++k) {
    auto& cand = order[(start + k) % order.size()];
    if (cand != name && available(cand))
      return cand;
  }
  return {};
}

hub_homing::hub_homing(std::vector<std::string> silo_order, silo_access access)
  : order_(std::move(silo_order)), access_(std::move(access)) {
  for (auto& name : order_)
    available_[name] = false;
}

void hub_homing::add(hub_home_kind kind, const routing::address& addr, caf::actor ep,
                     const std::string& home, caf::actor client_routing) {
  hub h;
  h.kind = kind;
  h.addr = addr;
  h.ep = std::move(ep);
  h.client_routing = std::move(client_routing);
  if (kind != hub_home_kind::client)
    h.home = home;
  auto& in = hubs_[to_string(addr)] = std::move(h);
  if (!in.ep)
    return;
  switch (kind) {
    case hub_home_kind::owner:
    case hub_home_kind::portal: attach(in); break;
    case hub_home_kind::client:
      caf::anon_send(in.client_routing, routing::rs_register_atom::value, in.addr, in.ep);
      break;
    case hub_home_kind::answering: break;
  }
}

void hub_homing::place(const std::string& addr, caf::actor ep, const std::string& home, bool hold) {
  auto i = hubs_.find(addr);
  if (i == hubs_.end())
    return;
  auto& h = i->second;
  h.ep = std::move(ep);
  h.home = home;
  h.moving = hold;
  h.draining = false; // a new home: nothing of the old one to wait for
  if (!hold)
    release(h);
}

bool hub_homing::submit(const std::string& sender, routing::envelope e, int64_t deadline_ms) {
  auto i = hubs_.find(sender);
  if (i == hubs_.end())
    return false;
  auto& h = i->second;
  if (h.moving || !h.ep)
    h.held.emplace_back(std::move(e), deadline_ms);
  else
    send(h, std::move(e), deadline_ms);
  return true;
}

void hub_homing::stopping(const std::string& name) {
  available_[name] = false;
  auto next = next_available(name);
  for (auto& [text, h] : hubs_) {
    if (h.home != name)
      continue;
    if (h.kind == hub_home_kind::answering && !next.empty()) {
      answer_through(h, next);
    } else if (h.kind == hub_home_kind::owner) {
      h.moving = true;
      h.draining = true;
    }
  }
}

void hub_homing::active_stopped(const std::string& name) {
  auto next = next_available(name);
  for (auto& [text, h] : hubs_) {
    if (h.kind != hub_home_kind::owner || h.home != name || !h.moving)
      continue;
    h.draining = false; // the home's legs have ended
    if (!next.empty())
      move(h, next); // else: it moves when a silo is Active again (`up`)
  }
}

void hub_homing::down(const std::string& name) {
  available_[name] = false;
  for (auto& [text, h] : hubs_)
    if (h.kind == hub_home_kind::portal && h.home == name)
      h.moving = true;
}

void hub_homing::killed(const std::string& name) {
  available_[name] = false;
  auto next = next_available(name);
  for (auto& [text, h] : hubs_) {
    if (h.home != name)
      continue;
    switch (h.kind) {
      case hub_home_kind::answering:
        if (!next.empty())
          answer_through(h, next);
        break;
      case hub_home_kind::owner:
        h.draining = false; // nothing drains on a killed silo
        if (next.empty())
          h.moving = true;
        else
          move(h, next);
        break;
      case hub_home_kind::portal: h.moving = true; break;
      case hub_home_kind::client: break;
    }
  }
}

void hub_homing::up(const std::string& name) {
  available_[name] = true;
  for (auto& [text, h] : hubs_)
    if (h.kind == hub_home_kind::owner && h.moving && !h.draining && !available(h.home))
      move(h, name);
  for (auto& [text, h] : hubs_) {
    if (h.home != name || !h.ep)
      continue;
    if (h.kind == hub_home_kind::portal) {
      caf::anon_send(h.ep, routing::ep_rehome_atom::value, access_.routing_of(name));
      attach(h);
      release(h);
    } else if (h.kind == hub_home_kind::answering) {
      caf::anon_send(h.ep, routing::ep_rehome_atom::value, access_.routing_of(name));
    }
  }
}

bool hub_homing::available(const std::string& name) const {
  auto i = available_.find(name);
  return i != available_.end() && i->second;
}

std::string hub_homing::next_available(const std::string& name) const {
  return next_available_in(order_, name, [this](const std::string& n) { return available(n); });
}

std::string hub_homing::home_of(const std::string& addr) const {
  auto i = hubs_.find(addr);
  return i == hubs_.end() ? std::string{} : i->second.home;
}

size_t hub_homing::held() const {
  size_t n = 0;
  for (auto& [text, h] : hubs_)
    n += h.held.size();
  return n;
}

void hub_homing::send(hub& h, routing::envelope e, int64_t deadline_ms) {
  if (deadline_ms >= 0)
    caf::anon_send(h.ep, routing::ep_request_atom::value, std::move(e), deadline_ms);
  else
    caf::anon_send(h.ep, routing::ep_post_atom::value, std::move(e));
}

void hub_homing::answer_through(hub& h, const std::string& to) {
  h.home = to;
  if (h.ep)
    caf::anon_send(h.ep, routing::ep_rehome_atom::value, access_.routing_of(to));
}

void hub_homing::release(hub& h) {
  h.moving = false;
  while (!h.held.empty() && h.ep) {
    auto [e, deadline_ms] = std::move(h.held.front());
    h.held.pop_front();
    send(h, std::move(e), deadline_ms);
  }
}

void hub_homing::move(hub& h, const std::string& to) {
  h.home = to;
  auto r = access_.routing_of(to);
  caf::anon_send(r, routing::rs_register_atom::value, h.addr, h.ep);
  caf::anon_send(h.ep, routing::ep_rehome_atom::value, r);
  release(h);
}

void hub_homing::attach(hub& h) {
  auto r = access_.routing_of(h.home);
  if (!r)
    return;
  caf::anon_send(r, routing::rs_register_atom::value, h.addr, h.ep);
  if (h.kind == hub_home_kind::portal && access_.claim)
    access_.claim(h.home, h.addr);
}

} // namespace cafmesh::lifecycle
