#pragma once

// Fake ports and a test bed for the router core (router_core_test.cpp, router_leg_test.cpp):
// a scripted grain-delivery port (answers per attempt: results, fault trees, delays, holds,
// a "stalled directory" answering placement_timeout after 30 s), a fake path resolver, a
// fake stream transport and a fake local-route port; plus the real gauge, the real io_pool
// and the real router core, all on the fixture's virtual clock.

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include <caf/all.hpp>

#include "cafmesh/routing/node_path_resolver.hpp"
#include "cafmesh/actors/fault.hpp"
#include "cafmesh/config/mesh_config.hpp"
#include "cafmesh/lifecycle/host.hpp"
#include "cafmesh/routing/io_pool.hpp"
#include "cafmesh/routing/routing_quiescence.hpp"
#include "cafmesh/actors/runtime_registry.hpp"
#include "cafmesh/routing/classify.hpp"
#include "cafmesh/routing/router_core.hpp"
#include "cafmesh/routing/size_guard.hpp"
#include "cafmesh/testing/fixture.hpp"

namespace cafmesh::testing::router_bed {

using namespace cafmesh;
using namespace cafmesh::routing;
using namespace std::chrono_literals;

using ft_release_atom = caf::atom_constant<caf::atom("ftrelease")>;
using ft_fire_atom = caf::atom_constant<caf::atom("ftfire")>;
using ft_unstall_atom = caf::atom_constant<caf::atom("ftunstall")>;

// -- scripted grain port ------------------------------------------------------------------

/// One scripted answer of the fake grain port.
struct answer {
  enum kind_t { result, fail, hold, stall } kind = result;
  delivery_state state = delivery_state::processed;
  std::map<std::string, std::string> props;
  fault f;
  int64_t delay_ms = 0;

  static answer ok(delivery_state st = delivery_state::processed) {
    answer a;
    a.state = st;
    return a;
  }
  static answer failed_result(std::map<std::string, std::string> props) {
    answer a;
    a.state = delivery_state::failed;
    a.props = std::move(props);
    return a;
  }
  static answer err(fault f, int64_t delay_ms = 0) {
    answer a;
    a.kind = fail;
    a.f = std::move(f);
    a.delay_ms = delay_ms;
    return a;
  }
  /// Never answers until `ft_release_atom` (then `processed`).
  static answer held() {
    answer a;
    a.kind = hold;
    return a;
  }
  /// A stalled directory owner: placement_timeout 30 s after the attempt, unless unstalled
  /// first (then the attempt lands, `processed`).
  static answer stalled() {
    answer a;
    a.kind = stall;
    return a;
  }
};

struct attempt_rec {
  int64_t t_ms = 0;
  std::string grain;
  envelope env;
  std::string silo; ///< the silo the fake placed the grain on
  bool fresh = false; ///< the fake's cache had no entry: this attempt went through placement
  int64_t within_ms = 0; ///< the attempt's bound as the core passed it
};

struct grain_fake_state {
  const cafmesh::testing::fixture* fx = nullptr;
  std::map<std::string, std::deque<answer>> script; ///< per rendered grain id
  answer fallback = answer::ok();
  std::vector<attempt_rec> attempts;
  std::vector<std::string> invalidated;
  std::vector<silo_address> inval_silos;
  std::map<std::string, std::string> act_errors; ///< grain -> recorded activation error
  std::vector<silo_address> silos;               ///< placement candidates, first wins
  std::map<std::string, silo_address> placed;    ///< the fake directory cache
  struct pending_t {
    grain_port_reply rp;
    envelope env;
    answer a;
    std::string grain;
    bool stalled = false;
  };
  std::map<uint64_t, pending_t> pending;
  uint64_t next_pending = 1;

  size_t attempts_for(const std::string& grain) const {
    size_t n = 0;
    for (auto& a : attempts)
      n += a.grain == grain ? 1 : 0;
    return n;
  }
};

using grain_fake_actor = grain_port_actor::extend<caf::reacts_to<ft_release_atom, std::string>,
                                                  caf::reacts_to<ft_fire_atom, uint64_t>,
                                                  caf::reacts_to<ft_unstall_atom>>;

inline envelope answer_env(const envelope& in, const answer& a, const std::string& silo) {
  envelope r = in;
  r.state = a.state;
  for (auto& kvp : a.props)
    r.properties[kvp.first] = kvp.second;
  if (!silo.empty())
    r.properties["landed_on"] = json_quote(silo);
  return r;
}

inline grain_fake_actor::behavior_type
grain_fake(grain_fake_actor::stateful_pointer<grain_fake_state> self,
           const cafmesh::testing::fixture* fx) {
  self->state.fx = fx;
  auto deliver_pending = [=](uint64_t idx, bool as_result) {
    auto& s = self->state;
    auto i = s.pending.find(idx);
    if (i == s.pending.end())
      return;
    auto p = std::move(i->second);
    s.pending.erase(i);
    if (!as_result && (p.a.kind == answer::fail || p.a.kind == answer::stall)) {
      p.rp.deliver(to_error(p.a.f));
    } else {
      auto silo = s.placed.count(p.grain) && !s.placed[p.grain].empty()
                    ? s.placed[p.grain].to_string()
                    : std::string{};
      p.rp.deliver(answer_env(p.env, p.a.kind == answer::result ? p.a : answer::ok(), silo));
    }
  };
  return {
    [=](gp_call_atom, uint64_t call, grain_id& g, envelope& env, caf::timespan within) {
      auto& s = self->state;
      auto key = g.to_string();
      bool fresh = s.placed.count(key) == 0;
      if (fresh && !s.silos.empty())
        s.placed[key] = s.silos.front();
      if (fresh && s.silos.empty())
        s.placed[key] = silo_address{};
      auto silo = s.placed[key].empty() ? std::string{} : s.placed[key].to_string();
      s.attempts.push_back(attempt_rec{
        s.fx->now_ms(), key, env, silo, fresh,
        std::chrono::duration_cast<std::chrono::milliseconds>(within).count()});
      answer a = s.fallback;
      auto i = s.script.find(key);
      if (i != s.script.end() && !i->second.empty()) {
        a = i->second.front();
        i->second.pop_front();
      }
      grain_port_reply rp{self, call};
      if (a.kind == answer::result && a.delay_ms == 0) {
        rp.deliver(answer_env(env, a, silo));
        return;
      }
      if (a.kind == answer::fail && a.delay_ms == 0) {
        rp.deliver(to_error(a.f));
        return;
      }
      auto idx = s.next_pending++;
      if (a.kind == answer::stall) {
        a.f = fault{mesh_errc::placement_timeout, "placement of " + key + " timed out after 30 s"};
        self->delayed_send(self, 30s, ft_fire_atom::value, idx);
      } else if (a.kind != answer::hold) {
        self->delayed_send(self, std::chrono::milliseconds(a.delay_ms), ft_fire_atom::value, idx);
      }
      s.pending.emplace(idx, grain_fake_state::pending_t{rp, env, a, key, a.kind == answer::stall});
    },
    [=](gp_invalidate_atom, grain_id& g) {
      self->state.invalidated.push_back(g.to_string());
      self->state.placed.erase(g.to_string());
    },
    [=](gp_inval_silo_atom, silo_address& silo) {
      auto& s = self->state;
      s.inval_silos.push_back(silo);
      for (auto i = s.placed.begin(); i != s.placed.end();)
        i = i->second == silo ? s.placed.erase(i) : std::next(i);
      for (auto i = s.silos.begin(); i != s.silos.end();)
        i = *i == silo ? s.silos.erase(i) : std::next(i);
    },
    [=](gp_act_error_atom, grain_id& g) -> std::string {
      auto i = self->state.act_errors.find(g.to_string());
      return i == self->state.act_errors.end() ? std::string{} : i->second;
    },
    [=](ft_release_atom, std::string& grain) {
      std::vector<uint64_t> ids;
      for (auto& kvp : self->state.pending)
        if (kvp.second.a.kind == answer::hold && (grain.empty() || kvp.second.grain == grain)) {
          ids.push_back(kvp.first);
          if (!grain.empty())
            break;
        }
      for (auto id : ids)
        deliver_pending(id, true);
    },
    [=](ft_fire_atom, uint64_t idx) { deliver_pending(idx, false); },
    [=](ft_unstall_atom) {
      std::vector<uint64_t> ids;
      for (auto& kvp : self->state.pending)
        if (kvp.second.stalled)
          ids.push_back(kvp.first);
      for (auto id : ids)
        deliver_pending(id, true);
    },
  };
}

// -- path resolver ------------------------------------------------------------------------

struct resolver_fake_state {
  std::map<std::string, resolve_result> table; ///< explicit answers
  std::map<std::string, fault> faults;         ///< explicit fault answers
  std::set<std::string> hold;                  ///< never answered until released
  std::vector<std::string> calls;
  std::map<std::string, std::vector<caf::typed_response_promise<resolve_result>>> pending;
  /// Default answers are marked cacheable (docs/behaviour/routing.md#cacheable-resolutions).
  bool cacheable = true;
};

using resolver_fake_actor
  = path_resolver_actor::extend<caf::reacts_to<ft_release_atom, std::string>>;

/// Default answer: `node/X` resolves to prefix X; every other path is unknown.
inline resolve_result default_resolve(const resolver_fake_state& s, const std::string& path) {
  auto i = s.table.find(path);
  if (i != s.table.end())
    return i->second;
  resolve_result r;
  if (auto prefix = routing::node_prefix_of("node", path)) {
    r.found = true;
    r.node_prefix = std::move(*prefix);
    r.cacheable = s.cacheable;
  }
  return r;
}

inline resolver_fake_actor::behavior_type
resolver_fake(resolver_fake_actor::stateful_pointer<resolver_fake_state> self) {
  return {
    [=](pr_resolve_atom, std::string& path) -> caf::typed_response_promise<resolve_result> {
      auto& s = self->state;
      s.calls.push_back(path);
      auto rp = self->make_response_promise<resolve_result>();
      if (s.hold.count(path)) {
        s.pending[path].push_back(rp);
        return rp;
      }
      auto f = s.faults.find(path);
      if (f != s.faults.end())
        rp.deliver(to_error(f->second));
      else
        rp.deliver(default_resolve(s, path));
      return rp;
    },
    [=](ft_release_atom, std::string& path) {
      auto& s = self->state;
      s.hold.erase(path);
      auto ps = std::move(s.pending[path]);
      s.pending.erase(path);
      for (auto& rp : ps)
        rp.deliver(default_resolve(s, path));
    },
  };
}

// -- stream transport ----------------------------------------------------------------------

struct stream_fake_state {
  const cafmesh::testing::fixture* fx = nullptr;
  std::map<std::string, int> probe; ///< by host path: 1 live, 0 none, -1 silent; default 1
  std::map<std::string, int> publish; ///< by host path: 0 ok, 1 fault, 2 never answers
  std::vector<std::string> probes;
  std::vector<std::pair<int64_t, envelope>> published;
  std::vector<caf::typed_response_promise<bool>> silent_probes;
  std::vector<caf::typed_response_promise<caf::ok_atom>> silent_publishes;
};

inline stream_port_actor::behavior_type
stream_fake(stream_port_actor::stateful_pointer<stream_fake_state> self,
            const cafmesh::testing::fixture* fx) {
  self->state.fx = fx;
  return {
    [=](sp_probe_atom, address& a) -> caf::typed_response_promise<bool> {
      auto& s = self->state;
      s.probes.push_back(a.path());
      auto rp = self->make_response_promise<bool>();
      auto i = s.probe.find(a.path());
      int mode = i == s.probe.end() ? 1 : i->second;
      if (mode < 0)
        s.silent_probes.push_back(rp);
      else
        rp.deliver(mode == 1);
      return rp;
    },
    [=](sp_publish_atom, address& a, envelope& env) -> caf::typed_response_promise<caf::ok_atom> {
      auto& s = self->state;
      auto rp = self->make_response_promise<caf::ok_atom>();
      auto i = s.publish.find(a.path());
      int mode = i == s.publish.end() ? 0 : i->second;
      if (mode == 0) {
        s.published.emplace_back(s.fx->now_ms(), env);
        rp.deliver(caf::ok_atom::value);
      } else if (mode == 1) {
        rp.deliver(to_error(fault{mesh_errc::application, "stream transport refused the post"}));
      } else {
        s.silent_publishes.push_back(rp);
      }
      return rp;
    },
  };
}

// -- local routes (the routing service's side of rung a) ----------------------------------

struct local_fake_state {
  std::set<std::string> local; ///< rendered host paths with a local route
  bool hold = false;           ///< answer only on ft_release_atom
  std::vector<envelope> delivered;
  std::vector<std::pair<caf::typed_response_promise<bool>, envelope>> pending;
};

using local_fake_actor
  = local_route_port_actor::extend<caf::reacts_to<ft_release_atom, std::string>>;

inline local_fake_actor::behavior_type
local_fake(local_fake_actor::stateful_pointer<local_fake_state> self) {
  auto answer_one = [=](caf::typed_response_promise<bool>& rp, const envelope& env) {
    auto& s = self->state;
    auto path = host_address(env.target).path();
    if (s.local.count(path)) {
      s.delivered.push_back(env);
      rp.deliver(true);
    } else {
      rp.deliver(false);
    }
  };
  return {
    [=](lr_deliver_atom, envelope& env) -> caf::typed_response_promise<bool> {
      auto rp = self->make_response_promise<bool>();
      if (self->state.hold)
        self->state.pending.emplace_back(rp, env);
      else
        answer_one(rp, env);
      return rp;
    },
    [=](ft_release_atom, std::string&) {
      auto ps = std::move(self->state.pending);
      self->state.pending.clear();
      self->state.hold = false;
      for (auto& p : ps)
        answer_one(p.first, p.second);
    },
  };
}

// -- the bed ----------------------------------------------------------------------------------

/// Asks `h` (from a scoped actor, pumping the coordinator) and answers the reply.
template <class R, class Handle, class... Ts>
R ask(cafmesh::testing::fixture& fx, const Handle& h, Ts... xs) {
  caf::scoped_actor self{fx.sys};
  self->send(h, xs...);
  fx.run();
  R out{};
  bool got = false;
  self->receive([&](R& r) {
    out = std::move(r);
    got = true;
  },
                [&](caf::error&) {}, caf::after(std::chrono::seconds(0)) >> [] {});
  REQUIRE(got);
  return out;
}

/// The router core with real gauge and pool and fake ports.
struct bed {
  cafmesh::testing::fixture& fx;
  config::mesh_config cfg;
  silo_address silo{"10.0.0.1", 11111, 1};
  router_core_options opts;
  routing::routing_quiescence_actor gauge;
  routing::io_pool_actor pool;
  grain_fake_actor grains;
  resolver_fake_actor resolver;
  caf::actor streams_raw;
  stream_port_actor streams;
  local_fake_actor locals;
  router_core_actor rc;
  /// The silo's message centre as the core sees it (set before `start`); null: none.
  caf::actor centre;
  bool with_streams = true;
  bool with_locals = true;
  lifecycle::runtime_registry_actor registry;

  explicit bed(cafmesh::testing::fixture& f) : fx(f) {}

  /// Spawns everything with `cfg` (edit `cfg` / `opts` before).
  void start() {
    gauge = fx.track(routing::spawn_routing_quiescence(fx.sys, {silo.to_string()}));
    pool = fx.track(routing::spawn_io_pool(
      fx.sys, routing::io_pool_options::from(cfg.pool, silo.to_string())));
    grains = fx.track(fx.sys.spawn(grain_fake, &fx));
    resolver = fx.track(fx.sys.spawn(resolver_fake));
    if (with_streams)
      streams = fx.track(fx.sys.spawn(stream_fake, &fx));
    locals = fx.track(fx.sys.spawn(local_fake));
    auto o = router_core_options::from(cfg, silo);
    o.placement_timeout_ms = opts.placement_timeout_ms != 30000 ? opts.placement_timeout_ms
                                                                 : o.placement_timeout_ms;
    o.grain_response_timeout_ms = opts.grain_response_timeout_ms != 30000
                                    ? opts.grain_response_timeout_ms
                                    : o.grain_response_timeout_ms;
    o.own_start_permits = opts.own_start_permits;
    o.gauge = gauge;
    o.pool = pool;
    o.grains = grains;
    o.resolver = resolver;
    o.streams = streams;
    if (with_locals)
      o.local_routes = locals;
    o.registry = registry;
    o.centre = centre;
    rc = fx.track(spawn_router_core(fx.sys, o));
    fx.run();
    local().local.insert("portal/alice"); // the default sender has a local route
  }

  grain_fake_state& grain() { return fixture::state_of<grain_fake_state>(grains); }
  resolver_fake_state& res() {
    return fixture::state_of<resolver_fake_state>(resolver);
  }
  stream_fake_state& stream() {
    return fixture::state_of<stream_fake_state>(streams);
  }
  local_fake_state& local() { return fixture::state_of<local_fake_state>(locals); }

  static envelope make(const std::string& id, const std::string& target,
                       const std::string& sender = "portal/alice", std::string payload = "{}",
                       std::string key = "") {
    envelope e;
    e.id = id;
    e.sender = address::from(sender);
    e.target = address::from(target);
    e.payload_type = "test.ping";
    e.payload_json = std::move(payload);
    if (!key.empty())
      e.ordering_key = key;
    return e;
  }

  void route(const envelope& e) { caf::anon_send(rc, rc_route_atom::value, e); }

  router_core_stats stats() { return ask<router_core_stats>(fx, rc, rc_stats_atom::value); }
  uint64_t gauge_count() { return ask<uint64_t>(fx, gauge, routing::q_count_atom::value); }
  routing::quiescence_sample gauge_oldest(uint64_t n = 100) {
    return ask<routing::quiescence_sample>(fx, gauge, routing::q_oldest_atom::value, n);
  }

  void release(const std::string& g = "") {
    caf::anon_send(grains, ft_release_atom::value, g);
  }

  /// NACKs that reached the sender's local route, decoded.
  std::vector<delivery_failure> local_nacks() {
    std::vector<delivery_failure> out;
    for (auto& e : local().delivered) {
      delivery_failure f;
      REQUIRE(from_json_text(e.payload_json, f));
      out.push_back(f);
    }
    return out;
  }

  /// Scripts `grain` with `answers` (per attempt, then the fallback).
  void script(const std::string& g, std::vector<answer> answers) {
    auto& q = grain().script[g];
    for (auto& a : answers)
      q.push_back(a);
  }
};

/// Sends a grain-path batch of one (`rc_grains_atom`, the pure clients' entry; its requester
/// waits `answer_within`, 0: no bound) to the bed's router core and answers the item's verdict:
/// no error once the core accepted it, else its refusal.
inline caf::error grain_route(cafmesh::testing::fixture& fx, bed& b, const envelope& e,
                              caf::timespan answer_within = caf::timespan{0}) {
  caf::scoped_actor self{fx.sys};
  self->send(b.rc, rc_grains_atom::value, std::vector<dispatch_item>{{e, answer_within}},
             silo_address{});
  fx.run();
  caf::error out = caf::make_error(caf::sec::unexpected_response);
  bool got = false;
  self->receive(
    [&](dispatch_verdicts& v) {
      REQUIRE(v.size() == 1);
      out = std::move(v[0]);
      got = true;
    },
    [&](caf::error& err) {
      out = std::move(err);
      got = true;
    },
    caf::after(std::chrono::seconds(0)) >> [] {});
  REQUIRE(got);
  return out;
}

inline fault with_causes(fault root, std::vector<fault> causes) {
  root.causes = std::move(causes);
  return root;
}

inline fault deactivated(tri_bool recorded, std::string text = "activation is gone") {
  fault f{mesh_errc::activation_deactivated, std::move(text)};
  f.activation_error_recorded = recorded;
  return f;
}

} // namespace cafmesh::testing::router_bed
