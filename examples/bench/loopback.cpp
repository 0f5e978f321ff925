/// @file
/// P2 and P3 (examples/bench/README.md): cafmesh over loopback TCP against raw CAF io in the
/// same actor systems (the same middlemen), every process its own actor system in this one
/// process, as cafmesh-demo runs its mesh.
///
/// - P2: a pure client (`client_builder`, network) asks a node hub `node/bench/{i}` of its
///   gateway silo (`silo_builder`, network, the membership primary) through its correlating
///   entry: client routing service -> gateway -> router core -> node leg -> node hub grain
///   -> application hub, and the response back through the entry's pod hub. Raw: the client
///   system asks an echo actor the silo system published (`io::publish` / `remote_actor` on
///   127.0.0.1). Both keep the same window of requests outstanding and time each request.
/// - P3: silo A's correlating entry posts to stream-routed hubs `portal/b{i}` hosted by silo
///   B (A's router core runs a pod-hub leg whose grain call crosses to B). Raw: A sends
///   one-way `(hb_in_atom, envelope)` to a sink B published. Both are driven by one thread
///   that keeps the same number of deliveries sent and not yet landed.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include "bench.hpp"
#include "rig.hpp"

#include "cafmesh/actors/log.hpp"
#include "cafmesh/actors/net_link.hpp"
#include "cafmesh/lifecycle/hosting.hpp"
#include "cafmesh/routing/entry_atoms.hpp"

namespace cafmesh::bench {

using namespace cafmesh::routing;

namespace {

using bn_echo_atom = caf::atom_constant<caf::atom("bnecho")>;
using bn_run_atom = caf::atom_constant<caf::atom("bnrun")>;

/// Issues one request from `self`; calls `done(ok)` with its outcome.
using issue_fn = std::function<void(caf::event_based_actor*, uint64_t i,
                                    std::function<void(bool)> done)>;

struct rr_state {
  uint64_t remaining = 0;
  uint64_t next = 0;
  static inline const char* name = "bench.rr_driver";
};

/// Keeps `window` requests outstanding until `n` were issued; records each request's
/// latency in `lat_us` (owned by the benchmark thread, read after `done` reached n).
caf::behavior rr_driver(caf::stateful_actor<rr_state>* self, issue_fn issue, uint64_t window,
                        std::vector<double>* lat_us, progress* done) {
  auto one_owner = std::make_shared<std::function<void()>>();
  auto one = one_owner.get();
  *one = [=] {
    auto& st = self->state;
    --st.remaining;
    auto t0 = clock_type::now();
    issue(self, st.next++, [=](bool ok) {
      lat_us->push_back(std::chrono::duration<double, std::micro>(clock_type::now() - t0)
                          .count());
      if (!ok)
        done->bad.fetch_add(1);
      done->bump();
      if (self->state.remaining > 0)
        (*one)();
    });
  };
  return {
    [=, keep = one_owner](bn_run_atom, uint64_t n) {
      self->state.remaining = n;
      for (uint64_t i = 0; i < window && self->state.remaining > 0; ++i)
        (*one)();
    },
  };
}

/// One request/response batch: rate per second and the latencies (us).
struct rr_result {
  double rate = 0;
  std::vector<double> lat_us;
  uint64_t bad = 0;
  bool ok = false;
};

rr_result rr_batch(caf::actor_system& sys, issue_fn issue, uint64_t n, uint64_t window) {
  rr_result res;
  progress done;
  res.lat_us.reserve(n);
  auto drv = sys.spawn(rr_driver, std::move(issue), window, &res.lat_us, &done);
  done.arm(n);
  auto t0 = clock_type::now();
  caf::anon_send(drv, bn_run_atom::value, n);
  res.ok = done.wait(120);
  res.rate = static_cast<double>(n) / seconds_since(t0);
  res.bad = done.bad.load();
  caf::anon_send_exit(drv, caf::exit_reason::user_shutdown);
  if (!res.ok) // the driver may still write into `lat_us`: wait for it to be gone
    std::this_thread::sleep_for(std::chrono::seconds(1));
  return res;
}

/// One-way batch driven from this thread: at most `window` sent and not landed; `send(i)`
/// sends delivery i. Answers the landing rate, or 0 when the landings stalled for 10 s.
double one_way_batch(progress& landed, uint64_t n, uint64_t window,
                     const std::function<void(uint64_t)>& send) {
  auto base = landed.count.load();
  auto t0 = clock_type::now();
  for (uint64_t i = 0; i < n; ++i) {
    if (i >= window && !landed.wait_for_count(base + i - window + 1, 10))
      return 0;
    send(i);
  }
  if (!landed.wait_for_count(base + n, 10))
    return 0;
  return static_cast<double>(n) / seconds_since(t0);
}

config::mesh_config net_config(const std::string& name, config::process_role role,
                               uint16_t primary_port) {
  config::mesh_config cfg;
  cfg.mesh.role = role;
  cfg.mesh.name = name;
  cfg.network.host = "127.0.0.1";
  cfg.network.port = 0;
  cfg.network.primary_host = "127.0.0.1";
  cfg.network.primary_port = primary_port;
  return cfg;
}

/// Publishes `actor` on 127.0.0.1 in `from` and connects to it from `to`.
caf::expected<caf::actor> publish_and_connect(caf::actor_system& from, caf::actor_system& to,
                                              const caf::actor& actor) {
  auto port = from.middleman().publish(actor, 0, "127.0.0.1");
  if (!port)
    return port.error();
  return to.middleman().remote_actor("127.0.0.1", *port);
}

std::string fmt(const char* f, double a, double b, double c = 0, double d = 0) {
  char buf[200];
  std::snprintf(buf, sizeof buf, f, a, b, c, d);
  return buf;
}

// -- P2 ------------------------------------------------------------------------------------

void run_p2(const options& opt, rows& out) {
  const uint64_t n = opt.quick ? 2000 : 10000;
  const uint64_t window = 8;
  const int reps = opt.quick ? 2 : 3;
  std::vector<std::unique_ptr<system_box>> boxes;
  boxes.push_back(std::make_unique<system_box>(opt.threads));
  boxes.push_back(std::make_unique<system_box>(opt.threads));
  auto& gw_sys = *boxes[0]->sys;
  auto& cl_sys = *boxes[1]->sys;
  std::optional<lifecycle::silo> silo;
  std::optional<lifecycle::client> client;
  caf::actor echo;
  auto fail = [&](const std::string& why) {
    out.push_back(failed_row("P2 rate", "pure client -> gateway -> router core / raw remote "
                                        "request/response",
                             why));
  };
  auto teardown = [&] {
    if (client)
      client->stop(false);
    if (silo)
      silo->stop(false);
    if (echo)
      caf::anon_send_exit(echo, caf::exit_reason::user_shutdown);
    client.reset();
    silo.reset();
    echo = nullptr;
    destroy_together(boxes);
  };
  auto built = lifecycle::silo_builder{gw_sys}
                 .config(net_config("bench-gw", config::process_role::silo_host, 0))
                 .network()
                 .log_level(log::level::error)
                 .hub("node/bench/*",
                      [](const envelope&) -> std::optional<reply> {
                        return reply{R"({"n":1})", "bench.pong"};
                      })
                 .build();
  if (!built) {
    fail("gateway silo: " + gw_sys.render(built.error()));
    return teardown();
  }
  silo.emplace(std::move(*built));
  if (auto err = silo->when_active()) {
    fail("gateway silo start: " + gw_sys.render(err));
    return teardown();
  }
  auto primary = silo->endpoint().addr.port;
  auto cbuilt = lifecycle::client_builder{cl_sys}
                  .config(net_config("bench-client", config::process_role::pure_client, primary))
                  .network()
                  .log_level(log::level::error)
                  .build();
  if (!cbuilt) {
    fail("pure client: " + cl_sys.render(cbuilt.error()));
    return teardown();
  }
  client.emplace(std::move(*cbuilt));
  if (auto err = client->when_active()) {
    fail("pure client start: " + cl_sys.render(err));
    return teardown();
  }
  echo = gw_sys.spawn([]() -> caf::behavior {
    return {[](bn_echo_atom, std::string& s) { return std::move(s); }};
  });
  auto proxy = publish_and_connect(gw_sys, cl_sys, echo);
  if (!proxy) {
    fail("raw echo over CAF io: " + cl_sys.render(proxy.error()));
    return teardown();
  }
  auto entry = client->entry();
  std::vector<address> targets;
  for (uint64_t i = 0; i < window; ++i)
    targets.push_back(address{"node", "bench/" + std::to_string(i), {}});
  issue_fn mesh_issue = [entry, targets](caf::event_based_actor* self, uint64_t i,
                                         std::function<void(bool)> done) {
    routing::request(self, entry, targets[i % targets.size()], R"({"n":1})",
                     std::chrono::seconds(30))
      .then([done](const std::string&) { done(true); }, [done](caf::error&) { done(false); });
  };
  auto remote = *proxy;
  issue_fn raw_issue = [remote](caf::event_based_actor* self, uint64_t,
                                std::function<void(bool)> done) {
    self->request(remote, caf::infinite, bn_echo_atom::value, std::string{R"({"n":1})"})
      .then([done](const std::string&) { done(true); }, [done](caf::error&) { done(false); });
  };
  // Warm-up: activates the node hubs and the entry's pod hub, fills the connections.
  auto warm = rr_batch(cl_sys, mesh_issue, 200, window);
  rr_batch(cl_sys, raw_issue, 200, window);
  if (!warm.ok || warm.bad > 0) {
    fail("warm-up requests through the mesh were not all answered ("
         + std::to_string(warm.bad) + " failed)");
    return teardown();
  }
  std::vector<double> ratios, mesh_lat, raw_lat, mesh_rates, raw_rates;
  for (int r = 0; r < reps; ++r) {
    auto raw = rr_batch(cl_sys, raw_issue, n, window);
    auto mesh = rr_batch(cl_sys, mesh_issue, n, window);
    if (!raw.ok || !mesh.ok || raw.bad + mesh.bad > 0) {
      fail("requests not all answered (raw " + std::to_string(raw.bad) + ", mesh "
           + std::to_string(mesh.bad) + " failed)");
      return teardown();
    }
    ratios.push_back(mesh.rate / raw.rate);
    mesh_rates.push_back(mesh.rate);
    raw_rates.push_back(raw.rate);
    mesh_lat.insert(mesh_lat.end(), mesh.lat_us.begin(), mesh.lat_us.end());
    raw_lat.insert(raw_lat.end(), raw.lat_us.begin(), raw.lat_us.end());
    std::fprintf(stderr, "  P2 rep %d: raw %.0f/s, mesh %.0f/s (%.3f)\n", r + 1, raw.rate,
                 mesh.rate, ratios.back());
  }
  auto mp50 = percentile(mesh_lat, 50), mp99 = percentile(mesh_lat, 99);
  auto rp50 = percentile(raw_lat, 50), rp99 = percentile(raw_lat, 99);
  auto rate = make_row("P2 rate",
                       "pure client -> gateway -> router core / raw remote request/response",
                       median(ratios), "x", 0.5, true);
  rate.detail = fmt("median of %.0f reps: mesh %.0f/s, raw %.0f/s, window %.0f", reps,
                    median(mesh_rates), median(raw_rates), static_cast<double>(window));
  rate.data = {{"ratios", ratios}, {"mesh_per_s", mesh_rates}, {"raw_per_s", raw_rates},
               {"requests", n}, {"window", window}};
  out.push_back(std::move(rate));
  auto lat = make_row("P2 p99", "p99 latency, pure client via gateway / raw remote", mp99 / rp99,
                      "x", 2, false);
  lat.detail = fmt("mesh p50 %.0f us p99 %.0f us; raw p50 %.0f us p99 %.0f us", mp50, mp99,
                   rp50, rp99);
  lat.data = {{"mesh_p50_us", mp50}, {"mesh_p99_us", mp99}, {"raw_p50_us", rp50},
              {"raw_p99_us", rp99}, {"samples_each", mesh_lat.size()}};
  out.push_back(std::move(lat));
  teardown();
}

// -- P3 ------------------------------------------------------------------------------------

void run_p3(const options& opt, rows& out) {
  const uint64_t n = opt.quick ? 5000 : 20000;
  const uint64_t window = 256;
  const uint64_t hub_count = 64;
  const int reps = opt.quick ? 2 : 3;
  std::vector<std::unique_ptr<system_box>> boxes;
  boxes.push_back(std::make_unique<system_box>(opt.threads));
  boxes.push_back(std::make_unique<system_box>(opt.threads));
  auto& a_sys = *boxes[0]->sys;
  auto& b_sys = *boxes[1]->sys;
  std::optional<lifecycle::silo> a;
  std::optional<lifecycle::silo> b;
  caf::actor sink;
  progress landed;
  progress sunk;
  auto fail = [&](const std::string& why) {
    out.push_back(failed_row("P3", "cross-silo routed delivery / raw remote one-way", why));
  };
  auto teardown = [&] {
    if (b)
      b->stop(false);
    if (a)
      a->stop(false);
    if (sink)
      caf::anon_send_exit(sink, caf::exit_reason::user_shutdown);
    a.reset();
    b.reset();
    sink = nullptr;
    destroy_together(boxes);
  };
  auto a_config = net_config("bench-a", config::process_role::silo_host, 0);
  if (opt.channel_batch_max > 0)
    a_config.routing.channel_batch_max = opt.channel_batch_max;
  auto abuilt = lifecycle::silo_builder{a_sys}
                  .config(std::move(a_config))
                  .network()
                  .log_level(log::level::error)
                  .build();
  if (!abuilt) {
    fail("silo A: " + a_sys.render(abuilt.error()));
    return teardown();
  }
  a.emplace(std::move(*abuilt));
  if (auto err = a->when_active()) {
    fail("silo A start: " + a_sys.render(err));
    return teardown();
  }
  lifecycle::silo_builder bb{b_sys};
  bb.config(net_config("bench-b", config::process_role::silo_host, a->endpoint().addr.port))
    .network()
    .log_level(log::level::error);
  std::vector<address> targets;
  for (uint64_t i = 0; i < hub_count; ++i) {
    targets.push_back(address{"portal", "b" + std::to_string(i), {}});
    bb.hub(targets.back().path(), [&landed](const envelope&) -> std::optional<reply> {
      landed.bump();
      return std::nullopt;
    });
  }
  auto bbuilt = bb.build();
  if (!bbuilt) {
    fail("silo B: " + b_sys.render(bbuilt.error()));
    return teardown();
  }
  b.emplace(std::move(*bbuilt));
  if (auto err = b->when_active()) {
    fail("silo B start: " + b_sys.render(err));
    return teardown();
  }
  sink = b_sys.spawn(bench_sink, &sunk);
  auto proxy = publish_and_connect(b_sys, a_sys, sink);
  if (!proxy) {
    fail("raw sink over CAF io: " + a_sys.render(proxy.error()));
    return teardown();
  }
  auto entry = a->entry();
  auto remote = *proxy;
  auto proto = make_proto(address{"node", "bench", {}});
  auto mesh_send = [&](uint64_t i) {
    caf::anon_send(entry, ce_send_atom::value, targets[i % hub_count], std::string{"bench.ping"},
                   std::string{R"({"n":1})"});
  };
  auto raw_send = [&](uint64_t) { caf::anon_send(remote, hb_in_atom::value, proto); };
  // Warm-up: the pod hubs' claims reach A's placement; the first deliveries find them.
  std::this_thread::sleep_for(std::chrono::seconds(1));
  if (one_way_batch(landed, 4 * hub_count, window, mesh_send) <= 0) {
    fail("warm-up posts from A did not all land on B (" + std::to_string(landed.count.load())
         + " of " + std::to_string(4 * hub_count) + ")");
    return teardown();
  }
  one_way_batch(sunk, 1000, window, raw_send);
  // What A's link carried (SPEC §14 B7): frames and link messages, each one BASP message.
  auto wire_of = [&](lifecycle::silo& s) {
    link_wire_stats out;
    caf::scoped_actor self{s.endpoint().link.home_system()};
    self->request(s.endpoint().link, std::chrono::seconds(5), nl_wire_atom::value)
      .receive([&](link_wire_stats& x) { out = x; }, [](caf::error&) {});
    return out;
  };
  std::vector<double> ratios, mesh_rates, raw_rates;
  uint64_t mesh_total = 0;
  auto wire_before = wire_of(*a);
  for (int r = 0; r < reps; ++r) {
    auto raw = one_way_batch(sunk, n, window, raw_send);
    auto mesh = one_way_batch(landed, n, window, mesh_send);
    mesh_total += n;
    if (raw <= 0 || mesh <= 0) {
      fail(std::string{"deliveries stalled ("} + (raw <= 0 ? "raw" : "mesh") + ")");
      return teardown();
    }
    ratios.push_back(mesh / raw);
    mesh_rates.push_back(mesh);
    raw_rates.push_back(raw);
    std::fprintf(stderr, "  P3 rep %d: raw %.0f/s, mesh %.0f/s (%.3f)\n", r + 1, raw, mesh,
                 ratios.back());
  }
  auto wire_after = wire_of(*a);
  auto per = [&](uint64_t after, uint64_t before) {
    return mesh_total == 0 ? 0.0
                           : static_cast<double>(after - before) / static_cast<double>(mesh_total);
  };
  auto basp_out = per(wire_after.messages_out, wire_before.messages_out);
  auto basp_in = per(wire_after.messages_in, wire_before.messages_in);
  auto row = make_row("P3", "cross-silo routed delivery / raw remote one-way", median(ratios),
                      "x", 0.5, true);
  row.detail = fmt("median of %.0f reps: mesh %.0f/s, raw %.0f/s; %.0f in flight", reps,
                   median(mesh_rates), median(raw_rates), static_cast<double>(window))
               + fmt("; BASP messages per delivery A->B %.3f, B->A %.3f", basp_out, basp_in);
  row.data = {{"ratios", ratios}, {"mesh_per_s", mesh_rates}, {"raw_per_s", raw_rates},
              {"deliveries", n}, {"window", window}, {"hubs", hub_count},
              {"basp_messages_per_delivery_a_to_b", basp_out},
              {"basp_messages_per_delivery_b_to_a", basp_in},
              {"link_frames_per_delivery_a_to_b",
               per(wire_after.frames_out, wire_before.frames_out)}};
  out.push_back(std::move(row));
  teardown();
}

} // namespace

rows run_loopback(const options& opt, bool p2, bool p3) {
  rows out;
  if (p2)
    run_p2(opt, out);
  if (p3)
    run_p3(opt, out);
  return out;
}

} // namespace cafmesh::bench
