#include "cafmesh/actors/system_teardown.hpp"

#include <thread>
#include <utility>

#include <caf/actor_system.hpp>
#include <caf/logger.hpp>

namespace cafmesh {

void destroy_systems_together(std::vector<std::unique_ptr<caf::actor_system>>& systems) {
  // The caller may have spawned in one of them last (its thread would keep that logger).
  caf::logger::set_current_actor_system(nullptr);
  std::vector<std::thread> threads;
  threads.reserve(systems.size());
  for (auto& sys : systems)
    if (sys)
      threads.emplace_back([doomed = std::move(sys)]() mutable { doomed.reset(); });
  for (auto& t : threads)
    t.join();
  systems.clear();
}

} // namespace cafmesh
