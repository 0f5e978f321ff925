#pragma once

/// @file
/// An activation's full address (docs/behaviour/envelope.md#silo-addresses-and-activations): grain
/// id, hosting silo and activation tag — the value the grain directory maps a single-activation
/// grain to (docs/behaviour/directory-and-placement.md#who-owns-a-grain-id).

#include <string>
#include <tuple>

#include <caf/meta/type_name.hpp>

#include "cafmesh/actors/ids.hpp"

namespace cafmesh {

/// (grain id, silo address, activation tag), rendered `{type/key} on {silo} ({activation #tag})`.
struct activation_address {
  grain_id grain;
  silo_address silo;
  activation_tag tag;

  std::string to_string() const {
    return grain.to_string() + " on " + silo.to_string() + " (" + tag.to_string() + ")";
  }

  friend bool operator==(const activation_address& x, const activation_address& y) {
    return x.grain == y.grain && x.silo == y.silo && x.tag == y.tag;
  }
  friend bool operator!=(const activation_address& x, const activation_address& y) {
    return !(x == y);
  }
  friend bool operator<(const activation_address& x, const activation_address& y) {
    return std::tie(x.grain, x.silo, x.tag) < std::tie(y.grain, y.silo, y.tag);
  }
};

/// Renders like `activation_address::to_string`.
inline std::string to_string(const activation_address& x) {
  return x.to_string();
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, activation_address& x) {
  return f(caf::meta::type_name("cafmesh.activation_address"), x.grain, x.silo, x.tag);
}

} // namespace cafmesh
