#pragma once

/// @file
/// Tearing down several CAF 0.17 actor systems of one process (the in-process demo mesh: an
/// application system plus one system per silo, their actors messaging each other through
/// direct handles).
///
/// Why one after another can hang: CAF 0.17 keeps, per thread, a strong reference to the
/// logger of the actor system the thread last spawned an actor in (`spawn` and
/// `scoped_actor` set it, whatever the log level), and `~actor_system` returns only once its
/// logger is destroyed. An idle actor that receives a message from an actor of ANOTHER
/// system runs on the sender's worker thread (the scheduler puts it on the sender's
/// execution unit), and so does every idle actor of its own system it messages in turn. A
/// worker of system X on which an actor of system Y spawned keeps Y's logger until that
/// worker ends, i.e. until X is destroyed: `~actor_system` of Y blocks for as long as X
/// lives, and X's can block on Y the same way. Destroyed together, every system stops its
/// own workers without waiting for another one, so all such references go.

#include <memory>
#include <vector>

#include <caf/fwd.hpp>

namespace cafmesh {

/// Destroys every system of `systems` together and returns when all are destroyed: each
/// `~actor_system` runs on a thread of its own (see the file comment for why); `systems` is
/// empty afterwards. The calling thread first drops its own logger reference.
///
/// Preconditions: every actor of every system was told to exit (as `~actor_system` needs);
/// the systems' configurations outlive the call. Blocks as long as the slowest destructor;
/// bound it from outside (the demo's teardown watchdog) if a system can hang for another
/// reason.
void destroy_systems_together(std::vector<std::unique_ptr<caf::actor_system>>& systems);

} // namespace cafmesh
