#include <doctest/doctest.h>

#include <sstream>

#include "cafmesh/mainjob/cli.hpp"
#include "cafmesh/mainjob/progress.hpp"
#include "cafmesh/mainjob/report.hpp"

using namespace cafmesh;
using namespace cafmesh::mainjob;
using routing::verdict;

TEST_CASE("mainjob progress: the line shows rate, in flight, delivered, NACKs by verdict and the roll") {
  progress_sample s;
  s.elapsed_ms = 12345;
  s.rate_per_s = 1998;
  s.in_flight = 37;
  s.delivered = 24013;
  CHECK(render_progress(s)
        == "[    12.3s] rate 1998/s | in flight 37 | delivered 24013 | NACKed 0 | roll: -");
  s.nacked = {{verdict::shutting_down, 3}, {verdict::unavailable, 1}, {verdict::failed, 0}};
  s.roll = roll_status{"B", 2, roll_phase::stopping, lifecycle::stages::active};
  CHECK(render_progress(s)
        == "[    12.3s] rate 1998/s | in flight 37 | delivered 24013 | NACKed 4 "
           "(shutting_down 3, unavailable 1) | roll: B@2 stopping, stage Active (20000)");
  s.roll = roll_status{"B", 5, roll_phase::starting, std::nullopt};
  CHECK(render_progress(s).substr(render_progress(s).find("roll:")) == "roll: B@5 starting");
}

TEST_CASE("mainjob progress: terminal rewrites the line, plain prints lines, off prints nothing") {
  progress_sample s;
  auto line = render_progress(s);
  CHECK(progress_text(s, progress_mode::terminal) == "\r" + line + "\x1b[K");
  CHECK(progress_text(s, progress_mode::plain) == line + "\n");
  CHECK(progress_text(s, progress_mode::off).empty());
  CHECK(resolve(progress_mode::automatic, true) == progress_mode::terminal);
  CHECK(resolve(progress_mode::automatic, false) == progress_mode::plain);
  CHECK(resolve(progress_mode::off, true) == progress_mode::off);
  progress_mode m;
  CHECK(from_string("auto", m));
  CHECK(m == progress_mode::automatic);
  CHECK_FALSE(from_string("fancy", m));
}

TEST_CASE("mainjob progress: the rate meter measures over its window") {
  rate_meter r{1000};
  CHECK(r.per_second() == 0);
  r.add(0, 0);
  CHECK(r.per_second() == 0);
  r.add(500, 1000);
  CHECK(r.per_second() == 2000);
  r.add(1000, 2000);
  CHECK(r.per_second() == 2000);
  r.add(1500, 2100); // window base is now t = 500: (2100 - 1000) * 1000 / 1000
  CHECK(r.per_second() == 1100);
  r.add(3000, 2100); // base t = 1500 (newest at or before 2000): nothing new
  CHECK(r.per_second() == 0);
}

namespace {

struct parsed {
  std::optional<int> code;
  std::string out;
  std::string err;
};

template <class Options, class Setup>
parsed run(Setup setup, Options& o, std::vector<std::string> args, const char* name) {
  CLI::App app{"", name};
  setup(app, o);
  std::ostringstream out;
  std::ostringstream err;
  auto code = parse_command_line(app, std::move(args), out, err);
  return {code, out.str(), err.str()};
}

} // namespace

TEST_CASE("mainjob cli: cafmesh-node") {
  node_options o;
  auto p = run(setup_node_cli, o, {"--config", "silo.json", "--print-config"}, "cafmesh-node");
  CHECK_FALSE(p.code.has_value());
  CHECK(o.config_path == "silo.json");
  CHECK(o.print_config);
  node_options missing;
  auto bad = run(setup_node_cli, missing, {}, "cafmesh-node");
  CHECK(bad.code == exit_codes::usage);
  CHECK(bad.err.find("--config is required") != std::string::npos);
  node_options h;
  auto help = run(setup_node_cli, h, {"--help"}, "cafmesh-node");
  CHECK(help.code == exit_codes::ok);
  for (auto text : {"--config", "--print-config", "--help", "SIGTERM", "Exit codes: 0",
                    "2 bad command line"})
    CHECK_MESSAGE(help.out.find(text) != std::string::npos, text);
}

TEST_CASE("mainjob cli: cafmesh-node takes CAF's scheduler policy and thread count, auto and CAF's thread count when absent") {
  node_options d;
  CHECK_FALSE(run(setup_node_cli, d, {"--config", "silo.json"}, "cafmesh-node").code.has_value());
  CHECK(d.scheduler == "auto");
  CHECK(d.threads == 0);
  // auto: sharing on a small machine, where a mesh's processes share the cores; CAF's
  // default above 4 cores. An explicit policy stands on any machine.
  CHECK(node_scheduler_policy("auto", 1) == "sharing");
  CHECK(node_scheduler_policy("auto", 2) == "sharing");
  CHECK(node_scheduler_policy("auto", 4) == "sharing");
  CHECK(node_scheduler_policy("auto", 5) == "stealing");
  CHECK(node_scheduler_policy("auto", 64) == "stealing");
  CHECK(node_scheduler_policy("stealing", 2) == "stealing");
  CHECK(node_scheduler_policy("sharing", 64) == "sharing");
  node_options o;
  auto p = run(setup_node_cli, o,
               {"--config", "silo.json", "--scheduler", "sharing", "--threads", "2"},
               "cafmesh-node");
  CHECK_FALSE(p.code.has_value());
  CHECK(o.scheduler == "sharing");
  CHECK(o.threads == 2);
  node_options bad_policy;
  auto b = run(setup_node_cli, bad_policy, {"--config", "silo.json", "--scheduler", "fifo"},
               "cafmesh-node");
  CHECK(b.code == exit_codes::usage);
  CHECK(b.err.find("fifo") != std::string::npos);
  node_options zero;
  CHECK(run(setup_node_cli, zero, {"--config", "silo.json", "--threads", "0"}, "cafmesh-node").code
        == exit_codes::usage);
}

TEST_CASE("mainjob cli: cafmesh-client") {
  client_options o;
  auto p = run(setup_client_cli, o,
               {"-c", "client.json", "--seed", "9", "--duration-s", "10", "--rate", "500",
                "--ledger", "out.jsonl", "--plan-out", "plan.jsonl"},
               "cafmesh-client");
  CHECK_FALSE(p.code.has_value());
  CHECK(o.overrides.seed == 9u);
  CHECK(o.overrides.duration_s == 10);
  CHECK(o.overrides.rate_per_s == 500);
  CHECK(o.ledger_path == "out.jsonl");
  CHECK(o.plan_out == "plan.jsonl");
  CHECK_FALSE(o.trace_path.has_value());
  client_options both;
  auto clash = run(setup_client_cli, both,
                   {"-c", "client.json", "--trace", "t.jsonl", "--scenario", "s.json"},
                   "cafmesh-client");
  CHECK(clash.code == exit_codes::usage);
  client_options seeded;
  CHECK(run(setup_client_cli, seeded, {"-c", "client.json", "--trace", "t.jsonl", "--seed", "1"},
            "cafmesh-client")
          .code
        == exit_codes::usage);
  client_options h;
  auto help = run(setup_client_cli, h, {"--help"}, "cafmesh-client");
  CHECK(help.code == exit_codes::ok);
  for (auto text : {"--config", "--print-config", "--scenario", "--trace", "--seed",
                    "--duration-s", "--rate", "--ledger", "--plan-out", "Exit codes: 0"})
    CHECK_MESSAGE(help.out.find(text) != std::string::npos, text);
}

TEST_CASE("mainjob cli: cafmesh-demo") {
  demo_options none;
  auto p = run(setup_demo_cli, none, {}, "cafmesh-demo");
  CHECK_FALSE(p.code.has_value());
  CHECK_FALSE(none.scenario_path.has_value());
  CHECK_FALSE(none.processes);
  CHECK_FALSE(none.tls);
  demo_options o;
  p = run(setup_demo_cli, o,
          {"scenario.json", "--processes", "--tls", "--seed", "3", "--report", "out.json",
           "--progress", "plain"},
          "cafmesh-demo");
  CHECK_FALSE(p.code.has_value());
  CHECK(o.scenario_path == "scenario.json");
  CHECK(o.processes);
  CHECK(o.tls);
  CHECK(o.overrides.seed == 3u);
  CHECK(o.report_path == "out.json");
  CHECK(o.progress == progress_mode::plain);
  demo_options bad;
  CHECK(run(setup_demo_cli, bad, {"--progress", "fancy"}, "cafmesh-demo").code
        == exit_codes::usage);
  demo_options neg;
  CHECK(run(setup_demo_cli, neg, {"--seed", "-1"}, "cafmesh-demo").code == exit_codes::usage);
  demo_options h;
  auto help = run(setup_demo_cli, h, {"--help"}, "cafmesh-demo");
  CHECK(help.code == exit_codes::ok);
  for (auto text : {"SCENARIO", "--processes", "--tls", "--seed", "--duration-s", "--rate", "--report",
                    "--print-scenario", "--plan-out", "--progress", "--node-binary",
                    "Exit codes: 0"})
    CHECK_MESSAGE(help.out.find(text) != std::string::npos, text);
}

TEST_CASE("mainjob progress: a terminal redraws one line in place, fitted to its width, and ends it with a newline") {
  progress_sample s;
  s.elapsed_ms = 1500;
  s.delivered = 7;
  auto line = render_progress(s);
  REQUIRE(line.size() > 40);
  std::ostringstream out;
  progress_printer p{&out, progress_mode::automatic, true, 0};
  CHECK(p.mode() == progress_mode::terminal);
  p.print(s);
  s.delivered = 8;
  auto second = render_progress(s);
  p.print(s);
  CHECK(out.str() == "\r" + line + "\x1b[K" + "\r" + second + "\x1b[K");
  p.finish();
  CHECK(out.str() == "\r" + line + "\x1b[K" + "\r" + second + "\x1b[K\n");
  p.finish(); // the line ends once
  CHECK(out.str() == "\r" + line + "\x1b[K" + "\r" + second + "\x1b[K\n");
  // A line as wide as the terminal would wrap, and `\r` could only redraw its last row: it
  // is cut to one column less than the width.
  std::ostringstream narrow;
  progress_printer q{&narrow, progress_mode::automatic, true, 40};
  q.print(s);
  q.finish();
  CHECK(narrow.str() == "\r" + second.substr(0, 39) + "\x1b[K\n");
  // Nothing drawn: no newline either.
  std::ostringstream idle;
  progress_printer r{&idle, progress_mode::automatic, true, 80};
  r.finish();
  CHECK(idle.str().empty());
}

TEST_CASE("mainjob progress: not a terminal, one whole line per tick and no control characters") {
  progress_sample s;
  s.elapsed_ms = 2000;
  auto first = render_progress(s);
  s.delivered = 3;
  auto second = render_progress(s);
  std::ostringstream out;
  progress_printer p{&out, progress_mode::automatic, false, 40}; // no width cut off a tty
  CHECK(p.mode() == progress_mode::plain);
  s.delivered = 0;
  p.print(s);
  s.delivered = 3;
  p.print(s);
  p.finish();
  CHECK(out.str() == first + "\n" + second + "\n");
  CHECK(out.str().find('\r') == std::string::npos);
  CHECK(out.str().find('\x1b') == std::string::npos);
  // --progress terminal on a pipe still redraws (asked for); off prints nothing.
  std::ostringstream forced;
  progress_printer t{&forced, progress_mode::terminal, false, 0};
  t.print(s);
  t.finish();
  CHECK(forced.str() == "\r" + second + "\x1b[K\n");
  std::ostringstream none;
  progress_printer o{&none, progress_mode::off, true, 80};
  o.print(s);
  o.finish();
  CHECK(none.str().empty());
  progress_printer null_out{nullptr, progress_mode::plain, false, 0};
  null_out.print(s); // no stream: nothing to write, no crash
  null_out.finish();
}

TEST_CASE("mainjob cli: cafmesh-demo --verbose") {
  demo_options quiet;
  CHECK_FALSE(run(setup_demo_cli, quiet, {}, "cafmesh-demo").code.has_value());
  CHECK_FALSE(quiet.verbose);
  demo_options loud;
  CHECK_FALSE(run(setup_demo_cli, loud, {"--verbose"}, "cafmesh-demo").code.has_value());
  CHECK(loud.verbose);
  demo_options h;
  auto help = run(setup_demo_cli, h, {"--help"}, "cafmesh-demo");
  CHECK(help.out.find("--verbose") != std::string::npos);
}

TEST_CASE("mainjob progress: on a terminal a log line first erases the progress line, which is redrawn below it") {
  CHECK(terminal_log_line("2026-12-01T19:24:59.095", log::level::warning, "router_core",
                          "routing saturation cleared after 27 ms")
        == "\r\x1b[K2026-12-01T19:24:59.095 warning  router_core: routing saturation cleared "
           "after 27 ms\n");
  CHECK(terminal_log_line("t", log::level::error, "catalog", "x") == "\r\x1b[Kt error    catalog: x\n");
  // A whole progress sequence: line, log line, line again on the row below.
  progress_sample s;
  std::ostringstream out;
  progress_printer p{&out, progress_mode::terminal, true, 0};
  p.print(s);
  out << terminal_log_line("t", log::level::warning, "c", "w");
  p.print(s);
  p.finish();
  auto line = render_progress(s);
  CHECK(out.str() == "\r" + line + "\x1b[K\r\x1b[Kt warning  c: w\n\r" + line + "\x1b[K\n");
}
