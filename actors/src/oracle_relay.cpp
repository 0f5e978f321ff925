#include "cafmesh/actors/net_link.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include <caf/all.hpp>

#include "cafmesh/actors/atoms.hpp"
#include "cafmesh/actors/fault.hpp"
#include "cafmesh/actors/log.hpp"
#include "cafmesh/actors/membership.hpp"
#include "membership_detail.hpp"

// The oracle relay of a process that is not the primary (net_link.hpp, `spawn_oracle_relay`).

namespace cafmesh {

namespace {

struct relay_state {
  net_link_actor link;
  caf::actor oracle;
  /// Why the oracle cannot be reached now (its process is gone or its connection broke);
  /// empty while it can. Cleared when the link learns the primary's oracle again.
  caf::error gone;
  /// Every subscriber of the oracle protocol this relay passed on: subscribed again to each
  /// oracle the relay learns (docs/behaviour/membership.md#when-the-development-tables-process-restarts).
  std::vector<caf::actor> subscribers;
  /// The wait before asking the link for the oracle again after losing it: 100 ms, doubled
  /// after each oracle lost again at once, at most 2000 ms.
  caf::timespan retry = std::chrono::milliseconds(100);
  bool asking = false;  ///< an `nl_oracle_atom` request to the link is pending
  caf::actor_addr lost; ///< the oracle lost last
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

/// The relay's full interface: the oracle protocol it stands in for, and the question which
/// oracle it learnt.
using relay_impl
  = membership_oracle_actor::extend<caf::replies_to<nl_oracle_atom>::with<caf::actor>,
                                    caf::reacts_to<nl_tick_atom>>;

using relay_actor = relay_impl::stateful_base<relay_state>;

/// The answer to everything asked of an oracle whose process is gone: a remote actor of a
/// vanished process swallows what is sent to it, so the relay answers in its place.
caf::error oracle_gone_error(relay_actor* self, const caf::error& reason) {
  fault f{mesh_errc::departed_silo, "the membership oracle cannot be reached: its process is "
                                    "gone ("
                                      + self->system().render(reason)
                                      + "); this process reconnects to the primary and "
                                        "registers again once it is back"};
  return to_error(f);
}

void ask_link(relay_actor* self);

/// The link knows the primary's oracle (again): subscribe every subscriber to it and hand it
/// what waited.
void adopt(relay_actor* self, const caf::actor& o) {
  auto& st = self->state;
  bool again = static_cast<bool>(st.gone);
  st.oracle = o;
  st.gone = caf::error{};
  if (o.address() != st.lost)
    st.retry = std::chrono::milliseconds(100);
  self->monitor(o);
  for (auto& sub : st.subscribers)
    membership_detail::tell(self, o, mb_subscribe_atom::value, sub);
  if (again)
    log::get("net_link")
      .info("membership oracle reachable again: " + std::to_string(st.subscribers.size())
            + " subscription(s) renewed");
}

/// Asks the link for the primary's oracle; the link answers once it knows one.
void ask_link(relay_actor* self) {
  auto& st = self->state;
  if (st.asking || st.oracle || st.refused)
    return;
  st.asking = true;
  self->request(st.link, caf::infinite, nl_oracle_atom::value)
    .then(
      [=](const caf::actor& o) {
        self->state.asking = false;
        if (!self->state.oracle)
          adopt(self, o);
      },
      [=](caf::error& e) {
        // The link gave the primary up (this process stops, or the primary refused it).
        auto& st = self->state;
        st.asking = false;
        st.refused = e;
      });
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

/// Takes one message of the oracle protocol: answered at once with the reason if the oracle
/// can never be or no longer is reached, handed to the oracle if it is known, queued in
/// arrival order otherwise. A one-way message (`rp.async()`) is delegated with its sender.
void relay(relay_actor* self, caf::message msg, caf::response_promise rp) {
  auto& st = self->state;
  if (st.refused)
    rp.deliver(st.refused);
  else if (st.gone)
    rp.deliver(oracle_gone_error(self, st.gone));
  else if (st.oracle)
    forward(self, std::move(msg), rp);
  else
    st.waiting.emplace_back(std::move(msg), rp);
}

/// `relay` for a request that answers `T`: the typed promise the handler returns.
template <class T, class... Ts>
caf::typed_response_promise<T> relay_request(relay_actor* self, Ts&&... xs) {
  auto rp = self->make_response_promise<T>();
  relay(self, caf::make_message(std::forward<Ts>(xs)...), rp);
  return rp;
}

/// `relay` for a one-way message.
template <class... Ts>
void relay_one_way(relay_actor* self, Ts&&... xs) {
  relay(self, caf::make_message(std::forward<Ts>(xs)...), self->make_response_promise());
}

relay_impl::behavior_type oracle_relay(relay_actor* self, net_link_actor link) {
  self->state.link = link;
  self->monitor(link);
  self->set_down_handler([=](caf::down_msg& dm) {
    auto& st = self->state;
    if (st.oracle && dm.source == st.oracle.address()) {
      // Its process stopped or its connection broke: requests fail at once until the link
      // reaches the primary again (docs/behaviour/membership.md#when-the-development-tables-process-restarts).
      st.gone = dm.reason ? dm.reason : caf::make_error(caf::exit_reason::remote_link_unreachable);
      st.oracle = caf::actor{};
      st.lost = dm.source;
      log::get("net_link")
        .warning(
          "membership oracle unreachable: " + self->system().render(st.gone)
          + "; membership requests fail at once until the primary is reached again (retrying)");
      auto in_flight = std::move(st.in_flight);
      st.in_flight.clear();
      for (auto& kv : in_flight)
        kv.second.deliver(oracle_gone_error(self, st.gone));
      // The link may still hold the old oracle for a moment: ask after a short wait, longer
      // each time the oracle it answers is gone at once.
      self->delayed_send(self, st.retry, nl_tick_atom::value);
      st.retry = std::min<caf::timespan>(2 * st.retry, std::chrono::milliseconds(2000));
      return;
    }
    if (dm.source == st.link.address()) {
      for (auto& w : st.waiting)
        w.second.deliver(dm.reason);
      st.waiting.clear();
      self->quit(dm.reason);
      return;
    }
    // A subscriber exited.
    membership_detail::forget(st.subscribers, dm);
  });
  self->request(link, caf::infinite, nl_oracle_atom::value)
    .then(
      [=](const caf::actor& o) {
        auto& st = self->state;
        adopt(self, o);
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
  return {
    [=](mb_join_atom a, membership_row& row) {
      return relay_request<uint64_t>(self, a, std::move(row));
    },
    [=](mb_status_atom a, const silo_address& s, silo_status to) {
      return relay_request<uint64_t>(self, a, s, to);
    },
    [=](mb_dead_atom a, const silo_address& s) { return relay_request<uint64_t>(self, a, s); },
    [=](mb_get_atom a) { return relay_request<membership_snapshot>(self, a); },
    [=](mb_subscribe_atom a, const caf::actor& sub) {
      // Remembered: every oracle learnt later gets the subscription too.
      auto& st = self->state;
      st.subscribers.push_back(sub);
      self->monitor(sub);
      if (st.oracle)
        membership_detail::tell(self, st.oracle, a, sub);
    },
    [=](nl_tick_atom) {
      // After an oracle loss: ask the link for the oracle again.
      ask_link(self);
    },
    [=](sim_watch_atom a, const silo_address& s, bool alive) { relay_one_way(self, a, s, alive); },
    [=](nl_oracle_atom) -> caf::result<caf::actor> {
      if (self->state.oracle)
        return self->state.oracle;
      return caf::make_error(caf::sec::runtime_error, "oracle not known yet");
    },
  };
}

} // namespace

membership_oracle_actor spawn_oracle_relay(caf::actor_system& sys, const net_link_actor& link) {
  return sys.spawn(oracle_relay, link);
}

} // namespace cafmesh
