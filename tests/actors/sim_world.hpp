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

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/message_center.hpp"
#include "cafmesh/actors/sim_network.hpp"
#include "cafmesh/testing/fixture.hpp"

namespace cafmesh::test {

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
      self->request(to, std::chrono::milliseconds(timeout_ms), std::move(req))
        .then([=](mc_never_atom) {},
              [=](caf::error& e) {
                if (e == caf::sec::unexpected_response)
                  rec(e.context(), caf::error{});
                else
                  rec(caf::message{}, std::move(e));
              });
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

/// A simulated cluster's network plus one message centre per added process.
class sim_world {
public:
  sim_world(testing::fixture& fx, sim_network_config cfg) : fx_(fx) {
    net = fx_.track(spawn_sim_network(fx_.sys, cfg));
  }

  /// Adds a process at `host:port` with the next generation; returns its address.
  silo_address add_silo(const std::string& host, uint16_t port = 11111) {
    silo_address s{host, port, ++generation_};
    centres[s] = fx_.track(spawn_message_center(fx_.sys, s, net));
    return s;
  }

  sim_network_state& net_state() { return testing::fixture::state_of<sim_network_state>(net); }

  /// Registers `h` as `c` on silo `s` (asynchronously; run() delivers it).
  void reg(const silo_address& s, component c, const caf::actor& h) {
    caf::anon_send(centres.at(s), mc_register_atom::value, c, h);
  }

  caf::actor net;
  std::map<silo_address, caf::actor> centres;

private:
  testing::fixture& fx_;
  uint64_t generation_ = 0;
};

/// The fault carried by `e` (`to_fault`).
inline fault fault_of(const caf::error& e) { return to_fault(e); }

} // namespace cafmesh::test
