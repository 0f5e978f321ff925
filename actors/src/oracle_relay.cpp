#include "cafmesh/actors/net_link.hpp"

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include <caf/all.hpp>

#include "cafmesh/actors/atoms.hpp"
#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/log.hpp"
#include "cafmesh/actors/membership.hpp"

// The oracle relay of a process that is not the primary (net_link.hpp, `spawn_oracle_relay`).

namespace cafmesh {

namespace {

struct relay_state {
  caf::actor oracle;
  /// Why the oracle cannot be reached any more (its process is gone); empty while it can.
  caf::error gone;
  /// Why the oracle can never be reached (the link's answer: the primary refused this
  /// process's credentials); empty otherwise.
  caf::error refused;
  std::vector<std::pair<caf::message, caf::response_promise>> waiting;
  /// Requests the oracle has not answered yet, by the relay's own number: answered
  /// `oracle_gone_error` if its process goes away first (a request to a vanished remote
  /// actor is never answered otherwise).
  std::map<uint64_t, caf::response_promise> in_flight;
  uint64_t next_request = 0;
  static const char* name;
};

const char* relay_state::name = "cafmesh.oracle_relay";

using relay_actor = caf::stateful_actor<relay_state>;

/// The answer to everything asked of an oracle whose process is gone: a remote actor of a
/// vanished process swallows what is sent to it, so the relay answers in its place.
caf::error oracle_gone_error(relay_actor* self, const caf::error& reason) {
  fault f{mesh_errc::departed_silo, "the membership oracle cannot be reached: its process is "
                                    "gone ("
                                      + self->system().render(reason) + ")"};
  return to_error(f);
}

/// Hands `msg` to the oracle and its answer to `rp`. The oracle's requests answer a version
/// (`uint64_t`) or, for `mb_get_atom`, a snapshot; they are asked by the relay itself so that
/// they can be failed if the oracle's process vanishes. Anything else is delegated.
void forward(relay_actor* self, caf::message msg, caf::response_promise rp) {
  auto& st = self->state;
  bool versioned = msg.match_element<mb_join_atom>(0) || msg.match_element<mb_status_atom>(0)
                   || msg.match_element<mb_dead_atom>(0);
  bool snapshot = msg.match_element<mb_get_atom>(0);
  if (!versioned && !snapshot) {
    rp.delegate(st.oracle, std::move(msg));
    return;
  }
  auto id = ++st.next_request;
  st.in_flight.emplace(id, rp);
  auto done = [=](auto&& answer) {
    auto& st = self->state;
    auto i = st.in_flight.find(id);
    if (i == st.in_flight.end())
      return; // already failed: the oracle's process had gone
    auto p = i->second;
    st.in_flight.erase(i);
    p.deliver(std::forward<decltype(answer)>(answer));
  };
  if (versioned)
    self->request(st.oracle, caf::infinite, std::move(msg))
      .then([=](uint64_t v) { done(v); }, [=](caf::error& e) { done(std::move(e)); });
  else
    self->request(st.oracle, caf::infinite, std::move(msg))
      .then([=](membership_snapshot& x) { done(std::move(x)); },
            [=](caf::error& e) { done(std::move(e)); });
}

caf::behavior oracle_relay(relay_actor* self, caf::actor link) {
  self->monitor(link);
  self->set_down_handler([=](caf::down_msg& dm) {
    auto& st = self->state;
    if (st.oracle && dm.source == st.oracle.address()) {
      st.gone = dm.reason ? dm.reason : caf::make_error(caf::exit_reason::remote_link_unreachable);
      st.oracle = caf::actor{};
      log::get("net_link").warning("membership oracle unreachable: "
                                   + self->system().render(st.gone)
                                   + "; membership requests fail at once from now on");
      auto in_flight = std::move(st.in_flight);
      st.in_flight.clear();
      for (auto& kv : in_flight)
        kv.second.deliver(oracle_gone_error(self, st.gone));
      return;
    }
    for (auto& w : st.waiting)
      w.second.deliver(dm.reason);
    st.waiting.clear();
    self->quit(dm.reason);
  });
  self->set_default_handler(
    [=](caf::scheduled_actor*, caf::message_view& x) -> caf::result<caf::message> {
      auto msg = x.move_content_to_message();
      auto rp = self->make_response_promise();
      auto& st = self->state;
      if (st.refused)
        rp.deliver(st.refused);
      else if (st.gone)
        rp.deliver(oracle_gone_error(self, st.gone));
      else if (st.oracle)
        forward(self, std::move(msg), rp);
      else
        st.waiting.emplace_back(std::move(msg), rp);
      return rp;
    });
  self->request(link, caf::infinite, nl_oracle_atom::value)
    .then(
      [=](const caf::actor& o) {
        auto& st = self->state;
        st.oracle = o;
        self->monitor(o);
        auto waiting = std::move(st.waiting);
        st.waiting.clear();
        for (auto& w : waiting)
          forward(self, std::move(w.first), w.second);
      },
      [=](caf::error& e) {
        // The primary refused this process (docs/behaviour/peer-authentication.md): every
        // request, now and later, is answered with that error (a one-way message has no
        // one to answer: an error sent back for it would reach its sender as a stray
        // response).
        auto& st = self->state;
        st.refused = e;
        for (auto& w : st.waiting)
          if (!w.second.async())
            w.second.deliver(e);
        st.waiting.clear();
      });
  // Every other message goes through the default handler above.
  return {
    [=](nl_oracle_atom) -> caf::result<caf::actor> {
      if (self->state.oracle)
        return self->state.oracle;
      return caf::make_error(caf::sec::runtime_error, "oracle not known yet");
    },
  };
}

} // namespace

caf::actor spawn_oracle_relay(caf::actor_system& sys, const caf::actor& link) {
  return sys.spawn(oracle_relay, link);
}

} // namespace cafmesh
