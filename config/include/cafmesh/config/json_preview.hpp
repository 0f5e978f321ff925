#pragma once

/// @file
/// A bounded preview of a JSON value for error messages.

#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

namespace cafmesh::config {

namespace detail {

/// Appends the compact rendering of `v` to `out` until `out` holds `limit` characters.
/// Recursion depth is bounded by `limit`: every level appends at least one character.
template <class Json>
void render_preview(const Json& v, std::string& out, size_t limit) {
  if (out.size() >= limit)
    return;
  if (v.is_array()) {
    out += '[';
    bool first = true;
    for (const auto& x : v) {
      if (out.size() >= limit)
        return;
      if (!first)
        out += ',';
      first = false;
      render_preview(x, out, limit);
    }
    out += ']';
  } else if (v.is_object()) {
    out += '{';
    bool first = true;
    for (auto i = v.begin(); i != v.end(); ++i) {
      if (out.size() >= limit)
        return;
      if (!first)
        out += ',';
      first = false;
      out += Json(i.key()).dump();
      out += ':';
      render_preview(i.value(), out, limit);
    }
    out += '}';
  } else {
    out += v.dump();
  }
}

} // namespace detail

/// The compact JSON text of `v` (the form `v.dump()` produces), cut to `max_chars`
/// characters ending in `...` when longer. Renders only as much as it shows, so a hostile
/// value nested 100,000 levels deep cannot exhaust the stack (nlohmann's `dump` recurses).
/// Works for `nlohmann::json` and `nlohmann::ordered_json` without converting (a conversion
/// would copy recursively).
template <class Json>
std::string json_preview(const Json& v, size_t max_chars = 60) {
  std::string out;
  detail::render_preview(v, out, max_chars + 1);
  if (out.size() > max_chars)
    out = out.substr(0, max_chars - 3) + "...";
  return out;
}

} // namespace cafmesh::config
