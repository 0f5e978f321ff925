#pragma once

/// @file
/// Typed grains (docs/hosting.md "Grains"): a grain type is a CAF `typed_actor` interface
/// plus a factory that makes one activation's `Interface::behavior_type`, with optional
/// activation and deactivation hooks
/// (docs/behaviour/directory-and-placement.md#deactivation-and-messages-in-motion) to load and save
/// the activation's state.
///
/// ```
/// using counter = caf::typed_actor<caf::replies_to<add_atom, int64_t>::with<int64_t>>;
/// add_typed_grain<counter>(registry, "counter",
///   [](caf::event_based_actor*, const grain_id&) -> counter::behavior_type {
///     auto n = std::make_shared<int64_t>(0);
///     return {[n](add_atom, int64_t x) { return *n += x; }};
///   });
/// ```
/// The interface is checked at compile time on both ends: the factory's behaviour must
/// implement exactly `Interface` (CAF's typed behaviour), and `grain_ref<Interface>` calls
/// only what it declares (grain_ref.hpp).

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include <caf/atom.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/message_handler.hpp>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/grain_registry.hpp"
#include "cafmesh/actors/ids.hpp"
#include "cafmesh/actors/membership.hpp"

namespace cafmesh::lifecycle {

/// Ends an asynchronous hook: call it once, with no error when the hook succeeded. Call it
/// from the activation's own handlers (the answer of a request the hook sent, say).
using hook_done = std::function<void(caf::error)>;

/// An asynchronous activation or deactivation hook, run on the activation's actor `self`.
using async_grain_hook
  = std::function<void(caf::event_based_actor* self, const grain_id& id, hook_done done)>;

/// Internal: the activation hook's bound expired (`add_typed_grain`).
using grain_hook_timeout_atom = caf::atom_constant<caf::atom("ghooktime")>;
/// Internal: a failed activation hook ends its activation.
using grain_hook_quit_atom = caf::atom_constant<caf::atom("ghookquit")>;

/// How a typed grain type is registered.
struct grain_options {
  /// Single activation (the default): where a new activation goes
  /// (docs/behaviour/directory-and-placement.md#placement).
  placement_strategy placement = placement_strategy::random;
  /// A stateless worker (docs/behaviour/directory-and-placement.md#placement) with at most
  /// `local_limit` activations per silo.
  bool stateless = false;
  uint32_t local_limit = 1;
  uint32_t interface_version = 1;
  /// Runs in the activation before its first message (load its state here).
  std::function<void(caf::event_based_actor* self, const grain_id& id)> on_activate;
  /// Runs when the activation ends: deactivated at GrainDeactivation, idle collection or a
  /// kill of its silo's actors (save its state here). It runs while the activation ends, so
  /// it must not wait for messages.
  std::function<void(const grain_id& id)> on_deactivate;
  /// Asynchronous activation hook
  /// (docs/behaviour/directory-and-placement.md#deactivation-and-messages-in-motion): runs when the
  /// activation starts (after
  /// `on_activate`); the activation takes no message until the hook calls `done`. An error,
  /// or no `done` within `activate_timeout`, fails the activation: the messages waiting for
  /// it get the error (`application`, naming the grain), and the next call activates anew.
  async_grain_hook on_activate_async;
  /// Asynchronous deactivation hook
  /// (docs/behaviour/directory-and-placement.md#deactivation-and-messages-in-motion): runs when the
  /// catalog deactivates the activation (GrainDeactivation, idle collection, a request), after its
  /// last turn and before the grain is let go: the grain stays registered and its messages wait, so
  /// no other activation of it starts before `done`, or before `deactivate_timeout` passed (the
  /// activation then goes anyway, a warning logged). It does not run for an activation that lost
  /// its registration to another (it never took a message) nor when the silo's actors are killed.
  async_grain_hook on_deactivate_async;
  caf::timespan activate_timeout = std::chrono::seconds(30);
  caf::timespan deactivate_timeout = std::chrono::seconds(30);
  /// Messages whose turns may overlap (docs/behaviour/directory-and-placement.md#turns-and-interleaving,
  /// Orleans' `[MayInterleave]`): a message it accepts starts while other such turns are open
  /// (their answers still pending); every other message is one exclusive turn. Empty (the
  /// default): every turn is exclusive.
  interleave_predicate may_interleave;
};

namespace detail {

/// Runs `opts.on_activate_async` (if any) in front of `real` and answers the behaviour the
/// activation starts with (see `grain_options`).
inline caf::behavior with_grain_hooks(caf::event_based_actor* self, const grain_id& id,
                                      const grain_options& opts, caf::behavior real) {
  if (opts.on_deactivate_async) {
    caf::message_handler hook{[self, id, h = opts.on_deactivate_async](grain_deactivate_atom) {
                                auto rp = self->make_response_promise<caf::ok_atom>();
                                h(self, id, [rp](caf::error err) mutable {
                                  if (err)
                                    rp.deliver(std::move(err));
                                  else
                                    rp.deliver(caf::ok_atom::value);
                                });
                                return rp;
                              },
                              [](grain_hook_timeout_atom) {}};
    real = hook.or_else(caf::message_handler{real.as_behavior_impl()});
  } else if (opts.on_activate_async) {
    real = caf::message_handler{[](grain_hook_timeout_atom) {}}.or_else(
      caf::message_handler{real.as_behavior_impl()});
  }
  if (!opts.on_activate_async)
    return real;
  // 0: the hook is still being called, 1: it returned, 2: done (the behaviour is set).
  auto phase = std::make_shared<int>(0);
  auto failure = std::make_shared<caf::error>();
  // Every message that waited gets the error, then the activation ends with it.
  auto failing = [self](caf::error err) -> caf::behavior {
    self->set_default_handler(
      [err](caf::scheduled_actor*, caf::message_view&) -> caf::result<caf::message> {
        return err;
      });
    self->send(self, grain_hook_quit_atom::value);
    return {[self, err](grain_hook_quit_atom) { self->quit(err); }};
  };
  auto fail = [self, failing](caf::error err) { self->become(failing(std::move(err))); };
  auto as_failure = [id](const caf::error& err, const std::string& why) {
    return to_error(
      fault{mesh_errc::application, "the activation hook of " + id.to_string() + " " + why
                                      + (err ? ": " + to_fault(err).render() : std::string{})});
  };
  hook_done done = [=](caf::error err) {
    if (*phase == 2)
      return;
    auto was = *phase;
    *phase = 2;
    if (err)
      *failure = as_failure(err, "failed");
    if (was == 0)
      return; // still inside the factory: it sets the behaviour
    if (*failure) {
      fail(*failure);
      return;
    }
    self->set_default_handler(caf::print_and_drop);
    self->become(real);
  };
  self->set_default_handler(caf::skip);
  self->delayed_send(self, opts.activate_timeout, grain_hook_timeout_atom::value);
  opts.on_activate_async(self, id, done);
  if (*phase == 2) { // done within the call
    if (*failure)
      return failing(*failure);
    self->set_default_handler(caf::print_and_drop);
    return real;
  }
  *phase = 1;
  return {[=](grain_hook_timeout_atom) {
    if (*phase == 2)
      return;
    *phase = 2;
    fail(as_failure(
      caf::error{},
      "did not end within "
        + std::to_string(
          std::chrono::duration_cast<std::chrono::milliseconds>(opts.activate_timeout).count())
        + " ms"));
  }};
}

} // namespace detail

/// Registers grain type `type` of interface `Interface` in `reg`. `factory(self, id)` answers
/// an `Interface::behavior_type`. False when `reg` refused the type (already registered).
template <class Interface, class Factory>
bool add_typed_grain(grain_registry& reg, const std::string& type, Factory factory,
                     const grain_options& opts = {}) {
  activation_factory make = [factory, opts](caf::event_based_actor* self,
                                            const grain_id& id) -> caf::behavior {
    if (opts.on_activate)
      opts.on_activate(self, id);
    if (opts.on_deactivate)
      self->attach_functor([hook = opts.on_deactivate, id] { hook(id); });
    typename Interface::behavior_type typed = factory(self, id);
    return detail::with_grain_hooks(self, id, opts, std::move(typed.unbox()));
  };
  bool added = opts.stateless
                 ? reg.add_stateless(type, opts.local_limit, std::move(make),
                                     opts.interface_version)
                 : reg.add_single(type, opts.placement, std::move(make), opts.interface_version);
  if (added && opts.may_interleave)
    reg.set_may_interleave(type, opts.may_interleave);
  if (added && opts.on_deactivate_async)
    reg.set_deactivation_hook(type, opts.deactivate_timeout);
  return added;
}

} // namespace cafmesh::lifecycle
