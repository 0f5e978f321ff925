#include "bench.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <sstream>

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include "cafmesh/actors/system_teardown.hpp"
#include "cafmesh/lifecycle/hosting.hpp"

namespace cafmesh::bench {

namespace {

std::string number(double v) {
  char buf[64];
  if (std::fabs(v) >= 100 || v == std::floor(v))
    std::snprintf(buf, sizeof buf, "%.0f", v);
  else
    std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

} // namespace

row make_row(std::string id, std::string what, double value, std::string unit, double goal,
             bool at_least) {
  row r;
  r.id = std::move(id);
  r.what = std::move(what);
  r.value = value;
  r.unit = std::move(unit);
  r.goal = std::string{at_least ? ">= " : "<= "} + number(goal) + " " + r.unit;
  r.measured = std::isfinite(value);
  r.met = r.measured && (at_least ? value >= goal : value <= goal);
  return r;
}

row failed_row(std::string id, std::string what, std::string why) {
  row r;
  r.id = std::move(id);
  r.what = std::move(what);
  r.measured = false;
  r.detail = std::move(why);
  return r;
}

system_box::system_box(size_t threads) : cfg(std::make_unique<caf::actor_system_config>()) {
  lifecycle::prepare(*cfg);
  if (threads > 0)
    cfg->set("scheduler.max-threads", threads);
  cfg->set("logger.verbosity", caf::atom("quiet"));
  sys = std::make_unique<caf::actor_system>(*cfg);
}

system_box::~system_box() {
  sys.reset(); // before its configuration
}

nlohmann::json scheduler_settings(size_t threads) {
  caf::actor_system_config cfg;
  if (threads > 0)
    cfg.set("scheduler.max-threads", threads);
  auto policy = caf::get_or(cfg, "scheduler.policy", caf::defaults::scheduler::policy);
  auto max_threads
    = caf::get_or(cfg, "scheduler.max-threads", caf::defaults::scheduler::max_threads);
  auto max_throughput
    = caf::get_or(cfg, "scheduler.max-throughput", caf::defaults::scheduler::max_throughput);
  nlohmann::json j;
  j["policy"] = caf::to_string(policy);
  j["max_threads"] = max_threads;
  if (max_throughput == std::numeric_limits<size_t>::max())
    j["max_throughput"] = "infinite";
  else
    j["max_throughput"] = max_throughput;
  return j;
}

std::string scheduler_line(const nlohmann::json& s) {
  std::ostringstream out;
  out << "policy " << s["policy"].get<std::string>() << ", max threads "
      << s["max_threads"].dump() << ", max throughput "
      << (s["max_throughput"].is_string() ? s["max_throughput"].get<std::string>()
                                          : s["max_throughput"].dump());
  return out.str();
}

void destroy_together(std::vector<std::unique_ptr<system_box>>& boxes) {
  std::vector<std::unique_ptr<caf::actor_system>> systems;
  for (auto& b : boxes)
    if (b && b->sys)
      systems.push_back(std::move(b->sys));
  destroy_systems_together(systems);
  boxes.clear();
}

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

double process_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double load_1min() {
  std::ifstream in{"/proc/loadavg"};
  double a = 0;
  in >> a;
  return a;
}

std::string allocator_name() {
  if (::dlsym(RTLD_DEFAULT, "mi_version") != nullptr)
    return "mimalloc";
  if (::dlsym(RTLD_DEFAULT, "mallctl") != nullptr)
    return "jemalloc";
  return "glibc";
}

std::string loadavg_text() {
  std::ifstream in{"/proc/loadavg"};
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

double percentile(std::vector<double>& xs, double p) {
  if (xs.empty())
    return 0;
  std::sort(xs.begin(), xs.end());
  auto rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(xs.size())));
  if (rank < 1)
    rank = 1;
  return xs[std::min(rank, xs.size()) - 1];
}

double median(std::vector<double> xs) {
  if (xs.empty())
    return 0;
  std::sort(xs.begin(), xs.end());
  auto n = xs.size();
  return n % 2 == 1 ? xs[n / 2] : (xs[n / 2 - 1] + xs[n / 2]) / 2.0;
}

void progress::bump(uint64_t n) {
  auto now = count.fetch_add(n) + n;
  if (now >= target.load()) {
    std::lock_guard<std::mutex> guard{mtx};
    cv.notify_all();
  }
}

bool progress::wait(double timeout_s) {
  return wait_for_count(target.load(), timeout_s);
}

bool progress::wait_for_count(uint64_t value, double timeout_s) {
  std::unique_lock<std::mutex> guard{mtx};
  // Notified when `count` reaches `target`; the periodic re-check covers a wait for another
  // value than the armed target.
  auto deadline = clock_type::now() + std::chrono::duration_cast<clock_type::duration>(
                                        std::chrono::duration<double>(timeout_s));
  while (count.load() < value) {
    if (clock_type::now() >= deadline)
      return false;
    cv.wait_for(guard, std::chrono::milliseconds(1));
  }
  return true;
}

} // namespace cafmesh::bench
