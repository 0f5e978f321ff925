#include "cafmesh/mainjob/chaos.hpp"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "cafmesh/actors/ids.hpp"
#include "cafmesh/mainjob/ledger.hpp"

namespace cafmesh::mainjob {

namespace {

const char* kind_names[] = {"graceful_restart", "overlapping_stops", "second_signal",
                            "kill",             "owner_stall",       "link_delay",
                            "link_drop",        "partition",         "overload_burst"};

/// The first `n` silo names: A, B, C, ...
std::vector<std::string> silo_names(int64_t n) {
  std::vector<std::string> out;
  for (int64_t i = 0; i < n; ++i)
    out.emplace_back(1, static_cast<char>('A' + i));
  return out;
}

bool is_lifecycle(chaos_kind k) {
  return k == chaos_kind::graceful_restart || k == chaos_kind::overlapping_stops
         || k == chaos_kind::second_signal || k == chaos_kind::kill;
}

/// The ledger lines of delivery `id` (a trace excerpt).
std::string ledger_excerpt(const std::string& lines, const std::string& id) {
  std::ostringstream o;
  std::istringstream in{lines};
  auto needle = "\"id\":\"" + id + "\"";
  for (std::string l; std::getline(in, l);)
    if (l.find(needle) != std::string::npos)
      o << "    " << l << "\n";
  return o.str();
}

/// Up to `n` items of `xs`, comma separated, with the total.
std::string some(const std::vector<std::string>& xs, size_t n = 5) {
  std::ostringstream o;
  o << xs.size() << ":";
  for (size_t i = 0; i < xs.size() && i < n; ++i)
    o << (i == 0 ? " " : ", ") << xs[i];
  if (xs.size() > n)
    o << ", ...";
  return o.str();
}

/// Checks every invariant of docs/testing.md#chaos on `r`.
std::vector<chaos_violation> check(const chaos_schedule& x, const scenario& s,
                                   const sim_run& r) {
  std::vector<chaos_violation> out;
  auto fail = [&](std::string inv, std::string detail) {
    out.push_back({std::move(inv), std::move(detail)});
  };
  auto& l = r.rep.input.ledger;
  // Exactly one terminal outcome per accepted delivery; the only exception: one-way
  // deliveries accepted before a kill, lost with the crash.
  std::map<std::string, std::pair<std::string, int64_t>> accepted; // id -> kind, ms
  std::set<std::string> ended; // ids with a terminal outcome
  {
    static const std::set<std::string> terminal{"landed",  "response",           "nack",
                                                "deadline", "suppressed_failure", "unconfirmed"};
    std::istringstream in{r.ledger_lines};
    for (std::string line; std::getline(in, line);) {
      auto j = nlohmann::json::parse(line);
      auto ev = j.at("event").get<std::string>();
      if (ev == "accepted")
        accepted[j.at("id").get<std::string>()]
          = {j.at("kind").get<std::string>(), j.at("t_ms").get<int64_t>()};
      else if (terminal.count(ev) > 0) {
        auto id = j.at("id").get<std::string>();
        auto i = accepted.find(id);
        // A request's landing at its target is not its sender's outcome (ledger.hpp).
        if (ev != "landed" || i == accepted.end() || i->second.first != "request")
          ended.insert(id);
      }
    }
  }
  int64_t last_kill_ms = -1;
  for (auto& [silo, at] : r.kills)
    last_kill_ms = std::max(last_kill_ms, at);
  std::vector<std::string> lost;
  uint64_t with_crash = 0;
  for (auto& [id, what] : accepted) {
    if (ended.count(id) > 0)
      continue;
    if (what.first != "request" && what.second <= last_kill_ms)
      ++with_crash; // lost with the crash
    else
      lost.push_back(id);
  }
  // The ledger's count and the lines must agree (the lines name every delivery).
  bool unnamed = l.total.lost != lost.size() + with_crash;
  if (!lost.empty() || unnamed || l.multiple_terminal > 0) {
    std::ostringstream d;
    d << "lost " << l.total.lost << " (" << with_crash << " one-way, accepted before a kill, "
      << "lost with the crash; the others " << some(lost)
      << (unnamed ? "; the ledger counts otherwise" : "")
      << "); two or more terminal outcomes " << some(l.multiple_terminal_ids)
      << "; quiescent at the end: " << (r.quiescent ? "yes" : "no") << "\n";
    if (!lost.empty())
      d << ledger_excerpt(r.ledger_lines, lost.front());
    else if (!l.multiple_terminal_ids.empty())
      d << ledger_excerpt(r.ledger_lines, l.multiple_terminal_ids.front());
    fail("every accepted delivery has exactly one terminal outcome", d.str());
  }
  // Every request answered or NACKed: none ends by its deadline.
  if (l.total.deadlines > 0) {
    std::vector<std::string> ids;
    std::istringstream in{r.ledger_lines};
    for (std::string line; std::getline(in, line);)
      if (line.find("\"event\":\"deadline\"") != std::string::npos)
        ids.push_back(nlohmann::json::parse(line).at("id").get<std::string>());
    std::ostringstream d;
    d << "request deadlines " << some(ids) << "\n";
    if (!ids.empty())
      d << ledger_excerpt(r.ledger_lines, ids.front());
    fail("every request answered or NACKed", d.str());
  }
  if (l.order_violations > 0)
    fail("per-stream order", std::to_string(l.order_violations) + " order violations");
  bool graceful = std::none_of(x.events.begin(), x.events.end(), [](const chaos_event& e) {
    return e.kind == chaos_kind::kill || e.kind == chaos_kind::second_signal;
  });
  // A late copy (a frame whose sender was told "outcome is unknown", landing behind a newer
  // version) is what the receiver's guard drops as stale: only kills and second signals make
  // either.
  if (graceful && (l.stale_drops > 0 || l.late_copies > 0))
    fail("no stale drops on graceful rolls",
         std::to_string(l.stale_drops) + " stale frames dropped, "
           + std::to_string(l.late_copies) + " late copies after an unknown outcome");
  if (!r.routing_after_stop.empty())
    fail("no routing code of a silo runs after its stop answered",
         some(r.routing_after_stop, 3));
  // Every stop within its hold + join budgets.
  auto cfg = process_config(s, config::process_role::silo_host, "chaos");
  if (!cfg.ok)
    throw std::runtime_error("chaos: bad config: " + cfg.message());
  auto budget_ms = cfg.value.lifecycle.quiescence_hold_ms + cfg.value.host.shutdown_budget_ms;
  for (auto& st : r.rep.input.silos) {
    if (!st.stop_duration_ms)
      fail("every stop within its hold + join budgets",
           st.name + " stopped at " + std::to_string(st.stop_started_ms)
             + " ms never completed");
    else if (*st.stop_duration_ms > budget_ms)
      fail("every stop within its hold + join budgets",
           st.name + " took " + std::to_string(*st.stop_duration_ms) + " ms > "
             + std::to_string(budget_ms) + " ms");
    else if (!st.generation_after)
      fail("every stopped silo is started again", st.name + " never came back");
  }
  if (r.rep.input.faults_not_injected > 0)
    fail("every fault was injected",
         std::to_string(r.rep.input.faults_not_injected) + " not injected");
  return out;
}

} // namespace

std::string to_string(chaos_kind k) {
  return kind_names[static_cast<size_t>(k)];
}

std::optional<chaos_kind> parse_chaos_kind(const std::string& text) {
  for (auto k : all_chaos_kinds())
    if (to_string(k) == text)
      return k;
  return std::nullopt;
}

const std::vector<chaos_kind>& all_chaos_kinds() {
  static const std::vector<chaos_kind> xs{
    chaos_kind::graceful_restart, chaos_kind::overlapping_stops, chaos_kind::second_signal,
    chaos_kind::kill,             chaos_kind::owner_stall,       chaos_kind::link_delay,
    chaos_kind::link_drop,        chaos_kind::partition,         chaos_kind::overload_burst};
  return xs;
}

std::string chaos_event::to_string() const {
  std::ostringstream o;
  o << at_ms << " " << mainjob::to_string(kind) << " " << a;
  if (!b.empty())
    o << " " << b;
  o << " for=" << for_ms;
  if (count != 0)
    o << " n=" << count;
  return o.str();
}

std::string chaos_schedule::render() const {
  std::ostringstream o;
  o << "seed " << seed << ", silos";
  for (auto& s : silos)
    o << " " << s;
  o << ", " << events.size() << " events\n";
  for (size_t i = 0; i < events.size(); ++i)
    o << "  [" << i << "] " << events[i].to_string() << "\n";
  return o.str();
}

chaos_schedule make_chaos_schedule(uint64_t seed, const chaos_options& o) {
  if (o.kinds.empty() || o.min_silos < 2 || o.max_silos > 26 || o.min_silos > o.max_silos
      || o.min_faults < 0 || o.min_faults > o.max_faults || o.duration_s < 4)
    throw std::invalid_argument("chaos_options: expected kinds, 2 <= min_silos <= max_silos "
                                "<= 26, 0 <= min_faults <= max_faults, duration_s >= 4");
  std::mt19937_64 rng{seed ^ fnv1a64("chaos")};
  auto pick = [&](int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1));
  };
  chaos_schedule x;
  x.seed = seed;
  x.silos = silo_names(pick(o.min_silos, o.max_silos));
  std::vector<std::string> processes = x.silos;
  for (int64_t k = 1; k <= o.pure_clients; ++k)
    processes.push_back("client" + std::to_string(k));
  // Silos free for a lifecycle fault; the last one keeps running.
  std::vector<std::string> free = x.silos;
  std::shuffle(free.begin(), free.end(), rng);
  free.pop_back();
  auto take = [&] {
    auto s = free.back();
    free.pop_back();
    return s;
  };
  auto two = [&](chaos_event& e) {
    auto i = static_cast<size_t>(pick(0, static_cast<int64_t>(processes.size()) - 1));
    auto j = static_cast<size_t>(pick(0, static_cast<int64_t>(processes.size()) - 2));
    if (j >= i)
      ++j;
    e.a = processes[i];
    e.b = processes[j];
  };
  auto end_ms = o.duration_s * 1000;
  auto n = pick(o.min_faults, o.max_faults);
  for (int64_t i = 0; i < n; ++i) {
    chaos_event e;
    e.kind = o.kinds[static_cast<size_t>(pick(0, static_cast<int64_t>(o.kinds.size()) - 1))];
    e.at_ms = pick(1000, end_ms - 1500);
    if (is_lifecycle(e.kind)
        && free.size() < (e.kind == chaos_kind::overlapping_stops ? 2u : 1u))
      continue; // no silo left for it
    switch (e.kind) {
      case chaos_kind::graceful_restart:
        e.a = take();
        e.for_ms = pick(200, 2000);
        break;
      case chaos_kind::overlapping_stops:
        e.a = take();
        e.b = take();
        e.for_ms = pick(200, 2000);
        e.count = pick(5, 300);
        break;
      case chaos_kind::second_signal:
        e.a = take();
        e.for_ms = pick(20, 500);
        break;
      case chaos_kind::kill:
        e.a = take();
        e.for_ms = pick(500, 3000);
        break;
      case chaos_kind::owner_stall:
        e.a = x.silos[static_cast<size_t>(pick(0, static_cast<int64_t>(x.silos.size()) - 1))];
        e.for_ms = pick(100, 1500);
        break;
      case chaos_kind::link_delay:
        two(e);
        e.count = pick(20, 200);
        e.for_ms = pick(500, 3000);
        break;
      case chaos_kind::link_drop:
        two(e);
        e.count = pick(1, 3);
        break;
      case chaos_kind::partition:
        two(e);
        e.for_ms = pick(100, 2000);
        break;
      case chaos_kind::overload_burst:
        e.a = "portals";
        e.count = pick(100, 400);
        e.for_ms = pick(20, 100);
        break;
    }
    x.events.push_back(std::move(e));
  }
  std::stable_sort(x.events.begin(), x.events.end(),
                   [](const chaos_event& p, const chaos_event& q) { return p.at_ms < q.at_ms; });
  return x;
}

chaos_schedule keep_events(const chaos_schedule& x, const std::vector<size_t>& keep) {
  auto out = x;
  out.events.clear();
  for (auto i : keep)
    if (i < x.events.size())
      out.events.push_back(x.events[i]);
  return out;
}

scenario chaos_scenario(const chaos_schedule& x, const chaos_options& o) {
  auto s = sim_roll_scenario(x.seed);
  s.name = "chaos";
  s.expected_outcome = "every invariant of docs/testing.md#chaos holds";
  s.silos = x.silos;
  s.pure_clients = o.pure_clients;
  s.duration_s = o.duration_s;
  s.rate_per_s = o.rate_per_s;
  s.traffic.weights = o.mix;
  s.config_json = o.config_json;
  s.roll.order.clear();
  for (auto& e : x.events) {
    switch (e.kind) {
      case chaos_kind::graceful_restart:
        s.roll.steps.push_back({e.a, e.at_ms, e.for_ms});
        break;
      case chaos_kind::overlapping_stops:
        s.roll.steps.push_back({e.a, e.at_ms, e.for_ms});
        s.roll.steps.push_back({e.b, e.at_ms + e.count, e.for_ms});
        break;
      case chaos_kind::second_signal: {
        s.roll.steps.push_back({e.a, e.at_ms, 1000});
        fault_spec f;
        f.kind = "second_signal";
        f.silo = e.a;
        f.at_ms = e.at_ms + e.for_ms;
        s.faults.push_back(f);
        break;
      }
      case chaos_kind::kill: {
        fault_spec f;
        f.kind = "kill";
        f.silo = e.a;
        f.at_ms = e.at_ms;
        f.restart_after_ms = e.for_ms;
        s.faults.push_back(f);
        break;
      }
      case chaos_kind::owner_stall: {
        fault_spec f;
        f.kind = "stall";
        f.silo = e.a;
        f.at_ms = e.at_ms;
        f.for_ms = e.for_ms;
        f.detected = false;
        s.faults.push_back(f);
        break;
      }
      case chaos_kind::overload_burst:
        s.traffic.bursts.push_back({e.at_ms, e.count, e.for_ms});
        break;
      default:
        break; // network faults: chaos_net_faults
    }
  }
  return s;
}

std::vector<net_fault> chaos_net_faults(const chaos_schedule& x) {
  std::vector<net_fault> out;
  sim_options defaults;
  for (auto& e : x.events) {
    net_fault f;
    f.at_ms = e.at_ms;
    f.a = e.a;
    f.b = e.b;
    switch (e.kind) {
      case chaos_kind::link_delay: {
        f.kind = net_fault::what::delay;
        f.min_ms = f.max_ms = e.count;
        out.push_back(f);
        auto back = f;
        back.at_ms = e.at_ms + e.for_ms;
        back.min_ms = defaults.link_latency_min_ms;
        back.max_ms = defaults.link_latency_max_ms;
        out.push_back(back);
        break;
      }
      case chaos_kind::link_drop:
        f.kind = net_fault::what::drop;
        f.count = static_cast<uint64_t>(e.count);
        out.push_back(f);
        break;
      case chaos_kind::partition: {
        f.kind = net_fault::what::partition;
        out.push_back(f);
        auto heal = f;
        heal.kind = net_fault::what::heal;
        heal.at_ms = e.at_ms + e.for_ms;
        out.push_back(heal);
        break;
      }
      default:
        break;
    }
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const net_fault& p, const net_fault& q) { return p.at_ms < q.at_ms; });
  return out;
}

chaos_result run_chaos(const chaos_schedule& x, const chaos_options& o) {
  chaos_result out;
  out.schedule = x;
  auto s = chaos_scenario(x, o);
  sim_options so;
  so.topology.answering_hubs_in_silos = true;
  so.topology.app = o.app;
  so.net_faults = chaos_net_faults(x);
  out.run = run_sim(s, so);
  out.digest = fnv1a64(out.run.ledger_lines + "net "
                       + std::to_string(out.run.network_digest));
  out.violations = check(x, s, out.run);
  return out;
}

chaos_result run_chaos(uint64_t seed, const chaos_options& o) {
  return run_chaos(make_chaos_schedule(seed, o), o);
}

std::string chaos_result::render() const {
  std::ostringstream o;
  auto& l = run.rep.input.ledger;
  o << (ok() ? "PASS" : "FAIL") << " " << schedule.render() << "  digest " << std::hex
    << digest << std::dec << "; accepted " << l.total.accepted << ", landed "
    << l.total.landed << ", NACKed " << l.total.nacked << ", lost " << l.total.lost
    << ", deadlines " << l.total.deadlines << ", stops " << run.rep.input.silos.size()
    << ", kills " << run.kills.size() << ", virtual end " << run.end_ms << " ms, real "
    << run.real_ms << " ms\n";
  for (auto& v : violations)
    o << "  violated: " << v.invariant << ": " << v.detail << "\n";
  return o.str();
}

chaos_result shrink_chaos(const chaos_result& failing, const chaos_options& o, int max_runs) {
  if (failing.ok())
    return failing;
  auto best = failing;
  auto invariant = failing.violations.front().invariant;
  int runs = 0;
  for (size_t i = 0; i < best.schedule.events.size() && runs < max_runs;) {
    std::vector<size_t> keep;
    for (size_t j = 0; j < best.schedule.events.size(); ++j)
      if (j != i)
        keep.push_back(j);
    auto r = run_chaos(keep_events(best.schedule, keep), o);
    ++runs;
    if (!r.ok() && r.violations.front().invariant == invariant)
      best = std::move(r); // keep `i`: the next event moved into it
    else
      ++i;
  }
  return best;
}

int chaos_main(int argc, char** argv, chaos_options o) {
  std::optional<uint64_t> seed;
  uint64_t seeds = 0;
  uint64_t from = 1;
  std::optional<std::vector<size_t>> keep;
  bool shrink = false;
  bool quiet = false;
  std::string ledger_file;
  auto usage = [] {
    std::cerr << "usage: [--seeds N [--from F]] [--seed S [--keep i,j,...] [--ledger FILE]] "
                 "[--shrink] [--kinds k1,k2,...] [--quiet]\n";
    return 2;
  };
  auto split = [](const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in{text};
    for (std::string x; std::getline(in, x, ',');)
      out.push_back(x);
    return out;
  };
  try {
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= argc)
          throw std::invalid_argument(a + ": expected a value");
        return argv[++i];
      };
      if (a == "--seeds")
        seeds = std::stoull(value());
      else if (a == "--from")
        from = std::stoull(value());
      else if (a == "--seed")
        seed = std::stoull(value());
      else if (a == "--keep") {
        keep.emplace();
        for (auto& x : split(value()))
          keep->push_back(std::stoul(x));
      } else if (a == "--ledger")
        ledger_file = value();
      else if (a == "--shrink")
        shrink = true;
      else if (a == "--quiet")
        quiet = true;
      else if (a == "--kinds") {
        o.kinds.clear();
        for (auto& x : split(value())) {
          auto k = parse_chaos_kind(x);
          if (!k)
            throw std::invalid_argument("--kinds: unknown kind \"" + x + "\"");
          o.kinds.push_back(*k);
        }
      } else
        throw std::invalid_argument(a + ": unknown option");
    }
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return usage();
  }
  if ((!seed && seeds == 0) || (!ledger_file.empty() && !seed))
    return usage();
  std::vector<uint64_t> todo;
  if (seed)
    todo.push_back(*seed);
  for (uint64_t k = 0; k < seeds; ++k)
    todo.push_back(from + k);
  auto wall0 = std::chrono::steady_clock::now();
  size_t failed = 0;
  std::map<std::string, size_t> by_invariant;
  for (auto k : todo) {
    auto x = make_chaos_schedule(k, o);
    if (keep && seed && k == *seed)
      x = keep_events(x, *keep);
    auto r = run_chaos(x, o);
    if (!ledger_file.empty() && k == *seed) {
      std::ofstream out{ledger_file, std::ios::binary};
      out << r.run.ledger_lines;
      if (!out)
        std::cerr << "--ledger: cannot write " << ledger_file << "\n";
    }
    if (!r.ok()) {
      ++failed;
      for (auto& v : r.violations)
        ++by_invariant[v.invariant];
    }
    if (!r.ok() || (seed && k == *seed) || !quiet)
      std::cout << (r.ok() && !(seed && k == *seed)
                      ? "PASS seed " + std::to_string(k) + " ("
                          + std::to_string(r.schedule.events.size()) + " events, "
                          + std::to_string(r.run.real_ms) + " ms)\n"
                      : r.render())
                << std::flush;
    if (!r.ok() && shrink) {
      auto small = shrink_chaos(r, o);
      // The kept events' indices in the seed's schedule: `--seed S --keep ...` replays it.
      std::ostringstream replay;
      size_t j = 0;
      for (size_t i = 0; i < x.events.size() && j < small.schedule.events.size(); ++i)
        if (x.events[i].to_string() == small.schedule.events[j].to_string()) {
          replay << (j == 0 ? "" : ",") << i;
          ++j;
        }
      std::cout << "shrunk to (replay: --seed " << k << " --keep " << replay.str() << "):\n"
                << small.render() << std::flush;
    }
  }
  auto wall_s = std::chrono::duration_cast<std::chrono::seconds>(
                  std::chrono::steady_clock::now() - wall0)
                  .count();
  std::cout << todo.size() << " seeds, " << failed << " failed, " << wall_s << " s";
  for (auto& [inv, n] : by_invariant)
    std::cout << "; " << inv << ": " << n;
  std::cout << "\n";
  return failed == 0 ? 0 : 1;
}

} // namespace cafmesh::mainjob
