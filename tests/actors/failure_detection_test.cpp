// S15.07 in virtual time (SPEC §15 C6,
// docs/behaviour/membership.md#the-failure-detection-bound): three network links run under
// the test coordinator as each other's peers, without sockets (a link in an actor system
// without the io middleman listens nowhere, and the test hands each link the others'
// hellos). A silo that falls silent is declared Dead by the others exactly
// `network.failure_detection_ms` after the last message they heard from it, whatever the
// phases of the links' heartbeat ticks: on the development oracle (the primary's link
// reports) and on table oracles over the in-process membership table (the etcd provider's
// protocol: every link reports to its own oracle, and two votes of three Active silos
// declare). A silo silent for less than that is never declared Dead.

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <utility>
#include <vector>

#include <caf/all.hpp>

#include "cafmesh/actors/atoms.hpp"
#include "cafmesh/actors/membership.hpp"
#include "cafmesh/actors/membership_table_oracle.hpp"
#include "cafmesh/actors/net_link.hpp"
#include "cafmesh/testing/ask.hpp"
#include "cafmesh/testing/fixture.hpp"

using namespace cafmesh;
using namespace std::chrono_literals;
using cafmesh::testing::ask;

namespace {

constexpr int64_t heartbeat_interval_ms = 1000;
constexpr int64_t failure_detection_ms = 10000;

/// Which oracle the three silos share.
enum class oracle_kind {
  development, ///< one development oracle, hosted by silo 0 (the primary)
  table,       ///< one table oracle per silo over a shared in-process membership table
};

/// Views a subscriber received, each with the virtual time it arrived.
using timed_views = std::vector<std::pair<int64_t, membership_snapshot>>;

struct detection_world : cafmesh::testing::fixture {
  std::vector<silo_address> silos{{"127.0.0.1", 7001, 1},
                                  {"127.0.0.1", 7002, 1},
                                  {"127.0.0.1", 7003, 1}};
  std::vector<net_link_actor> links;
  std::vector<membership_oracle_actor> oracles; ///< the oracle each silo joins through
  std::shared_ptr<timed_views> views = std::make_shared<timed_views>();

  config::network_section network(size_t i, oracle_kind kind) const {
    config::network_section net;
    net.host = "127.0.0.1";
    net.port = silos[i].port;
    net.primary_host = "127.0.0.1";
    net.primary_port = kind == oracle_kind::development && i > 0 ? silos[0].port : 0;
    net.heartbeat_interval_ms = heartbeat_interval_ms;
    net.failure_detection_ms = failure_detection_ms;
    return net;
  }

  /// A centre that takes whatever its link hands it and does nothing with it.
  caf::actor quiet_centre() {
    return track(sys.spawn([]() -> caf::behavior {
      return {
        [](mc_frame_atom, const wire_frame&) {},
        [](mc_frames_atom, const std::vector<wire_frame>&) {},
        [](mc_bounce_atom, const wire_frame&) {},
        [](mc_gone_atom, const silo_address&) {},
      };
    }));
  }

  /// Spawns the links and oracles, attaches silo i's link at `attach_ms[i]` (the phases of
  /// their ticks), introduces every link to every other, and makes the three silos Active;
  /// `views` records what silo 0's oracle publishes from then on.
  void start(oracle_kind kind, const std::vector<int64_t>& attach_ms) {
    auto table = std::make_shared<in_process_membership_table>();
    for (size_t i = 0; i < silos.size(); ++i) {
      auto net = network(i, kind);
      membership_oracle_actor oracle;
      auto scope = link_oracle::cluster;
      if (kind == oracle_kind::table) {
        membership_table_oracle_config ocfg;
        ocfg.detection_ms = oracle_detection_ms(net);
        oracle = track(spawn_membership_table_oracle(sys, table, ocfg));
        scope = link_oracle::own;
      } else if (i == 0) {
        oracle = track(spawn_membership_oracle(
          sys, membership_oracle_config{oracle_detection_ms(net), 1}));
      }
      links.push_back(track(spawn_net_link(sys, net, oracle, scope)));
      oracles.push_back(oracle ? oracle : oracles.front());
    }
    run();
    for (size_t i = 0; i < silos.size(); ++i) {
      run_to(attach_ms[i]);
      caf::anon_send(links[i], sim_attach_atom::value, silos[i], quiet_centre());
      run();
    }
    for (size_t i = 0; i < silos.size(); ++i)
      for (size_t j = 0; j < silos.size(); ++j)
        if (i != j)
          caf::anon_send(links[i], nl_hello_atom::value, silos[j],
                         caf::actor_cast<caf::actor>(links[j]));
    run();
    for (size_t i = 0; i < silos.size(); ++i) {
      membership_row row;
      row.silo = silos[i];
      auto j = ask<uint64_t>(*this, oracles[i], mb_join_atom::value, row);
      REQUIRE(run_until([&] { return j->done; }));
      REQUIRE(j->ok());
      auto a = ask<uint64_t>(*this, oracles[i], mb_status_atom::value, silos[i],
                             silo_status::active);
      REQUIRE(run_until([&] { return a->done; }));
      REQUIRE(a->ok());
    }
    auto out = views;
    auto fx = this;
    auto sub = track(sys.spawn([out, fx](caf::event_based_actor*) -> caf::behavior {
      return {[out, fx](mb_snapshot_atom, const membership_snapshot& s) {
        out->emplace_back(fx->now_ms(), s);
      }};
    }));
    caf::anon_send(oracles[0], mb_subscribe_atom::value, sub);
    run();
    REQUIRE(!views->empty());
    for (auto& s : silos)
      REQUIRE(views->back().second.is_active(s));
  }

  /// Silo i's centre hands its link a one-way frame for every other silo, which their links
  /// hear at once (the last message they hear from silo i if it falls silent now).
  void speak(size_t i) {
    for (size_t j = 0; j < silos.size(); ++j) {
      if (j == i)
        continue;
      wire_frame f;
      f.src = silos[i];
      f.dst = silos[j];
      f.target = component::none;
      caf::anon_send(links[i], sim_frame_atom::value, std::move(f));
    }
    run();
  }

  /// Silo i falls silent (a detected stall: no frame, no heartbeat either way), or speaks
  /// again.
  void silence(size_t i, bool on) {
    caf::anon_send(links[i], nl_stall_atom::value, on, true);
    run();
  }

  /// When the links suspected silo 2 (virtual ms, in order).
  std::vector<int64_t> suspected_at() const {
    std::vector<int64_t> out;
    for (auto& l : logs.find("peer S127.0.0.1:7003@1 silent for 2000 ms: suspected"))
      out.push_back(l.t_ms);
    return out;
  }

  /// The virtual time of the first view of silo 0's oracle that shows `s` Dead, -1 if none.
  int64_t dead_at(const silo_address& s) const {
    for (auto& [t, view] : *views)
      if (view.status_of(s) == silo_status::dead)
        return t;
    return -1;
  }
};

} // namespace

TEST_CASE_FIXTURE(detection_world, "S15.07 in virtual time: on the development oracle a silo silent from t0 is declared Dead at exactly t0 + failure_detection_ms, whatever the phase of the primary's tick") {
  // Ticks at 0 (silo 0, the primary's link reports), 400 and 700 ms (+ k s); silo 2 speaks
  // last at 5,300 ms, between two ticks.
  start(oracle_kind::development, {0, 400, 700});
  run_to(5300);
  speak(2);
  silence(2, true);
  const int64_t t0 = 5300;
  REQUIRE(run_until([&] { return dead_at(silos[2]) >= 0; }, 30s));
  CHECK(dead_at(silos[2]) == t0 + failure_detection_ms);
  // Both other links suspect it when its silence reaches suspect_ms (2,000 ms), not on
  // their next ticks (at 8,000 and 7,400 ms); the primary's report starts the oracle's
  // remaining 8,000 ms.
  CHECK(suspected_at() == std::vector<int64_t>{t0 + 2000, t0 + 2000});
  CHECK(dead_at(silos[0]) == -1);
  CHECK(dead_at(silos[1]) == -1);
}

TEST_CASE_FIXTURE(detection_world, "S15.07 in virtual time: on table oracles (the etcd provider's protocol) the two others' votes declare a silo silent from t0 Dead at exactly t0 + failure_detection_ms, their ticks in different phases") {
  start(oracle_kind::table, {0, 400, 700});
  run_to(5300);
  speak(2);
  silence(2, true);
  const int64_t t0 = 5300;
  REQUIRE(run_until([&] { return dead_at(silos[2]) >= 0; }, 30s));
  CHECK(dead_at(silos[2]) == t0 + failure_detection_ms);
  CHECK(suspected_at() == std::vector<int64_t>{t0 + 2000, t0 + 2000});
  auto& declared = *std::find_if(views->begin(), views->end(), [&](const auto& tv) {
    return tv.second.status_of(silos[2]) == silo_status::dead;
  });
  CHECK(declared.second.is_active(silos[0]));
  CHECK(declared.second.is_active(silos[1]));
  CHECK(logs.count("S127.0.0.1:7003@1 suspected for 8000 ms: voted") == 1);
  CHECK(logs.count("S127.0.0.1:7003@1 suspected for 8000 ms: this vote declared it Dead") == 1);
}

TEST_CASE("S15.07 in virtual time: a silo silent for less than failure_detection_ms is suspected, speaks again and is never declared Dead") {
  for (auto kind : {oracle_kind::development, oracle_kind::table}) {
    CAPTURE(static_cast<int>(kind));
    detection_world w;
    w.start(kind, {0, 400, 700});
    w.run_to(5300);
    w.speak(2);
    w.silence(2, true);
    // Silo 2 speaks again at 14,300 ms (its held frames, none) and its next tick's heartbeat
    // reaches the others at 14,700 ms: 9,400 ms of silence.
    w.run_to(14300);
    w.silence(2, false);
    w.run_to(40000);
    CHECK(w.dead_at(w.silos[2]) == -1);
    CHECK(w.views->back().second.is_active(w.silos[2]));
    CHECK(w.logs.count("peer S127.0.0.1:7003@1 speaks again") >= 1);
  }
}
