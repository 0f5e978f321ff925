// counter-service-silo: one silo of the counter service over CAF io. Usage:
//   cafmesh-counter-silo CONFIG.json [TURN_LOG]
// Prints `ADDR {silo}` and `ACTIVE`, answers requests to `node/counter/{key}` from the counter
// grain, stops gracefully on SIGTERM/SIGINT and prints `STOPPED` (exit 0). A start that fails
// (e.g. its membership table not reached within `membership.max_join_time_ms`) prints
// `cafmesh-counter-silo: start failed: {cause}` and exits 1. With TURN_LOG, every completed
// turn of a counter activation appends `{wall-clock ms} {key} {total}` to that file (the
// partition test, tests/integration/partition_run.sh, reads it).
#include <chrono>
#include <fstream>
#include <iostream>
#include <mutex>

#include "counter.hpp"

int main(int argc, char** argv) {
  if (argc != 2 && argc != 3) {
    std::cerr << "usage: cafmesh-counter-silo CONFIG.json [TURN_LOG]\n";
    return 2;
  }
  if (argc == 3) {
    auto out = std::make_shared<std::ofstream>(argv[2], std::ios::app);
    auto guard = std::make_shared<std::mutex>();
    counter_service::turn_observer() = [out, guard](const std::string& key, int64_t total) {
      auto now = std::chrono::system_clock::now().time_since_epoch();
      auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now).count();
      std::lock_guard<std::mutex> lock{*guard};
      *out << ms << ' ' << key << ' ' << total << std::endl;
    };
  }
  caf::actor_system_config cfg;
  cafmesh::lifecycle::prepare(cfg);
  caf::actor_system sys{cfg};
  cafmesh::lifecycle::silo_builder builder{sys};
  auto silo = counter_service::with_counter(builder.config_file(argv[1]).network()).build();
  if (!silo) {
    std::cerr << "cafmesh-counter-silo: silo not built: "
              << cafmesh::to_fault(silo.error()).render() << "\n";
    return 1;
  }
  silo->register_hub("node/counter/*", counter_service::counter_hub(silo->placement()));
  std::cout << "ADDR " << silo->address().to_string() << std::endl;
  silo->stop_on_signals();
  if (auto err = silo->when_active()) {
    // E.g. the join bound: "membership: could not reach the membership table at
    // 127.0.0.1:4100 for 60,000 ms (membership.max_join_time_ms); ..."
    // One write: the log writes to stderr from other threads, and a line written in pieces
    // can be cut by one of theirs.
    std::cerr << ("cafmesh-counter-silo: start failed: " + cafmesh::to_fault(err).render() + "\n");
    silo->stop(false);
    return 1;
  }
  std::cout << "ACTIVE" << std::endl;
  silo->wait();
  std::cout << "STOPPED" << std::endl;
  return 0;
}
