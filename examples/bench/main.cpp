/// @file
/// cafmesh-bench: one process run measures every row of the performance goals (P1-P8) next
/// to its raw CAF baseline measured in the same run, prints them as a table with each goal
/// and whether it is met, and with `--json FILE` writes them as JSON
/// (examples/bench/README.md). Not a ctest test: speed is measured by benchmarks, never by
/// timed tests.

#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include <CLI/CLI.hpp>
#include <caf/all.hpp>

#include "bench.hpp"
#include "cafmesh/actors/log.hpp"

namespace {

using namespace cafmesh::bench;

std::string cpu_model() {
  std::ifstream in{"/proc/cpuinfo"};
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      return colon == std::string::npos ? line : line.substr(colon + 2);
    }
  return "unknown";
}

int cpu_count() {
  std::ifstream in{"/proc/cpuinfo"};
  std::string line;
  int n = 0;
  while (std::getline(in, line))
    if (line.rfind("processor", 0) == 0)
      ++n;
  return n;
}

std::string utc_now() {
  auto t = std::time(nullptr);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

std::string value_text(const row& r) {
  if (!r.measured)
    return "-";
  char buf[64];
  if (r.unit == "x")
    std::snprintf(buf, sizeof buf, "%.3f x", r.value);
  else if (r.unit == "ms")
    std::snprintf(buf, sizeof buf, "%.3f ms", r.value);
  else if (r.unit == "B")
    std::snprintf(buf, sizeof buf, "%.0f B", r.value);
  else
    std::snprintf(buf, sizeof buf, "%.0f %s", r.value, r.unit.c_str());
  return buf;
}

void print_table(const rows& all) {
  std::printf("\n| row | measures | value | goal | met | detail |\n|---|---|---|---|---|---|\n");
  for (auto& r : all)
    std::printf("| %s | %s | %s | %s | %s | %s |\n", r.id.c_str(), r.what.c_str(),
                value_text(r).c_str(), r.goal.c_str(),
                !r.measured ? "not measured" : (r.met ? "met" : "MISSED"), r.detail.c_str());
}

nlohmann::json to_json(const row& r) {
  nlohmann::json j{{"id", r.id},     {"what", r.what},         {"unit", r.unit},
                   {"goal", r.goal}, {"measured", r.measured}, {"met", r.met},
                   {"detail", r.detail}};
  j["value"] = r.measured ? nlohmann::json(r.value) : nlohmann::json(nullptr);
  if (!r.data.is_null())
    j["data"] = r.data;
  return j;
}

} // namespace

int main(int argc, char** argv) {
  options opt;
  std::string json_path;
  bool verbose = false;
  CLI::App app{"cafmesh-bench: every performance row (P1-P8) next to its raw CAF baseline "
               "measured in the same run (examples/bench/README.md)"};
  app.add_flag("--quick", opt.quick,
               "Smaller batches and fewer repetitions (under 2 minutes on 2 cores); skips P8 "
               "unless --p8 is given");
  app.add_option("--json", json_path, "Also write every row, with all figures, to FILE")
    ->type_name("FILE");
  app.add_flag("--p8", opt.p8, "Run P8 (cafmesh-demo at several rates) also with --quick");
  app.add_flag("--no-p8", opt.skip_p8, "Never run P8");
  app.add_flag("--p8-processes", opt.p8_processes,
               "Run P8 also with cafmesh-demo --processes (row P8p; every silo a cafmesh-node)");
  app.add_option("--demo", opt.demo_binary,
                 "cafmesh-demo for P8 (default: ../cafmesh-demo next to this binary)")
    ->type_name("PATH");
  app.add_option("--only", opt.only,
                 "Comma-separated row groups to run: P1 (with P1q, P1r, P1b, P7), P2 (with "
                 "P3), P3 (alone), P4, P5, P6, P8")
    ->type_name("LIST");
  app.add_option("--threads", opt.threads,
                 "scheduler.max-threads of every actor system (default: CAF's, the core "
                 "count)")
    ->type_name("N");
  app.add_option("--channel-batch-max", opt.channel_batch_max,
                 "routing.channel_batch_max of P3's sending silo (default: the configured "
                 "default, 1: off)")
    ->type_name("N")
    ->check(CLI::Range(int64_t{0}, int64_t{256}));
  app.add_flag("--verbose", verbose, "Keep cafmesh's log lines on stderr");
  CLI11_PARSE(app, argc, argv);
  if (!verbose)
    cafmesh::log::set_stderr_enabled(false);
  std::set<std::string> only;
  {
    std::istringstream in{opt.only};
    std::string x;
    while (std::getline(in, x, ','))
      if (!x.empty())
        only.insert(x);
  }
  auto wanted = [&](const std::string& g) { return only.empty() || only.count(g) > 0; };
  bool run_p8 = !opt.skip_p8 && (opt.quick ? opt.p8 || only.count("P8") > 0 : wanted("P8"));

  auto sched = scheduler_settings(opt.threads);
  nlohmann::json machine{{"cpu_model", cpu_model()},
                         {"cpus", cpu_count()},
                         {"hardware_concurrency", std::thread::hardware_concurrency()},
                         {"scheduler", sched},
                         {"allocator", allocator_name()},
                         {"started_utc", utc_now()},
                         {"load_before", loadavg_text()},
                         {"mode", opt.quick ? "quick" : "full"}};
  std::printf("cafmesh-bench (%s run), started %s\n", opt.quick ? "quick" : "full",
              machine["started_utc"].get<std::string>().c_str());
  std::printf("CPU: %s, %d cores; CAF scheduler: %s; allocator: %s\n",
              machine["cpu_model"].get<std::string>().c_str(),
              machine["cpus"].get<int>(), scheduler_line(sched).c_str(),
              machine["allocator"].get<std::string>().c_str());
  std::printf("load average before: %s\n", machine["load_before"].get<std::string>().c_str());
  std::fflush(stdout);
  auto t_start = clock_type::now();
  rows all;
  nlohmann::json timings;
  auto group = [&](const std::string& name, auto&& fn) {
    if (!wanted(name))
      return;
    std::fprintf(stderr, "%s ...\n", name.c_str());
    auto t0 = clock_type::now();
    auto rs = fn();
    timings[name] = seconds_since(t0);
    std::fprintf(stderr, "%s done in %.1f s (load %s)\n", name.c_str(), seconds_since(t0),
                 loadavg_text().c_str());
    for (auto& r : rs)
      all.push_back(std::move(r));
  };
  {
    // The co-hosted rows share one actor system; the loopback rows build their own.
    system_box box{opt.threads};
    auto& sys = *box.sys;
    group("P1", [&] {
      auto rs = run_co_hosted(opt, sys);
      for (auto& r : run_silo_path(opt))
        rs.push_back(std::move(r));
      return rs;
    });
    group("P5", [&] { return run_channels(opt, sys); });
    group("P6", [&] { return run_memory_isolated(opt, sys); });
    group("P4", [&] { return run_stop(opt, sys); });
  }
  if (wanted("P2"))
    group("P2", [&] { return run_loopback(opt, true, true); });
  else if (only.count("P3") > 0)
    group("P3", [&] { return run_loopback(opt, false, true); });
  if (run_p8)
    group("P8", [&] {
      auto rs = run_demo_rates(opt);
      if (opt.p8_processes)
        for (auto& r : run_demo_rates(opt, true))
          rs.push_back(std::move(r));
      return rs;
    });
  else
    all.push_back(failed_row("P8", "highest demo rate with p99 <= 50 ms during the roll",
                             opt.quick ? "skipped by --quick (run with --p8)" : "skipped"));
  auto total_s = seconds_since(t_start);
  machine["load_after"] = loadavg_text();
  machine["run_s"] = total_s;
  machine["group_s"] = timings;
  print_table(all);
  std::printf("\nload average before: %s, after: %s; run time %.0f s\n",
              machine["load_before"].get<std::string>().c_str(),
              machine["load_after"].get<std::string>().c_str(), total_s);
  if (!json_path.empty()) {
    nlohmann::json doc{{"schema", "cafmesh.bench/1"}, {"machine", machine}};
    doc["rows"] = nlohmann::json::array();
    for (auto& r : all)
      doc["rows"].push_back(to_json(r));
    std::ofstream out{json_path};
    out << doc.dump(2) << "\n";
    if (!out) {
      std::fprintf(stderr, "cafmesh-bench: cannot write %s\n", json_path.c_str());
      return 1;
    }
  }
  return 0;
}
