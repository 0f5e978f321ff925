#pragma once

/// @file
/// CAF binary (de)serialisation of one value for the fuzz targets of the wire types: the
/// deserialiser CAF's BASP uses for message payloads, over the value's `inspect`.

#include <cstddef>
#include <cstdint>
#include <vector>

#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>

#include "cafmesh/routing/address.hpp"
#include "cafmesh/testing/fuzz.hpp"

namespace cafmesh::testing::fuzz {

/// Reads one `T` from the bytes; true on success (trailing bytes are allowed, as in a
/// message holding more elements).
template <class T>
bool load(const char* data, size_t size, T& out) {
  caf::binary_deserializer source{nullptr, data, size};
  return !source(out);
}

/// Writes `x` (which must always succeed) and reads it back: the read value equals `x`.
template <class T>
void check_binary_round_trip(const T& x, const char* what) {
  auto copy = x;
  std::vector<char> buf;
  caf::binary_serializer sink{nullptr, buf};
  check(!sink(copy), what);
  T back;
  check(load(buf.data(), buf.size(), back), what);
  check(back == x, what);
}

/// True if `a` renders to a text that parses back to `a` (the JSON form of an address);
/// the empty address renders as "" and counts only when `empty_ok`.
inline bool text_round_trips(const routing::address& a, bool empty_ok) {
  if (a.empty())
    return empty_ok;
  routing::address back;
  return routing::address::parse(a.to_string(), back) && back == a;
}

} // namespace cafmesh::testing::fuzz
