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

TEST_CASE_FIXTURE(fixture, "S15.02 a grain call that reaches silo S after S blocked application messages during a graceful stop is refused as leaving, re-sent and answered on another silo, and no NACK says 'outcome is unknown'") {
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

TEST_CASE_FIXTURE(fixture, "S15.05 a pure client whose only silo stops gracefully: every request sent after the stopping signal ends within 1 s with unavailable 'no active silo' or an answer, none by its deadline") {
  // Every frame takes 10 ms: requests are on their way to the gateway and back when A stops.
  silo_world w{*this, 1, 10, 10};
  silo_world_options oa;
  oa.hubs_respond = true;
  auto a = w.add_silo("a", oa).addr;
  auto pc = client_on(*this, w, "pc", a, "client/pc1");
  auto& svc = service_of(pc.c.routing);
  // Warm: the node hubs exist on A.
  constexpr int hubs = 4;
  for (int h = 1; h <= hubs; ++h)
    caf::anon_send(pc.hub, routing::ep_request_atom::value,
                   make_delivery("warm" + std::to_string(h), "node/Org/H" + std::to_string(h)),
                   int64_t{30000});
  REQUIRE(run_until([&] { return hub_of(pc.hub).outcomes.size() == hubs; }, 10s));
  // 150 requests, one every 10 ms; A is stopped gracefully before request 50 (its host
  // sends the stopping signal in the same virtual millisecond).
  constexpr int total = 150;
  constexpr int before_stop = 50;
  std::map<std::string, int64_t> sent_ms;
  std::shared_ptr<testing::reply<caf::ok_atom>> stopped;
  auto off = clock_offset_ms(*this);
  for (int i = 0; i < total; ++i) {
    if (i == before_stop)
      stopped = w.stop(a, true);
    auto id = "q" + std::to_string(i);
    sent_ms[id] = now_ms();
    caf::anon_send(pc.hub, routing::ep_request_atom::value,
                   make_delivery(id, "node/Org/H" + std::to_string(i % hubs + 1)),
                   int64_t{30000});
    run_for(10ms);
  }
  REQUIRE(run_until([&] { return hub_of(pc.hub).outcomes.size() == hubs + total; }, 60s));
  REQUIRE(run_until([&] { return stopped->done; }, 60s));
  CHECK(stopped->ok());
  // A's stop: the Active hold waits 50 ms for the 4 responses in flight, which ride one batch
  // of the client's channel to its pod hub (docs/behaviour/routing.md#channel-batches), then
  // ShuttingDown is published. (Before responses rode batches, 26 queued one behind another
  // and the hold took 510 ms.)
  auto t_stop = sent_ms["q" + std::to_string(before_stop)];
  auto shutting_down = w.first(a, "membership: ShuttingDown published");
  REQUIRE(shutting_down.t_ms >= 0);
  CHECK(shutting_down.t_ms - t_stop == 50);
  CHECK(logs.count("routing quiescence: holding silo stop for 4 route leg(s)") == 1);
  std::map<std::string, int> kinds;
  int after_answered = 0, after_no_silo = 0;
  int64_t slowest_after_ms = 0;
  for (int i = 0; i < total; ++i) {
    auto id = "q" + std::to_string(i);
    INFO("request " << id);
    auto os_ = outcomes_for(pc.hub, id);
    REQUIRE(os_.size() == 1);
    ++kinds[os_[0].kind];
    if (i < before_stop) {
      CHECK(os_[0].kind == "response");
      continue;
    }
    auto took = os_[0].t_ms - off - sent_ms[id];
    slowest_after_ms = std::max(slowest_after_ms, took);
    CHECK(took <= 1000);
    // Sent before A showed ShuttingDown: NACKed when the view showing it arrived, or, if its
    // call to A was on the wire then, when A's refusal came back (one 20 ms round trip);
    // sent later: at once.
    auto ends_from = std::max(sent_ms[id], shutting_down.t_ms);
    CHECK(os_[0].t_ms - off >= ends_from);
    CHECK(os_[0].t_ms - off <= ends_from + 20);
    if (os_[0].kind == "response") {
      ++after_answered;
    } else {
      CHECK(os_[0].kind == "nack");
      CHECK(os_[0].verdict == verdict::unavailable);
      CHECK(contains(os_[0].message, "no active silo"));
      CHECK_FALSE(contains(os_[0].message, "overloaded"));
      ++after_no_silo;
    }
  }
  CHECK(kinds["deadline"] == 0);
  CHECK(kinds["response"] == before_stop);
  CHECK(after_answered == 0);
  CHECK(after_no_silo == total - before_stop);
  CHECK(slowest_after_ms == 50);
  CHECK(svc.stats.refused_overloaded == 0);
  CHECK(svc.dispatches.empty());
}

TEST_CASE_FIXTURE(fixture, "S15.05 a pure client without a usable gateway NACKs requests 'no active silo' at once and never says 'client overloaded', however many deliveries its sender piles up") {
  silo_world w{*this};
  auto a = w.add_silo("a").addr;
  // A pure client homed on A, whose admission bound is 8 dispatches.
  auto c = w.add_client("pc", a, [](config::mesh_config& cfg) { cfg.gateway.max_outstanding = 8; });
  auto hub = track(spawn_hub_endpoint(sys, address::from("client/pc1"), c.routing));
  caf::anon_send(c.routing, rs_register_atom::value, address::from("client/pc1"),
                 caf::actor_cast<caf::actor>(hub));
  run();
  auto& svc = service_of(c.routing);
  REQUIRE(svc.opts.max_outstanding == 8);
  auto stopped = w.stop(a, true);
  REQUIRE(run_until([&] { return stopped->done; }, 60s));
  REQUIRE(svc.view);
  CHECK(svc.view->active_set().empty());
  // Four times the client's admission bound, in one virtual millisecond.
  auto t0 = now_ms();
  auto off = clock_offset_ms(*this);
  auto attempts0 = svc.stats.client_attempts;
  for (int i = 0; i < 32; ++i)
    caf::anon_send(hub, routing::ep_request_atom::value,
                   make_delivery("r" + std::to_string(i), "node/Org/H1"), int64_t{30000});
  run();
  REQUIRE(hub_of(hub).outcomes.size() == 32);
  for (auto& o : hub_of(hub).outcomes) {
    INFO("request " << o.id);
    CHECK(o.kind == "nack");
    CHECK(o.verdict == verdict::unavailable);
    CHECK(o.t_ms - off == t0);
    CHECK(o.message
          == "Delivery to 'node/Org/H1' failed: no active silo: client " + svc.opts.process_name
               + " knows no Active silo to use as its gateway (membership v"
               + std::to_string(svc.view->version)
               + "; the last silo stopped, or none has started); send again once a silo is "
                 "Active");
  }
  CHECK(svc.stats.refused_overloaded == 0);
  CHECK(svc.stats.no_silo_nacks == 32);
  CHECK(svc.stats.client_attempts == attempts0); // nothing was dispatched
  CHECK(svc.dispatches.empty());
  // Posts keep the client retry policy (a silo may become Active within it, S12.27); beyond
  // the admission bound they too are told why, not "client overloaded".
  auto t1 = now_ms();
  for (int i = 0; i < 12; ++i)
    caf::anon_send(hub, routing::ep_post_atom::value,
                   make_delivery("p" + std::to_string(i), "node/Org/H1"));
  run();
  CHECK(svc.dispatches.size() == 8);
  REQUIRE(hub_of(hub).outcomes.size() == 32 + 4);
  for (size_t k = 32; k < 36; ++k) {
    auto& o = hub_of(hub).outcomes[k];
    INFO("post " << o.id);
    CHECK(o.kind == "nack");
    CHECK(o.verdict == verdict::unavailable);
    CHECK(o.t_ms - off == t1);
    CHECK(contains(o.message, "failed: no active silo: client " + svc.opts.process_name));
    CHECK(contains(o.message, "(8 deliveries wait for one; retry after 500 ms)"));
    CHECK_FALSE(contains(o.message, "overloaded"));
  }
  CHECK(svc.stats.refused_overloaded == 0);
  CHECK(svc.stats.no_silo_nacks == 36);
  // The 8 waiting posts end after the client retry budget (6.2 s), as before.
  REQUIRE(run_until([&] { return hub_of(hub).outcomes.size() == 44; }, 10s));
  for (size_t k = 36; k < 44; ++k) {
    auto& o = hub_of(hub).outcomes[k];
    INFO("post " << o.id);
    CHECK(o.kind == "nack");
    CHECK(o.verdict == verdict::shutting_down);
    CHECK(o.t_ms - off == t1 + 6200);
  }
  CHECK(svc.dispatches.empty());
}
