#pragma once

/// @file
/// The per-silo routing I/O pool (docs/behaviour/quiescence.md#the-routing-io-pool): bounded
/// admission of leg and NACK starts, tracking of running legs, and the terminal drain. Protocol:
/// `io_pool_actor.hpp`.

#include <cstdint>
#include <string>

#include "cafmesh/routing/io_pool_actor.hpp"

namespace caf {
class actor_system;
} // namespace caf

namespace cafmesh::config {
struct pool_section;
} // namespace cafmesh::config

namespace cafmesh::routing {

/// Options of one pool (examples/config/README.md#keys `pool.*`).
struct io_pool_options {
  /// Rendered silo address (or any name) used as log context; may be empty.
  std::string silo_name;
  /// `pool.cap`: most permits out at once (admitted legs not yet `started`).
  int64_t cap = 256;
  /// `pool.drain_grace_ms`: grace window, restarted on every leg termination.
  int64_t drain_grace_ms = 8000;
  /// `pool.cancel_wait_ms`: wait for cancelled legs to confirm.
  int64_t cancel_wait_ms = 30000;
  /// `pool.join_ms`: wait for permits and tracked legs after the cancel.
  int64_t join_ms = 30000;

  /// The options from a configuration's `pool` section.
  static io_pool_options from(const config::pool_section& cfg, std::string silo_name = {});
};

/// The refusal text of a draining or drained pool
/// (docs/behaviour/quiescence.md#the-routing-io-pool).
inline constexpr const char* pool_refused_text = "pool drained; leg will not run";

/// Spawns a pool (docs/behaviour/quiescence.md#the-routing-io-pool).
///
/// **Admission.** At most `cap` permits out; further admissions wait in FIFO order. A permit
/// returns on `started` (or `ended` before it). Every answer to an admission is a separate
/// message to the owner.
/// An owner that attached (`pool_attach_atom`, the router core) admits its legs itself until
/// the drain; the drain first asks it for them (`pool_handover_atom`) and tracks them as
/// started (docs/behaviour/quiescence.md#admission-inside-the-router-core).
///
/// **Drain** (`pool_drain_atom`, terminal, idempotent):
/// 1. stop admitting; admissions still waiting are refused (`pool_refused`), each by its
///    own message;
/// 2. grace: while legs are alive, wait; every leg going away restarts a `drain_grace_ms`
///    window; when a window passes with none, the legs still alive are "cancelled after
///    grace" (logged at warning). If none is alive the drain finishes at once, residual 0;
/// 3. cancel: `pool_cancel` to each owner (and an exit `user_shutdown` to each watched leg
///    actor); wait up to `cancel_wait_ms` until every cancelled leg is gone;
/// 4. join: wait up to `join_ms` until no permit is out and no leg is tracked;
/// 5. residual = (1 if the cancel was not confirmed) + permits out + running legs.
///
/// The pool never exits by itself; its owner exits it with the silo's runtime services.
io_pool_actor spawn_io_pool(caf::actor_system& sys, io_pool_options opts = {});

} // namespace cafmesh::routing
