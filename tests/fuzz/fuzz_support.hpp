#pragma once

/// @file
/// Shared pieces of the fuzz targets (README "Sanitizers and fuzzing"): the invariant check
/// that ends a run with a report, the input as text, the UTF-8 test.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace cafmesh::fuzz {

/// Ends the run with `what` on stderr when `cond` is false: libFuzzer records the input as a
/// crash, the regression runner fails its test.
inline void check(bool cond, const char* what) {
  if (!cond) {
    std::fprintf(stderr, "fuzz invariant violated: %s\n", what);
    std::abort();
  }
}

/// The input as text (arbitrary bytes, NUL included).
inline std::string as_text(const uint8_t* data, size_t size) {
  return std::string{reinterpret_cast<const char*>(data), size};
}

/// True if `s` is valid UTF-8 (nlohmann's strict dump refuses anything else).
inline bool is_utf8(const std::string& s) {
  try {
    (void) nlohmann::json(s).dump();
    return true;
  } catch (const nlohmann::json::type_error&) {
    return false;
  }
}

} // namespace cafmesh::fuzz
