// S15.03 on whole simulated silos (silo_world): a silo killed and restarted on the same port
// 5 times under request traffic from a pure client with several portals. SPEC §15 C3: within
// the failure-detection bound + 1 s of each restart every portal's responses flow again, no
// pod hub is deactivated as "not here" more than once per restart, and the directory names
// exactly one activation per pod hub. Two mechanisms behind it, each isolated here: an
// inbound attach that gave up after the last view is asserted again
// (docs/behaviour/routing.md#hubs), and a silo re-registers the activations whose directory
// entries died with a departed partition owner
// (docs/behaviour/directory-and-placement.md#restarts-on-the-same-address).

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "s12_stall_world.hpp"
#include "cafmesh/actors/catalog.hpp"
#include "cafmesh/actors/detail/catalog_state.hpp"
#include "cafmesh/actors/directory.hpp"
#include "cafmesh/actors/sim_network.hpp"
#include "cafmesh/routing/gateway_atoms.hpp"

using namespace cafmesh;
using namespace cafmesh::testing;
using namespace std::chrono_literals;
using testing::fixture;

namespace {

/// One request a portal sent: when (fixture ms) and to which portal.
struct sent_request {
  int64_t t_ms = 0;
  size_t portal = 0;
};

/// What one run of the scenario measured.
struct s15_03_run {
  /// Per restart, per portal: ms from the restart to the first response of a request sent
  /// at or after it (-1: none before the next kill).
  std::vector<std::vector<int64_t>> resumed_ms;
  /// Per restart, per portal: requests sent from restart + bound + 1 s until the next kill
  /// that did not end in a response.
  std::vector<std::vector<int>> unanswered_late;
  /// Per restart, per portal: "pod hub {portal} is not here; deactivating" lines from that
  /// kill until the next one.
  std::vector<std::vector<size_t>> not_here;
  /// Per portal: directory entries of its pod hub over the live partitions at the end.
  std::vector<size_t> entries;
  /// Per portal: live pod hub activations over the live catalogs at the end.
  std::vector<size_t> activations;
  /// Per portal: whether the one entry names a live activation of a live silo.
  std::vector<bool> entry_live;
  size_t requests = 0;
  size_t outcomes = 0;
  size_t deadlines = 0;
};

constexpr int restarts = 5;
constexpr size_t portals = 4;
constexpr int hubs = 6;
constexpr int64_t detection_ms = 10000;

/// The live pod hub activations of grain `g` in `s`'s catalog.
size_t activations_of(fixture& fx, silo_world& w, const silo_address& s, const grain_id& g) {
  auto& st = fixture::state_of<cafmesh::detail::catalog_state>(w.at(s).catalog);
  size_t n = 0;
  for (auto& kv : st.activations)
    if (kv.second.grain == g && !kv.second.deactivating)
      ++n;
  (void) fx;
  return n;
}

/// Runs S15.03 with the pure client homed on the silo that is killed (`client_on_x`) or on
/// a silo that stays; the world's seed and link latencies (ms); `down_ms` between a kill and
/// the restart; `up_ms` from a restart to the next kill (the last one runs detection + 5 s).
s15_03_run run_s15_03(fixture& fx, bool client_on_x, uint64_t seed = 1, int64_t lat_min = 0,
                      int64_t lat_max = 0, int64_t down_ms = 500, int64_t up_ms = 15000) {
  s15_03_run out;
  silo_world w{fx, seed, lat_min, lat_max};
  silo_world_options o;
  o.hubs_respond = true;
  auto a = w.add_silo("a", o).addr;
  auto b = w.add_silo("b", o).addr;
  auto x = w.add_silo("x", o).addr;
  REQUIRE(w.last_start->ok());
  REQUIRE(w.cfg.simulation.failure_detection_ms == detection_ms);
  // One pure client, several portals.
  auto pc = client_on(fx, w, "pc", client_on_x ? x : a, "client/p0");
  std::vector<hub_endpoint_actor> ports{pc.hub};
  for (size_t p = 1; p < portals; ++p) {
    auto addr = "client/p" + std::to_string(p);
    auto h = fx.track(spawn_hub_endpoint(fx.sys, address::from(addr), pc.c.routing));
    caf::anon_send(pc.c.routing, rs_register_atom::value, address::from(addr),
                   caf::actor_cast<caf::actor>(h));
    ports.push_back(h);
  }
  fx.run();
  fx.run_for(1s);
  auto off = clock_offset_ms(fx);
  std::map<std::string, sent_request> sent;
  int seq = 0;
  // One request per portal every 100 ms, each to one of the answering node hubs.
  auto traffic_for = [&](int64_t ms) {
    auto until = fx.now_ms() + ms;
    while (fx.now_ms() < until) {
      for (size_t p = 0; p < portals; ++p) {
        auto id = "r" + std::to_string(seq++);
        sent[id] = sent_request{fx.now_ms(), p};
        caf::anon_send(ports[p], routing::ep_request_atom::value,
                       make_delivery(id, "node/Org/H" + std::to_string(seq % hubs)),
                       int64_t{30000});
      }
      fx.run_for(100ms);
    }
  };
  traffic_for(3000);
  std::vector<int64_t> kills, starts;
  for (int r = 0; r < restarts; ++r) {
    kills.push_back(fx.now_ms());
    w.kill(x);
    traffic_for(down_ms);
    starts.push_back(fx.now_ms());
    x = w.restart(x, o).addr;
    REQUIRE(w.last_start->ok());
    traffic_for(r + 1 < restarts ? up_ms : detection_ms + 1000 + 4000);
  }
  kills.push_back(fx.now_ms());
  // Let every request end (30 s deadlines).
  fx.run_for(40s);
  // Responses per portal.
  out.resumed_ms.assign(restarts, std::vector<int64_t>(portals, -1));
  out.unanswered_late.assign(restarts, std::vector<int>(portals, 0));
  out.not_here.assign(restarts, std::vector<size_t>(portals, 0));
  for (int r = 0; r < restarts; ++r) {
    auto from = starts[r];
    auto late = starts[r] + detection_ms + 1000;
    for (auto& [id, s] : sent) {
      if (s.t_ms < from || s.t_ms >= kills[r + 1])
        continue;
      auto os = outcomes_for(ports[s.portal], id);
      bool response = os.size() == 1 && os[0].kind == "response";
      if (response) {
        auto took = os[0].t_ms - off - from;
        auto& best = out.resumed_ms[r][s.portal];
        if (best < 0 || took < best)
          best = took;
      }
      if (s.t_ms >= late && !response)
        ++out.unanswered_late[r][s.portal];
    }
    for (size_t p = 0; p < portals; ++p) {
      auto needle = "pod hub client/p" + std::to_string(p) + " is not here; deactivating";
      for (auto& l : fx.logs.find(needle))
        if (l.t_ms >= kills[r] && l.t_ms < kills[r + 1])
          ++out.not_here[r][p];
    }
  }
  for (size_t p = 0; p < portals; ++p) {
    out.requests = sent.size();
    for (auto& o : hub_of(ports[p]).outcomes) {
      ++out.outcomes;
      if (o.kind == "deadline")
        ++out.deadlines;
    }
  }
  // The directory and the catalogs at the end.
  for (size_t p = 0; p < portals; ++p) {
    grain_id g{"podhub", "client/p" + std::to_string(p)};
    size_t entries = 0, acts = 0;
    bool live = false;
    for (auto& e : w.silos) {
      if (e.gone)
        continue;
      acts += activations_of(fx, w, e.s.addr, g);
      auto r = testing::ask<std::vector<activation_address>>(
        fx, caf::actor_cast<caf::actor>(e.s.partition), dir_entries_atom::value);
      fx.run();
      REQUIRE(r->ok());
      for (auto& ea : r->value) {
        if (ea.grain != g)
          continue;
        ++entries;
        for (auto& e2 : w.silos)
          if (!e2.gone && e2.s.addr == ea.silo) {
            auto& cst = fixture::state_of<cafmesh::detail::catalog_state>(e2.s.catalog);
            auto i = cst.activations.find(ea.tag.value);
            live = i != cst.activations.end() && i->second.grain == g
                   && !i->second.deactivating;
          }
      }
    }
    out.entries.push_back(entries);
    out.activations.push_back(acts);
    out.entry_live.push_back(live);
  }
  return out;
}

/// One line with the run's figures: requests, deadlines, the slowest resumption after a
/// restart and the most "not here" deactivations of one pod hub between two kills.
void report(const s15_03_run& run) {
  int64_t slowest = 0;
  size_t not_here = 0;
  for (int r = 0; r < restarts; ++r)
    for (size_t p = 0; p < portals; ++p) {
      slowest = std::max(slowest, run.resumed_ms[r][p]);
      not_here = std::max(not_here, run.not_here[r][p]);
    }
  MESSAGE("requests " << run.requests << ", outcomes " << run.outcomes << ", by deadline "
                      << run.deadlines << "; slowest resumption " << slowest
                      << " ms after a restart; most not-here deactivations of one pod hub "
                      << "per restart " << not_here);
}

void check_s15_03(const s15_03_run& run) {
  for (int r = 0; r < restarts; ++r) {
    for (size_t p = 0; p < portals; ++p) {
      INFO("restart " << (r + 1) << ", portal client/p" << p);
      CHECK(run.resumed_ms[r][p] >= 0);
      CHECK(run.resumed_ms[r][p] <= detection_ms + 1000);
      CHECK(run.unanswered_late[r][p] == 0);
      CHECK(run.not_here[r][p] <= 1);
    }
  }
  for (size_t p = 0; p < portals; ++p) {
    INFO("portal client/p" << p);
    CHECK(run.entries[p] == 1);
    CHECK(run.entry_live[p]);
    CHECK(run.activations[p] == 1);
  }
  CHECK(run.outcomes == run.requests);
}

} // namespace

TEST_CASE_FIXTURE(fixture, "S15.03 a silo killed and restarted on the same port 5 times under request traffic from a pure client with 4 portals homed on it: every portal's responses flow again within the failure-detection bound + 1 s of each restart, no pod hub is deactivated as not here more than once per restart, and the directory names one activation per pod hub") {
  auto run = run_s15_03(*this, true, 2, 1, 5);
  report(run);
  check_s15_03(run);
}

TEST_CASE_FIXTURE(fixture, "S15.03 a silo killed and restarted on the same port 5 times under request traffic from a pure client with 4 portals homed on another silo: every portal's responses flow again within the failure-detection bound + 1 s of each restart, no pod hub is deactivated as not here more than once per restart, and the directory names one activation per pod hub") {
  auto run = run_s15_03(*this, false, 1, 1, 5);
  report(run);
  check_s15_03(run);
}


namespace {

/// Drops every inbound attach (`gw_attach`) that client `c` sends to a gateway while `*on`
/// holds (its caller sees only its own timeout), leaving every other frame alone.
void block_attaches(fixture& fx, silo_world& w, const silo_address& c,
                    std::shared_ptr<bool> on) {
  drop_predicate p;
  p.pred = [c, on](const wire_frame& f) {
    return *on && f.src == c && f.target == component::gateway && !f.is_response
           && !f.payload.empty() && f.payload.match_element<routing::gw_attach_atom>(0);
  };
  p.count = std::numeric_limits<uint64_t>::max();
  caf::anon_send(w.net, sim_drop_atom::value, std::move(p));
  fx.run();
}

/// A hub endpoint at `addr` registered as a route of the client's routing service.
hub_endpoint_actor portal_of(fixture& fx, const world_client& c, const std::string& addr) {
  auto h = fx.track(spawn_hub_endpoint(fx.sys, address::from(addr), c.routing));
  caf::anon_send(c.routing, rs_register_atom::value, address::from(addr),
                 caf::actor_cast<caf::actor>(h));
  fx.run();
  return h;
}

} // namespace

TEST_CASE_FIXTURE(fixture, "S15.03 an inbound attach that gave up after the last membership view is asserted again: the portal of a client whose gateway was killed and restarted on its address gets responses within the failure-detection bound + 1 s of its attaches getting through") {
  silo_world w{*this};
  silo_world_options o;
  o.hubs_respond = true;
  w.add_silo("a", o);
  auto x = w.add_silo("x", o).addr;
  REQUIRE(w.last_start->ok());
  // Client calls bounded at 1 s, so that an attach whose frame is lost fails in 1 s.
  auto c = w.add_client("pc", x, [](config::mesh_config& cfg) {
    cfg.placement.timeout_ms = 500;
    cfg.grain_call.response_timeout_ms = 500;
  });
  const std::string key = "client/p0";
  auto portal = portal_of(*this, c, key);
  auto& svc = service_of(c.routing);
  REQUIRE(svc.inbound.at(key).attached);
  // The gateway is killed and restarted on its address while every attach of the client is
  // lost: the views of the restart re-assert the attach, and it gives up after the last one.
  auto blocked = std::make_shared<bool>(true);
  block_attaches(*this, w, c.addr, blocked);
  w.kill(x);
  run_for(500ms);
  x = w.restart(x, o).addr;
  REQUIRE(w.last_start->ok());
  run_for(2s);
  REQUIRE(svc.view);
  auto version = svc.view->version;
  run_for(20s);
  REQUIRE(svc.view->version == version); // no view reached the client since
  REQUIRE(svc.stats.attach_gave_up == 1);
  REQUIRE_FALSE(svc.inbound.at(key).attached);
  CHECK(logs.find("inbound attach of client/p0 gave up after", log::level::error).size() == 1);
  // The attaches get through again; no view comes.
  *blocked = false;
  auto t_open = now_ms();
  auto off = clock_offset_ms(*this);
  std::vector<std::pair<std::string, int64_t>> sent;
  while (now_ms() < t_open + detection_ms + 1000 + 4000) {
    auto id = "q" + std::to_string(sent.size());
    sent.emplace_back(id, now_ms());
    caf::anon_send(portal, routing::ep_request_atom::value,
                   make_delivery(id, "node/Org/H" + std::to_string(sent.size() % hubs)),
                   int64_t{30000});
    run_for(100ms);
  }
  run_for(40s);
  CHECK(svc.view->version == version);
  int64_t first = -1;
  size_t late = 0, late_answered = 0;
  for (auto& [id, t] : sent) {
    auto os = outcomes_for(portal, id);
    REQUIRE(os.size() == 1);
    bool response = os[0].kind == "response";
    if (response && (first < 0 || os[0].t_ms - off < first))
      first = os[0].t_ms - off;
    if (t >= t_open + detection_ms + 1000) {
      ++late;
      late_answered += response ? 1 : 0;
    }
  }
  MESSAGE("first response " << (first < 0 ? -1 : first - t_open)
                            << " ms after the attaches got through; " << late_answered << " of "
                            << late << " later requests answered");
  CHECK(first >= t_open);
  CHECK(first <= t_open + detection_ms + 1000);
  CHECK(late == 40);
  CHECK(late_answered == late);
  CHECK(svc.inbound.at(key).attached);
  CHECK(logs.find("inbound attach of client/p0 gave up after", log::level::error).size() == 1);
}

namespace {

/// A pure client's portal whose pod hub lives on a and whose directory entry x holds; x is
/// killed (and, with `restart`, restarted on its address 500 ms later) while a sender on b
/// (and then one on the restarted x) posts to the portal every 100 ms, and the client's own
/// attaches, which would register the pod hub again on every view, are lost.
struct lost_partition_fixture : fixture {
  void run_case(bool restart) {
    silo_world w{*this};
    auto a = w.add_silo("a").addr;
    auto b = w.add_silo("b").addr;
    auto x = w.add_silo("x").addr;
    REQUIRE(w.last_start->ok());
    // A portal whose pod hub's directory entry x holds.
    auto active = ring_of(w, a);
    REQUIRE(active.size() == 3);
    std::string key;
    for (int i = 0; key.empty(); ++i)
      if (ring_owner(active, routing::pod_hub_grain("client/p" + std::to_string(i))) == x)
        key = "client/p" + std::to_string(i);
    auto c = w.add_client("pc", a);
    auto portal = portal_of(*this, c, key);
    REQUIRE(service_of(c.routing).inbound.at(key).attached);
    auto g = routing::pod_hub_grain(key);
    REQUIRE(activations_of(*this, w, a, g) == 1);
    auto sender = cohosted_hub(*this, w, b, "node/Org/Sender");
    // The client's own attaches (re-asserted by every view) cannot repair the directory here.
    auto blocked = std::make_shared<bool>(true);
    block_attaches(*this, w, c.addr, blocked);
    // Posts every 100 ms from b, whose placement cache knows the pod hub, and once x is back
    // (`restart`) from the restarted x, whose placement knows nothing and asks the directory.
    std::vector<std::pair<std::string, hub_endpoint_actor>> sent;
    std::vector<hub_endpoint_actor> senders{sender};
    auto posts_for = [&](int64_t ms) {
      auto until = now_ms() + ms;
      while (now_ms() < until) {
        for (auto& h : senders) {
          auto id = "m" + std::to_string(sent.size());
          sent.emplace_back(id, h);
          caf::anon_send(h, routing::ep_post_atom::value, make_delivery(id, key));
        }
        run_for(100ms);
      }
    };
    posts_for(2000);
    auto t_kill = now_ms();
    w.kill(x);
    posts_for(500);
    if (restart) {
      x = w.restart(x, {}).addr;
      REQUIRE(w.last_start->ok());
      senders.push_back(cohosted_hub(*this, w, x, "node/Org/Restarted"));
    }
    posts_for(detection_ms + 1000 + 4000);
    run_for(40s);
    size_t landed_once = 0, nacked = 0;
    for (auto& [id, h] : sent) {
      landed_once += received_count(portal, id) == 1 ? 1 : 0;
      nacked += outcomes_for(h, id).size();
    }
    auto not_here = logs.find("pod hub " + key + " is not here; deactivating");
    size_t not_here_after_kill = 0;
    for (auto& l : not_here)
      not_here_after_kill += l.t_ms >= t_kill ? 1 : 0;
    MESSAGE(sent.size() << " posts, " << landed_once << " landed once, " << nacked
                        << " NACKed; not-here deactivations " << not_here_after_kill);
    CHECK(landed_once == sent.size());
    CHECK(nacked == 0);
    CHECK(not_here_after_kill <= 1);
    // The directory names the one activation, on a.
    size_t entries = 0, acts = 0;
    for (auto& e : w.silos) {
      if (e.gone)
        continue;
      acts += activations_of(*this, w, e.s.addr, g);
      auto r = testing::ask<std::vector<activation_address>>(
        *this, caf::actor_cast<caf::actor>(e.s.partition), dir_entries_atom::value);
      run();
      REQUIRE(r->ok());
      for (auto& ea : r->value)
        if (ea.grain == g) {
          ++entries;
          CHECK(ea.silo == a);
        }
    }
    CHECK(entries == 1);
    CHECK(acts == 1);
  }
};

} // namespace

TEST_CASE_FIXTURE(lost_partition_fixture, "S15.03 a pod hub whose directory entry died with a killed and restarted silo is registered again by its own silo: posts from another silo and from the restarted one land once each, none is NACKed, and no pod hub is deactivated as not here") {
  run_case(true);
}

TEST_CASE_FIXTURE(lost_partition_fixture, "S15.03 a pod hub whose directory entry died with a killed silo (declared Stopping, then Dead) is registered again by its own silo: posts from another silo land once each, none is NACKed, and no pod hub is deactivated as not here") {
  run_case(false);
}
