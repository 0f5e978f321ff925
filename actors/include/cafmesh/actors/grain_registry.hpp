#pragma once

/// @file
/// The grain registry (docs/behaviour/envelope.md#grain-ids-and-grain-types,
/// docs/behaviour/directory-and-placement.md#placement): grain type -> kind, placement strategy,
/// interface version, local limit and the factory producing one activation's CAF behaviour. A
/// silo's catalog and placement service share one registry; the grain manifest the silo publishes
/// in membership is `grain_registry::manifest()`.
///
/// The built-in types of docs/behaviour/envelope.md#grain-ids-and-grain-types (`routing` stateless
/// worker limit 1, `messagehub` random,
/// `podhub` prefer-local) are registered by the routing layer; tests register their own.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <caf/atom.hpp>
#include <caf/behavior.hpp>
#include <caf/fwd.hpp>
#include <caf/timespan.hpp>

#include "cafmesh/actors/ids.hpp"
#include "cafmesh/actors/membership.hpp"

namespace cafmesh {

/// How many activations a grain type may have (docs/architecture.md).
enum class grain_kind : uint8_t {
  single_activation = 0, ///< at most one activation cluster-wide, located via the directory
  stateless_worker = 1,  ///< up to `local_limit` activations per silo, never registered
};

/// Renders `single_activation` or `stateless_worker`.
std::string to_string(grain_kind x);

/// Produces the behaviour of one activation of a grain. Called once per activation, inside
/// the activation's own actor (`self`), with the grain id it serves. Each message the
/// catalog hands the activation is one non-reentrant turn: the catalog sends the next one
/// only after the activation answered the previous one
/// (docs/behaviour/envelope.md#grain-ids-and-grain-types "non-reentrant"), unless both may
/// interleave (`interleave_predicate`).
using activation_factory
  = std::function<caf::behavior(caf::event_based_actor* self, const grain_id& id)>;

/// Decides whether an activation of `id` may start: an empty string means yes, any other
/// text is the activation error recorded in the catalog's activation-failure registry
/// (docs/behaviour/directory-and-placement.md#deactivation-and-messages-in-motion). Optional; no
/// check means every activation starts.
using activation_check = std::function<std::string(const grain_id& id)>;

/// `(grain_deactivate_atom) -> ok_atom`: the catalog asks an activation of a type with a
/// deactivation hook (`grain_type::deactivation_hook` > 0) to run it before it lets the
/// grain go: the grain stays registered and its messages wait until the answer, or until
/// `deactivation_hook` has passed (then it goes anyway, a warning logged).
using grain_deactivate_atom = caf::atom_constant<caf::atom("gdeactiv")>;

/// Tells which messages of a grain type may interleave
/// (docs/behaviour/directory-and-placement.md#turns-and-interleaving): true for a message whose
/// turn may overlap the open turns of other messages the predicate also accepts. The shape of
/// Orleans' `[MayInterleave]`; without one every message is one exclusive turn.
using interleave_predicate = std::function<bool(const caf::message& msg)>;

/// One registered grain type: what the manifest publishes (`info`: type, strategy,
/// interface version; membership.hpp) plus local knowledge never published.
struct grain_type {
  grain_type_info info;
  grain_kind kind = grain_kind::single_activation;
  /// Local activation limit (stateless workers); 1 for single-activation types.
  uint32_t local_limit = 1;
  activation_factory factory;
  activation_check check;
  /// Above zero: its activations answer `grain_deactivate_atom` (their deactivation hook,
  /// docs/behaviour/directory-and-placement.md#deactivation-and-messages-in-motion), bounded by
  /// this long (whole ms). Zero: none.
  caf::timespan deactivation_hook{0};
  /// Set: the messages it accepts may interleave (`interleave_predicate`). Empty: none.
  interleave_predicate may_interleave;
};

/// The grain types one silo hosts (docs/behaviour/envelope.md#grain-ids-and-grain-types). Plain
/// data, no actor: fill it before the silo's catalog and placement service are spawned, then share
/// it read-only.
class grain_registry {
public:
  /// Registers a single-activation type. Returns false (and changes nothing) if `type` is
  /// already registered or the strategy is `stateless_worker`.
  bool add_single(std::string type, placement_strategy strategy, activation_factory factory,
                  uint32_t interface_version = 1, activation_check check = {});

  /// Registers a stateless-worker type with at most `local_limit` (>= 1) activations per
  /// silo (docs/behaviour/directory-and-placement.md#placement;
  /// `placement.stateless_worker_max_local` = 1 is the usual limit). Returns false if `type` is
  /// already registered or `local_limit` is 0.
  bool add_stateless(std::string type, uint32_t local_limit, activation_factory factory,
                     uint32_t interface_version = 1, activation_check check = {});

  /// Declares that activations of `type` run a deactivation hook (answering
  /// `grain_deactivate_atom`) bounded by `bound` (at least 1 ms). False if `type` is unknown
  /// or `bound` is shorter.
  bool set_deactivation_hook(const std::string& type, caf::timespan bound);

  /// Lets the messages of `type` that `pred` accepts interleave
  /// (docs/behaviour/directory-and-placement.md#turns-and-interleaving). False if `type` is
  /// unknown or `pred` is empty.
  bool set_may_interleave(const std::string& type, interleave_predicate pred);

  /// The registered type named `type`, or nullptr.
  const grain_type* find(const std::string& type) const;

  /// The silo's grain manifest (membership.hpp `grain_type_info`): one entry per
  /// registered type, ordered by type name.
  std::vector<grain_type_info> manifest() const;

  /// Number of registered types.
  size_t size() const { return types_.size(); }

private:
  std::map<std::string, grain_type> types_;
};

/// A shared, read-only registry handle (what catalog and placement hold).
using grain_registry_ptr = std::shared_ptr<const grain_registry>;

} // namespace cafmesh
