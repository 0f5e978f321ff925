/// @file
/// P6 (examples/bench/README.md): heap bytes the co-hosted router-core rig keeps per idle
/// channel, per queued delivery and per leg in flight, from `mallinfo2()` deltas (bytes in
/// use in every malloc arena plus mmapped blocks) taken once the actors are idle. Queued and
/// in-flight figures are beyond the envelope: the heap bytes of one envelope held in a vector
/// (its `sizeof` plus its strings) are subtracted. glibc counts the chunks its per-thread
/// caches hold as in use, so their churn moves the figures by a few bytes per item: the rows
/// are measured in a child process of this bench with those caches off
/// (`GLIBC_TUNABLES=glibc.malloc.tcache_count=0`), unless that fails.

#include <malloc.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "bench.hpp"
#include "rig.hpp"

namespace cafmesh::bench {

using namespace cafmesh::routing;

namespace {

double heap_in_use() {
  auto mi = mallinfo2();
  return static_cast<double>(mi.uordblks) + static_cast<double>(mi.hblkhd);
}

/// Lets the actors finish what is in their mailboxes (the gauge's and pool's notes arrive
/// after the router core's turn), then asks the router core once more.
void settle(core_rig& rig) {
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  rig.stats();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
}

std::vector<envelope> targets(const std::string& type, const std::string& prefix, uint64_t n) {
  std::vector<envelope> xs;
  xs.reserve(n);
  for (uint64_t i = 0; i < n; ++i)
    xs.push_back(make_proto(address{type, prefix + std::to_string(i), {}}));
  return xs;
}

} // namespace

rows run_memory(const options& opt, caf::actor_system& sys) {
  const uint64_t n = opt.quick ? 5000 : 20000;
  rows out;
  if (allocator_name() != "glibc") {
    // mallinfo2 sees glibc's heap only: under another malloc every figure would read 0.
    auto why = "P6 reads glibc's heap (mallinfo2); this process runs on " + allocator_name();
    out.push_back(failed_row("P6 idle channel", "bytes kept per idle channel", why));
    out.push_back(failed_row("P6 queued delivery", "bytes per queued delivery", why));
    out.push_back(failed_row("P6 in-flight leg", "bytes per leg in flight", why));
    return out;
  }
  // The envelope itself: one copy of the proto held in a vector, measured three times once
  // the actors of earlier rows are gone (their teardown frees memory asynchronously).
  std::this_thread::sleep_for(std::chrono::seconds(1));
  std::vector<double> env_samples;
  for (int k = 0; k < 3; ++k) {
    auto proto = make_proto(address{"portal", "q", {}});
    auto before = heap_in_use();
    std::vector<envelope> xs;
    xs.reserve(n);
    for (uint64_t i = 0; i < n; ++i)
      xs.push_back(proto);
    env_samples.push_back((heap_in_use() - before) / static_cast<double>(n));
  }
  double envelope_bytes = median(env_samples);
  nlohmann::json common{{"items", n},
                        {"envelope_bytes", envelope_bytes},
                        {"sizeof_envelope", sizeof(envelope)}};

  // -- idle channels: C stream-routed deliveries to distinct targets, all landed ----------
  {
    core_rig rig{sys};
    // A first round of as many other channels first: containers that grow and keep their
    // capacity (hash buckets, vectors) are not per-channel state.
    auto warm = protos_of(targets("portal", "w", n));
    auto open = protos_of(targets("portal", "i", n));
    bool ok = rig.deliver(n, warm) && rig.wait_landed(n, n);
    settle(rig);
    auto before = heap_in_use();
    ok = ok && rig.deliver(n, open) && rig.wait_landed(2 * n, 2 * n);
    settle(rig);
    auto after = heap_in_use(); // before the stats answer below, which holds the rig's ids
    auto st = rig.stats();
    auto per = (after - before) / static_cast<double>(n);
    if (!ok || st.channels != 0) {
      out.push_back(failed_row("P6 idle channel", "bytes kept per idle channel",
                               "legs did not land or channels stayed open"));
    } else {
      // In whole bytes, as the SPEC states it (S14.05: less than half a byte is 0).
      auto r = make_row("P6 idle channel", "heap bytes kept per idle channel", std::round(per), "B",
                        0, false);
      r.detail = std::to_string(n) + " channels opened and landed after a first round of "
                 + std::to_string(n) + "; channels open after: " + std::to_string(st.channels);
      r.data = common;
      r.data["bytes_per_item"] = per;
      out.push_back(std::move(r));
    }
  }

  // -- queued deliveries: one channel whose head never lands, n deliveries behind it ------
  {
    rig_options ro;
    ro.answer = [](const grain_id& g) {
      return g.key == "portal/q" ? grain_answer::never : grain_answer::at_once;
    };
    core_rig rig{sys, ro};
    auto head = protos_of({make_proto(address{"portal", "q", {}})});
    bool ok = rig.deliver(1, head) && rig.grain_calls.wait_for_count(1, 30);
    settle(rig);
    auto before = heap_in_use();
    ok = ok && rig.deliver(n, head);
    settle(rig);
    auto after = heap_in_use(); // before the stats answer below, which holds every leg's id
    auto st = rig.stats();
    auto per = (after - before) / static_cast<double>(n) - envelope_bytes;
    if (!ok || st.queued < n) {
      out.push_back(
        failed_row("P6 queued delivery", "bytes per queued delivery",
                   "deliveries were not queued (" + std::to_string(st.queued) + " queued)"));
    } else {
      auto r = make_row("P6 queued delivery", "heap bytes per queued delivery beyond envelope", per,
                        "B", 64, false);
      char buf[160];
      std::snprintf(buf, sizeof buf,
                    "%llu queued behind one held head; envelope %.0f B "
                    "subtracted (sizeof %zu)",
                    static_cast<unsigned long long>(st.queued), envelope_bytes, sizeof(envelope));
      r.detail = buf;
      r.data = common;
      r.data["bytes_per_item"] = per;
      out.push_back(std::move(r));
    }
  }

  // -- legs in flight: node legs whose grain call is never answered ------------------------
  {
    rig_options ro;
    ro.answer = [](const grain_id&) { return grain_answer::never; };
    core_rig rig{sys, ro};
    auto legs = protos_of({make_proto(address{"node", "Org/Bench", {}})});
    bool ok = rig.deliver(100, legs) && rig.grain_calls.wait_for_count(100, 30);
    settle(rig);
    auto before = heap_in_use();
    ok = ok && rig.deliver(n, legs) && rig.grain_calls.wait_for_count(100 + n, 120);
    settle(rig);
    auto after = heap_in_use(); // before the stats answer below, which holds every leg's id
    auto st = rig.stats();
    auto per = (after - before) / static_cast<double>(n) - envelope_bytes;
    if (!ok || st.in_flight < 100 + n) {
      out.push_back(
        failed_row("P6 in-flight leg", "bytes per leg in flight",
                   "legs were not all in flight (" + std::to_string(st.in_flight) + ")"));
    } else {
      auto r = make_row("P6 in-flight leg", "heap bytes per leg in flight beyond envelope", per,
                        "B", 256, false);
      char buf[160];
      std::snprintf(buf, sizeof buf,
                    "%llu node legs waiting on their grain call; envelope "
                    "%.0f B subtracted",
                    static_cast<unsigned long long>(st.in_flight), envelope_bytes);
      r.detail = buf;
      r.data = common;
      r.data["bytes_per_item"] = per;
      out.push_back(std::move(r));
    }
  }
  return out;
}

namespace {

/// The rows of `--json` output `path` (what `to_json` in main.cpp writes).
rows rows_of(const std::string& path) {
  rows out;
  std::ifstream in{path};
  auto doc = nlohmann::json::parse(in, nullptr, false);
  if (doc.is_discarded() || !doc.contains("rows"))
    return out;
  for (auto& j : doc["rows"]) {
    row r;
    r.id = j.value("id", "");
    r.what = j.value("what", "");
    r.unit = j.value("unit", "");
    r.goal = j.value("goal", "");
    r.measured = j.value("measured", false);
    r.met = j.value("met", false);
    r.detail = j.value("detail", "");
    if (j.contains("value") && j["value"].is_number())
      r.value = j["value"].get<double>();
    if (j.contains("data"))
      r.data = j["data"];
    out.push_back(std::move(r));
  }
  return out;
}

} // namespace

rows run_memory_isolated(const options& opt, caf::actor_system& sys) {
  // The child of this function measures in its own process (marked by the environment).
  if (allocator_name() != "glibc" || std::getenv("CAFMESH_BENCH_P6_CHILD") != nullptr)
    return run_memory(opt, sys);
  char self[4096];
  auto len = readlink("/proc/self/exe", self, sizeof self - 1);
  char out[] = "/tmp/cafmesh-bench-p6-XXXXXX";
  int fd = len > 0 ? mkstemp(out) : -1;
  if (fd >= 0) {
    close(fd);
    self[len] = '\0';
    std::vector<std::string> args{self, "--only", "P6", "--no-p8", "--json", out};
    if (opt.quick)
      args.emplace_back("--quick");
    if (opt.threads > 0) {
      args.emplace_back("--threads");
      args.emplace_back(std::to_string(opt.threads));
    }
    // The environment as it is, GLIBC_TUNABLES with the thread cache off, the child's mark.
    std::string tunables = "GLIBC_TUNABLES=glibc.malloc.tcache_count=0";
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
      std::string x{*e};
      if (x.rfind("GLIBC_TUNABLES=", 0) == 0)
        tunables = x + ":glibc.malloc.tcache_count=0";
      else
        env.push_back(std::move(x));
    }
    env.push_back(tunables);
    env.emplace_back("CAFMESH_BENCH_P6_CHILD=1");
    auto ptrs = [](std::vector<std::string>& xs) {
      std::vector<char*> ps;
      for (auto& x : xs)
        ps.push_back(x.data());
      ps.push_back(nullptr);
      return ps;
    };
    auto argv = ptrs(args);
    auto envp = ptrs(env);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    pid_t pid = 0;
    int status = -1;
    if (posix_spawn(&pid, self, &fa, nullptr, argv.data(), envp.data()) == 0)
      waitpid(pid, &status, 0);
    posix_spawn_file_actions_destroy(&fa);
    auto rs = rows_of(out);
    std::remove(out);
    rows p6;
    for (auto& r : rs)
      if (r.id.rfind("P6", 0) == 0) {
        r.data["process"] = "child, glibc's thread cache off";
        p6.push_back(std::move(r));
      }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && p6.size() == 3)
      return p6;
  }
  auto rs = run_memory(opt, sys);
  for (auto& r : rs)
    r.detail += " (in this process: the child with glibc's thread cache off failed)";
  return rs;
}

} // namespace cafmesh::bench
