// counter-service-silo: one silo of the counter service over CAF io. Usage:
//   cafmesh-counter-silo CONFIG.json
// Prints `ADDR {silo}` and `ACTIVE`, answers requests to `node/counter/{key}` from the counter
// grain, stops gracefully on SIGTERM/SIGINT and prints `STOPPED` (exit 0).
#include <iostream>

#include "counter.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: cafmesh-counter-silo CONFIG.json\n";
    return 2;
  }
  caf::actor_system_config cfg;
  cafmesh::lifecycle::prepare(cfg);
  caf::actor_system sys{cfg};
  cafmesh::lifecycle::silo_builder builder{sys};
  auto silo = counter_service::with_counter(builder.config_file(argv[1]).network()).build();
  if (!silo) {
    std::cerr << sys.render(silo.error()) << "\n";
    return 1;
  }
  silo->register_hub("node/counter/*", counter_service::counter_hub(silo->placement()));
  std::cout << "ADDR " << silo->address().to_string() << std::endl;
  silo->stop_on_signals();
  if (auto err = silo->when_active()) {
    std::cerr << sys.render(err) << "\n";
    return 1;
  }
  std::cout << "ACTIVE" << std::endl;
  silo->wait();
  std::cout << "STOPPED" << std::endl;
  return 0;
}
