#pragma once

/// @file
/// A cluster inside one actor system (docs/hosting.md "Transport"): the in-process
/// link every silo and client of it talks over (`spawn_sim_network` with no latency and no
/// faults) and its development membership oracle. The embedded default of `silo_builder`
/// (each silo gets its own cluster unless given one); share one between builders to run
/// several silos and clients in one process, as a service's own tests do.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>

#include <caf/actor.hpp>
#include <caf/timespan.hpp>
#include <caf/fwd.hpp>

#include "cafmesh/actors/ids.hpp"
#include "cafmesh/actors/membership.hpp"
#include "cafmesh/actors/sim_network.hpp"

namespace cafmesh::lifecycle {

/// See the file comment. Create it with `make_in_process_cluster`; it exits its actors when
/// the last handle is gone.
class in_process_cluster {
public:
  /// A cluster whose oracle declares a silo Dead after `failure_detection` of silence.
  in_process_cluster(caf::actor_system& sys, caf::timespan failure_detection);
  /// Adopts an existing link (a `spawn_sim_network`) and its oracle, e.g. a test world's
  /// network with latencies and faults; both are sent an exit when the cluster ends.
  in_process_cluster(sim_network_actor link, membership_oracle_actor oracle);
  ~in_process_cluster();
  in_process_cluster(const in_process_cluster&) = delete;
  in_process_cluster& operator=(const in_process_cluster&) = delete;

  const sim_network_actor& link() const { return link_; }
  const membership_oracle_actor& oracle() const { return oracle_; }
  /// A fresh address on this cluster: host `local`, ports from 11111 up, generation = the
  /// wall-clock ms, raised so that it grows with every call.
  silo_address next_address();

private:
  sim_network_actor link_;
  membership_oracle_actor oracle_;
  std::atomic<uint16_t> next_port_{11111};
  std::atomic<uint64_t> last_generation_{0};
};

using in_process_cluster_ptr = std::shared_ptr<in_process_cluster>;

/// A new in-process cluster on `sys` (failure detection as `network.failure_detection_ms`).
in_process_cluster_ptr
make_in_process_cluster(caf::actor_system& sys,
                        caf::timespan failure_detection = std::chrono::seconds(10));

} // namespace cafmesh::lifecycle
