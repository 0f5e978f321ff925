#pragma once

/// @file
/// Whole milliseconds of a duration, for the places that hand a `caf::timespan` of the API on
/// to a setting, a counter or a log line kept in ms (docs/architecture.md#where-things-live).

#include <chrono>
#include <cstdint>

#include <caf/timespan.hpp>

namespace cafmesh {

/// `x` in whole milliseconds, rounded toward zero.
inline int64_t whole_ms(caf::timespan x) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(x).count();
}

} // namespace cafmesh
