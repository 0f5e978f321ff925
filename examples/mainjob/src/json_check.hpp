#pragma once

/// @file
/// The scenario and trace readers validate JSON with the configuration loader's rules
/// (`cafmesh/config/json_rules.hpp`), so their error lines read exactly like the loader's.

#include "cafmesh/config/json_rules.hpp"

namespace cafmesh::mainjob::detail {

using namespace cafmesh::config::json_rules;

} // namespace cafmesh::mainjob::detail
