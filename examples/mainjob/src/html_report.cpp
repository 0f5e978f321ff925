#include "cafmesh/mainjob/html_report.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <optional>
#include <sstream>
#include <vector>

namespace cafmesh::mainjob {

namespace {

// Chart geometry in SVG user units (the page scales nothing: 1 unit = 1 CSS pixel).
constexpr double chart_width = 1300;
constexpr double chart_height = 280;
constexpr double margin_left = 84;
constexpr double margin_right = 24;
constexpr double margin_top = 44; // the legend row sits above the plot
constexpr double margin_bottom = 46;
constexpr double plot_width = chart_width - margin_left - margin_right;
constexpr double plot_height = chart_height - margin_top - margin_bottom;
constexpr double min_phase_width = 1.5; // a 5 ms hold must stay visible

std::string esc(const std::string& x) {
  std::string out;
  out.reserve(x.size());
  for (char c : x) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string num(double x) {
  return one_decimal_text(x);
}

/// One plotted series: a value per second (none: no point), drawn at `offset_s` into its
/// second (0.5: the middle of a per-second count, 1: the end of the second).
struct series {
  std::string key;   ///< `data-series`
  std::string label; ///< legend text
  std::string color;
  std::vector<std::optional<double>> values;
  double offset_s = 0.5;
  bool dashed = false;
  bool dots = false;
};

std::vector<std::optional<double>> values_of(const std::vector<uint64_t>& xs) {
  std::vector<std::optional<double>> out;
  out.reserve(xs.size());
  for (auto x : xs)
    out.emplace_back(static_cast<double>(x));
  return out;
}

/// A tick step of 1, 2 or 5 times a power of ten giving at most about `ticks` ticks.
double nice_step(double range, int ticks) {
  if (range <= 0)
    return 1;
  auto raw = range / ticks;
  auto mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= raw)
      return m * mag;
  return 10 * mag;
}

std::string verdict_color(routing::verdict v) {
  switch (v) {
    case routing::verdict::shutting_down:
      return "#e8710a";
    case routing::verdict::unavailable:
      return "#7b3fb0";
    case routing::verdict::failed:
      return "#c5221f";
    case routing::verdict::not_found:
      return "#8c564b";
    case routing::verdict::rejected:
      return "#d63384";
    case routing::verdict::routing_loop:
      return "#5f6368";
    case routing::verdict::unauthorized:
      return "#9e9d24";
    case routing::verdict::forbidden:
      return "#00838f";
    default:
      return "#333333";
  }
}

/// What the charts share: the time axis, the stop bands and the fault markers.
struct frame {
  double span_s = 1; ///< the x axis runs from 0 to span_s seconds
  const std::vector<silo_stop_record>* stops = nullptr;
  const std::vector<fault_mark>* faults = nullptr;

  double x_of(double t_s) const {
    return margin_left + std::clamp(t_s / span_s, 0.0, 1.0) * plot_width;
  }
};

void stop_bands(std::ostringstream& o, const frame& f) {
  int n = 0;
  for (auto& s : *f.stops) {
    ++n;
    auto start_s = static_cast<double>(s.stop_started_ms) / 1000;
    auto hold_end_s = start_s + static_cast<double>(s.quiescence_hold_ms.value_or(0)) / 1000;
    auto stopped_s = s.stop_duration_ms
                       ? start_s + static_cast<double>(*s.stop_duration_ms) / 1000
                       : f.span_s;
    auto active_s = s.active_again_ms ? static_cast<double>(*s.active_again_ms) / 1000 : f.span_s;
    std::string title = "stop " + std::to_string(n) + ": silo " + s.name + " generation "
                        + std::to_string(s.generation_before) + ", stopping signal at "
                        + std::to_string(s.stop_started_ms) + " ms, quiescence hold "
                        + (s.quiescence_hold_ms ? std::to_string(*s.quiescence_hold_ms) + " ms"
                                                : std::string{"not measured"})
                        + ", stopped "
                        + (s.stop_duration_ms ? std::to_string(*s.stop_duration_ms)
                                                  + " ms after the signal"
                                              : std::string{"never"})
                        + ", new generation Active "
                        + (s.active_again_ms ? "at " + std::to_string(*s.active_again_ms) + " ms"
                                             : std::string{"never"})
                        + "; " + std::to_string(s.landed_while_out) + " landed while out";
    o << "<g class=\"stop-band\" data-silo=\"" << esc(s.name) << "\" data-stop=\"" << n
      << "\"><title>" << esc(title) << "</title>";
    auto phase = [&](const char* cls, double from_s, double to_s) {
      auto x0 = f.x_of(from_s);
      auto w = std::max(f.x_of(to_s) - x0, min_phase_width);
      o << "<rect class=\"" << cls << "\" x=\"" << num(x0) << "\" y=\"" << num(margin_top)
        << "\" width=\"" << num(w) << "\" height=\"" << num(plot_height) << "\"/>";
    };
    phase("phase-hold", start_s, hold_end_s);
    phase("phase-stopping", hold_end_s, stopped_s);
    phase("phase-restart", stopped_s, active_s);
    o << "<text class=\"band-label\" x=\"" << num(f.x_of(start_s) + 3) << "\" y=\""
      << num(margin_top + 12) << "\">stop " << esc(s.name) << "</text></g>";
  }
}

void fault_markers(std::ostringstream& o, const frame& f) {
  for (auto& m : *f.faults) {
    auto x = f.x_of(static_cast<double>(m.at_ms) / 1000);
    o << "<g class=\"fault-marker\" data-kind=\"" << esc(m.kind) << "\" data-silo=\""
      << esc(m.silo) << "\"><title>" << esc(m.kind) << " " << esc(m.silo) << " at " << m.at_ms
      << " ms" << (m.injected ? "" : " (not injected: this mesh cannot)") << "</title>"
      << "<line x1=\"" << num(x) << "\" y1=\"" << num(margin_top) << "\" x2=\"" << num(x)
      << "\" y2=\"" << num(margin_top + plot_height) << "\"/><text x=\"" << num(x + 3)
      << "\" y=\"" << num(margin_top + 26) << "\">" << esc(m.kind) << " " << esc(m.silo)
      << "</text></g>";
  }
}

/// One chart: frame, axes with labels, bands, markers, series and legend.
void chart(std::ostringstream& o, const frame& f, const std::string& key,
           const std::string& title, const std::string& y_label, const std::vector<series>& xs) {
  double y_max_value = 0;
  for (auto& s : xs)
    for (auto& v : s.values)
      if (v)
        y_max_value = std::max(y_max_value, *v);
  auto y_step = nice_step(y_max_value, 5);
  auto y_max = std::max(y_step, std::ceil(y_max_value / y_step) * y_step);
  auto y_of = [&](double v) { return margin_top + plot_height - v / y_max * plot_height; };
  o << "<h2>" << esc(title) << "</h2>\n";
  o << "<svg class=\"chart\" data-chart=\"" << key << "\" width=\"" << num(chart_width)
    << "\" height=\"" << num(chart_height) << "\" viewBox=\"0 0 " << num(chart_width) << " "
    << num(chart_height) << "\" role=\"img\"><title>" << esc(title) << "</title>";
  o << "<rect class=\"plot\" x=\"" << num(margin_left) << "\" y=\"" << num(margin_top)
    << "\" width=\"" << num(plot_width) << "\" height=\"" << num(plot_height) << "\"/>";
  // Bands and markers first, so that the series are drawn over them.
  stop_bands(o, f);
  fault_markers(o, f);
  // y axis: grid lines and tick labels
  o << "<g class=\"axis y-axis\">";
  for (double v = 0; v <= y_max + y_step / 2; v += y_step) {
    auto y = y_of(v);
    o << "<line class=\"grid\" x1=\"" << num(margin_left) << "\" y1=\"" << num(y) << "\" x2=\""
      << num(margin_left + plot_width) << "\" y2=\"" << num(y) << "\"/><text x=\""
      << num(margin_left - 6) << "\" y=\"" << num(y + 4) << "\" text-anchor=\"end\">"
      << decimal_text(v) << "</text>";
  }
  auto y_mid = margin_top + plot_height / 2;
  o << "<text class=\"axis-label\" x=\"18\" y=\"" << num(y_mid) << "\" transform=\"rotate(-90 18 "
    << num(y_mid) << ")\" text-anchor=\"middle\">" << esc(y_label) << "</text></g>";
  // x axis: seconds since the traffic started
  auto x_step = nice_step(f.span_s, 20);
  o << "<g class=\"axis x-axis\">";
  for (double t = 0; t <= f.span_s + 1e-9; t += x_step) {
    auto x = f.x_of(t);
    o << "<line class=\"tick\" x1=\"" << num(x) << "\" y1=\"" << num(margin_top + plot_height)
      << "\" x2=\"" << num(x) << "\" y2=\"" << num(margin_top + plot_height + 5)
      << "\"/><text x=\"" << num(x) << "\" y=\"" << num(margin_top + plot_height + 18)
      << "\" text-anchor=\"middle\">" << decimal_text(t) << "</text>";
  }
  o << "<text class=\"axis-label\" x=\"" << num(margin_left + plot_width / 2) << "\" y=\""
    << num(chart_height - 6)
    << "\" text-anchor=\"middle\">time since the traffic started (s)</text></g>";
  // series
  for (auto& s : xs) {
    o << "<g class=\"series\" data-series=\"" << esc(s.key) << "\" stroke=\"" << s.color
      << "\" fill=\"" << s.color << "\">";
    std::string points;
    auto flush = [&] {
      if (!points.empty())
        o << "<polyline fill=\"none\" stroke-width=\"1.6\""
          << (s.dashed ? " stroke-dasharray=\"5 3\"" : "") << " points=\"" << points << "\"/>";
      points.clear();
    };
    for (size_t i = 0; i < s.values.size(); ++i) {
      if (!s.values[i]) {
        flush();
        continue;
      }
      auto x = f.x_of(static_cast<double>(i) + s.offset_s);
      auto y = y_of(*s.values[i]);
      points += (points.empty() ? "" : " ") + num(x) + "," + num(y);
      if (s.dots)
        o << "<circle cx=\"" << num(x) << "\" cy=\"" << num(y) << "\" r=\"2\" stroke=\"none\"/>";
    }
    flush();
    o << "</g>";
  }
  // legend row above the plot
  double lx = margin_left;
  for (auto& s : xs) {
    o << "<g class=\"legend-entry\" data-series=\"" << esc(s.key) << "\"><line x1=\"" << num(lx)
      << "\" y1=\"18\" x2=\"" << num(lx + 22) << "\" y2=\"18\" stroke=\"" << s.color
      << "\" stroke-width=\"3\"" << (s.dashed ? " stroke-dasharray=\"5 3\"" : "")
      << "/><text x=\"" << num(lx + 28) << "\" y=\"22\">" << esc(s.label) << "</text></g>";
    lx += 28 + 7.2 * static_cast<double>(s.label.size()) + 24;
  }
  o << "</svg>\n";
}

const char* page_css = R"css(
body { font-family: DejaVu Sans, Liberation Sans, Arial, sans-serif; margin: 24px; color: #202124; background: #ffffff; }
h1 { font-size: 22px; margin: 0 0 4px 0; }
h2 { font-size: 16px; margin: 22px 0 4px 0; }
p.meta, p.summary { margin: 2px 0; font-size: 14px; }
span.result-pass { color: #137333; font-weight: bold; }
span.result-fail { color: #c5221f; font-weight: bold; }
div.key { font-size: 13px; margin: 10px 0 0 0; }
div.key span.swatch { display: inline-block; width: 18px; height: 11px; margin: 0 4px 0 14px; vertical-align: middle; border: 1px solid #9aa0a6; }
svg.chart { display: block; font-size: 12px; }
svg.chart rect.plot { fill: #fbfbfb; stroke: #9aa0a6; }
svg.chart line.grid { stroke: #e3e5e8; }
svg.chart line.tick { stroke: #5f6368; }
svg.chart text { fill: #3c4043; }
svg.chart text.axis-label { font-size: 13px; fill: #202124; }
.phase-hold { fill: #f29900; fill-opacity: 0.55; }
.phase-stopping { fill: #fdd663; fill-opacity: 0.55; }
.phase-restart { fill: #a8c7fa; fill-opacity: 0.45; }
svg.chart text.band-label { font-size: 11px; fill: #7a4f01; }
g.fault-marker line { stroke: #c5221f; stroke-width: 1.5; stroke-dasharray: 4 3; }
g.fault-marker text { fill: #c5221f; font-size: 11px; }
span.swatch.phase-hold { background: #f29900; opacity: 0.7; }
span.swatch.phase-stopping { background: #fdd663; opacity: 0.7; }
span.swatch.phase-restart { background: #a8c7fa; opacity: 0.7; }
.swatch-fault { border-color: #c5221f; background: repeating-linear-gradient(90deg, #c5221f 0 4px, #ffffff 4px 7px); }
table { border-collapse: collapse; margin: 14px 0; font-size: 13px; }
td, th { border: 1px solid #dadce0; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f1f3f4; }
table.checks td.verdict { font-weight: bold; }
tr.pass td.verdict { color: #137333; background: #e6f4ea; }
tr.fail td.verdict { color: #c5221f; background: #fce8e6; }
tr.fail td { background: #fef7f6; }
)css";

} // namespace

std::string render_html(const report& r, const std::string& program) {
  auto& in = r.input;
  auto& tl = in.series;
  auto rt = rates_of(in);
  frame f;
  f.stops = &in.silos;
  f.faults = &in.faults;
  f.span_s = std::max<double>(1, static_cast<double>(tl.seconds()));
  for (auto& s : in.silos) {
    auto end_ms = s.active_again_ms ? *s.active_again_ms
                                    : s.stop_started_ms + s.stop_duration_ms.value_or(0);
    f.span_s = std::max(f.span_s, std::ceil(static_cast<double>(end_ms) / 1000));
  }
  for (auto& m : in.faults)
    f.span_s = std::max(f.span_s, std::ceil(static_cast<double>(m.at_ms) / 1000));
  std::ostringstream o;
  auto title = program + " report: " + in.scenario_name;
  o << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n<title>"
    << esc(title) << "</title>\n<style>" << page_css << "</style>\n</head>\n<body>\n";
  o << "<h1>" << esc(title) << "</h1>\n";
  o << "<p class=\"meta\">mode " << esc(in.mode) << " · seed " << in.seed << " · rate "
    << in.rate_per_s << " deliveries/s · duration " << in.duration_s << " s · result "
    << (r.passed ? "<span class=\"result-pass\">PASS</span>"
                 : "<span class=\"result-fail\">FAIL</span>")
    << " (exit " << r.exit_code << ")</p>\n";
  auto& l = in.ledger;
  auto opt = [](const std::optional<int64_t>& x) {
    return x ? std::to_string(*x) : std::string{"-"};
  };
  o << "<p class=\"summary\">offered " << num(rt.offered_per_s) << "/s, carried "
    << num(rt.carried_per_s) << "/s ("
    << (rt.carried_ratio ? decimal_text(*rt.carried_ratio) : std::string{"-"})
    << " of offered), sent " << num(rt.sent_per_s) << "/s with re-sends · latency p50 / p99 / max "
    << opt(l.latency_p50_ms) << " / " << opt(l.latency_p99_ms) << " / " << opt(l.latency_max_ms)
    << " ms · lost " << l.total.lost << "</p>\n";
  o << "<div class=\"key\">graceful stops:<span class=\"swatch phase-hold\"></span>stopping "
       "signal to quiescence hold end<span class=\"swatch phase-stopping\"></span>to stopped"
       "<span class=\"swatch phase-restart\"></span>to the restarted generation Active"
       "<span class=\"swatch swatch-fault\"></span>fault (kill, restart, stall, second signal)"
       "</div>\n";
  {
    std::vector<series> xs;
    xs.push_back({"landed", "landed/s (landing or response)", "#1a73e8", values_of(tl.landed)});
    xs.push_back({"accepted", "handed to the mesh/s (re-sends included)", "#80868b",
                  values_of(tl.accepted)});
    xs.back().dashed = true;
    chart(o, f, "deliveries", "Deliveries per second", "deliveries per second", xs);
  }
  {
    std::vector<series> xs;
    for (auto& [v, counts] : tl.nacked)
      xs.push_back({"nack-" + routing::to_string(v), "NACK " + routing::to_string(v) + "/s",
                    verdict_color(v), values_of(counts)});
    xs.push_back({"refusals",
                  "overload refusals/s (verdict unavailable, \"overloaded\", before acceptance; "
                  "not in the NACK series)",
                  "#188038",
                  values_of(tl.refusals)});
    if (std::any_of(tl.deadlines.begin(), tl.deadlines.end(), [](auto x) { return x > 0; }))
      xs.push_back({"deadlines", "request deadlines/s", "#202124", values_of(tl.deadlines)});
    if (std::any_of(tl.suppressed.begin(), tl.suppressed.end(), [](auto x) { return x > 0; }))
      xs.push_back({"suppressed", "suppressed failures/s (heartbeats)", "#b06000",
                    values_of(tl.suppressed)});
    chart(o, f, "nacks", "NACKs by verdict and overload refusals per second", "per second", xs);
  }
  {
    std::vector<series> xs;
    xs.push_back({"in_flight", "in flight at the end of the second (accepted - terminated)",
                  "#00838f", values_of(tl.in_flight)});
    xs.back().offset_s = 1;
    chart(o, f, "in_flight", "Deliveries in flight", "deliveries", xs);
  }
  {
    std::vector<series> xs;
    series p99{"p99", "p99 latency of the deliveries accepted in the second", "#c5221f", {}};
    for (auto& v : tl.p99_ms)
      p99.values.push_back(v ? std::optional<double>{static_cast<double>(*v)} : std::nullopt);
    p99.dots = true;
    xs.push_back(std::move(p99));
    chart(o, f, "latency", "Latency p99 (first landing - accepted)", "ms", xs);
  }
  o << "<h2>Report</h2>\n";
  for (auto& t : report_tables(r)) {
    o << "<table class=\"report\">\n";
    for (size_t i = 0; i < t.rows.size(); ++i) {
      auto cell = t.header && i == 0 ? "th" : "td";
      o << "<tr>";
      for (auto& c : t.rows[i])
        o << "<" << cell << ">" << esc(c) << "</" << cell << ">";
      o << "</tr>\n";
    }
    o << "</table>\n";
  }
  o << "<h2>Checks</h2>\n<table class=\"checks\">\n<tr><th>result</th><th>check</th>"
       "<th>measured</th></tr>\n";
  for (auto& c : r.checks)
    o << "<tr class=\"check " << (c.ok ? "pass" : "fail") << "\"><td class=\"verdict\">"
      << (c.ok ? "PASS" : "FAIL") << "</td><td>" << esc(c.name) << "</td><td>" << esc(c.detail)
      << "</td></tr>\n";
  o << "</table>\n<p class=\"meta\">result: "
    << (r.passed ? "<span class=\"result-pass\">PASS</span>"
                 : "<span class=\"result-fail\">FAIL</span>")
    << " (exit " << r.exit_code << ")</p>\n</body>\n</html>\n";
  return o.str();
}

bool write_html_file(const std::string& path, const report& r, const std::string& program,
                     std::ostream& err) {
  std::ofstream out{path};
  out << render_html(r, program);
  out.flush();
  if (out)
    return true;
  err << program << ": cannot write HTML report file \"" << path << "\"\n";
  return false;
}

} // namespace cafmesh::mainjob
