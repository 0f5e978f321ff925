#pragma once

/// @file
/// Identities of the substrate: grain ids, generation-stamped silo addresses and activation
/// tags (docs/behaviour/envelope.md#grain-ids-and-grain-types, #silo-addresses-and-activations),
/// plus the FNV-1a 64 hash every ring position uses
/// (docs/behaviour/directory-and-placement.md#who-owns-a-grain-id).

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <tuple>

#include <caf/meta/type_name.hpp>

namespace cafmesh {

/// FNV-1a 64 over the bytes of `s` (offset basis 14695981039346656037, prime 1099511628211).
/// Fixed by docs/behaviour/directory-and-placement.md#who-owns-a-grain-id so placement is identical
/// on every platform and in every run.
constexpr uint64_t fnv1a64(std::string_view s) noexcept {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

/// A grain's name: (grain type, key), rendered `type/key`
/// (docs/behaviour/envelope.md#grain-ids-and-grain-types).
struct grain_id {
  std::string type;
  std::string key;

  /// Renders `type/key`.
  std::string to_string() const { return type + "/" + key; }

  friend bool operator==(const grain_id& x, const grain_id& y) {
    return x.type == y.type && x.key == y.key;
  }
  friend bool operator!=(const grain_id& x, const grain_id& y) { return !(x == y); }
  friend bool operator<(const grain_id& x, const grain_id& y) {
    return std::tie(x.type, x.key) < std::tie(y.type, y.key);
  }
};

/// Renders `type/key` (ADL hook used by CAF's `deep_to_string`).
inline std::string to_string(const grain_id& x) {
  return x.to_string();
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, grain_id& x) {
  return f(caf::meta::type_name("cafmesh.grain_id"), x.type, x.key);
}

/// A silo incarnation: (host, port, generation), rendered `S{host}:{port}@{generation}`
/// (docs/behaviour/envelope.md#silo-addresses-and-activations). Same host and port with another
/// generation is a different silo; a lower generation never answers again.
struct silo_address {
  std::string host;
  uint16_t port = 0;
  uint64_t generation = 0;

  /// Renders `S{host}:{port}@{generation}`.
  std::string to_string() const {
    return "S" + host + ":" + std::to_string(port) + "@" + std::to_string(generation);
  }

  /// True if `other` is the same endpoint (host and port), whatever the generation.
  bool same_endpoint(const silo_address& other) const {
    return host == other.host && port == other.port;
  }

  /// True for the default-constructed, unset address.
  bool empty() const { return host.empty() && port == 0 && generation == 0; }

  friend bool operator==(const silo_address& x, const silo_address& y) {
    return x.host == y.host && x.port == y.port && x.generation == y.generation;
  }
  friend bool operator!=(const silo_address& x, const silo_address& y) { return !(x == y); }
  /// Orders by rendered form, as docs/behaviour/membership.md#snapshots orders the active set,
  /// without rendering: maps and sets keyed by silo sit on the delivery path.
  friend bool operator<(const silo_address& x, const silo_address& y) {
    return compare_rendered(x, y) < 0;
  }

private:
  /// Writes `:{port}@{generation}` to `buf` (at least 28 bytes); answers its length.
  static size_t render_tail(const silo_address& x, char* buf) {
    char* p = buf;
    *p++ = ':';
    p = std::to_chars(p, buf + 28, x.port).ptr;
    *p++ = '@';
    p = std::to_chars(p, buf + 28, x.generation).ptr;
    return static_cast<size_t>(p - buf);
  }

  /// `x.to_string().compare(y.to_string())`, as `char_traits<char>` compares.
  static int compare_rendered(const silo_address& x, const silo_address& y) {
    char xt[28];
    char yt[28];
    auto xn = x.host.size() + render_tail(x, xt);
    auto yn = y.host.size() + render_tail(y, yt);
    auto at = [](const silo_address& a, const char* tail, size_t i) {
      return static_cast<unsigned char>(i < a.host.size() ? a.host[i] : tail[i - a.host.size()]);
    };
    // The leading `S` is common to both.
    for (size_t i = 0, n = std::min(xn, yn); i < n; ++i) {
      auto a = at(x, xt, i);
      auto b = at(y, yt, i);
      if (a != b)
        return a < b ? -1 : 1;
    }
    return xn < yn ? -1 : (xn > yn ? 1 : 0);
  }
};

/// Renders `S{host}:{port}@{generation}`.
inline std::string to_string(const silo_address& x) {
  return x.to_string();
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, silo_address& x) {
  return f(caf::meta::type_name("cafmesh.silo_address"), x.host, x.port, x.generation);
}

/// An activation's tag: unique within its silo, rendered as 8 lower-case hex digits
/// (docs/behaviour/envelope.md#silo-addresses-and-activations, fixed width).
struct activation_tag {
  uint32_t value = 0;

  /// Renders the 8 hex digits, e.g. `1a2b3c4d`.
  std::string hex() const {
    static constexpr char digits[] = "0123456789abcdef";
    std::string out(8, '0');
    for (int i = 0; i < 8; ++i)
      out[7 - i] = digits[(value >> (4 * i)) & 0xF];
    return out;
  }

  /// Renders `activation #1a2b3c4d`.
  std::string to_string() const { return "activation #" + hex(); }

  friend bool operator==(activation_tag x, activation_tag y) { return x.value == y.value; }
  friend bool operator!=(activation_tag x, activation_tag y) { return x.value != y.value; }
  friend bool operator<(activation_tag x, activation_tag y) { return x.value < y.value; }
};

/// Renders `activation #1a2b3c4d`.
inline std::string to_string(const activation_tag& x) {
  return x.to_string();
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, activation_tag& x) {
  return f(caf::meta::type_name("cafmesh.activation_tag"), x.value);
}

} // namespace cafmesh
