#include "cafmesh/actors/grain_registry.hpp"

#include <chrono>

namespace cafmesh {

std::string to_string(grain_kind x) {
  switch (x) {
    case grain_kind::single_activation: return "single_activation";
    case grain_kind::stateless_worker: return "stateless_worker";
  }
  return "grain_kind(" + std::to_string(static_cast<int>(x)) + ")";
}

bool grain_registry::add_single(std::string type, placement_strategy strategy,
                                activation_factory factory, uint32_t interface_version,
                                activation_check check) {
  if (strategy == placement_strategy::stateless_worker || types_.count(type) > 0)
    return false;
  grain_type t;
  t.info.type = type;
  t.kind = grain_kind::single_activation;
  t.info.strategy = strategy;
  t.info.interface_version = interface_version;
  t.local_limit = 1;
  t.factory = std::move(factory);
  t.check = std::move(check);
  types_.emplace(std::move(type), std::move(t));
  return true;
}

bool grain_registry::add_stateless(std::string type, uint32_t local_limit,
                                   activation_factory factory, uint32_t interface_version,
                                   activation_check check) {
  if (local_limit == 0 || types_.count(type) > 0)
    return false;
  grain_type t;
  t.info.type = type;
  t.kind = grain_kind::stateless_worker;
  t.info.strategy = placement_strategy::stateless_worker;
  t.info.interface_version = interface_version;
  t.local_limit = local_limit;
  t.factory = std::move(factory);
  t.check = std::move(check);
  types_.emplace(std::move(type), std::move(t));
  return true;
}

bool grain_registry::set_deactivation_hook(const std::string& type, caf::timespan bound) {
  auto i = types_.find(type);
  if (i == types_.end() || bound < std::chrono::milliseconds(1))
    return false;
  i->second.deactivation_hook = std::chrono::duration_cast<std::chrono::milliseconds>(bound);
  return true;
}

bool grain_registry::set_may_interleave(const std::string& type, interleave_predicate pred) {
  auto i = types_.find(type);
  if (i == types_.end() || !pred)
    return false;
  i->second.may_interleave = std::move(pred);
  return true;
}

const grain_type* grain_registry::find(const std::string& type) const {
  auto i = types_.find(type);
  return i == types_.end() ? nullptr : &i->second;
}

std::vector<grain_type_info> grain_registry::manifest() const {
  std::vector<grain_type_info> out;
  out.reserve(types_.size());
  for (auto& kv : types_)
    out.push_back(kv.second.info);
  return out;
}

} // namespace cafmesh
