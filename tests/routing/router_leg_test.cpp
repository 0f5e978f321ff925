// Legs of the router core (docs/behaviour/routing.md#legs,
// docs/behaviour/classification.md#retry-policies, docs/behaviour/classification.md,
// docs/behaviour/size-guard.md#limits) in virtual time, end to end through the real router core,
// real io_pool and real gauge, with fake ports (router_fakes.hpp).

#include "router_fakes.hpp"

using namespace cafmesh::testing::router_bed;
using cafmesh::testing::fixture;
using lvl = cafmesh::log::level;

namespace {

bool contains(const std::string& hay, const std::string& needle) {
  return hay.find(needle) != std::string::npos;
}

/// Routes `e` and runs until the bed's router core has no leg and no NACK left (or `cap`).
void route_and_settle(fixture& fx, bed& b, const envelope& e, std::chrono::milliseconds cap = 120s) {
  b.route(e);
  fx.run();
  REQUIRE(fx.run_until([&] {
            auto st = b.stats();
            return st.in_flight == 0 && st.nacks_alive == 0;
          },
                       cap));
}

/// The single NACK at the sender's local route.
delivery_failure only_nack(bed& b) {
  auto ns = b.local_nacks();
  REQUIRE(ns.size() == 1);
  return ns.front();
}

} // namespace

TEST_CASE_FIXTURE(fixture, "S12.17 the gauge counts a pending node leg and its NACK takes over the slot") {
  bed b(*this);
  b.start();
  // A node leg whose deliver is pending: counted until the call answers.
  b.script("messagehub/Org/Acme", {answer::held()});
  b.route(bed::make("d1", "node/Org/Acme"));
  run();
  CHECK(b.gauge_count() == 1);
  run_for(20s);
  CHECK(b.gauge_count() == 1);
  b.release("messagehub/Org/Acme");
  run();
  CHECK(b.gauge_count() == 0);
  CHECK(b.local_nacks().empty());
  // A call failing with `application` "node type not registered", answered after 100 ms; the
  // NACK is held at its transport (the local route) until released.
  b.local().hold = true;
  b.script("messagehub/Org/Beta",
           {answer::err(fault{mesh_errc::application, "node type not registered"}, 100)});
  b.route(bed::make("d2", "node/Org/Beta"));
  run();
  auto before = b.gauge_oldest();
  REQUIRE(before.count == 1);
  CHECK(before.entries[0].label == "dispatch -> node/Org/Beta (delivery d2)");
  run_for(100ms);
  auto during = b.gauge_oldest();
  REQUIRE(during.count == 1); // handed over: the count did not move
  CHECK(during.entries[0].slot == before.entries[0].slot);
  CHECK(during.entries[0].label == "NACK -> portal/alice (delivery d2)");
  CHECK(b.stats().in_flight == 0); // the leg terminated when its NACK was handed over
  caf::anon_send(b.locals, ft_release_atom::value, std::string{});
  run();
  CHECK(b.gauge_count() == 0); // the NACK reached its transport
  auto n = only_nack(b);
  CHECK(n.request_id == "d2");
  CHECK(n.verdict == verdict::failed);
  CHECK(contains(n.message, "node type not registered"));
  CHECK(n.message == "Delivery to 'node/Org/Beta' failed: node type not registered");
  CHECK(b.grain().attempts_for("messagehub/Org/Beta") == 1);
  auto st = b.stats();
  CHECK(st.nacks_posted == 1);
  CHECK(st.nacks_local == 1);
}

TEST_CASE_FIXTURE(fixture, "S12.21 rejected twice then success makes 3 fresh attempts and no NACK and invalid_operation makes 1 attempt and one NACK") {
  bed b(*this);
  b.start();
  b.grain().silos = {silo_address{"10.0.0.2", 11111, 1}};
  b.script("messagehub/Org/Acme", {answer::err(fault{mesh_errc::rejected, "queue limit reached"}),
                                   answer::err(fault{mesh_errc::rejected, "queue limit reached"}),
                                   answer::ok()});
  route_and_settle(*this, b, bed::make("d1", "node/Org/Acme"));
  auto& g = b.grain();
  REQUIRE(g.attempts.size() == 3);
  for (auto& a : g.attempts)
    CHECK(a.fresh); // each attempt went through placement: its cache entry was invalidated
  CHECK(g.invalidated
        == std::vector<std::string>{"messagehub/Org/Acme", "messagehub/Org/Acme"});
  CHECK(b.local_nacks().empty());
  CHECK(b.stats().landed == 1);

  b.script("messagehub/Org/Bad", {answer::err(fault{mesh_errc::invalid_operation, "bad call"})});
  route_and_settle(*this, b, bed::make("d2", "node/Org/Bad"));
  CHECK(g.attempts_for("messagehub/Org/Bad") == 1);
  auto n = only_nack(b);
  CHECK(n.request_id == "d2");
  CHECK(n.verdict == verdict::failed);
}

TEST_CASE_FIXTURE(fixture, "S12.22 an always rejected call makes retry_max plus 1 attempts on the 250 ms doubling schedule") {
  bed small(*this);
  small.cfg.routing.retry_max = 4;
  small.start();
  small.grain().fallback = answer::err(fault{mesh_errc::rejected, "rejected: queue limit reached"});
  route_and_settle(*this, small, bed::make("d1", "node/Org/Acme"));
  CHECK(small.grain().attempts.size() == 5);
  auto n = only_nack(small);
  CHECK(n.verdict == verdict::failed);
  CHECK(contains(n.message, "rejected: queue limit reached"));

  bed dflt(*this);
  dflt.start();
  dflt.grain().fallback = answer::err(fault{mesh_errc::rejected, "rejected: queue limit reached"});
  auto t0 = now_ms();
  route_and_settle(*this, dflt, bed::make("d2", "node/Org/Acme"));
  std::vector<int64_t> starts;
  for (auto& a : dflt.grain().attempts)
    starts.push_back(a.t_ms - t0);
  CHECK(starts == std::vector<int64_t>{0, 250, 750, 1750, 3750, 6750, 9750});
  auto n2 = only_nack(dflt);
  CHECK(n2.verdict == verdict::failed);
  CHECK(contains(n2.message, "rejected: queue limit reached"));
}

TEST_CASE_FIXTURE(fixture, "S12.23 the NACK text carries the recorded activation error instead of the rejection text") {
  bed b(*this);
  b.start();
  b.grain().act_errors["messagehub/Org/Acme"] = "constructor threw: bad config";
  b.grain().fallback
    = answer::err(deactivated(tri_bool::yes, "rejected: activation #0000abcd is deactivated"));
  route_and_settle(*this, b, bed::make("d1", "node/Org/Acme"));
  CHECK(b.grain().attempts.size() == 7); // retries exhausted
  auto n = only_nack(b);
  CHECK(contains(n.message, "constructor threw: bad config"));
  CHECK_FALSE(contains(n.message, "rejected: activation #0000abcd is deactivated"));
  CHECK(n.verdict == verdict::failed);

  bed none(*this);
  none.start();
  none.grain().fallback
    = answer::err(deactivated(tri_bool::yes, "rejected: activation #0000abcd is deactivated"));
  route_and_settle(*this, none, bed::make("d2", "node/Org/Acme"));
  auto n2 = only_nack(none);
  CHECK(contains(n2.message, "rejected: activation #0000abcd is deactivated"));
}

TEST_CASE_FIXTURE(fixture, "S12.24 a response timeout anywhere in the tree makes exactly one attempt and a failed NACK") {
  fault rt{mesh_errc::response_timeout, "no answer within 30 s"};
  std::vector<fault> shapes{
    rt,
    with_causes(fault{mesh_errc::application, "call failed"}, {rt}),
    with_causes(fault{mesh_errc::application, "one or more errors"},
                {fault{mesh_errc::rejected, "queue limit reached"}, rt}),
  };
  int i = 0;
  for (auto& f : shapes) {
    CAPTURE(i);
    CHECK(is_transient(f));
    CHECK_FALSE(is_resendable(f));
    bed b(*this);
    b.start();
    b.grain().fallback = answer::err(f);
    route_and_settle(*this, b, bed::make("d" + std::to_string(i), "node/Org/Acme"));
    CHECK(b.grain().attempts.size() == 1);
    CHECK(only_nack(b).verdict == verdict::failed);
    ++i;
  }
}

TEST_CASE_FIXTURE(fixture, "router: a grain port that never answers ends the attempt as a response timeout after placement plus response time") {
  bed b(*this);
  b.start();
  b.script("messagehub/Org/Acme", {answer::held()});
  auto t0 = now_ms();
  route_and_settle(*this, b, bed::make("d1", "node/Org/Acme"));
  CHECK(b.grain().attempts.size() == 1);
  auto n = only_nack(b);
  CHECK(n.verdict == verdict::failed);
  auto lines = logs.find("NACKed failed after 1 attempt(s)");
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].t_ms - t0 == 60000);
}

TEST_CASE_FIXTURE(fixture, "router: the S12.26 leg logic with a fake port timing placement out at 30 s costs at most two placement-timeout attempts") {
  // Still stalled: two attempts, one NACK `unavailable`.
  bed b(*this);
  b.start();
  b.grain().fallback = answer::stalled();
  auto t0 = now_ms();
  route_and_settle(*this, b, bed::make("d1", "node/Org/Acme"), 300s);
  auto& g = b.grain();
  REQUIRE(g.attempts.size() == 2);
  CHECK(g.attempts[0].t_ms - t0 == 0);
  CHECK(g.attempts[1].t_ms - t0 == 30250); // first fails at 30 s, one retry after 250 ms
  run_for(300s);
  CHECK(g.attempts.size() == 2); // no third placement-timeout attempt
  auto n = only_nack(b);
  CHECK(n.verdict == verdict::unavailable);
  CHECK(contains(n.message, "timed out"));
  auto lines = logs.find("NACKed unavailable");
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].t_ms - t0 == 60250);

  // Unstalled at t = 40 s: the second attempt lands, no NACK.
  bed u(*this);
  u.start();
  u.grain().fallback = answer::stalled();
  auto t1 = now_ms();
  u.route(bed::make("d2", "node/Org/Acme"));
  run_to(t1 + 40000);
  CHECK(u.grain().attempts.size() == 2);
  caf::anon_send(u.grains, ft_unstall_atom::value);
  REQUIRE(run_until([&] { return u.stats().in_flight == 0; }, 120s));
  CHECK(u.grain().attempts.size() == 2);
  CHECK(u.stats().landed == 1);
  CHECK(u.local_nacks().empty());
}

TEST_CASE_FIXTURE(fixture, "S12.28 transient hub conditions invalidate, wait for the hint, re-resolve and land") {
  // A pod hub being deactivated: recorded = no, retry_after_ms = 400.
  bed b(*this);
  b.start();
  auto f = deactivated(tri_bool::no, "activation #00c0ffee is deactivating");
  f.retry_after_ms = 400u;
  b.script("podhub/portal/bob", {answer::err(f), answer::ok(delivery_state::forwarded)});
  auto t0 = now_ms();
  route_and_settle(*this, b, bed::make("d1", "portal/bob"));
  auto& g = b.grain();
  REQUIRE(g.attempts.size() == 2);
  CHECK(g.invalidated == std::vector<std::string>{"podhub/portal/bob"});
  CHECK(g.attempts[1].t_ms - t0 == 400);
  CHECK(g.attempts[1].fresh); // re-resolved
  CHECK(b.stats().landed == 1);
  CHECK(b.local_nacks().empty());

  // A node hub whose silo departs mid-call: the second attempt lands on another silo.
  bed n(*this);
  n.start();
  silo_address s1{"10.0.0.2", 11111, 1};
  silo_address s2{"10.0.0.3", 11111, 1};
  n.grain().silos = {s1, s2};
  fault dep{mesh_errc::departed_silo, "connection to " + s1.to_string() + " lost"};
  dep.silo = s1;
  n.script("messagehub/Org/Acme", {answer::err(dep, 50), answer::ok()});
  route_and_settle(*this, n, bed::make("d2", "node/Org/Acme"));
  auto& h = n.grain();
  REQUIRE(h.attempts.size() == 2);
  CHECK(h.attempts[0].silo == s1.to_string());
  CHECK(h.attempts[1].silo == s2.to_string());
  CHECK(h.inval_silos == std::vector<silo_address>{s1});
  CHECK(n.stats().landed == 1);
  CHECK(n.local_nacks().empty());
}

TEST_CASE_FIXTURE(fixture, "S12.29 carried verdicts are NACKed once with their texts and failed-and-NACKed results are not") {
  bed b(*this);
  b.start();
  b.script("messagehub/Org/A",
           {answer::failed_result({{"error", json_quote("Hub is shutting down")},
                                   {"verdict", json_quote("shutting_down")}})});
  b.script("messagehub/Org/B",
           {answer::failed_result({{"error", json_quote("Hub disposed before delivery")},
                                   {"verdict", json_quote("shutting_down")}})});
  b.script("messagehub/Org/C",
           {answer::failed_result({{"error", json_quote("activation faulted")},
                                   {"verdict", json_quote("unavailable")}})});
  b.script("messagehub/Org/D", {answer::failed_result({{"error", json_quote("parked and failed")},
                                                       {"sender_was_nacked", "true"}})});
  route_and_settle(*this, b, bed::make("a", "node/Org/A"));
  route_and_settle(*this, b, bed::make("b", "node/Org/B"));
  route_and_settle(*this, b, bed::make("c", "node/Org/C"));
  route_and_settle(*this, b, bed::make("d", "node/Org/D"));
  auto ns = b.local_nacks();
  REQUIRE(ns.size() == 3);
  CHECK(ns[0].request_id == "a");
  CHECK(ns[0].verdict == verdict::shutting_down);
  CHECK(ns[0].message == "Hub is shutting down");
  CHECK(ns[1].request_id == "b");
  CHECK(ns[1].verdict == verdict::shutting_down);
  CHECK(ns[1].message == "Hub disposed before delivery");
  CHECK(ns[2].request_id == "c");
  CHECK(ns[2].verdict == verdict::unavailable);
  CHECK(ns[2].message == "activation faulted");
  CHECK(b.grain().attempts.size() == 4); // results are never retried
  CHECK(b.stats().terminal_events == 4);
}

TEST_CASE_FIXTURE(fixture, "S12.30 the text rule turns an owner's shutting-down banner into shutting_down, quoted or not") {
  const std::string banner
    = "Hub portal/x is shutting down (activation #00c0ffee)\u2026 Rejecting now.";
  bed b(*this);
  b.start();
  b.script("messagehub/Org/A", {answer::failed_result({{"error", banner}})});
  b.script("messagehub/Org/B", {answer::failed_result({{"error", json_quote(banner)}})});
  b.script("messagehub/Org/C",
           {answer::failed_result({{"error", json_quote("No node found at 'Doc/Missing'.")}})});
  route_and_settle(*this, b, bed::make("a", "node/Org/A"));
  route_and_settle(*this, b, bed::make("b", "node/Org/B"));
  route_and_settle(*this, b, bed::make("c", "node/Org/C"));
  auto ns = b.local_nacks();
  REQUIRE(ns.size() == 3);
  CHECK(ns[0].verdict == verdict::shutting_down);
  CHECK(ns[1].verdict == verdict::shutting_down);
  CHECK(ns[1].message == banner);
  CHECK(ns[2].verdict == verdict::failed);
}

TEST_CASE_FIXTURE(fixture, "S12.31 transient hub conditions alone or beside an application fault end shutting_down after the retry budget") {
  std::vector<fault> conds{fault{mesh_errc::departed_silo, "silo departed"},
                           fault{mesh_errc::silo_unavailable, "silo is stopping"},
                           fault{mesh_errc::directory_unstable, "retry later"},
                           fault{mesh_errc::lifecycle_cancelled, "lifecycle cancelled"}};
  bed b(*this);
  b.start();
  int i = 0;
  for (auto& c : conds) {
    for (int shape = 0; shape < 2; ++shape) {
      auto f = shape == 0 ? c
                          : with_causes(fault{mesh_errc::application, "one or more errors"},
                                        {fault{mesh_errc::application, "handler threw"}, c});
      auto grain = "Org/N" + std::to_string(i);
      b.grain().script["messagehub/" + grain] = std::deque<answer>(7, answer::err(f));
      route_and_settle(*this, b, bed::make("d" + std::to_string(i), "node/" + grain));
      CAPTURE(i);
      CHECK(b.grain().attempts_for("messagehub/" + grain) == 7);
      ++i;
    }
  }
  auto ns = b.local_nacks();
  REQUIRE(ns.size() == 8);
  for (auto& n : ns)
    CHECK(n.verdict == verdict::shutting_down);
}

TEST_CASE_FIXTURE(fixture, "S12.32 terminal and response-timeout faults end failed") {
  std::vector<fault> faults{fault{mesh_errc::rejected, "rejected"},
                            fault{mesh_errc::application, "Unable to connect to https://api.example"},
                            fault{mesh_errc::extension_missing, "extension missing"},
                            fault{mesh_errc::overloaded, "overloaded"},
                            fault{mesh_errc::invalid_operation, "invalid operation"},
                            fault{mesh_errc::response_timeout, "no answer within 30 s"}};
  bed b(*this);
  b.start();
  int i = 0;
  for (auto& f : faults) {
    auto grain = "Org/F" + std::to_string(i);
    b.grain().script["messagehub/" + grain] = std::deque<answer>(7, answer::err(f));
    route_and_settle(*this, b, bed::make("d" + std::to_string(i), "node/" + grain));
    ++i;
  }
  auto ns = b.local_nacks();
  REQUIRE(ns.size() == 6);
  for (auto& n : ns) {
    CAPTURE(n.message);
    CHECK(n.verdict == verdict::failed);
  }
  CHECK(contains(ns[1].message, "Unable to connect to https://api.example"));
}

TEST_CASE_FIXTURE(fixture, "S12.33 activation_deactivated is shutting_down only when no activation error was recorded") {
  bed b(*this);
  b.start();
  std::vector<std::pair<fault, verdict>> cases{
    {deactivated(tri_bool::no), verdict::shutting_down},
    {with_causes(fault{mesh_errc::application, "aggregate"},
                 {fault{mesh_errc::application, "inner"}, deactivated(tri_bool::no)}),
     verdict::shutting_down},
    {deactivated(tri_bool::yes), verdict::failed},
    {deactivated(tri_bool::unknown), verdict::failed},
  };
  int i = 0;
  for (auto& c : cases) {
    auto grain = "Org/A" + std::to_string(i);
    b.grain().script["messagehub/" + grain] = std::deque<answer>(7, answer::err(c.first));
    route_and_settle(*this, b, bed::make("d" + std::to_string(i), "node/" + grain));
    ++i;
  }
  auto ns = b.local_nacks();
  REQUIRE(ns.size() == 4);
  for (size_t j = 0; j < ns.size(); ++j) {
    CAPTURE(j);
    CHECK(ns[j].verdict == cases[j].second);
  }
}

namespace {

struct silent_registry_state {
  std::vector<caf::typed_response_promise<probe_answer>> pending;
};

lifecycle::runtime_registry_actor::behavior_type
silent_registry(lifecycle::runtime_registry_actor::stateful_pointer<silent_registry_state> self) {
  return {
    [=](lifecycle::host_register_atom, std::string&) { return caf::ok_atom::value; },
    [=](lifecycle::host_torn_down_atom, std::string&) { return caf::ok_atom::value; },
    [=](lifecycle::probe_runtime_atom, std::string&) {
      auto rp = self->make_response_promise<probe_answer>();
      self->state.pending.push_back(rp);
      return rp;
    },
  };
}

/// The NACK the router tried to post through the sender's pod hub (rung c).
delivery_failure nack_via_pod_hub(bed& b, const std::string& sender_path) {
  for (auto& a : b.grain().attempts)
    if (a.grain == "podhub/" + sender_path) {
      delivery_failure f;
      REQUIRE(from_json_text(a.env.payload_json, f));
      return f;
    }
  FAIL("no NACK attempt through podhub/" << sender_path);
  return {};
}

} // namespace

TEST_CASE_FIXTURE(fixture, "S12.34 runtime_gone is shutting_down with no further attempt only when the probe says torn down") {
  fault gone{mesh_errc::runtime_gone, "serializer unavailable: runtime services disposed"};
  // torn down
  {
    bed b(*this);
    b.registry = track(lifecycle::spawn_runtime_registry(sys));
    b.start();
    ask<caf::ok_atom>(*this, b.registry, lifecycle::host_register_atom::value, b.silo.to_string());
    ask<caf::ok_atom>(*this, b.registry, lifecycle::host_torn_down_atom::value,
                      b.silo.to_string());
    b.grain().fallback = answer::err(gone);
    logs.clear();
    route_and_settle(*this, b, bed::make("d1", "node/Org/Acme", "portal/carol"));
    CHECK(b.grain().attempts_for("messagehub/Org/Acme") == 1);
    auto n = nack_via_pod_hub(b, "portal/carol");
    CHECK(n.verdict == verdict::shutting_down);
    // the NACK attempt meets the same dead runtime: logged at info, nothing at warning+
    CHECK(logs.count("given up: runtime gone", lvl::info) == 1);
    CHECK(logs.count("NACKed shutting_down", lvl::info) == 1);
    CHECK(logs.count_level(lvl::warning) == 0);
    CHECK(logs.count_level(lvl::error) == 0);
  }
  // alive
  {
    bed b(*this);
    b.registry = track(lifecycle::spawn_runtime_registry(sys));
    b.start();
    ask<caf::ok_atom>(*this, b.registry, lifecycle::host_register_atom::value, b.silo.to_string());
    b.grain().fallback = answer::err(gone);
    route_and_settle(*this, b, bed::make("d2", "node/Org/Acme"));
    CHECK(b.grain().attempts_for("messagehub/Org/Acme") == 1);
    CHECK(only_nack(b).verdict == verdict::failed);
  }
  // no answer
  {
    bed b(*this);
    b.registry = track(caf::actor_cast<lifecycle::runtime_registry_actor>(sys.spawn(silent_registry)));
    b.start();
    b.grain().fallback = answer::err(gone);
    route_and_settle(*this, b, bed::make("d3", "node/Org/Acme"));
    CHECK(b.grain().attempts_for("messagehub/Org/Acme") == 1);
    CHECK(only_nack(b).verdict == verdict::failed);
  }
}

TEST_CASE_FIXTURE(fixture, "S12.51 a grain-call payload at or above the limit is refused before the call with one log line") {
  bed b(*this);
  b.cfg.size.grain_call_body_limit_bytes = 1000;
  b.start();
  // limit + 1
  logs.clear();
  route_and_settle(*this, b, bed::make("big1", "node/Org/Acme", "portal/alice", std::string(1001, 'x')));
  CHECK(b.grain().attempts.empty());
  auto n = only_nack(b);
  CHECK(n.verdict == verdict::rejected);
  auto lines = logs.find("size guard", lvl::error);
  REQUIRE(lines.size() == 1);
  auto& l = lines[0].text;
  CHECK(l.find('\n') == std::string::npos);
  CHECK(contains(l, "node/Org/Acme"));
  CHECK(contains(l, "portal/alice"));
  CHECK(contains(l, "big1"));
  CHECK(contains(l, "test.ping"));
  CHECK(contains(l, "1,001"));
  CHECK(contains(l, "1,000"));
  CHECK(contains(l, "connection"));
  // limit - 1: called, no NACK, no log
  logs.clear();
  route_and_settle(*this, b, bed::make("ok1", "node/Org/Acme", "portal/alice", std::string(999, 'x')));
  CHECK(b.grain().attempts.size() == 1);
  CHECK(b.local_nacks().size() == 1);
  CHECK(logs.count("size guard") == 0);
  CHECK(logs.count_level(lvl::error) == 0);
  // exactly the limit: refused
  route_and_settle(*this, b, bed::make("big2", "node/Org/Acme", "portal/alice", std::string(1000, 'x')));
  CHECK(b.grain().attempts.size() == 1);
  auto ns = b.local_nacks();
  REQUIRE(ns.size() == 2);
  CHECK(ns[1].request_id == "big2");
  CHECK(ns[1].verdict == verdict::rejected);
}

TEST_CASE_FIXTURE(fixture, "S12.52 defaults: a 142 MB grain call is refused at 104,857,600 and the stream block refuses 37,483,597 and 1,048,576 bytes but publishes 1,048,575") {
  bed b(*this);
  b.cfg.routing.client_hosted_address_types = {"app"};
  CHECK(b.cfg.size.grain_call_body_limit_bytes == 104857600);
  b.start();
  logs.clear();
  route_and_settle(*this, b, bed::make("huge", "app/viewer1", "portal/alice", std::string(37483597, 'x')));
  CHECK(b.stream().published.empty());
  auto lines = logs.find("size guard", lvl::error);
  REQUIRE(lines.size() == 1);
  CHECK(contains(lines[0].text, "37,483,597"));
  CHECK(contains(lines[0].text, "1,048,576"));
  auto n = only_nack(b);
  CHECK(n.verdict == verdict::rejected);
  CHECK(contains(n.message, "app/viewer1"));
  CHECK(contains(n.original.payload_json, "payloadOmitted")); // echo stripped
  route_and_settle(*this, b, bed::make("under", "app/viewer1", "portal/alice", std::string(1048575, 'x')));
  REQUIRE(b.stream().published.size() == 1);
  CHECK(b.stream().published[0].second.id == "under");
  route_and_settle(*this, b, bed::make("at", "app/viewer1", "portal/alice", std::string(1048576, 'x')));
  CHECK(b.stream().published.size() == 1);
  auto ns = b.local_nacks();
  REQUIRE(ns.size() == 2);
  CHECK(ns[1].request_id == "at");
  CHECK(ns[1].verdict == verdict::rejected);
  // Grain call at the default limit: a 142 MB payload never reaches the grain.
  logs.clear();
  route_and_settle(*this, b, bed::make("g142", "node/Org/Acme", "portal/alice", std::string(142000000, 'x')));
  CHECK(b.grain().attempts.empty());
  ns = b.local_nacks();
  REQUIRE(ns.size() == 3);
  CHECK(ns[2].request_id == "g142");
  CHECK(ns[2].verdict == verdict::rejected);
  CHECK(ns[2].original.payload_json.size() < 4096); // echo stripped
  auto grain_lines = logs.find("size guard", lvl::error);
  REQUIRE(grain_lines.size() == 1);
  CHECK(contains(grain_lines[0].text, "142,000,000"));
  CHECK(contains(grain_lines[0].text, "104,857,600"));
}

TEST_CASE_FIXTURE(fixture, "router: a response whose pod hub is not here is retried re-resolving until the hub's claim is back, while a new post gets its one NACK at once") {
  fault not_here{mesh_errc::pod_hub_not_here, "no local route for portal/bob here"};
  // A response (its request_id names the request it answers): nobody would send it again.
  bed b(*this);
  b.start();
  b.script("podhub/portal/bob", {answer::err(not_here), answer::ok(delivery_state::forwarded)});
  auto resp = bed::make("r1", "portal/bob", "node/Org/Acme");
  resp.request_id = std::string{"q1"};
  auto t0 = now_ms();
  route_and_settle(*this, b, resp);
  auto& g = b.grain();
  REQUIRE(g.attempts.size() == 2);
  CHECK(g.attempts[1].t_ms - t0 == 250); // the router policy's first delay
  CHECK(g.attempts[1].fresh);            // re-resolved
  CHECK(b.stats().landed == 1);
  CHECK(b.stats().continuation_retries == 1);
  CHECK(b.local_nacks().empty());
  // A new post keeps the one NACK `shutting_down` with target_unserved, no retry.
  bed p(*this);
  p.start();
  p.script("podhub/portal/bob", {answer::err(not_here), answer::ok(delivery_state::forwarded)});
  route_and_settle(*this, p, bed::make("p1", "portal/bob", "node/Org/Acme"));
  CHECK(p.grain().attempts_for("podhub/portal/bob") == 1); // the other attempt is its NACK
  CHECK(p.stats().continuation_retries == 0);
  CHECK(p.stats().nacked == 1);
}
