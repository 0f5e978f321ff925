#pragma once

/// @file
/// Hub addresses (docs/behaviour/envelope.md#addresses): `type/id`, hosted addresses
/// `path~hostpath`, and the host-address reduction the router applies before routing.

#include <string>
#include <vector>

#include <caf/meta/type_name.hpp>

namespace cafmesh::routing {

/// An address (type, id) with an optional chain of hosts, innermost first.
/// Rendered `type/id`, or `type/id~host1~host2` when hosted (docs/behaviour/envelope.md#addresses).
struct address {
  std::string type;
  std::string id;                 ///< may itself contain `/`
  std::vector<std::string> hosts; ///< rendered host paths (`type/id`), innermost first

  /// The path `type/id` without hosts.
  std::string path() const { return type + "/" + id; }

  /// Renders `type/id` followed by `~host` for every host, e.g. `client/7f3a~portal/alice`;
  /// the empty address renders as the empty string.
  std::string to_string() const;

  /// This address hosted by `host`: `host`'s path and then its own hosts are appended to the
  /// chain, so `client/7f3a`.hosted_by(`portal/alice~mesh/m1`) is
  /// `client/7f3a~portal/alice~mesh/m1`.
  address hosted_by(const address& host) const;

  /// True for the default-constructed address.
  bool empty() const { return type.empty() && id.empty() && hosts.empty(); }

  /// Parses `type/id[~host...]`: the text is split at every `~`; each segment splits at its
  /// first `/` into type and id (so the id may contain `/`). Answers false (and leaves `out`
  /// untouched) when a segment has no `/`, an empty type or an empty id.
  static bool parse(const std::string& text, address& out);

  /// Parses or throws `std::invalid_argument` (for literals in code and tests).
  static address from(const std::string& text);

  friend bool operator==(const address& x, const address& y) {
    return x.type == y.type && x.id == y.id && x.hosts == y.hosts;
  }
  friend bool operator!=(const address& x, const address& y) { return !(x == y); }
  /// Byte-wise on the rendered string (docs/behaviour/envelope.md#addresses).
  friend bool operator<(const address& x, const address& y) {
    return x.to_string() < y.to_string();
  }
};

/// Renders like `address::to_string`.
inline std::string to_string(const address& x) {
  return x.to_string();
}

/// The routing target ("host address") for `a` (docs/behaviour/envelope.md#addresses): follow the
/// host chain to the outermost host; if that host's type is `mesh_type` (default `mesh`),
/// `a` itself, unchanged and with its host chain, is the target; otherwise the outermost host (an
/// unhosted address) is. An unhosted address is its own host address. Examples:
/// `node/Org/Acme` -> itself; `portal/alice/tab1~mesh/m1` -> itself;
/// `client/7f3a~portal/alice` -> `portal/alice`; `client/7f3a~portal/alice~mesh/m1` -> itself;
/// `client/7f3a~mesh/m1~portal/alice` -> `portal/alice`. A host string that does not parse
/// as an address (only possible for hand-built values) yields `a` itself.
address host_address(const address& a, const std::string& mesh_type = "mesh");

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, address& x) {
  return f(caf::meta::type_name("cafmesh.address"), x.type, x.id, x.hosts);
}

} // namespace cafmesh::routing
