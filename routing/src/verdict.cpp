#include "cafmesh/routing/verdict.hpp"

namespace cafmesh::routing {

std::string to_string(delivery_state x) {
  switch (x) {
    case delivery_state::submitted: return "submitted";
    case delivery_state::forwarded: return "forwarded";
    case delivery_state::processed: return "processed";
    case delivery_state::not_found: return "not_found";
    case delivery_state::rejected: return "rejected";
    case delivery_state::failed: return "failed";
    case delivery_state::ignored: return "ignored";
  }
  return "delivery_state(" + std::to_string(static_cast<int>(x)) + ")";
}

bool from_string(const std::string& name, delivery_state& out) {
  for (auto s : {delivery_state::submitted, delivery_state::forwarded, delivery_state::processed,
                 delivery_state::not_found, delivery_state::rejected, delivery_state::failed,
                 delivery_state::ignored})
    if (name == to_string(s)) {
      out = s;
      return true;
    }
  return false;
}

namespace {

struct verdict_name {
  verdict v;
  const char* name;
};

constexpr verdict_name verdict_names[] = {
  {verdict::shutting_down, "shutting_down"},
  {verdict::unavailable, "unavailable"},
  {verdict::failed, "failed"},
  {verdict::not_found, "not_found"},
  {verdict::rejected, "rejected"},
  {verdict::routing_loop, "routing_loop"},
  {verdict::unauthorized, "unauthorized"},
  {verdict::forbidden, "forbidden"},
  {verdict::unknown, "unknown"},
  {verdict::exception, "exception"},
  {verdict::compilation_failed, "compilation_failed"},
  {verdict::compilation_in_progress, "compilation_in_progress"},
  {verdict::startup_script_failed, "startup_script_failed"},
  {verdict::ignored, "ignored"},
};

} // namespace

std::string to_string(verdict x) {
  for (const auto& e : verdict_names)
    if (e.v == x)
      return e.name;
  return "verdict(" + std::to_string(static_cast<int>(x)) + ")";
}

bool from_string(const std::string& name, verdict& out) {
  for (const auto& e : verdict_names)
    if (name == e.name) {
      out = e.v;
      return true;
    }
  return false;
}

} // namespace cafmesh::routing
