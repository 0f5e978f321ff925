#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <libxml/parser.h>
#include <libxml/xpath.h>

#include "cafmesh/mainjob/cli.hpp"
#include "cafmesh/mainjob/html_report.hpp"
#include "cafmesh/mainjob/timeline.hpp"

using namespace cafmesh;
using namespace cafmesh::mainjob;
using routing::verdict;

namespace {

accepted_delivery post(std::string id, int64_t t_ms) {
  return {std::move(id), delivery_kind::post, "portal/u1/tab1", "node/Org/N1", "", 0, false,
          "client:1", t_ms};
}

accepted_delivery request(std::string id, int64_t t_ms) {
  return {std::move(id), delivery_kind::request, "portal/u1/tab1", "node/Org/N1", "", 0, false,
          "client:1", t_ms};
}

/// 3 deliveries landed in second 0, 1 NACK shutting_down in second 1, 1 overload refusal
/// in second 1, 1 request answered in second 2 (landed at its hub in second 1), 1 request
/// ended by its deadline in second 3, 1 post never terminated.
outcome_ledger small_ledger() {
  outcome_ledger l;
  l.accept(post("d-1", 0));
  l.accept(post("d-2", 100));
  l.accept(post("d-3", 200));
  l.landed("d-1", 10);
  l.landed("d-2", 130);
  l.landed("d-3", 999);
  l.accept(post("d-4", 900));
  l.nack("d-4", verdict::shutting_down, "Host is shutting down", 1000);
  l.accept(post("d-5", 1500));
  l.nack("d-5", verdict::unavailable, "routing: overloaded (retry_after_ms=250)", 1501);
  l.accept(request("q-1", 1800));
  l.landed("q-1", 1900);
  l.response("q-1", 2100);
  l.accept(request("q-2", 1900));
  l.deadline("q-2", 3000);
  l.accept(post("d-6", 2500));
  return l;
}

/// The parsed page and XPath over it (libxml2).
struct page {
  explicit page(const std::string& html) {
    doc.reset(xmlReadMemory(html.data(), static_cast<int>(html.size()), "report.html", "UTF-8",
                            XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING));
    if (doc)
      ctx.reset(xmlXPathNewContext(doc.get()));
  }

  /// The XPath expression's number value (e.g. `count(//svg)`).
  double number(const std::string& expr) const {
    std::unique_ptr<xmlXPathObject, decltype(&xmlXPathFreeObject)> r{
      xmlXPathEvalExpression(reinterpret_cast<const xmlChar*>(expr.c_str()), ctx.get()),
      xmlXPathFreeObject};
    REQUIRE_MESSAGE(r != nullptr, expr);
    return xmlXPathCastToNumber(r.get());
  }

  /// The string values of the nodes the expression selects, in document order.
  std::vector<std::string> strings(const std::string& expr) const {
    std::unique_ptr<xmlXPathObject, decltype(&xmlXPathFreeObject)> r{
      xmlXPathEvalExpression(reinterpret_cast<const xmlChar*>(expr.c_str()), ctx.get()),
      xmlXPathFreeObject};
    REQUIRE_MESSAGE(r != nullptr, expr);
    std::vector<std::string> out;
    if (r->nodesetval == nullptr)
      return out;
    for (int i = 0; i < r->nodesetval->nodeNr; ++i) {
      auto* text = xmlNodeGetContent(r->nodesetval->nodeTab[i]);
      out.emplace_back(text ? reinterpret_cast<const char*>(text) : "");
      xmlFree(text);
    }
    return out;
  }

  std::unique_ptr<xmlDoc, decltype(&xmlFreeDoc)> doc{nullptr, xmlFreeDoc};
  std::unique_ptr<xmlXPathContext, decltype(&xmlXPathFreeContext)> ctx{nullptr,
                                                                       xmlXPathFreeContext};
};

report small_report() {
  auto l = small_ledger();
  report_input in;
  in.scenario_name = "roll-three-silos";
  in.seed = 7;
  in.duration_s = 3;
  in.rate_per_s = 2;
  in.mode = "in_process";
  in.ledger = l.summarize();
  in.traffic.paced = 8;
  in.series = build_timeline(l, in.duration_s);
  in.silos.push_back({"A", 1, 4, 500, 20, 80, 3, 1400});
  in.silos.push_back({"B", 2, std::nullopt, 2000, std::nullopt, std::nullopt, 1, std::nullopt});
  in.faults.push_back({"kill", "C", 2500, true});
  return make_report(std::move(in));
}

} // namespace

TEST_CASE("mainjob html: the timeline bins a hand-made ledger into exact per-second series") {
  auto tl = build_timeline(small_ledger(), 2);
  // The last terminal outcome (q-2's deadline) is at 3000 ms: second 3, so 4 seconds.
  REQUIRE(tl.seconds() == 4);
  CHECK(tl.accepted == std::vector<uint64_t>{4, 3, 1, 0});
  CHECK(tl.landed == std::vector<uint64_t>{3, 0, 1, 0});
  REQUIRE(tl.nacked.size() == 1);
  CHECK(tl.nacked.at(verdict::shutting_down) == std::vector<uint64_t>{0, 1, 0, 0});
  CHECK(tl.refusals == std::vector<uint64_t>{0, 1, 0, 0});
  CHECK(tl.deadlines == std::vector<uint64_t>{0, 0, 0, 1});
  CHECK(tl.suppressed == std::vector<uint64_t>{0, 0, 0, 0});
  // end of second 0: 4 accepted, 3 ended; 1: 7 accepted, 5 ended (d-4, d-5); 2: 8, 6 (q-1);
  // 3: 8, 7 (q-2); d-6 never ends.
  CHECK(tl.in_flight == std::vector<uint64_t>{1, 2, 2, 1});
  // latencies of the deliveries accepted in second 0: 10, 30, 799 ms (d-4 never landed);
  // second 1: q-1 landed after 100 ms.
  CHECK(tl.p99_ms
        == std::vector<std::optional<int64_t>>{799, 100, std::nullopt, std::nullopt});
}

TEST_CASE("mainjob html: the timeline lasts at least the traffic's duration") {
  outcome_ledger empty;
  auto tl = build_timeline(empty, 5);
  CHECK(tl.seconds() == 5);
  CHECK(tl.landed == std::vector<uint64_t>(5, 0));
  CHECK(tl.in_flight == std::vector<uint64_t>(5, 0));
  CHECK(tl.nacked.empty());
}

TEST_CASE("mainjob html: the page is one self-contained html document with a chart per series group, a band per stop, a legend entry per series and the checks") {
  auto r = small_report();
  auto html = render_html(r, "cafmesh-demo");
  CHECK(html.rfind("<!DOCTYPE html>\n<html", 0) == 0);
  CHECK(html.find("http://") == std::string::npos);
  CHECK(html.find("https://") == std::string::npos);
  CHECK(html.find("<script") == std::string::npos);
  CHECK(html.find("<link") == std::string::npos);
  page p{html};
  REQUIRE_MESSAGE(p.doc != nullptr, "the page is not well-formed markup");
  CHECK(p.number("count(/html)") == 1);
  CHECK(p.number("count(/html/head/style)") == 1);
  CHECK(p.strings("/html/body/h1")
        == std::vector<std::string>{"cafmesh-demo report: roll-three-silos"});
  auto meta = p.strings("/html/body/p[@class='meta'][1]");
  REQUIRE(meta.size() == 1);
  for (auto want : {"in_process", "seed 7", "rate 2 deliveries/s", "duration 3 s"})
    CHECK_MESSAGE(meta[0].find(want) != std::string::npos, want);
  CHECK(p.strings("//svg[@class='chart']/@data-chart")
        == std::vector<std::string>{"deliveries", "nacks", "in_flight", "latency"});
  // every chart: one band per stop, in order, and the kill's marker
  for (auto chart : {"deliveries", "nacks", "in_flight", "latency"}) {
    CAPTURE(chart);
    auto at = std::string{"//svg[@data-chart='"} + chart + "']";
    CHECK(p.strings(at + "//g[@class='stop-band']/@data-silo")
          == std::vector<std::string>{"A", "B"});
    CHECK(p.number("count(" + at + "//g[@class='stop-band'][1]/rect)") == 3);
    CHECK(p.strings(at + "//g[@class='fault-marker']/@data-kind")
          == std::vector<std::string>{"kill"});
    CHECK(p.number("count(" + at + "//g[contains(@class, 'x-axis')]/text[@class='axis-label'])")
          == 1);
    CHECK(p.number("count(" + at + "//g[contains(@class, 'y-axis')]/text[@class='axis-label'])")
          == 1);
    // a legend entry per drawn series
    CHECK(p.strings(at + "//g[@class='legend-entry']/@data-series")
          == p.strings(at + "//g[@class='series']/@data-series"));
  }
  CHECK(p.strings("//svg[@data-chart='deliveries']//g[@class='legend-entry']/@data-series")
        == std::vector<std::string>{"landed", "accepted"});
  // one series per verdict seen (overload refusals apart)
  CHECK(p.strings("//svg[@data-chart='nacks']//g[@class='legend-entry']/@data-series")
        == std::vector<std::string>{"nack-shutting_down", "refusals", "deadlines"});
  CHECK(p.strings("//svg[@data-chart='in_flight']//g[@class='legend-entry']/@data-series")
        == std::vector<std::string>{"in_flight"});
  CHECK(p.strings("//svg[@data-chart='latency']//g[@class='legend-entry']/@data-series")
        == std::vector<std::string>{"p99"});
  // the checks table: one row per check, PASS/FAIL and its class
  auto rows = p.strings("//table[@class='checks']/tr[contains(@class, 'check')]/td[2]");
  REQUIRE(rows.size() == r.checks.size());
  for (size_t i = 0; i < r.checks.size(); ++i) {
    CAPTURE(i);
    CHECK(rows[i] == r.checks[i].name);
  }
  CHECK(p.number("count(//table[@class='checks']/tr[@class='check fail'])")
        == static_cast<double>(std::count_if(r.checks.begin(), r.checks.end(),
                                             [](auto& c) { return !c.ok; })));
  CHECK(p.strings("//table[@class='checks']/tr[@class='check fail']/td[1]")
        == std::vector<std::string>(
          std::count_if(r.checks.begin(), r.checks.end(), [](auto& c) { return !c.ok; }),
          "FAIL"));
  // the report's rows, as the text table prints them
  auto tables = report_tables(r);
  CHECK(p.number("count(//table[@class='report'])") == static_cast<double>(tables.size()));
  CHECK(p.strings("//table[@class='report'][1]/tr[1]/td")
        == std::vector<std::string>{"accepted", "8"});
}

TEST_CASE("mainjob html: text of the run is escaped, and a run without stops or faults has no band") {
  auto l = small_ledger();
  report_input in;
  in.scenario_name = "a <b> & \"c\"";
  in.duration_s = 4;
  in.mode = "client";
  in.ledger = l.summarize();
  in.traffic.paced = 8;
  in.series = build_timeline(l, in.duration_s);
  auto html = render_html(make_report(std::move(in)), "cafmesh-client");
  page p{html};
  REQUIRE(p.doc != nullptr);
  CHECK(p.strings("/html/body/h1")
        == std::vector<std::string>{"cafmesh-client report: a <b> & \"c\""});
  CHECK(p.number("count(//g[@class='stop-band'])") == 0);
  CHECK(p.number("count(//g[@class='fault-marker'])") == 0);
  CHECK(p.number("count(//svg[@class='chart'])") == 4);
}

TEST_CASE("mainjob html: an unwritable page file is an error line and false") {
  std::ostringstream err;
  CHECK_FALSE(write_html_file("/nonexistent-dir/report.html", small_report(), "cafmesh-demo",
                              err));
  CHECK(err.str() == "cafmesh-demo: cannot write HTML report file \"/nonexistent-dir/report.html\"\n");
}

TEST_CASE("mainjob html: cafmesh-demo and cafmesh-client take --html FILE") {
  std::ostringstream out;
  std::ostringstream err;
  CLI::App demo;
  demo_options d;
  setup_demo_cli(demo, d);
  CHECK_FALSE(parse_command_line(demo, {"--html", "run.html"}, out, err).has_value());
  CHECK(d.html_path == std::optional<std::string>{"run.html"});
  CHECK(demo.help().find("--html FILE") != std::string::npos);
  CLI::App client;
  client_options c;
  setup_client_cli(client, c);
  CHECK_FALSE(
    parse_command_line(client, {"--config", "client.json", "--html", "c.html"}, out, err)
      .has_value());
  CHECK(c.html_path == std::optional<std::string>{"c.html"});
  CHECK(err.str().empty());
}
