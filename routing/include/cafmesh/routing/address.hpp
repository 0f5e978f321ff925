#pragma once

/// @file
/// Hub addresses (SPEC §2.1): `type/id`, hosted addresses `path~hostpath`, and the
/// host-address reduction the router applies before routing.

#include <string>
#include <vector>

#include <caf/meta/type_name.hpp>

namespace cafmesh::routing {

/// An address (type, id) with an optional chain of hosts, innermost first.
/// Rendered `type/id`, or `type/id~host1~host2` when hosted (SPEC §2.1).
struct address {
  std::string type;
  std::string id;               ///< may itself contain `/`
  std::vector<std::string> hosts; ///< rendered host paths (`type/id`), innermost first

  /// The path `type/id` without hosts.
  std::string path() const { return type + "/" + id; }

  /// Renders `type/id` followed by `~host` for every host.
  std::string to_string() const;

  /// True for the default-constructed address.
  bool empty() const { return type.empty() && id.empty() && hosts.empty(); }

  /// Parses `type/id[~host...]`; answers false (and leaves `out` untouched) when `text` has
  /// no `/` in its first segment or an empty type or id.
  static bool parse(const std::string& text, address& out);

  /// Parses or throws `std::invalid_argument` (for literals in code and tests).
  static address from(const std::string& text);

  friend bool operator==(const address& x, const address& y) {
    return x.type == y.type && x.id == y.id && x.hosts == y.hosts;
  }
  friend bool operator!=(const address& x, const address& y) { return !(x == y); }
  /// Byte-wise on the rendered string (SPEC §2.1).
  friend bool operator<(const address& x, const address& y) {
    return x.to_string() < y.to_string();
  }
};

/// Renders like `address::to_string`.
inline std::string to_string(const address& x) { return x.to_string(); }

/// The routing target for `a` (SPEC §2.1): follow the host chain to the outermost host; if
/// that host's type is `mesh_type` (default `mesh`), `a` itself (without hosts) is the
/// target, otherwise the outermost host is. An unhosted address is its own host address.
address host_address(const address& a, const std::string& mesh_type = "mesh");

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, address& x) {
  return f(caf::meta::type_name("cafmesh.address"), x.type, x.id, x.hosts);
}

} // namespace cafmesh::routing
