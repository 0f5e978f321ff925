#include "cafmesh/mainjob/verbosity.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "cafmesh/mainjob/scenario.hpp"

namespace cafmesh::mainjob {

log::level demo_log_level(log::level configured, bool verbose) {
  if (verbose)
    return configured;
  return std::max(configured, log::level::warning);
}

log::level apply_verbosity(scenario& s, bool verbose) {
  auto doc = nlohmann::json::parse(s.config_json);
  auto configured = log::level::info;
  // The scenario loader validated the level; an unknown name cannot reach here.
  if (auto i = doc.find("log"); i != doc.end() && i->is_object())
    if (auto l = i->find("level"); l != i->end() && l->is_string())
      log::parse_level(l->get<std::string>(), configured);
  auto lvl = demo_log_level(configured, verbose);
  doc["log"]["level"] = log::to_string(lvl);
  s.config_json = doc.dump();
  return lvl;
}

} // namespace cafmesh::mainjob
