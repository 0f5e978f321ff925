#pragma once

/// @file
/// Hub homing: keeps the sending hubs of an application that lives next to several silos
/// (an in-process cluster, or a driver process whose hubs enter the mesh through a silo's
/// co-hosted entry) homed on a silo that can take their traffic (docs/hosting.md, "Hubs
/// next to several silos").
///
/// A hub that sends through a silo's routing service depends on that silo's life:
/// - an **answering** hub (it only answers deliveries routed to it) moves to the next
///   available silo the moment its home starts stopping: its responses leave through a silo
///   that still runs;
/// - an **owner** hub (its address is a local route of its home's routing service) holds
///   every frame it is asked to send from the moment its home starts stopping until the
///   home's stage Active has stopped (the home's legs have ended, so nothing it sent earlier
///   can be overtaken), then moves to the next available silo and sends the held frames in
///   order; with no silo available it moves to the next one that becomes Active;
/// - a **portal** hub (co-hosted with its home, reached through the home's pod hub) holds
///   its frames while its home is down and, once the next incarnation of the home is
///   Active, registers and claims its pod hub there and sends them in order;
/// - a **client** hub sends through a pure client's routing service and never moves.
///
/// The silos are named by the application; their order is the order in which "the next
/// available silo" is searched (wrapping around). Not thread-safe: one actor or one thread
/// drives it (the demo's run loop, a test's mesh port).

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <caf/actor.hpp>

#include "cafmesh/routing/address.hpp"
#include "cafmesh/routing/envelope.hpp"

namespace cafmesh::lifecycle {

/// The first silo after `name` in `order` (wrapping around, `name` itself excluded) for which
/// `available` holds; "" if none. `name` need not be in `order` (the search starts at the
/// front).
std::string next_available_in(const std::vector<std::string>& order, const std::string& name,
                              const std::function<bool(const std::string&)>& available);

/// How a hub depends on its home silo (see the file comment).
enum class hub_home_kind : uint8_t { answering, owner, portal, client };

/// Keeps sending hubs homed on an available silo (file comment).
class hub_homing {
public:
  /// How the homing reaches the silos (set by the application).
  struct silo_access {
    /// The routing service of the current incarnation of silo `name` (null: none).
    std::function<caf::actor(const std::string& name)> routing_of;
    /// Claims the pod hub of `addr` at the current incarnation of silo `name` (its
    /// pod-hub claimer, `pc_claim_atom`). Unset: `pc_claim_atom` is never sent.
    std::function<void(const std::string& name, const routing::address& addr)> claim;
  };

  /// Silos in search order; none is available until `up` names it.
  hub_homing(std::vector<std::string> silo_order, silo_access access);

  /// Adds hub endpoint `ep` (hub_endpoint.hpp) at `addr`, homed on silo `home` (a client
  /// hub: its pure client's routing service is `client_routing`, `home` is ignored). An
  /// owner is registered as a local route of its home now, a portal also claims its pod
  /// hub; a null `ep` is a hub whose process is not there yet (`place` gives it one).
  void add(hub_home_kind kind, const routing::address& addr, caf::actor ep, const std::string& home,
           caf::actor client_routing = {});

  /// Gives the hub at `addr` (text form) endpoint `ep` (its process is there now): it sends
  /// through `home` from now on; `hold`: its frames wait until `up(home)` releases them.
  void place(const std::string& addr, caf::actor ep, const std::string& home, bool hold);

  /// Sends `e` (a request with `deadline_ms` >= 0, else a one-way post) from the hub at
  /// `sender`, or holds it while that hub is moving or has no endpoint. False: no such hub.
  bool submit(const std::string& sender, routing::envelope e, int64_t deadline_ms);

  /// Silo `name` starts a graceful stop: answering hubs move on, owners hold.
  void stopping(const std::string& name);

  /// The stage Active of `name` stopped (its legs ended): owners held there move on.
  void active_stopped(const std::string& name);

  /// The process of `name` is down (its host stop answered): its portals hold.
  void down(const std::string& name);

  /// `name` was killed (no lifecycle stop, nothing drains): owners move now, portals hold.
  void killed(const std::string& name);

  /// `name` (a new incarnation) is Active: owners stranded without an available silo move
  /// here; its portals register, claim and send what they held.
  void up(const std::string& name);

  /// Is `name` Active and not stopping?
  bool available(const std::string& name) const;

  /// The first available silo after `name` in search order ("" if none).
  std::string next_available(const std::string& name) const;

  /// The silo the hub at `addr` (text form) is homed on ("" if none or a client hub).
  std::string home_of(const std::string& addr) const;

  /// Frames held right now, over every hub.
  size_t held() const;

private:
  struct hub {
    hub_home_kind kind = hub_home_kind::client;
    routing::address addr;
    caf::actor ep;
    caf::actor client_routing;
    std::string home;
    bool moving = false;
    /// An owner whose home is stopping and whose home's stage Active has not stopped: it
    /// leaves only at `active_stopped` or `killed`, never at another silo's `up`.
    bool draining = false;
    std::deque<std::pair<routing::envelope, int64_t>> held;
  };

  void send(hub& h, routing::envelope e, int64_t deadline_ms);
  void answer_through(hub& h, const std::string& to);
  void release(hub& h);
  void move(hub& h, const std::string& to);
  void attach(hub& h);

  std::vector<std::string> order_;
  silo_access access_;
  std::map<std::string, bool> available_;
  std::map<std::string, hub> hubs_; ///< by address text
};

} // namespace cafmesh::lifecycle
