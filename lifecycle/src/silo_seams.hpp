#pragma once

/// @file
/// The test seams of a silo (docs/testing.md#builder-access): what only a test bed changes in
/// the standard wiring of `spawn_silo`, held by `silo_options::seams`. The header is private to
/// the library; the test support (`cafmesh::testing::builder_access`, tests/support/src) reaches
/// it through a private include directory, so no public header names a test-only option.

#include <functional>

#include <caf/actor.hpp>

#include "cafmesh/lifecycle/silo_components.hpp"
#include "cafmesh/routing/router_ports.hpp"

namespace cafmesh::lifecycle {

/// The test seams of a silo; the defaults are the production wiring.
struct silo_seams {
  /// docs/behaviour/quiescence.md#the-participant-at-stage-active: the standard wiring subscribes
  /// the quiescence participant. False exists only for the negative test: the start then fails
  /// `config_invalid`.
  bool subscribe_quiescence = true;
  /// Interposes on the router core's grain port: the router core delivers its grain legs
  /// to `wrap_grain_port(grain-delivery adapter)` (a test proxy recording, holding or
  /// turning away attempts). Null: to the adapter itself.
  std::function<routing::grain_port_actor(routing::grain_port_actor)> wrap_grain_port;
  /// Interposes on the gateway part: the message centre serves component `gateway` with
  /// `wrap_gateway(gateway part)` (a test proxy counting, refusing or holding the pure
  /// clients' calls); the stage observers keep talking to the gateway part itself. Null:
  /// the gateway part.
  std::function<caf::actor(caf::actor)> wrap_gateway;
};

/// The seams of `opts`: the production defaults when none are set.
inline const silo_seams& seams_of(const silo_options& opts) {
  static const silo_seams production;
  return opts.seams ? *opts.seams : production;
}

} // namespace cafmesh::lifecycle
