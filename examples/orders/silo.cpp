// orders-silo: one silo of the orders service over CAF io. Usage:
//   cafmesh-orders-silo CONFIG.json
// Prints `ADDR {silo}` and `ACTIVE`, answers requests to `node/orders/{id}` from the order
// grain (which reserves stock on the inventory grain), stops gracefully on SIGTERM/SIGINT and
// prints `STOPPED` (exit 0). A start that fails prints `cafmesh-orders-silo: start failed:
// {cause}` and exits 1.
#include <iostream>

#include "orders.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: cafmesh-orders-silo CONFIG.json\n";
    return 2;
  }
  caf::actor_system_config cfg;
  cafmesh::lifecycle::prepare(cfg);
  caf::actor_system sys{cfg};
  cafmesh::lifecycle::silo_builder builder{sys};
  auto silo = orders::with_orders(builder.config_file(argv[1]).network()).build();
  if (!silo) {
    std::cerr << "cafmesh-orders-silo: silo not built: " << cafmesh::to_fault(silo.error()).render()
              << "\n";
    return 1;
  }
  std::cout << "ADDR " << silo->address().to_string() << std::endl;
  silo->stop_on_signals();
  if (auto err = silo->when_active()) {
    // E.g. the join bound (membership.max_join_time_ms), naming the address it tried.
    std::cerr << ("cafmesh-orders-silo: start failed: " + cafmesh::to_fault(err).render() + "\n");
    silo->stop(false);
    return 1;
  }
  std::cout << "ACTIVE" << std::endl;
  silo->wait();
  std::cout << "STOPPED" << std::endl;
  return 0;
}
