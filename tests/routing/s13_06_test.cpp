// S13.06 on whole silos: a pure client's gateway G is killed while 10 of the client's
// dispatches wait on it. Calls whose frames had reached G end at once in one NACK `failed`
// (G may have accepted them, so their outcome is unknown); calls still on their way to G
// bounce, are re-sent to a live gateway and land. The client never goes back to G's
// generation, and the later departure of a silo that is not its gateway leaves it where it
// is.

#include <doctest/doctest.h>

#include <chrono>
#include <set>
#include <string>
#include <vector>

#include "s12_stall_world.hpp"
#include "cafmesh/actors/detail/sim_network_state.hpp"

using namespace cafmesh;
using namespace cafmesh::testing;
using namespace std::chrono_literals;
using testing::fixture;

namespace {




/// Frames the network accepted from `src` to `dst` at or after network ms `from_ms`.
size_t frames_sent(silo_world& w, const silo_address& src, const silo_address& dst,
                   int64_t from_ms) {
  auto& net = cafmesh::detail::state_of(w.net);
  auto needle = " send ";
  auto link = src.to_string() + " -> " + dst.to_string() + " ";
  size_t n = 0;
  for (auto& l : net.trace) {
    auto sp = l.find(' ');
    if (sp == std::string::npos || std::stoll(l.substr(0, sp)) < from_ms)
      continue;
    if (l.find(needle) != std::string::npos && l.find(link) != std::string::npos)
      ++n;
  }
  return n;
}

/// The simulated network's clock (ms since it was spawned), read from a trace note.
int64_t net_now_ms(fixture& fx, silo_world& w) {
  static int n = 0;
  auto text = "clock probe " + std::to_string(++n);
  caf::anon_send(w.net, sim_note_atom::value, text);
  fx.run();
  for (auto& l : cafmesh::detail::state_of(w.net).trace)
    if (l.size() > text.size() && l.compare(l.size() - text.size(), text.size(), text) == 0)
      return std::stoll(l.substr(0, l.find(' ')));
  FAIL("no clock probe in the trace");
  return 0;
}

} // namespace

TEST_CASE_FIXTURE(fixture, "S13.06 a pure client's gateway G is killed with 10 dispatches waiting: in-flight calls end in one NACK failed at once, calls that never left are re-sent to a live gateway, the client never returns to G's generation and another silo's departure never moves it") {
  silo_world w{*this};
  auto a = w.add_silo("a").addr;
  auto g = w.add_silo("g").addr;
  auto c = w.add_silo("c").addr;
  REQUIRE(w.last_start->ok());
  auto pc = client_on(*this, w, "pc", g, "client/pc1");
  auto& svc = service_of(pc.c.routing);
  REQUIRE(svc.gateway == g);
  // Targets: node hubs that are not on G and whose directory entries G does not own.
  auto active = ring_of(w, a);
  std::vector<std::string> keys;
  for (int i = 0; keys.size() < 10; ++i) {
    REQUIRE(i < 400);
    auto key = "Org/T" + std::to_string(i);
    if (ring_owner(active, grain_id{"messagehub", key}) == g)
      continue;
    caf::anon_send(pc.hub, ep_post_atom::value, make_delivery("warm-" + key, "node/" + key));
    settle_now(*this);
    auto built = hub_built_for(w, key);
    REQUIRE(!built.silo.empty());
    if (built.silo != g)
      keys.push_back(key);
  }
  REQUIRE(hub_of(pc.hub).outcomes.empty());
  auto accepted0 = svc.stats.client_accepted;
  auto rehomes0 = svc.stats.rehomes;
  auto failed0 = svc.stats.client_failed;
  // 7 requests reach G, whose answers are held on the way back (G -> client 2 s); then 3
  // posts wait on the way to G (client -> G 500 ms) when G is killed.
  set_delay(*this, w, g, pc.c.addr, 2000);
  for (int i = 0; i < 7; ++i)
    caf::anon_send(pc.hub, ep_request_atom::value,
                   make_delivery("r" + std::to_string(i), "node/" + keys[i]), int64_t{30000});
  run();
  run_to(now_ms() + 50);
  set_delay(*this, w, pc.c.addr, g, 500);
  for (int i = 7; i < 10; ++i)
    caf::anon_send(pc.hub, ep_post_atom::value,
                   make_delivery("p" + std::to_string(i), "node/" + keys[i]));
  run();
  run_to(now_ms() + 100);
  REQUIRE(svc.stats.client_accepted == accepted0); // all 10 still wait on G
  REQUIRE(svc.dispatches.size() == 10);
  auto off = clock_offset_ms(*this);
  auto tk = now_ms();
  auto net_tk = net_now_ms(*this, w);
  w.kill(g);
  for (auto x : {std::make_pair(g, pc.c.addr), std::make_pair(pc.c.addr, g)})
    set_delay(*this, w, x.first, x.second, 0);
  // G is declared Dead 10 s after it fell silent; run well past the bound.
  run_to(tk + 10000 + 1000);
  auto bound_ms = tk + 10000 + 1000;

  // The 7 requests had reached G: one NACK `failed` each, at the kill.
  for (int i = 0; i < 7; ++i) {
    auto id = "r" + std::to_string(i);
    INFO("request " << id);
    auto os = outcomes_for(pc.hub, id);
    REQUIRE(os.size() == 1);
    CHECK(os[0].kind == "nack");
    CHECK(os[0].verdict == verdict::failed);
    CHECK(os[0].t_ms - off == tk);
    CHECK(contains(os[0].message, "silo " + g.to_string()
                                    + " departed while the call was in flight; its outcome "
                                      "is unknown"));
  }
  // The 3 posts never left the client: re-sent through a live gateway, landed once, no NACK.
  for (int i = 7; i < 10; ++i) {
    auto id = "p" + std::to_string(i);
    INFO("post " << id);
    CHECK(outcomes_for(pc.hub, id).empty());
    CHECK(received_anywhere(w, id) == 1);
    for (auto& e : w.silos)
      for (auto& kv : testing::fixture::state_of<test_hub_factory_state>(e.hubs).hubs)
        for (auto& r : hub_of(kv.second).received)
          if (r.env.id == id)
            CHECK(r.t_ms - off <= bound_ms);
  }
  CHECK(svc.stats.client_accepted - accepted0 == 3);
  CHECK(svc.stats.client_failed - failed0 == 7);
  CHECK(svc.dispatches.empty());
  // Re-homed once, to a live gateway, and never back to G's generation.
  auto h = svc.gateway;
  CHECK((h == a || h == c));
  CHECK(svc.stats.rehomes - rehomes0 == 1);
  CHECK(svc.stats.gateways_lost == 1);
  CHECK(frames_sent(w, pc.c.addr, g, net_tk + 1) == 0);

  // Another silo X departs (killed) while the client attaches a hub whose pod-hub
  // directory entry X owns: the gateway's attach fails with X's departure, and the client
  // stays on its healthy gateway.
  auto x = h == a ? c : a;
  auto live = ring_of(w, h);
  REQUIRE(std::set<silo_address>(live.begin(), live.end()) == std::set<silo_address>{a, c});
  std::string path;
  for (int i = 2;; ++i) {
    REQUIRE(i < 100000); // the ring is uneven: X may own a small share
    auto p = "client/pc" + std::to_string(i);
    if (ring_owner(live, pod_hub_grain(p)) == x) {
      path = p;
      break;
    }
  }
  auto rehomes1 = svc.stats.rehomes;
  auto net_tx = net_now_ms(*this, w);
  w.kill(x);
  auto hub2 = track(spawn_hub_endpoint(sys, address::from(path), pc.c.routing));
  caf::anon_send(pc.c.routing, rs_register_atom::value, address::from(path),
                 caf::actor_cast<caf::actor>(hub2));
  run();
  run_to(now_ms() + 20000);
  CHECK(svc.gateway == h);
  CHECK(svc.stats.rehomes == rehomes1);
  CHECK(svc.stats.gateways_lost == 2);
  CHECK(frames_sent(w, pc.c.addr, x, net_tx + 1) == 0);
  CHECK(logs.find("re-homing away from gateway " + h.to_string()).empty());
}
