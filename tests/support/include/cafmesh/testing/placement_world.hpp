#pragma once

/// @file
/// Test-side simulated silos for placement and catalog tests: `placement_world` builds N
/// silos in one fixture actor system, each with message centre + sim_network link +
/// membership agent (one oracle per world) + directory partition + placement service (with
/// directory client and cache) + catalog, and test grain types.
///
/// The directory is the substrate's: one `directory_partition` per silo, and a
/// `directory_client` with the silo's resolver inside placement and catalog.

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <caf/all.hpp>

#include "cafmesh/actors/catalog.hpp"
#include "cafmesh/actors/directory.hpp"
#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/grain_registry.hpp"
#include "cafmesh/actors/membership.hpp"
#include "cafmesh/actors/message_center.hpp"
#include "cafmesh/actors/placement.hpp"
#include "cafmesh/actors/placement_atoms.hpp"
#include "cafmesh/actors/sim_network.hpp"
#include "cafmesh/testing/fixture.hpp"
#include "cafmesh/testing/sim_world.hpp"
#include "cafmesh/actors/detail/catalog_state.hpp"
#include "cafmesh/actors/detail/placement_state.hpp"
#include "cafmesh/actors/detail/sim_network_state.hpp"

namespace cafmesh::testing {

using pt_echo_atom = caf::atom_constant<caf::atom("ptecho")>;
using pt_slow_atom = caf::atom_constant<caf::atom("ptslow")>;
using pt_done_atom = caf::atom_constant<caf::atom("ptdone")>;
using pt_hold_atom = caf::atom_constant<caf::atom("pthold")>;
using pt_quit_atom = caf::atom_constant<caf::atom("ptquit")>;

/// The directory owner of `g` over the active set `active` (`hash_ring`); empty if none.
inline silo_address ring_owner(const std::vector<silo_address>& active, const grain_id& g) {
  auto o = hash_ring{active}.owner(g);
  return o ? *o : silo_address{};
}

/// The first grain `{type, k{i}}` whose directory owner over `active` is `owner`.
inline grain_id owned_by(const std::vector<silo_address>& active, const silo_address& owner,
                         const std::string& type) {
  for (int i = 0;; ++i) {
    grain_id g{type, "k" + std::to_string(i)};
    if (ring_owner(active, g) == owner)
      return g;
  }
}

/// The call `(pt_echo_atom, x)` of an echo grain (`echo_grain`).
inline caf::message echo_call(int x) {
  return caf::make_message(pt_echo_atom::value, x);
}

/// The call `(pt_slow_atom, ms)` of a slow grain (`slow_grain`).
inline caf::message slow_call(int64_t ms) {
  return caf::make_message(pt_slow_atom::value, ms);
}

// -- test grains --------------------------------------------------------------------

/// Echo grain: `(pt_echo_atom, int x) -> (std::string silo, int 2x)`.
inline activation_factory echo_grain(const silo_address& s) {
  auto name = s.to_string();
  return [name](caf::event_based_actor*, const grain_id&) -> caf::behavior {
    return {[name](pt_echo_atom, int x) { return caf::make_message(name, x * 2); }};
  };
}

/// Slow grain: `(pt_slow_atom, int64_t ms) -> std::string silo` after `ms` virtual ms (one
/// turn held open that long); `(pt_echo_atom, int x) -> (silo, 2x)` at once;
/// `(pt_hold_atom)` never answers; `(pt_quit_atom)` makes the activation quit (a crash).
inline activation_factory slow_grain(const silo_address& s) {
  auto name = s.to_string();
  return [name](caf::event_based_actor* self, const grain_id&) -> caf::behavior {
    auto held = std::make_shared<std::deque<caf::response_promise>>();
    return {
      [=](pt_slow_atom, int64_t ms) -> caf::response_promise {
        held->push_back(self->make_response_promise());
        self->delayed_send(self, std::chrono::milliseconds(ms), pt_done_atom::value);
        return held->back();
      },
      [=](pt_done_atom) {
        if (!held->empty()) {
          held->front().deliver(name);
          held->pop_front();
        }
      },
      [=](pt_echo_atom, int x) { return caf::make_message(name, x * 2); },
      [=](pt_hold_atom) -> caf::response_promise {
        held->push_back(self->make_response_promise());
        return held->back();
      },
      [=](pt_quit_atom) { self->quit(caf::sec::runtime_error); },
    };
  };
}

/// The grain types every test silo hosts: `messagehub` (single, random, echo), `podhub`
/// (single, prefer-local, echo), `routing` (stateless worker, limit 1, echo), `slow`
/// (single, prefer-local, slow grain), `slowsw` (stateless worker, limit 1, slow grain),
/// `broken` (single, random; activation refused "constructor threw: bad config").
inline std::shared_ptr<grain_registry> test_registry(const silo_address& s) {
  auto r = std::make_shared<grain_registry>();
  r->add_single("messagehub", placement_strategy::random, echo_grain(s));
  r->add_single("podhub", placement_strategy::prefer_local, echo_grain(s));
  r->add_stateless("routing", 1, echo_grain(s));
  r->add_single("slow", placement_strategy::prefer_local, slow_grain(s));
  r->add_stateless("slowsw", 1, slow_grain(s));
  r->add_single("broken", placement_strategy::random, echo_grain(s), 1,
                [](const grain_id&) { return std::string{"constructor threw: bad config"}; });
  return r;
}

// -- the world ----------------------------------------------------------------------

/// One simulated silo's actors: the substrate ones (`sim_world::add_member`) plus
/// placement and catalog.
struct world_silo {
  silo_address addr;
  std::shared_ptr<grain_registry> registry;
  caf::actor centre, placement, catalog;
  membership_agent_actor agent;
  directory_partition_actor partition;
};

/// Options of one simulated silo.
struct world_silo_options {
  bool bypass = true;               ///< `directory.stateless_worker_bypass`
  int64_t deactivation_timeout_ms = 30000;
  int64_t idle_deactivation_ms = 0;
  bool activate = true;             ///< join and publish Active
  /// Builds the silo's registry; `test_registry` if empty.
  std::function<std::shared_ptr<grain_registry>(const silo_address&)> registry;
};

/// N simulated silos in one fixture actor system (latency 0 by default: exact timings).
/// Build: `placement_world w{fx}; auto a = w.add_silo("a").addr;` — each silo gets a
/// message centre on the world's sim_network, a membership agent (one oracle per world), a
/// directory partition, a placement service and a catalog (registered as `catalog` and
/// `activation`), all subscribed to the agent, then joins with its registry's manifest
/// and becomes Active.
class placement_world {
public:
  explicit placement_world(testing::fixture& fx, sim_network_config net_cfg = zero_latency())
    : fx_(fx), net_(fx, net_cfg), seed_(net_cfg.seed) {
    // nop
  }

  static sim_network_config zero_latency() {
    sim_network_config c;
    c.link_latency_min_ms = 0;
    c.link_latency_max_ms = 0;
    return c;
  }

  /// Adds a silo at `host` and (by default) makes it Active; runs until settled.
  world_silo& add_silo(const std::string& host, world_silo_options opt = {}) {
    auto& m = net_.add_member(host);
    world_silo s;
    s.addr = m.addr;
    s.centre = m.mc;
    s.agent = m.agent;
    s.partition = m.partition;
    s.registry = opt.registry ? opt.registry(s.addr) : test_registry(s.addr);
    auto& sys = fx_.sys;
    placement_config pc;
    pc.self = s.addr;
    pc.seed = seed_;
    pc.stateless_worker_bypass = opt.bypass;
    s.placement = fx_.track(spawn_placement_service(sys, pc, s.registry, s.centre));
    catalog_config cc;
    cc.self = s.addr;
    cc.seed = seed_;
    cc.stateless_worker_bypass = opt.bypass;
    cc.deactivation_timeout_ms = opt.deactivation_timeout_ms;
    cc.idle_deactivation_ms = opt.idle_deactivation_ms;
    s.catalog = fx_.track(spawn_catalog(sys, cc, s.registry, s.centre, s.placement));
    net_.reg(s.addr, component::catalog, s.catalog);
    net_.reg(s.addr, component::activation, s.catalog);
    for (auto& sub : {s.placement, s.catalog})
      caf::anon_send(s.agent, mb_subscribe_atom::value, sub);
    fx_.run();
    if (opt.activate) {
      net_.join_active(s.addr, s.registry->manifest());
      fx_.run();
    }
    silos.push_back(s);
    return silos.back();
  }

  world_silo& at(const silo_address& a) {
    for (auto& s : silos)
      if (s.addr == a)
        return s;
    throw std::logic_error("no such silo");
  }

  /// Publishes a status change of `s` through its agent; runs until settled.
  void set_status(const silo_address& s, silo_status to) { net_.set_status(s, to); }

  /// Stalls `s` (undetectable: membership never notices).
  void stall(const silo_address& s) {
    caf::anon_send(net_.net, sim_stall_atom::value, s, false);
    fx_.run();
  }

  /// Kills `s` in the network: frames to it bounce, its centre hears nothing more.
  void kill(const silo_address& s) {
    caf::anon_send(net_.net, sim_kill_atom::value, s);
    fx_.run();
  }

  std::vector<silo_address> active_set() {
    return placement_of(silos.front().addr).view.active_set();
  }

  cafmesh::detail::placement_state& placement_of(const silo_address& s) {
    return testing::fixture::state_of<cafmesh::detail::placement_state>(at(s).placement);
  }
  cafmesh::detail::catalog_state& catalog_of(const silo_address& s) {
    return testing::fixture::state_of<cafmesh::detail::catalog_state>(at(s).catalog);
  }
  cafmesh::detail::sim_network_state& net_state() { return net_.net_state(); }
  const sim_network_actor& net() const { return net_.net; }

  std::vector<world_silo> silos;

private:
  testing::fixture& fx_;
  sim_world net_;
  uint64_t seed_;
};

/// The grain-call request for a placement service.
inline caf::message grain_call_msg(const grain_id& g, caf::message payload, int32_t fwd = 0) {
  return caf::make_message(pl_call_atom::value, g, fwd, std::move(payload));
}

} // namespace cafmesh::testing
