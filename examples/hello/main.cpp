// Hello, cafmesh: one silo in this process, one typed grain, one request, a graceful stop.
#include <iostream>
#include <string>

#include <caf/all.hpp>

#include "cafmesh/lifecycle/hosting.hpp"

using greeter = caf::typed_actor<caf::replies_to<std::string>::with<std::string>>;

int main() {
  caf::actor_system_config cfg;
  cafmesh::lifecycle::prepare(cfg);
  caf::actor_system sys{cfg};
  auto silo = cafmesh::lifecycle::silo_builder{sys}
                .grain<greeter>("greeter",
                                [](caf::event_based_actor*, const cafmesh::grain_id& id)
                                  -> greeter::behavior_type {
                                  return {[id](const std::string& name) {
                                    return "hello " + name + ", from grain " + id.key;
                                  }};
                                })
                .build();
  if (!silo || silo->when_active())
    return 1;
  caf::scoped_actor self{sys};
  int rc = 1;
  silo->grain<greeter>("greeter", "world").request(self, std::string{"you"}).receive(
    [&](const std::string& text) { std::cout << text << "\n", rc = 0; },
    [&](caf::error& err) { std::cerr << sys.render(err) << "\n"; });
  silo->stop();
  return rc;
}
