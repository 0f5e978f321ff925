// Pure-client inbound attach (docs/behaviour/routing.md#the-entry "Pure client inbound attach",
// docs/behaviour/membership.md#gateways-for-pure-clients gateways and stop-send,
// docs/behaviour/routing.md#hubs pod hubs, docs/behaviour/routing.md#nacks NACK rung c): hubs
// hosted in a pure client receive deliveries, responses and NACKs through a pod hub on the client's
// gateway silo.

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cafmesh/testing/silo_world.hpp"
#include "cafmesh/actors/detail/catalog_state.hpp"

using namespace cafmesh;
using namespace cafmesh::testing;
using namespace std::chrono_literals;
using testing::fixture;

namespace {

const std::string portal_path = "portal/user1/tab1";

std::vector<std::string> received_ids(const routing::hub_endpoint_actor& hub) {
  std::vector<std::string> out;
  for (auto& r : hub_of(hub).received)
    out.push_back(r.env.id);
  return out;
}

/// The fixture's virtual ms as actor-clock ms (what actor states record).
int64_t clock_ms(fixture& fx, int64_t virtual_ms) {
  using namespace std::chrono;
  auto now = duration_cast<milliseconds>(fx.sys.clock().now().time_since_epoch()).count();
  return now - fx.now_ms() + virtual_ms;
}

size_t activations_of(const lifecycle::silo_components& s, const grain_id& g) {
  auto& cat = fixture::state_of<cafmesh::detail::catalog_state>(s.catalog);
  auto i = cat.by_grain.find(g);
  return i == cat.by_grain.end() ? 0 : i->second.size();
}

/// Silos a and b, a pure client c whose gateway is a with the portal attached through it, and
/// a sender hub on a.
struct gateway_setup {
  silo_address a;
  world_client c;
  routing::hub_endpoint_actor portal;
  routing::hub_endpoint_actor sender;
};

gateway_setup portal_behind_gateway(fixture& fx, silo_world& w) {
  gateway_setup g;
  g.a = w.add_silo("a").addr;
  w.add_silo("b");
  g.c = w.add_client("c", g.a);
  g.portal = add_hub(fx, g.c.routing, portal_path);
  g.sender = add_hub(fx, w.at(g.a).routing, "node/Org/Sender");
  fx.run();
  REQUIRE(service_of(g.c.routing).inbound.at(portal_path).attached);
  return g;
}

} // namespace

TEST_CASE_FIXTURE(fixture, "client inbound: a post and a stream frame from a silo hub land at a pure-client portal in order") {
  silo_world w{*this};
  auto a = w.add_silo("a").addr;
  auto b = w.add_silo("b").addr;
  auto c = w.add_client("c", a);
  auto portal = add_hub(*this, c.routing, portal_path);
  run();
  auto& svc = service_of(c.routing);
  REQUIRE(svc.inbound.count(portal_path) == 1);
  auto& in = svc.inbound.at(portal_path);
  CHECK(in.attached);
  CHECK_FALSE(in.first);
  CHECK(in.attempt_ms.size() == 1);
  CHECK(in.attached_at == std::vector<silo_address>{a});
  // The gateway attached the pod hub on its own silo (prefer-local) and knows the client.
  CHECK(activations_of(w.at(a), grain_id{"podhub", portal_path}) == 1);
  CHECK(activations_of(w.at(b), grain_id{"podhub", portal_path}) == 0);
  auto clients = testing::ask<std::vector<silo_address>>(*this, w.at(a).gateway,
                                                          routing::gw_clients_atom::value);
  run();
  REQUIRE(clients->ok());
  CHECK(clients->value == std::vector<silo_address>{c.addr});
  // A co-hosted hub on silo A posts, then sends a stream frame (ordering key set).
  auto sender = add_hub(*this, w.at(a).routing, "node/Org/Sender");
  run();
  caf::anon_send(sender, routing::ep_post_atom::value, make_delivery("post-1", portal_path));
  caf::anon_send(sender, routing::ep_post_atom::value,
                 make_delivery("frame-1", portal_path, "stream-1"));
  run_for(1s);
  CHECK(received_ids(portal) == std::vector<std::string>{"post-1", "frame-1"});
  REQUIRE(hub_of(portal).received.size() == 2);
  CHECK_FALSE(hub_of(portal).received[0].env.ordering_key);
  REQUIRE(hub_of(portal).received[1].env.ordering_key);
  CHECK(*hub_of(portal).received[1].env.ordering_key == "stream-1");
  CHECK(hub_of(sender).outcomes.empty());
  CHECK(svc.stats.lr_delivered == 2);
  CHECK(svc.stats.lr_refused == 0);
  // Every membership snapshot re-asserts the attach (docs/behaviour/routing.md#the-entry, #hubs): a
  // joining silo produces snapshots; the path stays attached at A, the activation stays on A.
  auto before = in.attempt_ms.size();
  w.add_silo("d");
  run();
  // Two snapshots (d Joining, d Active): two assertions; the second supersedes the first
  // before its answer arrives (latency 0), so one more success is recorded.
  CHECK(in.attempt_ms.size() == before + 2);
  CHECK(in.attached_at.size() == 2);
  for (auto& g : in.attached_at)
    CHECK(g == a);
  CHECK(activations_of(w.at(a), grain_id{"podhub", portal_path}) == 1);
  caf::anon_send(sender, routing::ep_post_atom::value,
                 make_delivery("frame-2", portal_path, "stream-1"));
  run_for(1s);
  CHECK(received_ids(portal) == std::vector<std::string>{"post-1", "frame-1", "frame-2"});
}

TEST_CASE_FIXTURE(fixture, "client inbound: frames of two streams to one pure-client portal do not wait for each other's hand-over") {
  // Every frame between processes takes 50 ms. docs/behaviour/routing.md#hubs: the pod hub's
  // deliveries interleave, so the second stream's frame does not wait for the first one's
  // hand-over to the client (a round trip) to be taken.
  silo_world w{*this, 1, 50, 50};
  auto a = w.add_silo("a").addr;
  auto c = w.add_client("c", a);
  auto portal = add_hub(*this, c.routing, portal_path);
  run_for(2s);
  REQUIRE(service_of(c.routing).inbound.at(portal_path).attached);
  auto sender = add_hub(*this, w.at(a).routing, "node/Org/Sender");
  run();
  // Warm-up: the gateway's placement learns where the pod hub lives.
  caf::anon_send(sender, routing::ep_post_atom::value, make_delivery("warm", portal_path));
  run_for(1s);
  REQUIRE(hub_of(portal).received.size() == 1);
  auto t0 = now_ms();
  caf::anon_send(sender, routing::ep_post_atom::value,
                 make_delivery("s1-frame", portal_path, "stream-1"));
  caf::anon_send(sender, routing::ep_post_atom::value,
                 make_delivery("s2-frame", portal_path, "stream-2"));
  run_for(1s);
  auto& got = hub_of(portal).received;
  REQUIRE(got.size() == 3);
  CHECK(got[1].env.id == "s1-frame");
  CHECK(got[2].env.id == "s2-frame");
  CHECK(got[1].t_ms == clock_ms(*this, t0 + 50));
  CHECK(got[2].t_ms == clock_ms(*this, t0 + 50));
  CHECK(hub_of(sender).outcomes.empty());
}

TEST_CASE_FIXTURE(fixture, "client inbound: a client request gets its response at the client and a NACK reaches its tracker") {
  silo_world w{*this};
  auto a = w.add_silo("a").addr;
  w.add_silo("b");
  for (auto& e : w.silos)
    state_of<test_hub_factory_state>(e.hubs).respond = true;
  auto c = w.add_client("c", a);
  auto portal = add_hub(*this, c.routing, portal_path);
  run();
  REQUIRE(service_of(c.routing).inbound.at(portal_path).attached);
  // A request to a node hub: the response travels node hub -> its silo's router core ->
  // podhub/portal/user1/tab1 on the gateway -> the client.
  caf::anon_send(portal, routing::ep_request_atom::value, make_delivery("req-1", "node/Org/Acme"),
                 int64_t{60000});
  run_for(2s);
  auto& hub = hub_of(portal);
  REQUIRE(hub.outcomes.size() == 1);
  CHECK(hub.outcomes[0].id == "req-1");
  CHECK(hub.outcomes[0].kind == "response");
  // A request to an address no node serves: the router core's NACK reaches the client
  // through the pod hub (docs/behaviour/routing.md#nacks rung c).
  caf::anon_send(portal, routing::ep_request_atom::value, make_delivery("req-2", "nowhere/x"),
                 int64_t{60000});
  run_for(2s);
  REQUIRE(hub.outcomes.size() == 2);
  CHECK(hub.outcomes[1].id == "req-2");
  CHECK(hub.outcomes[1].kind == "nack");
  CHECK(hub.outcomes[1].verdict == routing::verdict::not_found);
  CHECK(hub.outcomes[1].message.find("No node found at 'nowhere/x'") != std::string::npos);
  CHECK(hub.tracker.pending_count() == 0);
  CHECK(service_of(c.routing).stats.lr_delivered == 2);
  // Nothing more arrives later (one terminal outcome each).
  run_for(60s);
  CHECK(hub.outcomes.size() == 2);
}

TEST_CASE_FIXTURE(fixture, "client inbound: 200 frames on one stream reach a client portal in send order") {
  silo_world w{*this};
  auto a = w.add_silo("a").addr;
  auto b = w.add_silo("b").addr;
  auto c = w.add_client("c", a);
  auto portal = add_hub(*this, c.routing, portal_path);
  auto sender = add_hub(*this, w.at(b).routing, "node/Org/Sender");
  run();
  std::vector<std::string> sent;
  for (int i = 0; i < 200; ++i) {
    sent.push_back("f-" + std::to_string(i));
    caf::anon_send(sender, routing::ep_post_atom::value,
                   make_delivery(sent.back(), portal_path, "stream-1"));
  }
  run_for(10s);
  CHECK(received_ids(portal) == sent);
  CHECK(hub_of(sender).outcomes.empty());
  CHECK(service_of(c.routing).stats.lr_delivered == 200);
}

namespace {

struct stop_result {
  int landed = 0;
  int nacked = 0;
  int sent_while_rehoming = 0;   ///< frames sent from A's stop until the re-attach elsewhere
  int nacked_while_rehoming = 0; ///< of those, NACKed
};

/// Gateway A of a pure client is stopped gracefully while a hub on silo `sender_host` sends
/// 130 frames on one stream to the client's portal: 10 before, a burst of 40 queued when the
/// stop begins and 40 right behind it, 20 while the stop runs, 20 after it. Checks stop-send,
/// re-homing, the re-attach, exactly one terminal result per frame and that every frame sent
/// after the re-attach landed.
stop_result gateway_stop_under_flow(fixture& fx, const std::vector<std::string>& hosts,
                                    const std::string& sender_host) {
  silo_world w{fx};
  std::vector<silo_address> silos;
  for (auto& h : hosts)
    silos.push_back(w.add_silo(h).addr);
  auto a = silos.front();
  silo_address s_addr;
  for (size_t i = 0; i < hosts.size(); ++i)
    if (hosts[i] == sender_host)
      s_addr = silos[i];
  auto c = w.add_client("c", a);
  auto portal = add_hub(fx, c.routing, portal_path);
  auto sender = add_hub(fx, w.at(s_addr).routing, "node/Org/Sender");
  fx.run();
  auto& svc = service_of(c.routing);
  REQUIRE(svc.inbound.at(portal_path).attached_at == std::vector<silo_address>{a});
  std::vector<std::pair<std::string, int64_t>> sent;
  auto send_one = [&] {
    auto id = "f-" + std::to_string(sent.size());
    sent.emplace_back(id, fx.now_ms());
    caf::anon_send(sender, routing::ep_post_atom::value, make_delivery(id, portal_path, "s1"));
  };
  for (int i = 0; i < 10; ++i) {
    send_one();
    fx.run_for(20ms);
  }
  for (int i = 0; i < 40; ++i)
    send_one();
  auto t_stop = fx.now_ms();
  auto stopped = w.stop(a, true);
  for (int i = 0; i < 40; ++i)
    send_one();
  for (int i = 0; i < 20; ++i) {
    send_one();
    fx.run_for(20ms);
  }
  REQUIRE(fx.run_until([&] { return stopped->done; }, std::chrono::minutes(2)));
  CHECK(stopped->ok());
  for (int i = 0; i < 20; ++i) {
    send_one();
    fx.run_for(20ms);
  }
  fx.run_for(60s);
  // The client got stop-send from A, re-homed to another Active gateway and re-attached.
  CHECK(svc.stats.stop_sends == 1);
  CHECK(fixture::state_of<echo_state>(c.inbox).received.size() == 1);
  CHECK(svc.gateway != a);
  CHECK(std::find(silos.begin(), silos.end(), svc.gateway) != silos.end());
  auto& in = svc.inbound.at(portal_path);
  REQUIRE(in.attached_at.size() >= 2);
  CHECK(in.attached_at.front() == a);
  CHECK(in.attached_at.back() == svc.gateway);
  CHECK(in.attached);
  // Every frame has exactly one terminal result: landed at the client or NACKed.
  std::map<std::string, int> landed, nacked;
  for (auto& r : hub_of(portal).received)
    ++landed[r.env.id];
  for (auto& o : hub_of(sender).outcomes)
    if (o.kind == "nack") {
      ++nacked[o.id];
      // The only NACK a re-homing may cause: "pod hub not here" (docs/behaviour/routing.md#legs,
      // docs/behaviour/envelope.md#the-nack).
      CHECK(o.verdict == routing::verdict::shutting_down);
      CHECK(o.target_unserved);
      CHECK(o.message.find("No silo serves hub 'portal/user1/tab1'") != std::string::npos);
    }
  stop_result out;
  for (auto& [id, t] : sent) {
    INFO(id);
    CHECK(landed[id] + nacked[id] == 1);
    out.landed += landed[id];
    out.nacked += nacked[id];
  }
  CHECK(out.landed + out.nacked == 130);
  CHECK(hub_of(sender).outcomes.size() == static_cast<size_t>(out.nacked));
  // Frames sent after the first attach at the new gateway all land.
  int64_t t_reattach = -1;
  for (size_t i = 0; i < in.attached_at.size(); ++i)
    if (in.attached_at[i] != a) {
      t_reattach = in.attached_ms[i];
      break;
    }
  REQUIRE(t_reattach >= 0);
  int after = 0;
  for (auto& [id, t] : sent)
    if (clock_ms(fx, t) > t_reattach) {
      ++after;
      INFO(id);
      CHECK(landed[id] == 1);
    }
  CHECK(after >= 20);
  for (auto& [id, t] : sent)
    if (t >= t_stop && clock_ms(fx, t) <= t_reattach) {
      ++out.sent_while_rehoming;
      out.nacked_while_rehoming += nacked[id];
    }
  MESSAGE("landed " << out.landed << ", NACKed " << out.nacked << ", sent after re-attach "
                    << after);
  return out;
}

} // namespace

TEST_CASE_FIXTURE(fixture, "client inbound: a gateway stopped under a frame flow re-homes the client and no frame is lost") {
  // Sender on the silo that becomes the new gateway: its pod hub adopts the client that
  // attached there, so every frame lands.
  auto r = gateway_stop_under_flow(*this, {"a", "b"}, "b");
  CHECK(r.landed == 130);
  CHECK(r.nacked == 0);
}

TEST_CASE_FIXTURE(fixture, "client inbound: a gateway stopped under a frame flow from a third silo gives every frame exactly one terminal result") {
  // Legs on S may create the pod hub on S (prefer-local) in the instant between A's
  // activation leaving and the client's re-attach; such an activation answers not-here and
  // the sender gets a `shutting_down` NACK (docs/behaviour/routing.md#hubs). So a NACK is possible
  // only for a frame sent while the client re-homes, and every other frame lands.
  auto r = gateway_stop_under_flow(*this, {"a", "b", "s"}, "s");
  CHECK(r.landed + r.nacked == 130);
  CHECK(r.nacked == r.nacked_while_rehoming);
  CHECK(r.landed >= 130 - r.sent_while_rehoming);
}

TEST_CASE_FIXTURE(fixture, "client inbound: the attach retries under the attach policy without an Active gateway, gives up with one error line and keeps attaching every attach.retry_cap_ms") {
  silo_world w{*this};
  auto c = w.add_client("c", silo_address{});
  run();
  logs.clear();
  auto t0 = now_ms();
  auto portal = add_hub(*this, c.routing, portal_path);
  run();
  // A dispatch issued while the first attach is pending waits for it.
  run_for(100ms);
  caf::anon_send(portal, routing::ep_post_atom::value, make_delivery("wait-1", "node/Org/Acme"));
  run_for(20s);
  auto& svc = service_of(c.routing);
  auto& in = svc.inbound.at(portal_path);
  auto t = [&](int64_t ms) { return clock_ms(*this, t0 + ms); };
  // After the give-up (7,750 ms) the path is attached again every attach.retry_cap_ms
  // (4,000 ms), silently: one error line, one give-up.
  CHECK(in.attempt_ms
        == std::vector<int64_t>{t(0), t(250), t(750), t(1750), t(3750), t(7750), t(11750),
                                t(15750), t(19750)});
  CHECK_FALSE(in.attached);
  CHECK_FALSE(in.first);
  CHECK(svc.stats.attach_gave_up == 1);
  auto lines = logs.find("inbound attach of portal/user1/tab1 gave up after 6 attempt(s)",
                         log::level::error);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].t_ms == t0 + 7750);
  CHECK(lines[0].text.find("; attaching again every 4000 ms until it attaches")
        != std::string::npos);
  CHECK(logs.count_level(log::level::error) == 1);
  // The waiting dispatch started once the attach had given up, then ran its own policy.
  CHECK(svc.stats.gated == 1);
  REQUIRE(svc.attempts_by_id.count("wait-1") == 1);
  CHECK(svc.attempts_by_id["wait-1"].front() == t(7750));
  auto& hub = hub_of(portal);
  REQUIRE(hub.outcomes.size() == 1);
  CHECK(hub.outcomes[0].id == "wait-1");
  CHECK(hub.outcomes[0].kind == "nack");
  CHECK(hub.outcomes[0].t_ms == t(7750 + 6200));
}

TEST_CASE_FIXTURE(fixture, "client inbound: unregistering a client portal detaches its pod hub and a later post is NACKed not-here") {
  silo_world w{*this};
  auto [a, c, portal, sender] = portal_behind_gateway(*this, w);
  REQUIRE(activations_of(w.at(a), grain_id{"podhub", portal_path}) == 1);
  caf::anon_send(c.routing, routing::rs_unregister_atom::value,
                 routing::address::from(portal_path));
  run();
  CHECK(service_of(c.routing).inbound.count(portal_path) == 0);
  CHECK(activations_of(w.at(a), grain_id{"podhub", portal_path}) == 0);
  caf::anon_send(sender, routing::ep_post_atom::value, make_delivery("late-1", portal_path));
  run_for(1s);
  CHECK(hub_of(portal).received.empty());
  auto& out = hub_of(sender).outcomes;
  REQUIRE(out.size() == 1);
  CHECK(out[0].id == "late-1");
  CHECK(out[0].kind == "nack");
  CHECK(out[0].verdict == routing::verdict::shutting_down);
  CHECK(out[0].target_unserved);
  CHECK(out[0].message
        == "No silo serves hub 'portal/user1/tab1' (answered by " + a.to_string() + "); retry");
}

TEST_CASE_FIXTURE(fixture, "client inbound: a killed gateway is left as soon as the connection to it is lost and frames sent after the re-attach land") {
  silo_world w{*this};
  auto a = w.add_silo("a").addr;
  auto b = w.add_silo("b").addr;
  auto c = w.add_client("c", a);
  auto portal = add_hub(*this, c.routing, portal_path);
  auto sender = add_hub(*this, w.at(b).routing, "node/Org/Sender");
  run();
  auto& svc = service_of(c.routing);
  REQUIRE(svc.inbound.at(portal_path).attached_at == std::vector<silo_address>{a});
  std::vector<std::pair<std::string, int64_t>> sent;
  auto send_one = [&] {
    auto id = "k-" + std::to_string(sent.size());
    sent.emplace_back(id, now_ms());
    caf::anon_send(sender, routing::ep_post_atom::value, make_delivery(id, portal_path, "s1"));
  };
  send_one();
  run_for(100ms);
  w.kill(a);
  auto t_kill = now_ms();
  // 15 s of frames, one per 100 ms, across the 10 s failure detection.
  for (int i = 0; i < 150; ++i) {
    send_one();
    run_for(100ms);
  }
  run_for(60s);
  // No stop-send (the gateway died); the lost connection made the client re-home to B at
  // once (amended for dead peers failing fast: it used to wait for the Dead snapshot).
  CHECK(svc.stats.stop_sends == 0);
  CHECK(svc.gateway == b);
  auto& in = svc.inbound.at(portal_path);
  CHECK(in.attached);
  CHECK(in.attached_at.back() == b);
  int64_t t_reattach = -1;
  for (size_t i = 0; i < in.attached_at.size(); ++i)
    if (in.attached_at[i] == b) {
      t_reattach = in.attached_ms[i];
      break;
    }
  REQUIRE(t_reattach >= 0);
  // The attach is asserted at B as soon as the connection to A is lost (t_kill); it
  // completes once A is declared Dead (docs/behaviour/membership.md#leaving: 10,000 ms of silence),
  // when the pod hub's directory entry on A is given up, and 500 ms later, when the new owner of
  // its id stops waiting for a registration made again
  // (docs/behaviour/directory-and-placement.md#restarts-on-the-same-address). The two snapshots at
  // the detection instant (Stopping, Dead) each assert the attach again (the world's links have
  // no latency).
  CHECK(in.attempt_ms == std::vector<int64_t>{clock_ms(*this, 0), clock_ms(*this, t_kill),
                                              clock_ms(*this, t_kill + 10000),
                                              clock_ms(*this, t_kill + 10000)});
  CHECK(t_reattach == clock_ms(*this, t_kill + 10500));
  CHECK(svc.stats.gateways_lost == 1);
  CHECK(logs.find("silent for 10000 ms: declared Dead").at(0).t_ms == t_kill + 10000);
  std::map<std::string, int> landed, nacked;
  for (auto& r : hub_of(portal).received)
    ++landed[r.env.id];
  for (auto& o : hub_of(sender).outcomes)
    if (o.kind == "nack")
      ++nacked[o.id];
  int n_landed = 0, n_nacked = 0, after = 0;
  for (auto& [id, t] : sent) {
    INFO(id);
    CHECK(landed[id] + nacked[id] == 1);
    n_landed += landed[id];
    n_nacked += nacked[id];
    if (clock_ms(*this, t) > t_reattach) {
      ++after;
      CHECK(landed[id] == 1);
    }
  }
  CHECK(n_landed + n_nacked == 151);
  // The stream's head leg keeps retrying across the 10 s detection, so every frame lands.
  // Frame k after the kill was sent at t_kill + 100·k ms (k = 0..149); those after the
  // re-attach at t_kill + 10,500 ms are k = 106..149.
  CHECK(n_landed == 151);
  CHECK(after == 44);
  MESSAGE("landed " << n_landed << ", NACKed " << n_nacked << ", sent after re-attach "
                    << after);
}

TEST_CASE_FIXTURE(fixture, "client inbound: a dispatch to an undetected stalled gateway ends in one NACK failed, the client re-homes and the timed-out call never starts on the gateway") {
  silo_world w{*this};
  auto a = w.add_silo("a").addr;
  auto b = w.add_silo("b").addr;
  auto c = w.add_client("c", a);
  auto portal = add_hub(*this, c.routing, portal_path);
  run();
  auto& svc = service_of(c.routing);
  REQUIRE(svc.gateway == a);
  REQUIRE(svc.inbound.at(portal_path).attached_at == std::vector<silo_address>{a});
  caf::anon_send(w.net, sim_stall_atom::value, a, false); // undetected: a stays Active
  run();
  auto t_stall = now_ms();
  caf::anon_send(portal, routing::ep_post_atom::value, make_delivery("p-1", "node/Org/Acme"));
  // The dispatch's bound is placement + response timeout: 30,000 + 30,000 ms.
  run_for(60s);
  auto& hub = hub_of(portal);
  REQUIRE(hub.outcomes.size() == 1);
  CHECK(hub.outcomes[0].id == "p-1");
  CHECK(hub.outcomes[0].kind == "nack");
  CHECK(hub.outcomes[0].verdict == routing::verdict::failed);
  CHECK(hub.outcomes[0].t_ms == clock_ms(*this, t_stall + 60000));
  CHECK(svc.stats.client_failed == 1);
  CHECK(svc.stats.client_attempts == 1); // a response timeout is not re-sent (docs/behaviour/classification.md#why-a-response-timeout-is-never-resent)
  // The client left a: the next dispatch goes through b.
  CHECK(svc.gateway == b);
  CHECK(svc.avoided.count(a) == 1);
  CHECK(svc.stats.rehomes >= 1);
  CHECK(logs.find("re-homing away from gateway " + a.to_string()).size() >= 1);
  caf::anon_send(portal, routing::ep_post_atom::value, make_delivery("p-2", "node/Org/Acme"));
  run_for(5s);
  CHECK(svc.stats.client_accepted >= 1);
  // The stall ends: the held call has expired and is dropped by a's centre; nothing for
  // p-1 ever starts on a, and p-1 keeps its single outcome.
  caf::anon_send(w.net, sim_unstall_atom::value, a);
  run_for(60s);
  auto stats = testing::ask<message_center_stats>(*this, w.at(a).centre, mc_stats_atom::value);
  run();
  REQUIRE(stats->ok());
  CHECK(stats->value.expired >= 1);
  CHECK(logs.find("dropped an expired request from " + c.addr.to_string(), log::level::warning)
          .size()
        >= 1);
  size_t p1_outcomes = 0;
  for (auto& o : hub.outcomes)
    p1_outcomes += o.id == "p-1" ? 1 : 0;
  CHECK(p1_outcomes == 1);
  for (auto& e : w.silos)
    for (auto& kv : state_of<test_hub_factory_state>(e.hubs).hubs)
      for (auto& r : hub_of(kv.second).received)
        CHECK(r.env.id != "p-1");
}

TEST_CASE_FIXTURE(fixture, "client inbound: an answer the pod hub took reaches the pure client once more after its hand-over and landing report were lost, though the silo that sent it was killed") {
  // Chaos seed 594's path (docs/behaviour/routing.md#hubs "A lost hand-over of an answer"):
  // the request lands at silo B; B's answer reaches the pod hub on the gateway A; A's two
  // frames to the client after it (the answer's hand-over and the landing report) are lost;
  // B is killed before its leg's attempt times out (5 s), so neither B's retry nor the
  // landing report can end the request. The pod hub sends the answer once more when its
  // hand-over times out (`client_handover_timeout_ms`, 10 s).
  silo_world w{*this};
  auto a = w.add_silo("a").addr;
  auto b = w.add_silo("b").addr;
  for (auto& e : w.silos)
    state_of<test_hub_factory_state>(e.hubs).respond = true;
  auto c = w.add_client("c", a);
  auto portal = add_hub(*this, c.routing, portal_path);
  auto sender = add_hub(*this, w.at(b).routing, "node/Org/Sender");
  run();
  REQUIRE(service_of(c.routing).inbound.at(portal_path).attached);
  // Node hubs are placed at random: the first of node/Org/N0.. activated on B is the target.
  std::string target;
  for (int i = 0; i < 16 && target.empty(); ++i) {
    auto t = "node/Org/N" + std::to_string(i);
    caf::anon_send(sender, routing::ep_post_atom::value, make_delivery("warm-" + t, t));
    run_for(1s);
    auto g = routing::node_hub_grain("Org/N" + std::to_string(i));
    if (activations_of(w.at(b), g) == 1 && activations_of(w.at(a), g) == 0)
      target = t;
  }
  REQUIRE_FALSE(target.empty());
  // The next two frames from A to the client are lost: the answer's hand-over and the
  // landing report (in either order).
  auto lost = std::make_shared<std::vector<std::string>>();
  drop_predicate p;
  p.pred = [a, c = c.addr, lost](const wire_frame& f) {
    if (f.src != a || f.dst != c || f.is_response || f.target != component::client)
      return false;
    if (f.payload.match_element<routing::lr_deliver_atom>(0))
      lost->push_back("hand-over");
    else if (f.payload.match_element<routing::rs_landed_atom>(0))
      lost->push_back("landing report");
    else
      return false;
    return true;
  };
  p.count = 2;
  caf::anon_send(w.net, sim_drop_atom::value, std::move(p));
  run();
  auto t0 = now_ms();
  caf::anon_send(portal, routing::ep_request_atom::value, make_delivery("req-1", target),
                 int64_t{30000});
  run_for(1s);
  std::sort(lost->begin(), lost->end());
  REQUIRE(*lost == std::vector<std::string>{"hand-over", "landing report"});
  auto& hub = hub_of(portal);
  REQUIRE(hub.outcomes.empty());
  w.kill(b);
  run_for(31s);
  REQUIRE(hub.outcomes.size() == 1);
  CHECK(hub.outcomes[0].id == "req-1");
  CHECK(hub.outcomes[0].kind == "response");
  // The hand-over was sent at t0 (latency 0) and once more when it timed out.
  CHECK(hub.outcomes[0].t_ms == clock_ms(*this, t0 + 10000));
  CHECK(hub.tracker.pending_count() == 0);
}

TEST_CASE_FIXTURE(fixture, "client inbound: frames from a hub of the gateway silo reach a pure-client portal over the direct route to its pod hub after the first") {
  // SPEC B3 for pod hubs (docs/delivery-costs.md): the pod hub of a pure client lives on
  // its gateway; once its tag is known, the gateway's router core calls it through the
  // catalog directly instead of through the grain port and placement.
  silo_world w{*this};
  auto [a, c, portal, sender] = portal_behind_gateway(*this, w);
  auto& grains = state_of<routing::detail::grain_delivery_state>(w.at(a).grains);
  auto before = grains.attempts;
  std::vector<std::string> sent;
  for (int i = 0; i < 2; ++i) {
    sent.push_back("f-" + std::to_string(i));
    caf::anon_send(sender, routing::ep_post_atom::value,
                   make_delivery(sent.back(), portal_path, "stream-1"));
    run_for(100ms);
  }
  // The activation knows its tag since the client's attach: the first call through the grain
  // port offers the route, the second takes it.
  CHECK(grains.attempts - before == 1);
  for (int i = 2; i < 50; ++i) {
    sent.push_back("f-" + std::to_string(i));
    caf::anon_send(sender, routing::ep_post_atom::value,
                   make_delivery(sent.back(), portal_path, "stream-1"));
  }
  run_for(2s);
  CHECK(received_ids(portal) == sent);
  CHECK(grains.attempts - before == 1);
  CHECK(hub_of(sender).outcomes.empty());
}
