// cafmesh-demo: the rolling-restart demo.
//
// Parses the command line, loads the scenario (a file, or the embedded roll-three-silos
// default), applies --seed/--duration-s/--rate, validates every process's configuration, and
// can print the effective scenario (--print-scenario) or write the paced schedule as a trace
// file (--plan-out). Otherwise it runs the scenario on the in-process mesh (net_mesh.hpp:
// every silo its own actor system over loopback TCP, plus a pure-client system), prints the
// progress and the final report (table; JSON with --report) and exits with the report's code
// (examples/README.md, "Exit codes"). With --processes every silo is a cafmesh-node process
// (--node-binary, default: next to this executable) and this process is the pure client.

#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "cafmesh/actors/log.hpp"
#include "cafmesh/config/load.hpp"
#include "cafmesh/mainjob/cli.hpp"
#include "cafmesh/mainjob/html_report.hpp"
#include "cafmesh/mainjob/net_mesh.hpp"
#include "cafmesh/mainjob/report.hpp"
#include "cafmesh/mainjob/trace_replay.hpp"
#include "cafmesh/mainjob/traffic.hpp"
#include "cafmesh/mainjob/verbosity.hpp"
#if CAFMESH_DEMO_TESTING
#  include "cafmesh/testing/etcd_cluster.hpp"
#  include "cafmesh/testing/tls_authority.hpp"
#endif

using namespace cafmesh;
using namespace cafmesh::mainjob;

namespace {

/// After a failed report: how many warnings and errors the run logged, every error line
/// (the quiescence participant's "did not land" line is the only record of a stuck leg,
/// docs/behaviour/quiescence.md#the-participant-at-stage-active) and the last warnings, so the
/// cause is at the end of a CI log.
void print_diagnostics(std::ostream& out, const std::vector<log::line>& lines) {
  constexpr size_t max_errors = 20;
  constexpr size_t max_warnings = 10;
  std::vector<const log::line*> errors;
  std::vector<const log::line*> warnings;
  for (const auto& l : lines)
    (l.lvl >= log::level::error ? errors : warnings).push_back(&l);
  out << "diagnostics: " << errors.size() << " error line(s), " << warnings.size()
      << " warning line(s) during the run\n";
  auto show = [&](const std::vector<const log::line*>& xs, size_t cap, const char* what) {
    size_t from = xs.size() > cap ? xs.size() - cap : 0;
    if (from > 0)
      out << "  (" << from << " earlier " << what << " line(s) not shown)\n";
    for (size_t i = from; i < xs.size(); ++i)
      out << "  +" << xs[i]->t_ms << " ms " << log::to_string(xs[i]->lvl) << " "
          << xs[i]->component << ": " << xs[i]->text << "\n";
  };
  show(warnings, max_warnings, "warning");
  show(errors, max_errors, "error");
}

std::string joined(const std::vector<std::string>& xs) {
  std::string out;
  for (auto& x : xs)
    out += (out.empty() ? "" : ", ") + x;
  return out.empty() ? "-" : out;
}

/// `name` in the directory of this executable.
std::string sibling(const std::string& name) {
  char buf[4096];
  auto n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0)
    return name;
  std::string self{buf, static_cast<size_t>(n)};
  auto slash = self.rfind('/');
  return slash == std::string::npos ? name : self.substr(0, slash + 1) + name;
}

/// Validates the configuration of every silo the scenario starts (the pure clients' differ
/// only in the primary's port, which the demo learns at run time).
bool check_process_configs(const scenario& s) {
  bool ok = true;
  auto check = [&](config::process_role role, const std::string& name) {
    auto loaded = process_config(s, role, name);
    if (!loaded.ok) {
      std::cerr << "cafmesh-demo: configuration of " << name << " is invalid:\n"
                << loaded.message() << "\n";
      ok = false;
    }
  };
  for (auto& silo : s.silos)
    check(config::process_role::silo_host, "silo-" + silo);
  return ok;
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"", "cafmesh-demo"};
  demo_options opts;
  setup_demo_cli(app, opts);
  if (auto code = parse_command_line(app, {argv + 1, argv + argc}, std::cout, std::cerr))
    return *code;
  auto loaded = opts.scenario_path ? load_scenario_file(*opts.scenario_path)
                                   : parse_scenario(default_scenario_text());
  auto source = opts.scenario_path ? *opts.scenario_path : std::string{"embedded default"};
  if (!loaded.ok) {
    std::cerr << "cafmesh-demo: invalid scenario " << source << ":\n" << loaded.message() << "\n";
    return exit_codes::usage;
  }
  auto& s = loaded.value;
  if (auto errs = apply_overrides(s, opts.overrides); !errs.empty()) {
    for (auto& e : errs)
      std::cerr << "cafmesh-demo: " << e << "\n";
    return exit_codes::usage;
  }
  // --membership etcd: one etcd member of our own, and every process's configuration names it.
#if CAFMESH_DEMO_TESTING
  std::unique_ptr<cafmesh::testing::etcd_cluster> etcd;
  if (opts.membership == "etcd" && !opts.print_scenario && !opts.plan_out) {
    try {
      etcd = std::make_unique<cafmesh::testing::etcd_cluster>(1);
    } catch (const std::exception& e) {
      std::cerr << "cafmesh-demo: cannot start etcd: " << e.what() << "\n";
      return exit_codes::failed;
    }
    if (!etcd->wait_healthy()) {
      std::cerr << "cafmesh-demo: etcd did not answer within 20 s (is the etcd executable of "
                   "Debian's etcd-server on the PATH? its log: "
                << etcd->directory() << "/m0.log)\n";
      return exit_codes::failed;
    }
    auto doc = nlohmann::json::parse(s.config_json);
    doc["membership"]["provider"] = "etcd";
    doc["membership"]["etcd_endpoints"] = etcd->endpoints();
    doc["membership"]["etcd_prefix"] = "/cafmesh/demo-" + std::to_string(::getpid()) + "/";
    s.config_json = doc.dump();
  }
  // --tls: a throwaway CA and one certificate of it that every process presents.
  std::unique_ptr<cafmesh::testing::tls_authority> ca;
  if (opts.tls && !opts.print_scenario && !opts.plan_out) {
    try {
      ca = std::make_unique<cafmesh::testing::tls_authority>("cafmesh-demo-ca");
      auto files = ca->issue("demo");
      auto doc = nlohmann::json::parse(s.config_json);
      doc["network"]["tls_certificate_file"] = files.certificate_file;
      doc["network"]["tls_key_file"] = files.key_file;
      doc["network"]["tls_ca_file"] = files.ca_file;
      s.config_json = doc.dump();
    } catch (const std::exception& e) {
      std::cerr << "cafmesh-demo: cannot make the TLS certificates: " << e.what() << "\n";
      return exit_codes::failed;
    }
  }
#else
  std::unique_ptr<int> etcd;
  if (opts.membership == "etcd") {
    std::cerr << "cafmesh-demo: --membership etcd needs a build with the tests "
                 "(CAFMESH_BUILD_TESTS=ON: the demo's etcd launcher is cafmesh::testing's)\n";
    return exit_codes::usage;
  }
  if (opts.tls) {
    std::cerr << "cafmesh-demo: --tls needs a build with the tests (CAFMESH_BUILD_TESTS=ON: "
                 "the demo's certificate authority is cafmesh::testing's)\n";
    return exit_codes::usage;
  }
#endif
  if (!check_process_configs(s))
    return exit_codes::usage;
  if (opts.print_scenario) {
    std::cout << to_json_text(s);
    return exit_codes::ok;
  }
  std::string node_binary;
  if (opts.processes) {
    node_binary = opts.node_binary ? *opts.node_binary : sibling("cafmesh-node");
    if (::access(node_binary.c_str(), X_OK) != 0) {
      std::cerr << "cafmesh-demo: --processes needs an executable cafmesh-node, none at \""
                << node_binary
                << "\" (./cafmesh demo --processes builds it; or use --node-binary)\n";
      return exit_codes::usage;
    }
  }
  // The whole schedule, a second at a time: counted and, with --plan-out, written, never held
  // (a long run plans millions of deliveries).
  uint64_t planned = 0;
  {
    std::ofstream out;
    if (opts.plan_out)
      out.open(*opts.plan_out);
    traffic_generator gen{s, "demo"};
    while (auto next = gen.next_due_ms())
      for (auto& d : gen.take_due(*next + 999)) {
        ++planned;
        if (opts.plan_out)
          out << to_trace_line(d) << '\n';
      }
    if (opts.plan_out) {
      out.flush();
      if (!out) {
        std::cerr << "cafmesh-demo: cannot write plan file \"" << *opts.plan_out << "\"\n";
        return exit_codes::usage;
      }
      std::cout << "cafmesh-demo: wrote " << planned << " planned deliveries to "
                << *opts.plan_out << " (nothing was sent)\n";
      return exit_codes::ok;
    }
  }
  // Warnings and errors only unless --verbose, in this process and in every process it
  // builds or starts (their configuration carries the level).
  log::set_stderr_level(apply_verbosity(s, opts.verbose));
  std::cout << "scenario:  " << s.name << " (" << source << ")\n"
            << "expected:  " << s.expected_outcome << "\n"
            << "topology:  silos " << joined(s.silos) << ", pure clients " << s.pure_clients
            << ", senders " << to_string(s.traffic.senders) << ", "
            << (opts.processes ? "one cafmesh-node process per silo (" + node_binary + ")"
                               : std::string{"all in one process"})
            << "\n"
            << "traffic:   seed " << s.seed << ", " << s.duration_s << " s at " << s.rate_per_s
            << " deliveries/s: " << planned << " paced deliveries planned over "
            << s.traffic.streams << " streams\n"
            << "roll:      " << joined(s.roll.order) << "\n";
#if CAFMESH_DEMO_TESTING
  if (etcd)
    std::cout << "membership: a table on etcd " << etcd->endpoints().front()
              << " (started by the demo); no process hosts it\n";
  if (ca)
    std::cout << "transport: mutual TLS 1.3 on every connection of the mesh, certificates of a "
                 "throwaway CA in "
              << ca->directory() << "\n";
#endif
  run_settings rs;
  rs.progress = opts.progress;
  rs.is_tty = ::isatty(STDOUT_FILENO) != 0;
  rs.width_cols = terminal_width(STDOUT_FILENO);
  // A progress line redrawn on the terminal that also shows the log: each log line erases it
  // first, so that it does not end up glued to the line (the next sample redraws it below).
  if (resolve(rs.progress, rs.is_tty) == progress_mode::terminal && ::isatty(STDERR_FILENO))
    log::use_handler([](log::level lvl, const std::string& component, const std::string& text) {
      auto line = terminal_log_line(log_timestamp_now(), lvl, component, text);
      // One write, so that a progress line cannot land inside it.
      [[maybe_unused]] auto n = ::write(STDERR_FILENO, line.data(), line.size());
    });
  rs.out = &std::cout;
  std::ofstream ledger_file;
  if (opts.ledger_path) {
    ledger_file.open(*opts.ledger_path);
    if (!ledger_file) {
      std::cerr << "cafmesh-demo: cannot write ledger file \"" << *opts.ledger_path << "\"\n";
      return exit_codes::usage;
    }
    rs.ledger_out = &ledger_file;
  }
  bool written = true;
  // Warnings and errors of the whole run, for the diagnostic summary of a failed run.
  auto run_t0 = std::chrono::steady_clock::now();
  log::capture problems{[run_t0] {
                          return static_cast<int64_t>(
                            std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::steady_clock::now() - run_t0)
                              .count());
                        },
                        log::level::warning};
  rs.on_report = [&](const report& r) {
    std::cout << render_table(r);
    if (r.exit_code != 0)
      print_diagnostics(std::cout, problems.lines());
    std::cout.flush();
    // The teardown's info lines would bury the report and its diagnostics in a CI log.
    log::set_stderr_level(log::level::warning);
    if (opts.report_path)
      written = write_report_file(*opts.report_path, r, "cafmesh-demo", std::cerr);
    if (opts.html_path)
      written = write_html_file(*opts.html_path, r, "cafmesh-demo", std::cerr) && written;
  };
  auto result = opts.processes ? run_processes(s, rs, node_binary) : run_in_process(s, rs);
  if (!result || !written)
    return exit_codes::failed;
  return result->exit_code;
}
