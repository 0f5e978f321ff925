#pragma once

/// @file
/// The host around one silo (docs/behaviour/lifecycle.md#the-host,
/// #non-graceful-stops-and-crashes): owns the stopping signal, the shutdown budget, the silo stop
/// and the teardown step, and marks the runtime torn down at the end.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/timespan.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "cafmesh/config/mesh_config.hpp"
#include "cafmesh/actors/lifecycle_atoms.hpp"
#include "cafmesh/actors/mesh_teardown.hpp"
#include "cafmesh/actors/observer.hpp"
#include "cafmesh/actors/runtime_registry.hpp"
#include "cafmesh/actors/stopping_recipient.hpp"

namespace caf {
class actor_system;
} // namespace caf

namespace cafmesh::lifecycle {

/// Where a host's stop sequence stands (docs/behaviour/lifecycle.md#the-host).
enum class host_phase : uint8_t {
  running = 0,       ///< no stop requested yet
  signalling = 1,    ///< step 1: waiting for every stopping-signal acknowledgement
  stopping_silo = 2, ///< steps 2–3: the lifecycle subject is stopping
  tearing_down = 3,  ///< step 4: mesh teardown in progress
  torn_down = 4,     ///< step 5 done: runtime torn down, stop answered
};

/// Renders `running`, `signalling`, `stopping_silo`, `tearing_down` or `torn_down`.
std::string to_string(host_phase x);

/// The host (docs/behaviour/lifecycle.md#the-host, #non-graceful-stops-and-crashes):
/// - `(host_start_atom) -> ok_atom`: `run_start` on the lifecycle subject (ok at once without
///   one). A failed start answers the subject's error and the host then runs its graceful
///   stop sequence by itself (docs/behaviour/lifecycle.md#the-lifecycle-subject). A second start:
///   `lifecycle_misuse`; a start after a stop began: `lifecycle_cancelled`.
/// - `(host_halt_atom, bool graceful) -> ok_atom`: the stop sequence, answered once the
///   runtime is marked torn down. A second halt joins the first (its flag is ignored); a halt
///   after the sequence completed answers at once.
/// - `(host_state_atom) -> host_phase`: where the stop sequence stands.
/// - `(host_active_atom) -> ok_atom`: answered once the start completed (at once when it
///   already did): ok when the silo reached Active, the start's error when it failed,
///   `lifecycle_cancelled` when a stop began before any start.
/// - `(host_await_atom) -> ok_atom`: answered once the runtime is marked torn down (at once
///   when it already is), without starting a stop: a process's main thread waiting for a
///   signal-triggered stop.
using host_actor = caf::typed_actor<caf::replies_to<host_start_atom>::with<caf::ok_atom>,
                                    caf::replies_to<host_halt_atom, bool>::with<caf::ok_atom>,
                                    caf::replies_to<host_state_atom>::with<host_phase>,
                                    caf::replies_to<host_active_atom>::with<caf::ok_atom>,
                                    caf::replies_to<host_await_atom>::with<caf::ok_atom>>;

/// What a host is made of. Null handles mean "absent".
struct host_options {
  /// Rendered silo address (or process name for a pure client): log context and registry key.
  std::string silo_name;
  /// The silo's lifecycle subject; null for a `pure_client` host, which runs only steps 1, 4
  /// and 5 (docs/behaviour/lifecycle.md#the-host).
  silo_lifecycle_actor subject;
  /// Receivers of the stopping signal: routing service, router core, pod-hub claimer.
  std::vector<stopping_recipient_actor> recipients;
  /// The mesh teardown of step 4; null when the process hosts no hubs (step 4 is skipped).
  mesh_teardown_actor teardown;
  /// The process-level runtime registry; the host registers `silo_name` as alive when
  /// spawned and marks it torn down in step 5. Null: no registry.
  runtime_registry_actor registry;
  /// The silo's runtime service actors; step 5 sends each an exit (`user_shutdown`).
  std::vector<caf::actor> runtime_services;
  /// `host.shutdown_budget_ms` (graceful stops only) and `host.teardown_budget_ms`.
  config::host_section budgets;
};

/// Spawns a host (docs/behaviour/lifecycle.md#the-host). Its graceful stop sequence:
/// 1. sends `host_stopping` to every recipient and waits for ALL acknowledgements (no
///    deadline; a recipient that fails or dies is logged at warning and counts as done);
/// 2. arms `budgets.shutdown_budget_ms`; on expiry, while the silo is still stopping, sends
///    `budget_expired_atom` to the subject and logs a warning containing "shutdown budget";
/// 3. `run_stop(graceful = true)` on the subject and waits (no host deadline:
/// docs/behaviour/lifecycle.md#the-lifecycle-subject);
/// 4. teardown: `(host_teardown_atom, teardown_budget_ms)` bounded by
///    `budgets.teardown_budget_ms`; an empty residual logs info "mesh teardown clean", a
///    non-empty one error "mesh teardown DIRTY: {residual}"; a timeout or a fault also logs
///    "mesh teardown DIRTY: ..." at error and is swallowed;
/// 5. exits every runtime service, marks the silo torn down in the registry (acknowledged),
///    then answers every halt request.
/// A non-graceful stop (docs/behaviour/lifecycle.md#non-graceful-stops-and-crashes) sends the
/// stopping signal, arms no budget, runs
/// `run_stop(graceful = false)` and the same steps 4 and 5.
host_actor spawn_host(caf::actor_system& sys, host_options opts);

/// Wires SIGTERM and SIGINT of an executable to a graceful host stop (`host_halt_atom`,
/// true). Uses a self-pipe written by the signal handler and one helper thread that reads it
/// and sends the halt; the host's answer is dropped. While the guard lives, the previous
/// handlers of both signals are replaced; its destructor restores them and joins the thread.
/// At most one guard is active per process; a second `install_signal_stop` returns an
/// inactive guard. Never use it in deterministic tests (it starts a thread).
class signal_stop_guard {
public:
  signal_stop_guard();
  signal_stop_guard(signal_stop_guard&&) noexcept;
  signal_stop_guard& operator=(signal_stop_guard&&) noexcept;
  ~signal_stop_guard();

  /// True if this guard installed the handlers.
  bool active() const noexcept;

  /// Number of SIGTERM/SIGINT signals forwarded to the host so far.
  int signals_forwarded() const noexcept;

  struct impl;

private:
  friend signal_stop_guard install_signal_stop(caf::actor_system& sys, host_actor host);
  std::unique_ptr<impl> impl_;
};

/// Installs the SIGTERM/SIGINT wiring described at `signal_stop_guard`.
signal_stop_guard install_signal_stop(caf::actor_system& sys, host_actor host);

/// Bounds the end of an executable's actor system (docs/hosting.md#stopping-and-the-actor-system).
/// `~actor_system` waits without a bound for every actor to end and for the thread of every
/// detached actor, and a detached actor's thread ends only once nothing references the
/// actor (docs/caf-notes.md "Shutdown"). Declare the guard before the actor system and
/// `arm` it once the process stopped: if the guard is not destroyed within `bound` after
/// that, it logs at warning "the actor system did not end within {bound in ms} ms of the stop
/// ...; exiting with code {exit_code} without waiting for it" and ends the process with
/// `std::_Exit(exit_code)` (no static destructors run). Its destructor disarms it and joins
/// its thread. Never use it in deterministic tests (it starts a thread).
class system_end_bound {
public:
  system_end_bound();
  system_end_bound(const system_end_bound&) = delete;
  system_end_bound& operator=(const system_end_bound&) = delete;
  ~system_end_bound();

  /// Starts the bound (once; later calls are ignored).
  void arm(caf::timespan bound, int exit_code);

  struct impl;

private:
  std::unique_ptr<impl> impl_;
};

} // namespace cafmesh::lifecycle
