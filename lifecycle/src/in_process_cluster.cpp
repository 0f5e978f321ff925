#include "cafmesh/lifecycle/in_process_cluster.hpp"

#include <algorithm>
#include <chrono>

#include <caf/all.hpp>

#include "cafmesh/actors/membership.hpp"
#include "cafmesh/actors/sim_network.hpp"
#include "cafmesh/actors/whole_ms.hpp"

namespace cafmesh::lifecycle {

in_process_cluster::in_process_cluster(caf::actor_system& sys, caf::timespan failure_detection) {
  sim_network_config nc;
  nc.link_latency_min_ms = 0;
  nc.link_latency_max_ms = 0;
  link_ = spawn_sim_network(sys, nc);
  oracle_ = spawn_membership_oracle(sys, {whole_ms(failure_detection)}, link_);
}

in_process_cluster::in_process_cluster(sim_network_actor link, membership_oracle_actor oracle)
  : link_(std::move(link)), oracle_(std::move(oracle)) {
  // nop
}

in_process_cluster::~in_process_cluster() {
  for (auto& a : {caf::actor_cast<caf::actor>(oracle_), caf::actor_cast<caf::actor>(link_)})
    if (a)
      caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
}

silo_address in_process_cluster::next_address() {
  auto wall = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                      std::chrono::system_clock::now().time_since_epoch())
                                      .count());
  auto last = last_generation_.load();
  uint64_t gen;
  do {
    gen = std::max(wall, last + 1);
  } while (!last_generation_.compare_exchange_weak(last, gen));
  return silo_address{"local", next_port_++, gen};
}

in_process_cluster_ptr make_in_process_cluster(caf::actor_system& sys,
                                               caf::timespan failure_detection) {
  return std::make_shared<in_process_cluster>(sys, failure_detection);
}

} // namespace cafmesh::lifecycle
