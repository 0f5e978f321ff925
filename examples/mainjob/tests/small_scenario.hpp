#pragma once

// The small scenario the driver tests run: 1 s at 50 deliveries/s over 3 streams, 2 owner
// hubs, 4 portal hubs, 2 node hubs, no roll.

#include "cafmesh/mainjob/scenario.hpp"

namespace cafmesh::mainjob::tests {

inline scenario small_scenario() {
  auto s = default_scenario();
  s.duration_s = 1;
  s.rate_per_s = 50;
  s.traffic.streams = 3;
  s.traffic.owner_hubs = 2;
  s.traffic.portal_hubs = 4;
  s.traffic.node_hubs = 2;
  s.roll.order.clear();
  return s;
}

} // namespace cafmesh::mainjob::tests
