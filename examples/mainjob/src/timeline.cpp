#include "cafmesh/mainjob/timeline.hpp"

#include <algorithm>

#include "cafmesh/mainjob/traffic.hpp"

namespace cafmesh::mainjob {

namespace {

constexpr int64_t bin_ms = 1000;

size_t second_of(int64_t t_ms) {
  return static_cast<size_t>(std::max<int64_t>(t_ms, 0) / bin_ms);
}

} // namespace

timeline build_timeline(const std::vector<delivery_trace>& traces, int64_t duration_s) {
  size_t n = static_cast<size_t>(std::max<int64_t>(duration_s, 0));
  for (auto& t : traces) {
    n = std::max(n, second_of(t.accepted_ms) + 1);
    if (t.outcome_ms)
      n = std::max(n, second_of(*t.outcome_ms) + 1);
  }
  timeline tl;
  tl.accepted.assign(n, 0);
  tl.landed.assign(n, 0);
  tl.refusals.assign(n, 0);
  tl.deadlines.assign(n, 0);
  tl.suppressed.assign(n, 0);
  tl.in_flight.assign(n, 0);
  tl.p99_ms.assign(n, std::nullopt);
  std::vector<uint64_t> ended(n, 0);
  std::vector<std::vector<int64_t>> latencies(n);
  for (auto& t : traces) {
    auto a = second_of(t.accepted_ms);
    ++tl.accepted[a];
    if (t.first_landing_ms)
      latencies[a].push_back(*t.first_landing_ms - t.accepted_ms);
    if (!t.outcome || !t.outcome_ms)
      continue;
    auto s = second_of(*t.outcome_ms);
    ++ended[s];
    switch (*t.outcome) {
      case outcome_kind::landed:
      case outcome_kind::response:
        ++tl.landed[s];
        break;
      case outcome_kind::nack:
      case outcome_kind::suppressed_failure:
        if (overload_refusal(*t.outcome, t.verdict, t.text).overloaded) {
          ++tl.refusals[s];
        } else if (*t.outcome == outcome_kind::nack) {
          auto& series = tl.nacked[t.verdict];
          series.resize(n, 0);
          ++series[s];
        } else {
          ++tl.suppressed[s];
        }
        break;
      case outcome_kind::deadline:
        ++tl.deadlines[s];
        break;
      case outcome_kind::unconfirmed:
        break;
    }
  }
  uint64_t open = 0;
  for (size_t s = 0; s < n; ++s) {
    open += tl.accepted[s];
    open -= ended[s];
    tl.in_flight[s] = open;
    tl.p99_ms[s] = nearest_rank(std::move(latencies[s]), 99);
  }
  return tl;
}

timeline build_timeline(const outcome_ledger& ledger, int64_t duration_s) {
  return build_timeline(ledger.traces(), duration_s);
}

} // namespace cafmesh::mainjob
