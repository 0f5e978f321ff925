#include <chrono>
#include <sstream>

#include <doctest/doctest.h>

#include <caf/all.hpp>

#include "cafmesh/actors/message_center.hpp"
#include "cafmesh/actors/sim_network.hpp"
#include "cafmesh/testing/fixture.hpp"
#include "cafmesh/testing/sim_world.hpp"

using namespace std::chrono_literals;
using namespace cafmesh;
using namespace cafmesh::testing;

namespace {

/// A type with `inspect` that is deliberately never announced with `add_message_type`.
struct unannounced {
  int32_t x = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, unannounced& x) {
  return f(caf::meta::type_name("test.unannounced"), x.x);
}

struct net_fixture : testing::fixture {
  caf::actor spawn_probe() { return track(sys.spawn(probe, static_cast<testing::fixture*>(this))); }
  void ask(const caf::actor& p, const caf::actor& mc, caf::message call, std::string tag,
           int64_t timeout_ms = 600000) {
    caf::anon_send(p, probe_ask_atom::value, mc, std::move(call), timeout_ms, std::move(tag));
  }
  probe_state& probe_of(const caf::actor& p) { return state_of<probe_state>(p); }
};

/// Parses "t event src -> dst #id ..." lines: returns (t, event, id) of each frame line.
struct frame_event {
  int64_t t = 0;
  std::string event;
  std::string src;
  std::string dst;
  uint64_t id = 0;
  int64_t latency = -1;
};

std::vector<frame_event> frame_events(const std::vector<std::string>& trace) {
  std::vector<frame_event> out;
  for (const auto& l : trace) {
    std::istringstream in{l};
    frame_event e;
    std::string arrow, hash, seq;
    in >> e.t >> e.event;
    if (e.event != "send" && e.event != "deliver" && e.event != "hold")
      continue;
    in >> seq >> e.src >> arrow >> e.dst >> hash;
    e.id = std::stoull(seq.substr(1));
    if (e.event == "send") {
      std::string comp, kind, lat;
      in >> comp >> kind >> lat;
      e.latency = std::stoll(lat.substr(1, lat.size() - 3));
    }
    out.push_back(e);
  }
  return out;
}

} // namespace

TEST_CASE_FIXTURE(net_fixture, "sim_network: latencies stay within [1, 5] ms and a link never reorders frames") {
  sim_world w{*this, sim_network_config{}}; // defaults: seed 1, 1..5 ms
  auto a = w.add_silo("a");
  auto b = w.add_silo("b");
  auto e = track(sys.spawn(echo));
  w.reg(b, component::test, e);
  run();
  for (int i = 0; i < 200; ++i)
    caf::anon_send(w.centres[a], mc_send_atom::value, b, component::test, caf::make_message(i));
  REQUIRE(run_until([&] { return state_of<echo_state>(e).received.size() == 200; }));
  auto& rec = state_of<echo_state>(e).received;
  REQUIRE(rec.size() == 200);
  for (int i = 0; i < 200; ++i)
    CHECK(rec[i].get_as<int>(0) == i);
  auto events = frame_events(w.net_state().trace);
  std::map<int64_t, int> latencies;
  std::map<uint64_t, int64_t> sent_at, delivered_at, latency_of;
  int64_t last_delivery = -1;
  uint64_t seq = 0;
  for (auto& ev : events) {
    if (ev.event == "send") {
      ++latencies[ev.latency];
      sent_at[ev.id] = ev.t;
      latency_of[ev.id] = ev.latency;
    } else if (ev.event == "deliver") {
      delivered_at[ev.id] = ev.t;
      CHECK(ev.t >= last_delivery);
      last_delivery = ev.t;
      ++seq;
    }
  }
  CHECK(seq == 200);
  CHECK(latencies.size() == 5);
  CHECK(latencies.begin()->first == 1);
  CHECK(latencies.rbegin()->first == 5);
  // All frames were sent at t = 0; frame i arrives at max over j <= i of latency(j).
  int64_t running_max = 0;
  for (auto& kv : sent_at) {
    CHECK(kv.second == 0);
    running_max = std::max(running_max, latency_of[kv.first]);
  }
  CHECK(last_delivery == running_max);
}

TEST_CASE_FIXTURE(net_fixture, "sim_network: the order of deliveries on a link equals the order of sends") {
  sim_world w{*this, sim_network_config{7, 1, 50}};
  auto a = w.add_silo("a");
  auto b = w.add_silo("b");
  auto e = track(sys.spawn(echo));
  w.reg(b, component::test, e);
  run();
  for (int i = 0; i < 50; ++i) {
    caf::anon_send(w.centres[a], mc_send_atom::value, b, component::test, caf::make_message(i));
    run_for(1ms);
  }
  REQUIRE(run_until([&] { return state_of<echo_state>(e).received.size() == 50; }));
  auto& rec = state_of<echo_state>(e).received;
  REQUIRE(rec.size() == 50);
  for (int i = 0; i < 50; ++i)
    CHECK(rec[i].get_as<int>(0) == i);
  // Some frame was overtaken in due time (a later draw smaller than an earlier one) and
  // had to wait: at least one delivery happens later than its own latency alone gives.
  auto events = frame_events(w.net_state().trace);
  std::map<uint64_t, int64_t> due_alone;
  int waited = 0;
  for (auto& ev : events) {
    if (ev.event == "send")
      due_alone[ev.id] = ev.t + ev.latency;
    else if (ev.event == "deliver" && ev.t > due_alone[ev.id])
      ++waited;
  }
  CHECK(waited > 0);
}

TEST_CASE_FIXTURE(net_fixture, "sim_network: a stall holds frames to and from the silo until unstall") {
  sim_world w{*this, sim_network_config{1, 2, 2}};
  auto a = w.add_silo("a");
  auto b = w.add_silo("b");
  auto e = track(sys.spawn(echo));
  w.reg(b, component::test, e);
  w.reg(a, component::test, e);
  auto p = spawn_probe();
  run();
  caf::anon_send(w.net, sim_stall_atom::value, b);
  run();
  ask(p, w.centres[a], make_call(b, component::test, echo_atom::value, 5), "to b");
  ask(p, w.centres[b], make_call(a, component::test, echo_atom::value, 6), "from b");
  run_for(10s);
  CHECK(probe_of(p).answers.empty());
  CHECK(w.net_state().count(" hold ") == 2);
  caf::anon_send(w.net, sim_unstall_atom::value, b);
  REQUIRE(run_until([&] { return probe_of(p).answers.size() == 2; }));
  auto& ans = probe_of(p).answers;
  REQUIRE(ans.size() == 2);
  // Released at 10,000 ms; each reply takes one more 2 ms hop.
  CHECK(ans[0].t_ms == 10002);
  CHECK(ans[1].t_ms == 10002);
  std::set<int> values{ans[0].reply.get_as<int>(0), ans[1].reply.get_as<int>(0)};
  CHECK(values == std::set<int>{10, 12});
}

TEST_CASE_FIXTURE(net_fixture, "sim_network: a partition holds frames between two silos only, heal releases them") {
  sim_world w{*this, sim_network_config{1, 1, 1}};
  auto a = w.add_silo("a");
  auto b = w.add_silo("b");
  auto c = w.add_silo("c");
  auto e = track(sys.spawn(echo));
  w.reg(b, component::test, e);
  auto p = spawn_probe();
  run();
  caf::anon_send(w.net, sim_partition_atom::value, a, b);
  run();
  ask(p, w.centres[a], make_call(b, component::test, echo_atom::value, 1), "a->b");
  ask(p, w.centres[c], make_call(b, component::test, echo_atom::value, 2), "c->b");
  run_for(5s);
  auto& ans = probe_of(p).answers;
  REQUIRE(ans.size() == 1);
  CHECK(ans[0].tag == "c->b");
  CHECK(ans[0].t_ms == 2);
  caf::anon_send(w.net, sim_heal_atom::value, b, a);
  REQUIRE(run_until([&] { return ans.size() == 2; }));
  REQUIRE(ans.size() == 2);
  CHECK(ans[1].tag == "a->b");
  CHECK(ans[1].t_ms == 5001);
}

TEST_CASE_FIXTURE(net_fixture, "sim_network: drop by rule or predicate discards the next matching frames and delay overrides a link") {
  sim_world w{*this, sim_network_config{1, 1, 1}};
  auto a = w.add_silo("a");
  auto b = w.add_silo("b");
  auto e = track(sys.spawn(echo));
  w.reg(b, component::test, e);
  auto p = spawn_probe();
  run();
  drop_rule r;
  r.dst = b;
  r.target = component::test;
  r.count = 2;
  caf::anon_send(w.net, sim_drop_atom::value, r);
  caf::anon_send(w.net, sim_delay_atom::value, a, b, int64_t{100}, int64_t{100});
  run();
  drop_predicate by_value;
  by_value.pred = [](const wire_frame& f) {
    return f.payload.match_elements<echo_atom, int>() && f.payload.get_as<int>(1) == 4;
  };
  caf::anon_send(w.net, sim_drop_atom::value, by_value);
  run();
  w.reg(b, component::directory, e);
  run();
  ask(p, w.centres[a], make_call(b, component::directory, echo_atom::value, 4), "pred", 1000);
  ask(p, w.centres[a], make_call(b, component::test, echo_atom::value, 1), "d1", 1000);
  ask(p, w.centres[a], make_call(b, component::test, echo_atom::value, 2), "d2", 1000);
  ask(p, w.centres[a], make_call(b, component::test, echo_atom::value, 3), "ok", 1000);
  REQUIRE(run_until([&] { return probe_of(p).answers.size() == 4; }));
  auto& ans = probe_of(p).answers;
  REQUIRE(ans.size() == 4);
  CHECK(ans[0].tag == "ok");
  CHECK(ans[0].t_ms == 101); // 100 ms there (override), 1 ms back (default)
  CHECK(ans[0].reply.get_as<int>(0) == 6);
  CHECK(ans[1].tag == "pred");
  CHECK(ans[1].t_ms == 1000);
  CHECK(ans[1].error == caf::sec::request_timeout);
  CHECK(ans[2].tag == "d1");
  CHECK(ans[3].tag == "d2");
  CHECK(w.net_state().count(" drop ") == 3);
  CHECK(w.net_state().count("drop n1 ") == 1); // the predicate matched the first frame
}

TEST_CASE_FIXTURE(net_fixture, "sim_network: an announced type survives the serializer round trip, an unannounced one fails the call") {
  sim_world w{*this, sim_network_config{1, 1, 1}};
  auto a = w.add_silo("a");
  auto b = w.add_silo("b");
  auto e = track(sys.spawn(echo));
  w.reg(b, component::test, e);
  auto p = spawn_probe();
  run();
  ask(p, w.centres[a], make_call(b, component::test, echo_atom::value, grain_id{"messagehub", "Org/Acme"}), "grain");
  ask(p, w.centres[a], make_call(b, component::test, echo_atom::value, unannounced{3}), "bad");
  REQUIRE(run_until([&] { return probe_of(p).answers.size() == 2; }));
  auto& ans = probe_of(p).answers;
  REQUIRE(ans.size() == 2);
  CHECK(ans[0].tag == "bad");
  CHECK(ans[0].t_ms == 0);
  CHECK(ans[0].error == caf::sec::unknown_type);
  CHECK(w.net_state().count("cannot serialize: type not announced") == 1);
  CHECK(ans[1].tag == "grain");
  REQUIRE(ans[1].reply.match_elements<grain_id>());
  CHECK(ans[1].reply.get_as<grain_id>(0) == grain_id{"messagehub", "Org/Acme"});
}

TEST_CASE_FIXTURE(net_fixture, "sim_network: a reply holding an unannounced type reaches the caller as an error") {
  sim_world w{*this, sim_network_config{1, 2, 2}};
  auto a = w.add_silo("a");
  auto b = w.add_silo("b");
  auto bad_replier = track(sys.spawn([]() -> caf::behavior {
    return {[](echo_atom, int x) { return unannounced{x}; }};
  }));
  w.reg(b, component::test, bad_replier);
  auto p = spawn_probe();
  run();
  ask(p, w.centres[a], make_call(b, component::test, echo_atom::value, 5), "bad reply");
  REQUIRE(run_until([&] { return !probe_of(p).answers.empty(); }));
  auto& ans = probe_of(p).answers;
  REQUIRE(ans.size() == 1);
  CHECK(ans[0].t_ms == 4);
  CHECK(ans[0].error == caf::sec::unknown_type);
  CHECK(w.net_state().count("n2 Sb:11111@2 -> Sa:11111@1 #1 test resp (cannot serialize: type not announced") == 1);
}

namespace {

uint64_t exchange_digest(testing::fixture& fx, uint64_t seed) {
  sim_world w{fx, sim_network_config{seed, 1, 5}};
  std::vector<silo_address> silos{w.add_silo("a"), w.add_silo("b"), w.add_silo("c")};
  auto e = fx.track(fx.sys.spawn(echo));
  for (auto& s : silos)
    w.reg(s, component::test, e);
  auto p = fx.track(fx.sys.spawn(probe, &fx));
  fx.run();
  int n = 0;
  for (auto& from : silos)
    for (auto& to : silos)
      for (int i = 0; i < 4; ++i)
        caf::anon_send(p, probe_ask_atom::value, w.centres[from],
                       make_call(to, component::test, echo_atom::value, n++), int64_t{60000},
                       std::string("x"));
  REQUIRE(fx.run_until([&] { return fx.state_of<probe_state>(p).answers.size() == 36; }));
  REQUIRE(fx.state_of<probe_state>(p).answers.size() == 36);
  return w.net_state().trace_digest();
}

} // namespace

TEST_CASE("sim_network: the same seed gives the same trace digest, another seed another") {
  uint64_t d1, d2, d3;
  {
    testing::fixture fx;
    d1 = exchange_digest(fx, 42);
  }
  {
    testing::fixture fx;
    d2 = exchange_digest(fx, 42);
  }
  {
    testing::fixture fx;
    d3 = exchange_digest(fx, 43);
  }
  CHECK(d1 == d2);
  CHECK(d1 != d3);
}

TEST_CASE("sim_network: trace_digest is FNV-1a 64 over the lines each ending in a newline") {
  CHECK(trace_digest({}) == 14695981039346656037ull);
  CHECK(trace_digest({"a"}) == fnv1a64("a\n"));
  CHECK(trace_digest({"0 send x", "1 deliver x"}) == fnv1a64("0 send x\n1 deliver x\n"));
}
