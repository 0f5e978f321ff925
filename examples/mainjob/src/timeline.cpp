#include "cafmesh/mainjob/timeline.hpp"

#include <algorithm>

namespace cafmesh::mainjob {

timeline build_timeline(const outcome_ledger& ledger, int64_t duration_s) {
  auto& bins = ledger.seconds();
  size_t n = std::max(static_cast<size_t>(std::max<int64_t>(duration_s, 0)), bins.size());
  timeline tl;
  tl.accepted.assign(n, 0);
  tl.landed.assign(n, 0);
  tl.refusals.assign(n, 0);
  tl.deadlines.assign(n, 0);
  tl.suppressed.assign(n, 0);
  tl.in_flight.assign(n, 0);
  tl.p99_ms.assign(n, std::nullopt);
  uint64_t open = 0;
  for (size_t s = 0; s < bins.size(); ++s) {
    auto& b = bins[s];
    tl.accepted[s] = b.accepted;
    tl.landed[s] = b.landed;
    tl.refusals[s] = b.refusals;
    tl.deadlines[s] = b.deadlines;
    tl.suppressed[s] = b.suppressed;
    for (auto& [v, count] : b.nacked) {
      auto& series = tl.nacked[v];
      series.resize(n, 0);
      series[s] = count;
    }
    tl.p99_ms[s] = b.latencies.nearest_rank(99);
  }
  for (size_t s = 0; s < n; ++s) {
    if (s < bins.size()) {
      open += bins[s].accepted;
      open -= bins[s].ended;
    }
    tl.in_flight[s] = open;
  }
  return tl;
}

} // namespace cafmesh::mainjob
