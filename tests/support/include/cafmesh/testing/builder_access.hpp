#pragma once

/// @file
/// What test beds do to a `silo_builder` or `client_builder` that an application never does
/// (docs/testing.md#builder-access): name a silo's exact address, and change the assembled
/// `silo_options` or `pure_client_options` right before the process is spawned (another
/// oracle, a registry), and set a silo's test seams in them (test proxies around the grain port
/// or the gateway, the negative control without the quiescence participant). The builders keep
/// these members private and befriend `builder_access`, so that only code linking the test
/// support reaches them; the seams are defined privately to the library
/// (`silo_options::seams`), and only the test support's source sees their definition.
///
/// ```
/// lifecycle::silo_builder b{fx.sys};
/// b.config(cfg).cluster(cluster);
/// builder_access::at(b, silo_address{"a", 11111, 1});
/// builder_access::override_options(b, [&](lifecycle::silo_options& so) {
///   so.oracle = oracle;
///   builder_access::wrap_gateway(so, [&](caf::actor real) { return spawn_proxy(real); });
/// });
/// auto silo = b.build();
/// ```

#include <functional>
#include <utility>

#include <caf/actor.hpp>

#include "cafmesh/lifecycle/client_builder.hpp"
#include "cafmesh/lifecycle/silo_builder.hpp"
#include "cafmesh/lifecycle/silo_components.hpp"
#include "cafmesh/routing/router_ports.hpp"

namespace cafmesh::testing {

/// The builders' test-only members.
struct builder_access {
  /// In-process only: the silo's exact address instead of the cluster's next one.
  static lifecycle::silo_builder& at(lifecycle::silo_builder& b, silo_address addr) {
    return b.at(std::move(addr));
  }

  /// Calls `f` on the assembled options right before the silo is spawned (in order, after
  /// every builder setting); over CAF io the endpoint sets `self`, `link` and `oracle` after
  /// it. A hub factory other than the builder's hub table publishes no hub patterns.
  static lifecycle::silo_builder&
  override_options(lifecycle::silo_builder& b, std::function<void(lifecycle::silo_options&)> f) {
    return b.override_options(std::move(f));
  }

  /// Calls `f` on the assembled options right before the client is spawned (in order, after
  /// every builder setting).
  static lifecycle::client_builder&
  override_options(lifecycle::client_builder& b,
                   std::function<void(lifecycle::pure_client_options&)> f) {
    return b.override_options(std::move(f));
  }

  /// Seam: the router core delivers its grain legs to `f(grain-delivery adapter)` (a test
  /// proxy recording, holding or turning away attempts) instead of the adapter itself.
  static void
  wrap_grain_port(lifecycle::silo_options& so,
                  std::function<routing::grain_port_actor(routing::grain_port_actor)> f);

  /// Seam: the message centre serves component `gateway` with `f(gateway part)` (a test proxy
  /// counting, refusing or holding the pure clients' calls); the stage observers keep talking
  /// to the gateway part itself.
  static void wrap_gateway(lifecycle::silo_options& so, std::function<caf::actor(caf::actor)> f);

  /// Negative control (docs/behaviour/quiescence.md#the-participant-at-stage-active): the
  /// quiescence participant is not subscribed, so the silo's start fails `config_invalid`.
  static void without_quiescence_participant(lifecycle::silo_options& so);
};

} // namespace cafmesh::testing
