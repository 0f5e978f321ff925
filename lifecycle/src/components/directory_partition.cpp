// The silo's directory partition (docs/behaviour/directory-and-placement.md). It has no stage
// of its own: it is registered and stopped with the runtime services (runtime_services.cpp).

#include "silo_component.hpp"

#include "cafmesh/actors/directory.hpp"

namespace cafmesh::lifecycle::components {

extern const silo_component directory_partition{
  [](silo_wiring& w) {
    w.s.partition = spawn_directory_partition(w.sys, w.s.addr, w.s.centre, w.s.agent);
  },
  nullptr,
  [](const silo_components& s) { return handles(s.partition); },
};

} // namespace cafmesh::lifecycle::components
