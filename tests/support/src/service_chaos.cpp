#include "cafmesh/testing/service_chaos.hpp"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>
#include <utility>

#include <caf/all.hpp>

#include "cafmesh/actors/ids.hpp"
#include "cafmesh/routing/delivery_error.hpp"
#include "cafmesh/testing/ask.hpp"
#include "cafmesh/testing/fixture.hpp"
#include "cafmesh/testing/test_cluster.hpp"

namespace cafmesh::testing {

namespace {

using tick_atom = caf::atom_constant<caf::atom("sctick")>;

/// A number in [lo, hi], both included.
int64_t draw(std::mt19937_64& rng, int64_t lo, int64_t hi) {
  return lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1));
}

std::string client_name(int64_t i) {
  return "client" + std::to_string(i);
}

void validate(const service_chaos_options& o) {
  auto bad = [](const std::string& what) {
    throw std::invalid_argument("service chaos: " + what);
  };
  if (o.silos.size() < 2)
    bad("needs at least two silos (one fault at a time leaves one up), got "
        + std::to_string(o.silos.size()));
  if (std::set<std::string>(o.silos.begin(), o.silos.end()).size() != o.silos.size())
    bad("silo names must differ");
  for (auto& s : o.silos)
    if (s.rfind("client", 0) == 0)
      bad("silo name " + s + " collides with the clients' names (client1, ...)");
  if (o.clients < 1)
    bad("needs at least one client, got " + std::to_string(o.clients));
  if (!o.configure)
    bad("no configure function (the service's grains and hubs)");
  if (!o.next_request)
    bad("no next_request function (the traffic)");
  if (o.kinds.empty())
    bad("no fault kind to draw");
  if (o.min_faults < 0 || o.max_faults < o.min_faults)
    bad("fault count bounds must satisfy 0 <= min_faults <= max_faults");
  if (o.link_min_ms < 0 || o.link_max_ms < o.link_min_ms)
    bad("link latency bounds must satisfy 0 <= link_min_ms <= link_max_ms");
  if (o.interval_ms < 1 || o.tail_ms < 0)
    bad("interval_ms must be at least 1 and tail_ms not negative");
  if (o.request_timeout.count() < 1)
    bad("request_timeout must be positive");
}

/// A request of the traffic and how it ended.
struct sent_request {
  std::string client;
  service_request request;
  int64_t t_sent_ms = 0;
  std::shared_ptr<reply<std::string>> outcome;
};

/// A kill's window: from the kill until its silo is back (restarted and seen Active).
struct kill_window {
  int64_t from_ms = 0;
  int64_t to_ms = 0;
};

/// True if `r` was in flight at some instant of a kill's window.
bool explained_by_kill(const sent_request& r, const std::vector<kill_window>& kills) {
  for (auto& k : kills)
    if (r.t_sent_ms <= k.to_ms && r.outcome->t_ms >= k.from_ms)
      return true;
  return false;
}

std::string outcome_text(const reply<std::string>& x) {
  if (!x.done)
    return "pending";
  if (x.ok())
    return "answered " + x.value;
  if (x.err.category() != routing::delivery_error_category())
    return "unclassified " + to_string(x.err);
  return "failed " + routing::to_string(routing::delivery_error_of(x.err));
}

/// Applies the faults in order while the traffic runs; records what it did in `out.trace`
/// and the kills' windows in `kills`. Answers false (with a violation) when a fault could
/// not be applied or undone, which ends the schedule.
bool apply_faults(fixture& fx, test_cluster& mesh, const service_chaos_options& o,
                  service_chaos_result& out, std::vector<kill_window>& kills) {
  auto note = [&](const std::string& line) {
    out.trace.push_back(std::to_string(fx.now_ms()) + " " + line);
  };
  auto broken = [&](const std::string& detail) {
    out.violations.push_back({"every fault was applied and undone", detail});
    return false;
  };
  auto restart = [&](const std::string& silo) {
    try {
      mesh.add_silo(silo, o.configure);
    } catch (const std::logic_error& e) {
      return broken(silo + " did not start again: " + e.what());
    }
    note(silo + " is back");
    return true;
  };
  for (auto& f : out.schedule.faults) {
    fx.run_for(std::chrono::milliseconds(f.after_ms));
    note(f.to_string().substr(f.to_string().find(' ') + 1));
    switch (f.kind) {
      case service_fault_kind::stop: {
        auto stopped = mesh.stop(f.a);
        if (!fx.run_until([&] { return stopped->done; }, std::chrono::minutes(2)))
          return broken("the stop of " + f.a + " did not complete within 2 min");
        if (!stopped->ok())
          return broken("the stop of " + f.a + " failed: " + to_string(stopped->err));
        note(f.a + " stopped");
        fx.run_for(std::chrono::milliseconds(f.for_ms));
        if (!restart(f.a))
          return false;
        break;
      }
      case service_fault_kind::kill: {
        kill_window k{fx.now_ms(), 0};
        mesh.kill(f.a);
        fx.run_for(std::chrono::milliseconds(f.for_ms));
        if (!restart(f.a))
          return false;
        k.to_ms = fx.now_ms();
        kills.push_back(k);
        break;
      }
      case service_fault_kind::stall:
        mesh.stall(f.a);
        fx.run_for(std::chrono::milliseconds(f.for_ms));
        mesh.unstall(f.a);
        note(f.a + " unstalled");
        break;
      case service_fault_kind::partition:
        mesh.partition(f.a, f.b);
        fx.run_for(std::chrono::milliseconds(f.for_ms));
        mesh.heal(f.a, f.b);
        note(f.a + " " + f.b + " healed");
        break;
    }
  }
  return true;
}

/// Checks the invariants on the requests' outcomes and fills `out.counts`.
void check(const std::vector<sent_request>& sent, const std::vector<kill_window>& kills,
           const service_chaos_options& o, service_chaos_result& out) {
  auto& n = out.counts;
  n.sent = sent.size();
  // The first request breaking each invariant, and how many do.
  struct breach {
    std::string invariant;
    uint64_t count = 0;
    std::string first;
  };
  std::vector<breach> breaches;
  for (auto name : {"every request has one outcome",
                    "every failure is a classified delivery error",
                    "a request fails or ends by its deadline only when a kill explains it",
                    "every answer passes the service's check"})
    breaches.push_back({name, 0, {}});
  auto record = [&](size_t which, size_t i, const std::string& why) {
    if (breaches[which].count++ == 0)
      breaches[which].first = "request " + std::to_string(i) + " " + sent[i].client + " "
                              + sent[i].request.target + " " + sent[i].request.payload_json
                              + " sent at " + std::to_string(sent[i].t_sent_ms) + " ms: " + why;
  };
  for (size_t i = 0; i < sent.size(); ++i) {
    auto& r = sent[i];
    auto& x = *r.outcome;
    if (!x.done) {
      ++n.pending;
      record(0, i, "no outcome");
      continue;
    }
    if (x.ok()) {
      ++n.answered;
      if (o.check)
        if (auto wrong = o.check(r.request, x.value); !wrong.empty())
          record(3, i, "answer " + x.value + ": " + wrong);
      continue;
    }
    if (x.err.category() != routing::delivery_error_category()) {
      ++n.unclassified;
      record(1, i, to_string(x.err));
      continue;
    }
    auto d = routing::delivery_error_of(x.err);
    ++(d.deadline ? n.deadline : n.failed);
    if (d.resendable)
      ++n.resendable;
    if (explained_by_kill(r, kills))
      ++n.excused;
    else
      record(2, i, "at " + std::to_string(x.t_ms) + " ms: " + routing::to_string(d));
  }
  for (auto& b : breaches)
    if (b.count > 0)
      out.violations.push_back(
        {b.invariant, std::to_string(b.count) + " request(s); the first: " + b.first});
}

} // namespace

std::string to_string(service_fault_kind x) {
  switch (x) {
    case service_fault_kind::stop:
      return "stop";
    case service_fault_kind::kill:
      return "kill";
    case service_fault_kind::stall:
      return "stall";
    case service_fault_kind::partition:
      return "partition";
  }
  return "?";
}

std::string service_fault::to_string() const {
  auto s = "+" + std::to_string(after_ms) + "ms " + testing::to_string(kind) + " " + a;
  if (!b.empty())
    s += " " + b;
  return s + " for " + std::to_string(for_ms) + "ms";
}

std::string service_chaos_schedule::render() const {
  std::string s;
  for (size_t i = 0; i < faults.size(); ++i)
    s += "  " + std::to_string(i) + " " + faults[i].to_string() + "\n";
  return s;
}

service_chaos_schedule make_service_chaos_schedule(uint64_t seed,
                                                   const service_chaos_options& o) {
  validate(o);
  std::mt19937_64 rng{seed ^ fnv1a64("service_chaos")};
  std::vector<std::string> ends = o.silos; // what a partition may cut: silos and clients
  for (int64_t i = 1; i <= o.clients; ++i)
    ends.push_back(client_name(i));
  service_chaos_schedule x;
  x.seed = seed;
  auto count = draw(rng, o.min_faults, o.max_faults);
  for (int64_t i = 0; i < count; ++i) {
    service_fault f;
    f.kind = o.kinds[rng() % o.kinds.size()];
    f.after_ms = draw(rng, 200, 800);
    if (f.kind == service_fault_kind::partition) {
      // Any two ends but two clients, which exchange nothing.
      do {
        f.a = ends[rng() % ends.size()];
        f.b = ends[rng() % ends.size()];
      } while (f.a == f.b || (f.a.rfind("client", 0) == 0 && f.b.rfind("client", 0) == 0));
    } else {
      f.a = o.silos[rng() % o.silos.size()];
    }
    switch (f.kind) {
      case service_fault_kind::stop:
        f.for_ms = draw(rng, 200, 1000);
        break;
      case service_fault_kind::kill:
        f.for_ms = draw(rng, 200, 2000);
        break;
      case service_fault_kind::stall:
      case service_fault_kind::partition:
        f.for_ms = draw(rng, 100, 2000);
        break;
    }
    x.faults.push_back(std::move(f));
  }
  return x;
}

service_chaos_result run_service_chaos(uint64_t seed, const service_chaos_options& o) {
  service_chaos_result out;
  out.schedule = make_service_chaos_schedule(seed, o);
  fixture fx;
  test_cluster mesh{fx,
                    {o.link_min_ms, o.link_max_ms, seed ^ fnv1a64("service_chaos/network")},
                    o.failure_detection};
  for (auto& s : o.silos)
    mesh.add_silo(s, o.configure);
  for (int64_t i = 1; i <= o.clients; ++i)
    mesh.add_client(client_name(i));
  // The traffic: an actor sending one request every interval, from each client in turn,
  // until told to stop; it runs whenever the fixture runs, a restart's wait included.
  auto sent = std::make_shared<std::vector<sent_request>>();
  auto traffic_on = std::make_shared<bool>(true);
  auto rng = std::make_shared<std::mt19937_64>(seed ^ fnv1a64("service_chaos/traffic"));
  auto send_one = [&fx, &mesh, &o, sent, rng] {
    auto i = sent->size();
    sent_request r;
    r.client = client_name(static_cast<int64_t>(i % static_cast<size_t>(o.clients)) + 1);
    r.request = o.next_request(i, *rng);
    r.t_sent_ms = fx.now_ms();
    r.outcome = mesh.request(r.client, r.request.target, r.request.payload_json,
                             o.request_timeout);
    sent->push_back(std::move(r));
  };
  auto interval = std::chrono::milliseconds(o.interval_ms);
  fx.track(fx.sys.spawn([=](caf::event_based_actor* self) -> caf::behavior {
    self->send(self, tick_atom::value);
    return {[=](tick_atom) {
      if (!*traffic_on)
        return;
      send_one();
      self->delayed_send(self, interval, tick_atom::value);
    }};
  }));
  out.trace.push_back(std::to_string(fx.now_ms()) + " traffic begins");
  std::vector<kill_window> kills;
  if (apply_faults(fx, mesh, o, out, kills))
    fx.run_for(std::chrono::milliseconds(o.tail_ms));
  *traffic_on = false;
  out.trace.push_back(std::to_string(fx.now_ms()) + " traffic ends");
  // The drain: every request ends by its deadline at the latest.
  auto all_done = [&] {
    return std::all_of(sent->begin(), sent->end(),
                       [](const sent_request& r) { return r.outcome->done; });
  };
  if (!fx.run_until(all_done, o.request_timeout + std::chrono::seconds(10)))
    out.trace.push_back(std::to_string(fx.now_ms()) + " drain gave up");
  check(*sent, kills, o, out);
  for (size_t i = 0; i < sent->size(); ++i) {
    auto& r = (*sent)[i];
    out.trace.push_back(std::to_string(i) + " " + r.client + " " + r.request.target + " "
                        + std::to_string(r.t_sent_ms) + "ms -> "
                        + std::to_string(r.outcome->t_ms) + "ms "
                        + outcome_text(*r.outcome));
  }
  auto net = ask<uint64_t>(fx, mesh.network(), sim_digest_atom::value);
  if (!fx.run_until([&] { return net->done; }, std::chrono::minutes(1)) || !net->ok())
    throw std::logic_error("service chaos: the network did not answer its digest");
  auto lines = out.trace;
  lines.push_back("network " + std::to_string(net->value));
  out.digest = trace_digest(lines);
  return out;
}

std::string service_chaos_result::render() const {
  std::ostringstream os;
  os << "service chaos seed " << schedule.seed << ": "
     << (ok() ? "passed" : "FAILED (" + violations.front().invariant + ")") << "\n"
     << "schedule (" << schedule.faults.size() << " faults):\n"
     << schedule.render() << "run:\n";
  for (auto& line : trace) {
    if (line.find(" -> ") != std::string::npos)
      break; // the requests' lines: in `trace`, too many to print
    os << "  " << line << "\n";
  }
  os << "requests: " << counts.sent << " sent, " << counts.answered << " answered, "
     << counts.failed << " failed (" << counts.resendable << " resendable), "
     << counts.deadline << " by deadline, " << counts.excused << " explained by a kill, "
     << counts.unclassified << " unclassified, " << counts.pending << " pending\n"
     << "digest " << std::hex << digest << std::dec << "\n";
  for (auto& v : violations)
    os << "violated: " << v.invariant << ": " << v.detail << "\n";
  if (!ok())
    os << "replay: CAFMESH_CHAOS_SEED=" << schedule.seed
       << " and the same test (service_chaos_seeds then runs only this seed), or "
       << "run_service_chaos(" << schedule.seed << ", options)\n";
  return os.str();
}

std::vector<uint64_t> service_chaos_seeds(uint64_t first, uint64_t count) {
  if (auto env = std::getenv("CAFMESH_CHAOS_SEED"); env != nullptr && *env != '\0') {
    char* end = nullptr;
    auto seed = std::strtoull(env, &end, 10);
    if (*end != '\0' || *env == '-')
      throw std::invalid_argument(std::string{"CAFMESH_CHAOS_SEED is no seed: "} + env);
    return {seed};
  }
  std::vector<uint64_t> xs;
  for (uint64_t i = 0; i < count; ++i)
    xs.push_back(first + i);
  return xs;
}

} // namespace cafmesh::testing
