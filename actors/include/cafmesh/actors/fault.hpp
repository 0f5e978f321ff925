#pragma once

/// @file
/// The fault tree and its codes (docs/behaviour/classification.md#faults-and-caf-errors, #codes):
/// cafmesh's value-typed replacement for inner and aggregate exceptions. Classification
/// (routing/classify.hpp) walks the whole tree.

#include <cstdint>
#include <string>
#include <vector>

#include <caf/error.hpp>
#include <caf/fwd.hpp>
#include <caf/meta/load_callback.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/optional.hpp>
#include <caf/sec.hpp>

#include "cafmesh/actors/ids.hpp"

namespace cafmesh {

/// Every fault code of docs/behaviour/classification.md#codes plus the two terminal codes
/// classification never sees. Value 0 is reserved: `caf::error` treats code 0 as "no error".
enum class mesh_errc : uint8_t {
  rejected = 1,           ///< runtime refused the message (queue limit, forward count, turned away)
  overloaded,             ///< the target silo shed load
  response_timeout,       ///< no answer within the response timeout after leaving placement
  stream_post_timeout,    ///< the 60 s stream-post guard fired
  placement_timeout,      ///< the placement work item used up its 30 s (resendable)
  no_compatible_silo,     ///< no Active compatible silo (resendable)
  directory_unstable,     ///< the directory is re-partitioning; retry later
  silo_unavailable,       ///< the target silo is stopping or blocks application messages
  lifecycle_cancelled,    ///< the target silo's lifecycle was cancelled
  departed_silo,          ///< connecting failed, or the named generation is no longer Active
  activation_deactivated, ///< the activation is gone; see `fault::activation_error_recorded`
  runtime_gone,           ///< a torn-down service was used; see `fault::probe`
  pod_hub_not_here,       ///< the pod hub's activation is not in the owner's process
  oversized,              ///< payload at or above a size limit (docs/behaviour/size-guard.md)
  not_found,              ///< the address names nothing
  resolve_failed,         ///< path resolution faulted or timed out
  /// the routing I/O pool is draining or drained (docs/behaviour/quiescence.md#the-routing-io-pool)
  pool_refused,
  leg_crashed,       ///< a leg exited abnormally (docs/behaviour/routing.md#legs)
  extension_missing, ///< application or programming fault
  invalid_operation, ///< application or programming fault
  application,       ///< any other application fault (text carries the detail)
  /// subscribe after start, second start (docs/behaviour/lifecycle.md#the-lifecycle-subject);
  /// terminal
  lifecycle_misuse,
  /// configuration refused (docs/architecture.md#process-roles,
  /// examples/config/README.md#keys); terminal
  config_invalid,
};

/// True for a code the enum names, 0 excluded (what a code read from the wire must be).
constexpr bool is_known(mesh_errc x) {
  return static_cast<uint8_t>(x) >= static_cast<uint8_t>(mesh_errc::rejected)
         && static_cast<uint8_t>(x) <= static_cast<uint8_t>(mesh_errc::config_invalid);
}

/// Renders the code's name, e.g. `placement_timeout`.
std::string to_string(mesh_errc x);

/// Yes / no / cannot tell: the `activation_error_recorded` qualifier
/// (docs/behaviour/classification.md#faults-and-caf-errors, #codes).
enum class tri_bool : uint8_t { unknown = 0, no = 1, yes = 2 };

/// True for `unknown`, `no` and `yes`.
constexpr bool is_known(tri_bool x) {
  return static_cast<uint8_t>(x) <= 2;
}

/// Renders `unknown`, `no` or `yes`.
std::string to_string(tri_bool x);

/// The runtime probe's answer attached to a `runtime_gone` fault
/// (docs/behaviour/lifecycle.md#the-host, docs/behaviour/classification.md#codes):
/// `no_answer` when the probe did not answer (or was not asked).
enum class probe_answer : uint8_t { no_answer = 0, alive = 1, torn_down = 2 };

/// True for `no_answer`, `alive` and `torn_down`.
constexpr bool is_known(probe_answer x) {
  return static_cast<uint8_t>(x) <= 2;
}

/// Renders `no_answer`, `alive` or `torn_down`.
std::string to_string(probe_answer x);

/// A node of a fault tree (docs/behaviour/classification.md#faults-and-caf-errors). One cause plays
/// "inner", several "aggregate".
struct fault {
  mesh_errc code = mesh_errc::application;
  std::string text;
  std::vector<fault> causes;
  /// The runtime's "will retry after n ms" hint (docs/behaviour/classification.md#retry-policies).
  caf::optional<uint32_t> retry_after_ms;
  /// Only meaningful for `activation_deactivated`.
  tri_bool activation_error_recorded = tri_bool::unknown;
  /// Only meaningful for `runtime_gone`.
  probe_answer probe = probe_answer::no_answer;
  /// The silo the fault is about, when known.
  caf::optional<silo_address> silo;

  fault() = default;
  fault(mesh_errc c, std::string t, std::vector<fault> cs = {})
    : code(c), text(std::move(t)), causes(std::move(cs)) {}

  /// Renders `text`, then ` <- ` and each cause's rendering, depth first
  /// (docs/behaviour/classification.md#faults-and-caf-errors).
  std::string render() const;

  friend bool operator==(const fault& x, const fault& y);
  friend bool operator!=(const fault& x, const fault& y) { return !(x == y); }
};

/// Renders like `fault::render`.
std::string to_string(const fault& x);

/// The deepest fault tree read from the wire (the root at depth 1): a deeper one is refused
/// with `sec::invalid_argument` before its recursion can exhaust the reading thread's stack,
/// and so is a node whose code, qualifier or probe answer the enums do not name
/// (docs/behaviour/classification.md#fault-trees-on-the-wire).
constexpr int max_fault_depth = 64;

namespace detail {

/// Counts the depth of the fault tree being read on this thread (see `inspect`).
class fault_read_guard {
public:
  fault_read_guard() { ++depth(); }
  ~fault_read_guard() { --depth(); }
  fault_read_guard(const fault_read_guard&) = delete;
  fault_read_guard& operator=(const fault_read_guard&) = delete;

  bool too_deep() const { return depth() > max_fault_depth; }

private:
  static int& depth() {
    static thread_local int value = 0;
    return value;
  }
};

} // namespace detail

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, fault& x) {
  auto known_values = caf::meta::load_callback([&]() -> caf::error {
    if (!is_known(x.code))
      return caf::make_error(caf::sec::invalid_argument,
                             "unknown mesh_errc " + std::to_string(static_cast<int>(x.code)));
    if (!is_known(x.activation_error_recorded) || !is_known(x.probe))
      return caf::make_error(caf::sec::invalid_argument, "unknown fault qualifier");
    return caf::none;
  });
  auto fields = [&] {
    return f(caf::meta::type_name("cafmesh.fault"), x.code, x.text, x.causes, x.retry_after_ms,
             x.activation_error_recorded, x.probe, x.silo, known_values);
  };
  if constexpr (Inspector::writes_state) {
    detail::fault_read_guard guard;
    if (guard.too_deep())
      return caf::make_error(caf::sec::invalid_argument,
                             "fault tree deeper than " + std::to_string(max_fault_depth));
    return fields();
  } else {
    return fields();
  }
}

/// Wraps a fault into a CAF error: code = `fault.code`, category atom `mesh`, context = a
/// message holding the whole fault (docs/behaviour/classification.md#faults-and-caf-errors).
caf::error to_error(const fault& x);

/// Recovers a fault from a CAF error (docs/behaviour/classification.md#faults-and-caf-errors
/// translation table). A `mesh` error yields its carried fault; CAF's own codes are translated:
/// `sec::request_timeout` ->
/// `response_timeout`; `sec::request_receiver_down` -> `departed_silo` if
/// `receiver_departed` (the receiver's silo is missing from the latest snapshot or
/// superseded), else `activation_deactivated` with recorded = unknown; connection-level
/// codes and the exit reasons `remote_link_unreachable` / `unreachable` -> `departed_silo`;
/// anything else -> `application` with the rendered CAF error as text (CAF's own
/// `to_string`, e.g. `system_error(unexpected_message)`; an empty error, which
/// is no error at all, gives `application` with text `none`).
/// Exit reasons travel with category atom `exit`, `sec` codes with `system`. A `mesh` error
/// without a fault in its context yields a fault of its code whose text is the code's name.
fault to_fault(const caf::error& e, bool receiver_departed = false);

/// Makes `caf::error e = mesh_errc::x;` work: an error with the code and an empty fault
/// whose text is the code's name.
caf::error make_error(mesh_errc x);

/// The category atom of cafmesh errors: `mesh`.
caf::atom_value mesh_error_category();

} // namespace cafmesh
