#pragma once

/// @file
/// Test-side simulated silos for placement and catalog tests: `placement_world` builds N
/// silos in one fixture actor system, each with message centre + sim_network link +
/// membership agent (one oracle per world) + directory port and partition + placement
/// service + catalog, and test grain types.
///
/// The directory here is a **test stand-in** speaking the directory-port protocol of
/// placement.hpp: a resolver (`test_dir_port`: null directory for stateless workers when
/// the bypass is on, else the ring) and a partition per silo (`component::directory`)
/// storing first-wins entries, with the ring of SPEC §5.1 (16 points per Active silo).
/// It will be replaced by an adapter onto the substrate's hash ring / partition / resolver.

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <caf/all.hpp>

#include "cafmesh/actors/catalog.hpp"
#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/grain_registry.hpp"
#include "cafmesh/actors/membership.hpp"
#include "cafmesh/actors/message_center.hpp"
#include "cafmesh/actors/placement.hpp"
#include "cafmesh/actors/placement_atoms.hpp"
#include "cafmesh/actors/sim_network.hpp"
#include "cafmesh/testing/fixture.hpp"
#include "sim_world.hpp"

namespace cafmesh::test {

using pt_echo_atom = caf::atom_constant<caf::atom("ptecho")>;
using pt_slow_atom = caf::atom_constant<caf::atom("ptslow")>;
using pt_done_atom = caf::atom_constant<caf::atom("ptdone")>;
using pt_hold_atom = caf::atom_constant<caf::atom("pthold")>;

/// The owner of `g` on the SPEC §5.1 ring over `active` (16 points per silo); empty if none.
inline silo_address ring_owner(const std::vector<silo_address>& active, const grain_id& g,
                               int points = 16) {
  std::map<uint64_t, silo_address> ring;
  for (auto& s : active)
    for (int i = 0; i < points; ++i)
      ring.emplace(fnv1a64(s.to_string() + "#" + std::to_string(i)), s);
  if (ring.empty())
    return {};
  auto i = ring.lower_bound(fnv1a64(g.to_string()));
  if (i == ring.end())
    i = ring.begin();
  return i->second;
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
/// `(pt_hold_atom)` never answers.
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

// -- test directory -----------------------------------------------------------------

struct test_partition_state {
  std::map<grain_id, std::pair<silo_address, activation_tag>> entries;
  uint64_t lookups = 0;
  static inline const char* name = "test.partition";
};

/// Directory partition stand-in (registered as `component::directory`).
inline caf::behavior test_partition(caf::stateful_actor<test_partition_state>* self) {
  return {
    [=](pd_lookup_atom, const grain_id& g) {
      ++self->state.lookups;
      auto i = self->state.entries.find(g);
      if (i == self->state.entries.end())
        return caf::make_message(false, silo_address{}, activation_tag{});
      return caf::make_message(true, i->second.first, i->second.second);
    },
    [=](pd_register_atom, const grain_id& g, const silo_address& s, activation_tag t) {
      auto i = self->state.entries.emplace(g, std::make_pair(s, t)).first;
      return caf::make_message(i->second.first, i->second.second);
    },
    [=](pd_unregister_atom, const grain_id& g, const silo_address& s, activation_tag t) {
      auto i = self->state.entries.find(g);
      if (i != self->state.entries.end() && i->second.first == s && i->second.second == t)
        self->state.entries.erase(i);
      return caf::ok_atom::value;
    },
  };
}

struct test_dir_port_state {
  silo_address self_addr;
  caf::actor centre;
  grain_registry_ptr registry;
  bool bypass = true;
  membership_snapshot view;
  uint64_t null_lookups = 0;
  std::map<std::string, uint64_t> ring_lookups; ///< per grain type
  static inline const char* name = "test.dir_port";
};

/// Directory port stand-in: the resolver of SPEC §5.3 over the test ring.
inline caf::behavior test_dir_port(caf::stateful_actor<test_dir_port_state>* self,
                                   silo_address me, caf::actor centre,
                                   grain_registry_ptr registry, bool bypass) {
  auto& st = self->state;
  st.self_addr = me;
  st.centre = centre;
  st.registry = registry;
  st.bypass = bypass;
  auto null_dir = [=](const grain_id& g) {
    auto t = self->state.registry->find(g.type);
    return self->state.bypass && t != nullptr && t->kind == grain_kind::stateless_worker;
  };
  auto forward = [=](const grain_id& g, caf::message m) -> caf::response_promise {
    auto rp = self->make_response_promise();
    auto owner = ring_owner(self->state.view.active_set(), g);
    if (owner.empty()) {
      rp.deliver(to_error(fault{mesh_errc::directory_unstable, "no ring, retry later"}));
      return rp;
    }
    self->request(self->state.centre, caf::infinite, mc_call_atom::value, owner,
                  component::directory, std::move(m))
      .then([=](pl_never_atom) mutable {},
            [=](caf::error& e) mutable {
              if (e == caf::sec::unexpected_response)
                rp.deliver(e.context());
              else
                rp.deliver(std::move(e));
            });
    return rp;
  };
  return {
    [=](mb_snapshot_atom, membership_snapshot& v) { self->state.view = std::move(v); },
    [=](pd_lookup_atom, const grain_id& g) -> caf::response_promise {
      if (null_dir(g)) {
        ++self->state.null_lookups;
        auto rp = self->make_response_promise();
        rp.deliver(false, silo_address{}, activation_tag{});
        return rp;
      }
      ++self->state.ring_lookups[g.type];
      return forward(g, caf::make_message(pd_lookup_atom::value, g));
    },
    [=](pd_register_atom, const grain_id& g, const silo_address& s,
        activation_tag t) -> caf::response_promise {
      if (null_dir(g)) {
        auto rp = self->make_response_promise();
        rp.deliver(s, t);
        return rp;
      }
      return forward(g, caf::make_message(pd_register_atom::value, g, s, t));
    },
    [=](pd_unregister_atom, const grain_id& g, const silo_address& s,
        activation_tag t) -> caf::response_promise {
      if (null_dir(g)) {
        auto rp = self->make_response_promise();
        rp.deliver(caf::ok_atom::value);
        return rp;
      }
      return forward(g, caf::make_message(pd_unregister_atom::value, g, s, t));
    },
  };
}

// -- the world ----------------------------------------------------------------------

/// One simulated silo's actors.
struct sim_silo {
  silo_address addr;
  std::shared_ptr<grain_registry> registry;
  caf::actor centre, agent, partition, port, placement, catalog;
};

/// Options of one simulated silo.
struct sim_silo_options {
  bool bypass = true;               ///< `directory.stateless_worker_bypass`
  int64_t deactivation_timeout_ms = 30000;
  int64_t idle_deactivation_ms = 0;
  bool activate = true;             ///< publish Active after joining
};

/// N simulated silos in one fixture actor system (latency 0 by default: exact timings).
class placement_world {
public:
  explicit placement_world(testing::fixture& fx, sim_network_config net_cfg = zero_latency())
    : fx_(fx), net_(fx, net_cfg), seed_(net_cfg.seed) {
    oracle = fx_.track(spawn_membership_oracle(fx_.sys, membership_oracle_config{}, net_.net));
  }

  static sim_network_config zero_latency() {
    sim_network_config c;
    c.link_latency_min_ms = 0;
    c.link_latency_max_ms = 0;
    return c;
  }

  /// Adds a silo at `host` and (by default) makes it Active; runs until settled.
  sim_silo& add_silo(const std::string& host, sim_silo_options opt = {}) {
    sim_silo s;
    s.addr = net_.add_silo(host);
    s.centre = net_.centres[s.addr];
    s.registry = test_registry(s.addr);
    auto& sys = fx_.sys;
    s.agent = fx_.track(spawn_membership_agent(sys, s.addr, oracle));
    s.partition = fx_.track(sys.spawn(test_partition));
    s.port = fx_.track(sys.spawn(test_dir_port, s.addr, s.centre,
                                 grain_registry_ptr{s.registry}, opt.bypass));
    placement_config pc;
    pc.self = s.addr;
    pc.seed = seed_;
    s.placement = fx_.track(spawn_placement_service(sys, pc, s.registry, s.centre, s.port));
    catalog_config cc;
    cc.self = s.addr;
    cc.seed = seed_;
    cc.deactivation_timeout_ms = opt.deactivation_timeout_ms;
    cc.idle_deactivation_ms = opt.idle_deactivation_ms;
    s.catalog = fx_.track(spawn_catalog(sys, cc, s.registry, s.port, s.placement));
    net_.reg(s.addr, component::directory, s.partition);
    net_.reg(s.addr, component::catalog, s.catalog);
    net_.reg(s.addr, component::activation, s.catalog);
    for (auto& sub : {s.port, s.placement, s.catalog})
      caf::anon_send(s.agent, mb_subscribe_atom::value, sub);
    fx_.run();
    caf::anon_send(s.agent, mb_join_atom::value, s.registry->manifest(), true);
    fx_.run();
    if (opt.activate) {
      caf::anon_send(s.agent, mb_status_atom::value, silo_status::active);
      fx_.run();
    }
    silos.push_back(s);
    return silos.back();
  }

  sim_silo& at(const silo_address& a) {
    for (auto& s : silos)
      if (s.addr == a)
        return s;
    throw std::logic_error("no such silo");
  }

  /// Publishes a status change of `s` through its agent; runs until settled.
  void set_status(const silo_address& s, silo_status to) {
    caf::anon_send(at(s).agent, mb_status_atom::value, to);
    fx_.run();
  }

  /// Stalls `s` (undetectable: membership never notices).
  void stall(const silo_address& s) {
    caf::anon_send(net_.net, sim_stall_atom::value, s, false);
    fx_.run();
  }

  std::vector<silo_address> active_set() {
    return testing::fixture::state_of<test_dir_port_state>(silos.front().port).view.active_set();
  }

  placement_state& placement_of(const silo_address& s) {
    return testing::fixture::state_of<placement_state>(at(s).placement);
  }
  catalog_state& catalog_of(const silo_address& s) {
    return testing::fixture::state_of<catalog_state>(at(s).catalog);
  }
  test_dir_port_state& port_of(const silo_address& s) {
    return testing::fixture::state_of<test_dir_port_state>(at(s).port);
  }
  test_partition_state& partition_of(const silo_address& s) {
    return testing::fixture::state_of<test_partition_state>(at(s).partition);
  }
  sim_network_state& net_state() { return net_.net_state(); }
  const caf::actor& net() const { return net_.net; }

  caf::actor oracle;
  std::vector<sim_silo> silos;

private:
  testing::fixture& fx_;
  sim_world net_;
  uint64_t seed_;
};

/// The grain-call request for a placement service.
inline caf::message grain_call_msg(const grain_id& g, caf::message payload, int32_t fwd = 0) {
  return caf::make_message(pl_call_atom::value, g, fwd, std::move(payload));
}

} // namespace cafmesh::test
