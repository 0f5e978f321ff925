#pragma once

/// @file
/// Shared pieces of the fuzz targets (docs/testing.md#fuzzing): the invariant check
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

/// Reads `text` with `parse` and checks what every reader with a renderer promises: a refusal
/// has an error line and an acceptance none; the rendering of an accepted value is accepted
/// again and renders the same (`parse(render(x))` gives back `x`). Answers the first read.
template <class Parse, class Render>
auto check_rendered_round_trip(const std::string& text, Parse parse, Render render) {
  auto res = parse(text);
  check(res.ok == res.errors.empty(), "a refusal has an error line, an acceptance none");
  if (res.ok) {
    auto rendered = render(res.value);
    auto again = parse(rendered);
    check(again.ok, "the rendering of an accepted value is accepted");
    check(render(again.value) == rendered, "reading the rendering gives back the value");
  }
  return res;
}

} // namespace cafmesh::fuzz
