#pragma once

/// @file
/// The router core's cache of resolutions its path resolver marked cacheable
/// (docs/behaviour/routing.md#cacheable-resolutions): host path -> node prefix.

#include <cstddef>
#include <string>
#include <unordered_map>

namespace cafmesh::routing {

/// Found nodes per host path, kept until `forget` or `clear`. Bounded: once it holds
/// `max_entries` paths, the next `put` starts it afresh.
class resolution_cache {
public:
  static constexpr size_t max_entries = 65536;

  /// The node prefix cached for `host_path`, or null.
  const std::string* find(const std::string& host_path) const {
    auto i = entries_.find(host_path);
    return i == entries_.end() ? nullptr : &i->second;
  }

  void put(const std::string& host_path, const std::string& node_prefix) {
    if (entries_.size() >= max_entries && entries_.count(host_path) == 0)
      entries_.clear();
    entries_[host_path] = node_prefix;
  }

  /// Drops `host_path`; the empty path drops every entry.
  void forget(const std::string& host_path) {
    if (host_path.empty())
      entries_.clear();
    else
      entries_.erase(host_path);
  }

  void clear() { entries_.clear(); }

  size_t size() const noexcept { return entries_.size(); }

private:
  std::unordered_map<std::string, std::string> entries_;
};

} // namespace cafmesh::routing
