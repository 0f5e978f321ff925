#pragma once

/// @file
/// cafmesh's logging (docs/architecture.md "Logging"): one spdlog logger per component behind
/// a thin wrapper, so spdlog stays out of the headers. Every line goes to one shared distribution
/// sink: stderr in processes, plus a `capture` sink in tests that stamps each line with the
/// virtual time of the test coordinator's clock.

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace spdlog {
class logger;
namespace sinks {
class sink;
} // namespace sinks
} // namespace spdlog

namespace cafmesh::config {
struct log_section;
} // namespace cafmesh::config

namespace cafmesh::log {

/// Severity, in increasing order (docs/architecture.md: debug, info, warning, error, critical).
enum class level : int { trace = 0, debug, info, warning, error, critical, off };

/// Renders `trace`, `debug`, `info`, `warning`, `error`, `critical` or `off`.
std::string to_string(level x);

/// Parses a level name (also accepts `warn` and `err`); answers false for anything else.
bool parse_level(std::string_view text, level& out);

/// A component's logger. Cheap to copy; `context` (e.g. a rendered silo address) prefixes
/// every line as `[{context}] ` so lines of several simulated silos stay apart.
class logger {
public:
  logger() = default;
  logger(std::shared_ptr<spdlog::logger> impl, std::string context);

  /// Returns a copy whose lines carry `context` (replacing any previous one).
  logger with_context(std::string context) const;

  /// True if some sink records lines at `lvl` (the stderr sink at its level while it is on,
  /// every live `capture` at its minimum level). Hot paths test it before building a line
  /// that no sink would keep; `log` itself drops such lines too. Lock-free (one atomic load).
  bool enabled(level lvl) const;

  /// Logs one line at `lvl`.
  void log(level lvl, const std::string& text) const;

  void trace(const std::string& text) const { log(level::trace, text); }
  void debug(const std::string& text) const { log(level::debug, text); }
  void info(const std::string& text) const { log(level::info, text); }
  void warning(const std::string& text) const { log(level::warning, text); }
  void error(const std::string& text) const { log(level::error, text); }
  void critical(const std::string& text) const { log(level::critical, text); }

  /// The component name, e.g. `lifecycle`.
  std::string component() const;

private:
  std::shared_ptr<spdlog::logger> impl_;
  std::string context_;
};

/// The logger of `component` (created on first use, shared afterwards).
logger get(const std::string& component);

/// Sets the level of the stderr sink (default `info`). Captures always see every level.
void set_stderr_level(level lvl);

/// Applies the `log` section of the configuration (examples/config/README.md#keys extension
/// `log.level`) to the stderr sink. The level was validated when the configuration was loaded.
void configure(const config::log_section& cfg);

/// Turns the stderr sink on or off (tests turn it off unless CAFMESH_TEST_LOG is set).
void set_stderr_enabled(bool enabled);

/// Sends every cafmesh line to the application's own spdlog logger instead of cafmesh's
/// stderr sink: the line `"{component}: {text}"` at its level, filtered first by cafmesh's
/// level (`set_stderr_level`, `configure`), then by `target`'s own level and sinks. Null:
/// back to stderr.
void use_logger(std::shared_ptr<spdlog::logger> target);

/// Sends every cafmesh line to `handler(level, component, text)` instead of the stderr sink
/// (for CAF's logger or any other), filtered by cafmesh's level. Called on the logging
/// thread, under a lock: keep it short. Empty: back to stderr.
void use_handler(
  std::function<void(level, const std::string& component, const std::string& text)> handler);

/// One captured line.
struct line {
  int64_t t_ms = 0;      ///< virtual (or wall) time in ms from the capture's clock
  std::string component; ///< logger name
  level lvl = level::info;
  std::string text; ///< the message, context prefix included
};

/// While alive, records every line of every cafmesh logger with `now_ms()` as its time.
/// Tests assert on it (docs/testing.md#the-simulation-harness "Trace"). Not copyable; one at a time
/// is typical.
class capture {
public:
  explicit capture(std::function<int64_t()> now_ms);
  /// Records only lines at `min_level` or above (e.g. a long live run keeping its warnings
  /// and errors for a diagnostic summary without holding every debug line).
  capture(std::function<int64_t()> now_ms, level min_level);
  ~capture();
  capture(const capture&) = delete;
  capture& operator=(const capture&) = delete;

  /// A copy of every line so far.
  std::vector<line> lines() const;

  /// Lines whose text contains `needle`, optionally only at `lvl`.
  std::vector<line> find(std::string_view needle) const;
  std::vector<line> find(std::string_view needle, level lvl) const;

  /// Number of lines containing `needle` (at any level / at `lvl`).
  size_t count(std::string_view needle) const { return find(needle).size(); }
  size_t count(std::string_view needle, level lvl) const { return find(needle, lvl).size(); }

  /// Number of lines at `lvl`.
  size_t count_level(level lvl) const;

  /// Forgets every line.
  void clear();

  /// Appends a line (called by the sink).
  void record(line l);

private:
  std::function<int64_t()> now_ms_;
  level min_level_ = level::trace;
  mutable std::mutex mtx_;
  std::vector<line> lines_;
  struct sink_handle;
  std::shared_ptr<sink_handle> sink_;
};

} // namespace cafmesh::log
