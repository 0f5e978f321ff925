#pragma once

/// @file
/// Loading and validating the JSON configuration (SPEC §11).
///
/// Every key of `mesh_config` may be given; omitted keys take their SPEC default except
/// `/mesh/process_role`, which is required. Unknown keys, wrong types, out-of-range values
/// and missing required values are refused with one message naming the JSON pointer and what
/// was expected, e.g. `/routing/retry_max: expected an integer >= 0, got "six"`. Nothing is
/// partially applied: on error the caller's config is untouched.

#include <string>
#include <vector>

#include "cafmesh/config/mesh_config.hpp"

namespace cafmesh::config {

/// The outcome of a load: either `ok` with `value`, or the list of `errors` (each
/// `{json pointer}: {what was expected}, got {what was found}`), first one most relevant.
struct load_result {
  bool ok = false;
  mesh_config value;
  std::vector<std::string> errors;

  /// All errors joined by newlines.
  std::string message() const;
};

/// Parses and validates a JSON document given as text.
load_result parse(const std::string& json_text);

/// Reads `path` and parses it; an unreadable file is an error naming the path.
load_result load_file(const std::string& path);

/// Renders the effective configuration as a pretty JSON document (every key, 2-space indent).
std::string to_json_text(const mesh_config& cfg);

} // namespace cafmesh::config
