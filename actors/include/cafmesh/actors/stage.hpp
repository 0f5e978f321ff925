#pragma once

/// @file
/// Lifecycle stages (docs/behaviour/lifecycle.md#stages): any int32 is a valid stage; these are the
/// named ones.

#include <climits>
#include <cstdint>
#include <string>

namespace cafmesh::lifecycle {

/// A lifecycle stage. Observers start in ascending and stop in descending stage order.
using stage = int32_t;

namespace stages {

inline constexpr stage first = INT_MIN;                  ///< pool teardown participant
inline constexpr stage runtime_initialize = 2000;        ///< message centre
inline constexpr stage runtime_initialize_plus_1 = 2001; ///< placement service, Dead publish
inline constexpr stage runtime_services = 4000;          ///< directory partition, catalog
inline constexpr stage application_services = 10000;     ///< router core, routing service
inline constexpr stage grain_deactivation = 19998;       ///< catalog deactivates everything
inline constexpr stage become_active = 19999;            ///< membership Active / ShuttingDown
inline constexpr stage active = 20000;                   ///< gateway, quiescence participant
inline constexpr stage last = INT_MAX;

} // namespace stages

/// Renders a stage: its name for the named ones (e.g. `Active (20000)`), else the number.
std::string stage_name(stage s);

} // namespace cafmesh::lifecycle
