#pragma once

/// @file
/// Grains that call grains (docs/hosting.md#grains-that-call-grains): a `grain_factory` answers
/// typed references (`grain_ref<I>`, grain_ref.hpp) to any grain of the cluster, bound to one
/// silo's placement service, as Orleans' `IGrainFactory`; a `grain_context` is what a grain
/// factory registered on a `silo_builder` may take instead of its grain id: the id plus the
/// silo's `grain_factory`.
///
/// ```
/// builder.grain<order>("order",
///   [](caf::event_based_actor* self, const grain_context& ctx) -> order::behavior_type {
///     return {[self, ctx](place_atom, const std::string& sku, int64_t n) {
///       auto rp = self->make_response_promise<std::string>();
///       ctx.grain<inventory>("inventory", sku).request(self, reserve_atom::value, n).then(
///         [rp](bool ok, int64_t left) mutable { rp.deliver(ok ? "reserved" : "refused"); },
///         [rp](caf::error& err) mutable { rp.deliver(std::move(err)); });
///       return rp; // the turn lasts until `rp` is delivered
///     }};
///   });
/// ```
///
/// A call made inside a turn is part of that turn: the catalog hands the activation its next
/// message only once the turn answered, whether the activation waits for the nested call with
/// `.then` (it still takes its own non-grain messages) or with `.await` (it takes nothing else).
/// A cycle of such calls (A calls B, B calls A) therefore waits for itself until the first
/// call's response timeout (`grain_call.response_timeout_ms`), as in Orleans without
/// reentrancy.

#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>

#include <caf/actor.hpp>
#include <caf/event_based_actor.hpp>

#include "cafmesh/actors/ids.hpp"
#include "cafmesh/lifecycle/grain_ref.hpp"

namespace cafmesh::lifecycle {

/// Answers typed references to the grains of a cluster, called through one silo's placement
/// service (docs/behaviour/directory-and-placement.md#placement).
class grain_factory {
public:
  grain_factory() = default;

  explicit grain_factory(caf::actor placement) : placement_(std::move(placement)) {
    // nop
  }

  /// A reference to the grain `(type, key)` of interface `Interface`.
  template <class Interface>
  grain_ref<Interface> grain(const std::string& type, const std::string& key) const {
    return grain_ref<Interface>{placement_, grain_id{type, key}};
  }

  /// The placement service the references call through (null in a default-constructed one).
  const caf::actor& placement() const { return placement_; }

private:
  caf::actor placement_;
};

/// What one activation knows of itself and its silo: its grain id and the silo's
/// `grain_factory`.
class grain_context {
public:
  grain_context(grain_id id, grain_factory grains)
    : id_(std::move(id)), grains_(std::move(grains)) {
    // nop
  }

  /// The grain id this activation serves.
  const grain_id& id() const { return id_; }

  /// The silo's grain factory.
  const grain_factory& grains() const { return grains_; }

  /// A reference to the grain `(type, key)` of interface `Interface` (`grains().grain`).
  template <class Interface>
  grain_ref<Interface> grain(const std::string& type, const std::string& key) const {
    return grains_.grain<Interface>(type, key);
  }

private:
  grain_id id_;
  grain_factory grains_;
};

namespace detail {

/// The placement service of a silo being built: empty until `silo_builder::build()` spawned
/// it, then set once (read by activations on any thread).
class placement_slot {
public:
  /// Sets the placement service.
  void set(caf::actor placement) {
    std::lock_guard<std::mutex> guard{mtx_};
    placement_ = std::move(placement);
  }

  /// The placement service (null before `set`).
  caf::actor get() const {
    std::lock_guard<std::mutex> guard{mtx_};
    return placement_;
  }

private:
  mutable std::mutex mtx_;
  caf::actor placement_;
};

using placement_slot_ptr = std::shared_ptr<placement_slot>;

/// True when `Factory` makes an activation from a `grain_context`.
template <class Factory>
constexpr bool takes_grain_context
  = std::is_invocable_v<const Factory&, caf::event_based_actor*, const grain_context&>;

/// `factory` as an `(self, grain_id)` factory: one taking a `grain_context` gets its id and a
/// `grain_factory` on the placement service in `slot`; any other is answered unchanged.
template <class Interface, class Factory>
auto with_grain_context(Factory factory, placement_slot_ptr slot) {
  if constexpr (takes_grain_context<Factory>) {
    return [factory = std::move(factory), slot = std::move(slot)](caf::event_based_actor* self,
                                                                  const grain_id& id) ->
           typename Interface::behavior_type {
             return factory(self, grain_context{id, grain_factory{slot->get()}});
           };
  } else {
    return factory;
  }
}

} // namespace detail

} // namespace cafmesh::lifecycle
