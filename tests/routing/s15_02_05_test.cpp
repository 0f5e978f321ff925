// A graceful leave and the last silo's stop, on whole simulated silos (silo_world):
// S15.02 (a grain call that reaches a silo after it blocked application messages is refused
// "is leaving; route elsewhere", re-sent and lands elsewhere; no "outcome is unknown") and
// S15.05 (a pure client whose only silo stops NACKs new requests at once `unavailable`
// "no active silo", none ends by its deadline, and no "client overloaded" storm).

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "s12_stall_world.hpp"
#include "cafmesh/actors/message_center.hpp"
#include "cafmesh/actors/stage.hpp"
#include "cafmesh/routing/router_core.hpp"

using namespace cafmesh;
using namespace cafmesh::testing;
using namespace std::chrono_literals;
using testing::fixture;

namespace {

using release_atom = caf::atom_constant<caf::atom("t15rel")>;

/// What a holding observer saw: the virtual ms its stop began (-1: not yet).
struct held_stop {
  int64_t stop_ms = -1;
  caf::response_promise rp;
};

/// A lifecycle observer whose stop stays open until it receives `release_atom`: it keeps a
/// stopping silo between two stages for as long as a test needs.
caf::behavior holding_observer(caf::event_based_actor* self, std::shared_ptr<held_stop> h,
                               fixture* fx) {
  return {
    [=](lifecycle::start_stage_atom, lifecycle::stage) { return caf::ok_atom::value; },
    [=](lifecycle::stop_stage_atom, lifecycle::stage, bool) -> caf::response_promise {
      h->stop_ms = fx->now_ms();
      h->rp = self->make_response_promise();
      return h->rp;
    },
    [=](lifecycle::budget_expired_atom) {},
    [=](release_atom) {
      if (h->rp.pending())
        h->rp.deliver(caf::ok_atom::value);
    },
  };
}

/// A co-hosted portal hub `addr` of silo `s` whose pod hub `s`'s claimer claims.
hub_endpoint_actor add_portal(fixture& fx, silo_world& w, const silo_address& s,
                              const std::string& addr) {
  auto h = cohosted_hub(fx, w, s, addr);
  caf::anon_send(w.at(s).claimer, routing::pc_claim_atom::value, address::from(addr));
  fx.run();
  return h;
}

/// Every delivery id the application hubs of silo `s` took in.
std::set<std::string> received_on(silo_world& w, const silo_address& s) {
  std::set<std::string> out;
  for (auto& kv : fixture::state_of<test_hub_factory_state>(w.entry(s).hubs).hubs)
    for (auto& r : hub_of(kv.second).received)
      out.insert(r.env.id);
  return out;
}

message_center_stats centre_stats(fixture& fx, const caf::actor& centre) {
  auto r = testing::ask<message_center_stats>(fx, centre, mc_stats_atom::value);
  fx.run();
  REQUIRE(r->ok());
  return r->value;
}

} // namespace

TEST_CASE_FIXTURE(fixture, "S15.02 a grain call that reaches silo S after S blocked application messages during a graceful stop is refused 'is leaving; route elsewhere', re-sent and answered on another silo; no NACK says 'outcome is unknown'") {
  silo_world w{*this};
  // S's stop is held between RuntimeServices (4000: the centre blocks application messages)
  // and placement (2001), so S's centre still runs while the held calls arrive.
  auto hold = std::make_shared<held_stop>();
  auto holder = caf::actor_cast<lifecycle::lifecycle_observer_actor>(
    track(sys.spawn(holding_observer, hold, static_cast<fixture*>(this))));
  silo_world_options os;
  os.hubs_respond = true;
  os.probes.emplace_back(lifecycle::stage{3000}, "hold-3000", holder);
  auto s = w.add_silo("s", os).addr;
  // Eight answering node hubs live on S: activated while S is the only silo.
  constexpr int hubs = 8;
  auto ps = add_portal(*this, w, s, "portal/ps");
  for (int h = 1; h <= hubs; ++h)
    caf::anon_send(ps, routing::ep_post_atom::value,
                   make_delivery("warm" + std::to_string(h), "node/Org/H" + std::to_string(h)));
  run_for(1s);
  REQUIRE(fixture::state_of<test_hub_factory_state>(w.entry(s).hubs).built.size() == hubs);
  silo_world_options ob;
  ob.hubs_respond = true;
  auto b = w.add_silo("b", ob).addr;
  auto pb = add_portal(*this, w, b, "portal/pb");
  run_for(1s);
  // Round 1 from B's portal: answered by S's hubs; B's placement now knows where they are.
  for (int h = 1; h <= hubs; ++h)
    caf::anon_send(pb, routing::ep_request_atom::value,
                   make_delivery("w" + std::to_string(h), "node/Org/H" + std::to_string(h)),
                   int64_t{30000});
  REQUIRE(run_until([&] { return hub_of(pb).outcomes.size() == hubs; }, 10s));
  // Round 2: B's grain calls to S's activations are held on the wire (a partition) while
  // S stops gracefully and blocks application messages.
  caf::anon_send(w.net, sim_partition_atom::value, b, s);
  run();
  for (int h = 1; h <= hubs; ++h)
    caf::anon_send(pb, routing::ep_request_atom::value,
                   make_delivery("q" + std::to_string(h), "node/Org/H" + std::to_string(h)),
                   int64_t{30000});
  run_for(100ms);
  REQUIRE(hub_of(pb).outcomes.size() == hubs);
  auto stopped = w.stop(s, true);
  REQUIRE(run_until([&] { return hold->stop_ms >= 0; }, 10s));
  REQUIRE(logs.count(lifecycle::silo_event_text::messages_blocked) == 1);
  CHECK(centre_stats(*this, w.at(s).centre).blocked == 0);
  // The partition heals: the held calls reach S's centre, which still runs and refuses each.
  auto t_heal = now_ms();
  caf::anon_send(w.net, sim_heal_atom::value, b, s);
  REQUIRE(run_until([&] { return hub_of(pb).outcomes.size() == 2 * hubs; }, 20s));
  CHECK(centre_stats(*this, w.at(s).centre).blocked == hubs);
  // Every round-2 request: one outcome, a response, after one refused attempt and the
  // router policy's first retry delay (250 ms).
  std::map<std::string, int> kinds;
  for (auto& o : hub_of(pb).outcomes)
    ++kinds[o.kind];
  CHECK(kinds["response"] == 2 * hubs);
  CHECK(kinds["nack"] == 0);
  CHECK(kinds["deadline"] == 0);
  auto leaving = "silo " + s.to_string() + " is leaving; route elsewhere";
  auto on_b = received_on(w, b);
  auto on_s = received_on(w, s);
  for (int h = 1; h <= hubs; ++h) {
    auto id = "q" + std::to_string(h);
    INFO("request " << id);
    auto os_ = outcomes_for(pb, id);
    REQUIRE(os_.size() == 1);
    CHECK(os_[0].kind == "response");
    CHECK(os_[0].t_ms - clock_offset_ms(*this) == t_heal + 250);
    CHECK(on_b.count(id) == 1);
    CHECK(on_s.count(id) == 0);
    // The one refusal the leg saw, at the heal, and re-sent on.
    auto failed = logs.find("delivery " + id + ": attempt ");
    REQUIRE(failed.size() == 1);
    CHECK(failed[0].t_ms == t_heal);
    CHECK(contains(failed[0].text, "delivery " + id + ": attempt 1 failed (" + leaving
                                     + "); retry in 250 ms, re-resolving"));
  }
  CHECK(logs.count("outcome is unknown") == 0);
  // S's stop goes on once released and completes.
  caf::anon_send(caf::actor_cast<caf::actor>(holder), release_atom::value);
  REQUIRE(run_until([&] { return stopped->done; }, 60s));
  CHECK(stopped->ok());
}
