#pragma once

/// @file
/// How much cafmesh-demo's processes log on standard error. By default only warnings and
/// errors, so that the progress line and the report stay readable; `--verbose` keeps the
/// level the scenario's configuration gives (`log.level`, `info` unless it says otherwise).
/// The level is written into the scenario's process configuration, which every process of
/// the run is built from: the in-process silos and the pure client, and each `cafmesh-node`
/// of `--processes` (its configuration file).

#include "cafmesh/actors/log.hpp"

namespace cafmesh::mainjob {

struct scenario;

/// The level of a demo run: `configured` with `verbose`; else `configured` raised to
/// `warning` (a quieter level such as `error` or `off` stays).
log::level demo_log_level(log::level configured, bool verbose);

/// Sets `log.level` in `s.config_json` to `demo_log_level` of the level it holds (`info`
/// when it holds none) and answers that level; every other setting stays.
log::level apply_verbosity(scenario& s, bool verbose);

} // namespace cafmesh::mainjob
