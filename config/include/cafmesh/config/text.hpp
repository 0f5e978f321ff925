#pragma once

/// @file
/// Small text helpers shared by every cafmesh loader (configuration, scenarios, traces).

#include <cstddef>
#include <string>

namespace cafmesh::config {

/// Reads the whole file at `path` into `out`. Answers 0 on success, otherwise the `errno` of
/// the failed open or read (render it with `std::strerror`); `out` is then unspecified.
int read_text_file(const std::string& path, std::string& out);

/// The Levenshtein distance between `a` and `b` (byte-wise), for "did you mean" hints.
size_t edit_distance(const std::string& a, const std::string& b);

} // namespace cafmesh::config
