#pragma once

/// @file
/// Test-side helpers for simulated silos (to move into cafmesh::testing later): a
/// `sim_world` owning a `sim_network` and the message centres of N simulated processes,
/// and a `probe` actor that makes calls through a centre and records every answer with its
/// virtual time.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <caf/all.hpp>

#include "cafmesh/actors/directory.hpp"
#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/membership.hpp"
#include "cafmesh/actors/message_center.hpp"
#include "cafmesh/actors/request_any.hpp"
#include "cafmesh/actors/sim_network.hpp"
#include "cafmesh/testing/fixture.hpp"
#include "cafmesh/actors/detail/sim_network_state.hpp"

namespace cafmesh::testing {

using probe_ask_atom = caf::atom_constant<caf::atom("tprobeask")>;
using probe_tell_atom = caf::atom_constant<caf::atom("tprobetel")>;
using echo_atom = caf::atom_constant<caf::atom("techo")>;
using fail_atom = caf::atom_constant<caf::atom("tfail")>;
using silent_atom = caf::atom_constant<caf::atom("tsilent")>;

/// One recorded answer.
struct probe_answer_rec {
  int64_t t_ms = 0;      ///< virtual ms (fixture time) at which it arrived
  std::string tag;       ///< the tag given with the ask
  caf::message reply;    ///< the reply, if no error
  caf::error error;      ///< the error, if any
};

struct probe_state {
  testing::fixture* fx = nullptr;
  std::vector<probe_answer_rec> answers;
  std::vector<std::pair<int64_t, caf::message>> told;
  static inline const char* name = "test.probe";
};

/// Probe: `(probe_ask_atom, caf::actor to, caf::message req, int64_t timeout_ms, std::string tag)`
/// sends `req` as a request and records the answer; any other message is recorded in `told`.
inline caf::behavior probe(caf::stateful_actor<probe_state>* self, testing::fixture* fx) {
  self->state.fx = fx;
  self->set_default_handler([=](caf::scheduled_actor*, caf::message_view& v) -> caf::result<caf::message> {
    self->state.told.emplace_back(self->state.fx->now_ms(), v.copy_content_to_message());
    return caf::message{};
  });
  return {
    [=](probe_ask_atom, const caf::actor& to, caf::message& req, int64_t timeout_ms,
        const std::string& tag) {
      auto rec = [=](caf::message m, caf::error e) {
        self->state.answers.push_back({self->state.fx->now_ms(), tag, std::move(m), std::move(e)});
      };
      request_any(
        self, to, timeout_ms, std::move(req),
        [=](caf::message m) { rec(std::move(m), caf::error{}); },
        [=](caf::error e) { rec(caf::message{}, std::move(e)); });
    },
  };
}

/// Echo component: `(echo_atom, int x) -> x * 2`; `(echo_atom, std::string s) -> s`;
/// `(fail_atom, std::string text) -> error rejected(text)`; `(silent_atom)` never answers;
/// one-way messages are counted in `received`.
struct echo_state {
  std::vector<caf::message> received;
  std::vector<caf::response_promise> held;
  static inline const char* name = "test.echo";
};

inline caf::behavior echo(caf::stateful_actor<echo_state>* self) {
  self->set_default_handler([=](caf::scheduled_actor*, caf::message_view& v) -> caf::result<caf::message> {
    self->state.received.push_back(v.copy_content_to_message());
    return caf::message{};
  });
  return {
    [=](echo_atom, int x) { return x * 2; },
    [=](echo_atom, const std::string& s) { return s; },
    [=](echo_atom, const grain_id& g) { return g; },
    [=](fail_atom, const std::string& text) -> caf::result<int> {
      return to_error(fault{mesh_errc::rejected, text});
    },
    [=](silent_atom) -> caf::response_promise {
      auto rp = self->make_response_promise();
      self->state.held.push_back(rp);
      return rp;
    },
  };
}

/// One simulated silo's substrate actors.
struct sim_silo {
  silo_address addr;
  caf::actor mc;
  membership_agent_actor agent;
  directory_partition_actor partition;
};

/// The manifest every test silo publishes unless told otherwise: `routing` (stateless
/// worker), `messagehub` (random) and `podhub` (prefer-local), interface version 1.
inline std::vector<grain_type_info> default_manifest() {
  return {{"routing", placement_strategy::stateless_worker, 1},
          {"messagehub", placement_strategy::random, 1},
          {"podhub", placement_strategy::prefer_local, 1}};
}

/// A simulated cluster's network, membership oracle and, per added process, a message
/// centre (and for members: a membership agent and a directory partition).
class sim_world {
public:
  sim_world(testing::fixture& fx, sim_network_config cfg, int64_t failure_detection_ms = 10000)
    : fx_(fx) {
    net = fx_.track(spawn_sim_network(fx_.sys, cfg));
    oracle = fx_.track(spawn_membership_oracle(fx_.sys, {failure_detection_ms}, net));
  }

  /// Adds a silo with message centre, membership agent (the centre subscribed to it) and
  /// directory partition. It does not join yet: see `join` / `activate`.
  sim_silo& add_member(const std::string& host, uint16_t port = 11111) {
    auto s = add_silo(host, port);
    sim_silo m;
    m.addr = s;
    m.mc = centres[s];
    m.agent = fx_.track(spawn_membership_agent(fx_.sys, s, oracle));
    caf::anon_send(m.agent, mb_subscribe_atom::value, m.mc);
    m.partition = fx_.track(spawn_directory_partition(fx_.sys, s, m.mc, m.agent));
    members[s] = m;
    return members[s];
  }

  /// Adds a pure client process: message centre and membership agent (the centre
  /// subscribed to it), no partition; it never joins. Returned as a `sim_silo` whose
  /// `partition` is null.
  sim_silo& add_client(const std::string& host, uint16_t port = 30000) {
    auto s = add_silo(host, port);
    sim_silo m;
    m.addr = s;
    m.mc = centres[s];
    m.agent = fx_.track(spawn_membership_agent(fx_.sys, s, oracle));
    caf::anon_send(m.agent, mb_subscribe_atom::value, m.mc);
    members[s] = m;
    return members[s];
  }

  /// Joins `s` (Joining) with `manifest`, then makes it Active; runs until both applied.
  void join_active(const silo_address& s,
                   std::vector<grain_type_info> manifest = default_manifest(),
                   bool gateway = true) {
    auto& m = members.at(s);
    caf::anon_send(m.agent, mb_join_atom::value, std::move(manifest), gateway);
    fx_.run();
    caf::anon_send(m.agent, mb_status_atom::value, silo_status::active);
    fx_.run();
  }

  /// Kills `s` (docs/testing.md#the-simulation-harness `kill`): the network drops its traffic and
  /// its actors exit without a lifecycle stop.
  void kill(const silo_address& s) {
    caf::anon_send(net, sim_kill_atom::value, s);
    if (auto i = members.find(s); i != members.end()) {
      caf::anon_send_exit(i->second.agent, caf::exit_reason::kill);
      if (i->second.partition)
        caf::anon_send_exit(i->second.partition, caf::exit_reason::kill);
    }
    caf::anon_send_exit(centres.at(s), caf::exit_reason::kill);
    fx_.run();
  }

  /// Restarts `s` (docs/testing.md#the-simulation-harness `restart`): kills it if still alive and
  /// adds a member on the same host and port with the next generation (not joined yet).
  sim_silo& restart(const silo_address& s) {
    kill(s);
    return add_member(s.host, s.port);
  }

  /// Publishes a status of `s` through its agent and runs until idle.
  void set_status(const silo_address& s, silo_status to) {
    caf::anon_send(members.at(s).agent, mb_status_atom::value, to);
    fx_.run();
  }

  /// Adds a process at `host:port` with the next generation; returns its address.
  silo_address add_silo(const std::string& host, uint16_t port = 11111) {
    silo_address s{host, port, ++generation_};
    centres[s] = fx_.track(spawn_message_center(fx_.sys, s, net));
    return s;
  }

  cafmesh::detail::sim_network_state& net_state() { return cafmesh::detail::state_of(net); }

  /// Registers `h` as `c` on silo `s` (asynchronously; run() delivers it).
  void reg(const silo_address& s, component c, const caf::actor& h) {
    caf::anon_send(centres.at(s), mc_register_atom::value, c, h);
  }

  sim_network_actor net;
  membership_oracle_actor oracle;
  std::map<silo_address, caf::actor> centres;
  std::map<silo_address, sim_silo> members;

private:
  testing::fixture& fx_;
  uint64_t generation_ = 0;
};

/// The fault carried by `e` (`to_fault`).
inline fault fault_of(const caf::error& e) { return to_fault(e); }

} // namespace cafmesh::testing
