#include "cafmesh/actors/log.hpp"

#include "cafmesh/config/mesh_config.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <set>

#include <spdlog/logger.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/dist_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>

namespace cafmesh::log {

namespace {

spdlog::level::level_enum to_spd(level x) {
  switch (x) {
    case level::trace: return spdlog::level::trace;
    case level::debug: return spdlog::level::debug;
    case level::info: return spdlog::level::info;
    case level::warning: return spdlog::level::warn;
    case level::error: return spdlog::level::err;
    case level::critical: return spdlog::level::critical;
    default: return spdlog::level::off;
  }
}

level from_spd(spdlog::level::level_enum x) {
  switch (x) {
    case spdlog::level::trace: return level::trace;
    case spdlog::level::debug: return level::debug;
    case spdlog::level::info: return level::info;
    case spdlog::level::warn: return level::warning;
    case spdlog::level::err: return level::error;
    case spdlog::level::critical: return level::critical;
    default: return level::off;
  }
}

/// Process-wide state: the distribution sink every logger writes to, the stderr sink and
/// the logger table. Loggers are not put into spdlog's global registry, so user code that
/// uses spdlog itself is not affected.
struct state {
  std::mutex mtx;
  std::shared_ptr<spdlog::sinks::dist_sink_mt> dist
    = std::make_shared<spdlog::sinks::dist_sink_mt>();
  /// The process sink: stderr unless the application gave its own (`use_logger`,
  /// `use_handler`); `stderr_level` and `stderr_enabled` apply to whichever it is.
  std::shared_ptr<spdlog::sinks::sink> err = [] {
    auto e = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
    e->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%-8l%$ %n: %v");
    return std::shared_ptr<spdlog::sinks::sink>{e};
  }();
  std::vector<std::shared_ptr<spdlog::logger>> loggers;
  bool stderr_enabled = true;
  level stderr_level = level::info;
  std::multiset<level> capture_levels; ///< minimum level of every live capture
  /// The lowest level any sink records (`off`: none); see `logger::enabled`.
  std::atomic<int> floor{static_cast<int>(level::info)};

  /// Recomputes `floor`; the caller holds `mtx`.
  void refresh_floor() {
    auto lowest = stderr_enabled ? stderr_level : level::off;
    if (!capture_levels.empty())
      lowest = std::min(lowest, *capture_levels.begin());
    floor.store(static_cast<int>(lowest), std::memory_order_relaxed);
  }

  state() {
    err->set_level(spdlog::level::info);
    dist->add_sink(err);
    dist->set_level(spdlog::level::trace);
  }
};

state& global() {
  static state s;
  return s;
}

} // namespace

std::string to_string(level x) {
  switch (x) {
    case level::trace: return "trace";
    case level::debug: return "debug";
    case level::info: return "info";
    case level::warning: return "warning";
    case level::error: return "error";
    case level::critical: return "critical";
    default: return "off";
  }
}

bool parse_level(std::string_view text, level& out) {
  struct entry {
    std::string_view name;
    level lvl;
  };
  static constexpr entry table[] = {
    {"trace", level::trace},     {"debug", level::debug},       {"info", level::info},
    {"warning", level::warning}, {"warn", level::warning},      {"error", level::error},
    {"err", level::error},       {"critical", level::critical}, {"off", level::off},
  };
  for (const auto& e : table)
    if (e.name == text) {
      out = e.lvl;
      return true;
    }
  return false;
}

logger::logger(std::shared_ptr<spdlog::logger> impl, std::string context)
  : impl_(std::move(impl)), context_(std::move(context)) {
  // nop
}

logger logger::with_context(std::string context) const {
  return logger{impl_, std::move(context)};
}

bool logger::enabled(level lvl) const {
  return impl_ && lvl != level::off
         && static_cast<int>(lvl) >= global().floor.load(std::memory_order_relaxed);
}

void logger::log(level lvl, const std::string& text) const {
  if (!enabled(lvl))
    return;
  if (context_.empty())
    impl_->log(to_spd(lvl), "{}", text);
  else
    impl_->log(to_spd(lvl), "[{}] {}", context_, text);
}

std::string logger::component() const {
  return impl_ ? impl_->name() : std::string{};
}

logger get(const std::string& component) {
  auto& g = global();
  std::lock_guard<std::mutex> guard{g.mtx};
  for (auto& l : g.loggers)
    if (l->name() == component)
      return logger{l, {}};
  auto l = std::make_shared<spdlog::logger>(component, g.dist);
  l->set_level(spdlog::level::trace);
  l->flush_on(spdlog::level::err);
  g.loggers.push_back(l);
  return logger{l, {}};
}

void set_stderr_level(level lvl) {
  auto& g = global();
  std::lock_guard<std::mutex> guard{g.mtx};
  g.err->set_level(to_spd(lvl));
  g.stderr_level = lvl;
  g.refresh_floor();
}

void configure(const config::log_section& cfg) {
  level lvl = level::info;
  if (parse_level(cfg.level, lvl))
    set_stderr_level(lvl);
}

void set_stderr_enabled(bool enabled) {
  auto& g = global();
  std::lock_guard<std::mutex> guard{g.mtx};
  if (enabled == g.stderr_enabled)
    return;
  g.stderr_enabled = enabled;
  if (enabled)
    g.dist->add_sink(g.err);
  else
    g.dist->remove_sink(g.err);
  g.refresh_floor();
}

namespace {

/// Forwards every line to an application's handler.
class handler_sink : public spdlog::sinks::base_sink<std::mutex> {
public:
  using handler_type = std::function<void(cafmesh::log::level, const std::string& component,
                                          const std::string& text)>;
  explicit handler_sink(handler_type f) : f_(std::move(f)) {}

protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    f_(from_spd(msg.level), std::string{msg.logger_name.data(), msg.logger_name.size()},
       std::string{msg.payload.data(), msg.payload.size()});
  }
  void flush_() override {}

private:
  handler_type f_;
};

/// Replaces the process sink by `sink` (null: a fresh stderr sink), keeping level and state.
void replace_process_sink(std::shared_ptr<spdlog::sinks::sink> sink) {
  auto& g = global();
  std::lock_guard<std::mutex> guard{g.mtx};
  if (!sink) {
    auto e = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
    e->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%-8l%$ %n: %v");
    sink = e;
  }
  if (g.stderr_enabled)
    g.dist->remove_sink(g.err);
  g.err = std::move(sink);
  g.err->set_level(to_spd(g.stderr_level));
  if (g.stderr_enabled)
    g.dist->add_sink(g.err);
}

} // namespace

void use_logger(std::shared_ptr<spdlog::logger> target) {
  if (!target) {
    replace_process_sink(nullptr);
    return;
  }
  replace_process_sink(std::make_shared<handler_sink>(
    [target](level lvl, const std::string& component, const std::string& text) {
      target->log(to_spd(lvl), "{}: {}", component, text);
    }));
}

void use_handler(
  std::function<void(level, const std::string& component, const std::string& text)> handler) {
  if (!handler) {
    replace_process_sink(nullptr);
    return;
  }
  replace_process_sink(std::make_shared<handler_sink>(std::move(handler)));
}

// -- capture ------------------------------------------------------------------

namespace {

class capture_sink : public spdlog::sinks::base_sink<std::mutex> {
public:
  explicit capture_sink(capture* owner) : owner_(owner) {}

  void detach() {
    std::lock_guard<std::mutex> guard{this->mutex_};
    owner_ = nullptr;
  }

protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    if (owner_ == nullptr)
      return;
    line l;
    l.component.assign(msg.logger_name.data(), msg.logger_name.size());
    l.lvl = from_spd(msg.level);
    l.text.assign(msg.payload.data(), msg.payload.size());
    owner_->record(std::move(l));
  }

  void flush_() override {}

private:
  capture* owner_;
};

} // namespace

struct capture::sink_handle {
  std::shared_ptr<capture_sink> sink;
};

capture::capture(std::function<int64_t()> now_ms) : capture(std::move(now_ms), level::trace) {
  // nop
}

capture::capture(std::function<int64_t()> now_ms, level min_level) : now_ms_(std::move(now_ms)) {
  sink_ = std::make_shared<sink_handle>();
  sink_->sink = std::make_shared<capture_sink>(this);
  sink_->sink->set_level(to_spd(min_level));
  min_level_ = min_level;
  auto& g = global();
  std::lock_guard<std::mutex> guard{g.mtx};
  g.dist->add_sink(sink_->sink);
  g.capture_levels.insert(min_level);
  g.refresh_floor();
}

capture::~capture() {
  auto& g = global();
  {
    std::lock_guard<std::mutex> guard{g.mtx};
    g.dist->remove_sink(sink_->sink);
    g.capture_levels.erase(g.capture_levels.find(min_level_));
    g.refresh_floor();
  }
  sink_->sink->detach();
}

std::vector<line> capture::lines() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return lines_;
}

std::vector<line> capture::find(std::string_view needle) const {
  std::lock_guard<std::mutex> guard{mtx_};
  std::vector<line> out;
  for (const auto& l : lines_)
    if (l.text.find(needle) != std::string::npos)
      out.push_back(l);
  return out;
}

std::vector<line> capture::find(std::string_view needle, level lvl) const {
  std::lock_guard<std::mutex> guard{mtx_};
  std::vector<line> out;
  for (const auto& l : lines_)
    if (l.lvl == lvl && l.text.find(needle) != std::string::npos)
      out.push_back(l);
  return out;
}

size_t capture::count_level(level lvl) const {
  std::lock_guard<std::mutex> guard{mtx_};
  return static_cast<size_t>(
    std::count_if(lines_.begin(), lines_.end(), [&](const line& l) { return l.lvl == lvl; }));
}

void capture::clear() {
  std::lock_guard<std::mutex> guard{mtx_};
  lines_.clear();
}

void capture::record(line l) {
  l.t_ms = now_ms_ ? now_ms_() : 0;
  std::lock_guard<std::mutex> guard{mtx_};
  lines_.push_back(std::move(l));
}

} // namespace cafmesh::log
