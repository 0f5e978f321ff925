#pragma once

/// @file
/// The directory resolver (docs/behaviour/directory-and-placement.md#the-stateless-worker-bypass):
/// which directory a grain type uses on this silo, the hash ring of its owners or the in-process
/// null directory of stateless workers. Local configuration: never published, never in the
/// manifest.

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "cafmesh/actors/membership.hpp"

namespace cafmesh {

/// Which directory a grain type uses on this silo
/// (docs/behaviour/directory-and-placement.md#the-stateless-worker-bypass).
enum class directory_kind : uint8_t { ring = 1, null = 2 };

/// Renders `ring` or `null`.
std::string to_string(directory_kind x);

/// A silo's directory resolver
/// (docs/behaviour/directory-and-placement.md#the-stateless-worker-bypass): grain type ->
/// directory. Local configuration: never published, never in the manifest. With
/// `stateless_worker_bypass` (the default), every type this silo knows as a stateless worker goes
/// to the null directory; every other type — and every type unknown to this silo — to the ring.
class directory_resolver {
public:
  directory_resolver() = default;
  directory_resolver(const std::vector<grain_type_info>& local_types,
                     bool stateless_worker_bypass = true);

  directory_kind resolve(const std::string& grain_type) const;

  bool bypass() const { return bypass_; }

private:
  std::set<std::string> stateless_workers_;
  bool bypass_ = true;
};

} // namespace cafmesh
