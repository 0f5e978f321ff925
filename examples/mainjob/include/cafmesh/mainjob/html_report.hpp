#pragma once

/// @file
/// The report as one self-contained HTML page (`cafmesh-demo --html FILE`, `cafmesh-client
/// --html FILE`): inline CSS and inline SVG, no script, no external reference, so the file
/// can be opened anywhere or attached to a ticket. examples/README.md ("The HTML page")
/// describes what it shows.
///
/// Structure (the unit test `mainjob html: ...` checks it): an `<html>` document whose markup
/// is also well-formed XML; a title with scenario, mode, seed, rate and duration; four
/// charts, each an `<svg class="chart" data-chart="...">` (`deliveries`, `nacks`,
/// `in_flight`, `latency`) over the per-second timeline (`report_input::series`,
/// timeline.hpp) with labelled axes and one `<g class="legend-entry" data-series="...">`
/// per series; in every chart one `<g class="stop-band" data-silo="...">` per graceful stop
/// of the roll (stopping signal -> quiescence hold end -> stopped -> restarted generation
/// Active) and one `<g class="fault-marker" data-kind="..." data-silo="...">` line per fault
/// step; below them the report's tables (`report_tables`) and the checks as
/// `<table class="checks">`, one row per check, PASS or FAIL.

#include <iosfwd>
#include <string>

#include "cafmesh/mainjob/report.hpp"

namespace cafmesh::mainjob {

/// The page of `r` (see the file comment); `program` names the tool in the title, e.g.
/// `cafmesh-demo`.
std::string render_html(const report& r, const std::string& program);

/// Writes `render_html(r, program)` to `path`. False, after the line `{program}: cannot
/// write HTML report file "{path}"` on `err`, when the file cannot be written.
bool write_html_file(const std::string& path, const report& r, const std::string& program,
                     std::ostream& err);

} // namespace cafmesh::mainjob
