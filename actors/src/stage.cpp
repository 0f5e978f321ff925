#include "cafmesh/actors/stage.hpp"

namespace cafmesh::lifecycle {

std::string stage_name(stage s) {
  const char* name = nullptr;
  switch (s) {
    case stages::first: name = "First"; break;
    case stages::runtime_initialize: name = "RuntimeInitialize"; break;
    case stages::runtime_initialize_plus_1: name = "RuntimeInitialize+1"; break;
    case stages::runtime_services: name = "RuntimeServices"; break;
    case stages::application_services: name = "ApplicationServices"; break;
    case stages::grain_deactivation: name = "GrainDeactivation"; break;
    case stages::become_active: name = "BecomeActive"; break;
    case stages::active: name = "Active"; break;
    case stages::last: name = "Last"; break;
    default: return std::to_string(s);
  }
  return std::string{name} + " (" + std::to_string(s) + ")";
}

} // namespace cafmesh::lifecycle
