#include "cafmesh/mainjob/progress.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <ostream>

namespace cafmesh::mainjob {

std::string to_string(roll_phase x) {
  switch (x) {
    case roll_phase::stopping:
      return "stopping";
    case roll_phase::stopped:
      return "stopped";
    case roll_phase::starting:
      return "starting";
    case roll_phase::active:
      return "active";
  }
  return "?";
}

std::string render_progress(const progress_sample& s) {
  char head[32];
  std::snprintf(head, sizeof(head), "[%6lld.%llds]", static_cast<long long>(s.elapsed_ms / 1000),
                static_cast<long long>((s.elapsed_ms % 1000) / 100));
  std::string out = head;
  out += " rate " + std::to_string(s.rate_per_s) + "/s";
  out += " | in flight " + std::to_string(s.in_flight);
  out += " | delivered " + std::to_string(s.delivered);
  uint64_t nacked = 0;
  std::string by_verdict;
  for (auto& [v, n] : s.nacked) {
    if (n == 0)
      continue;
    nacked += n;
    by_verdict += (by_verdict.empty() ? "" : ", ") + routing::to_string(v) + " "
                  + std::to_string(n);
  }
  out += " | NACKed " + std::to_string(nacked);
  if (!by_verdict.empty())
    out += " (" + by_verdict + ")";
  out += " | roll: ";
  if (!s.roll) {
    out += "-";
  } else {
    out += s.roll->silo + "@" + std::to_string(s.roll->generation) + " "
           + to_string(s.roll->phase);
    if (s.roll->stage)
      out += ", stage " + lifecycle::stage_name(*s.roll->stage);
  }
  return out;
}

bool from_string(const std::string& name, progress_mode& out) {
  if (name == "auto")
    out = progress_mode::automatic;
  else if (name == "terminal")
    out = progress_mode::terminal;
  else if (name == "plain")
    out = progress_mode::plain;
  else if (name == "off")
    out = progress_mode::off;
  else
    return false;
  return true;
}

progress_mode resolve(progress_mode m, bool is_tty) {
  if (m == progress_mode::automatic)
    return is_tty ? progress_mode::terminal : progress_mode::plain;
  return m;
}

std::string progress_text(const progress_sample& s, progress_mode m) {
  switch (m) {
    case progress_mode::terminal:
      return "\r" + render_progress(s) + "\x1b[K";
    case progress_mode::plain:
      return render_progress(s) + "\n";
    default:
      return {};
  }
}

progress_printer::progress_printer(std::ostream* out, progress_mode mode, bool is_tty,
                                   int width_cols)
  : out_(out), mode_(resolve(mode, is_tty)), width_cols_(width_cols) {
  // nop
}

void progress_printer::print(const progress_sample& s) {
  if (out_ == nullptr || mode_ == progress_mode::off)
    return;
  if (mode_ == progress_mode::terminal) {
    auto line = render_progress(s);
    if (width_cols_ > 1 && line.size() >= static_cast<size_t>(width_cols_))
      line.resize(static_cast<size_t>(width_cols_ - 1));
    *out_ << "\r" << line << "\x1b[K";
    line_open_ = true;
  } else {
    *out_ << progress_text(s, mode_);
  }
  out_->flush();
}

void progress_printer::finish() {
  if (out_ == nullptr || !line_open_)
    return;
  *out_ << "\n";
  out_->flush();
  line_open_ = false;
}

std::string terminal_log_line(const std::string& timestamp, log::level lvl,
                              const std::string& component, const std::string& text) {
  auto name = log::to_string(lvl);
  if (name.size() < 8)
    name.resize(8, ' ');
  return "\r\x1b[K" + timestamp + " " + name + " " + component + ": " + text + "\n";
}

std::string log_timestamp_now() {
  using namespace std::chrono;
  auto now = system_clock::now();
  auto t = system_clock::to_time_t(now);
  auto ms = duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm local{};
  ::localtime_r(&t, &local);
  char buf[40];
  auto n = std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &local);
  std::snprintf(buf + n, sizeof(buf) - n, ".%03lld", static_cast<long long>(ms));
  return buf;
}

int terminal_width(int fd) {
  winsize ws{};
  if (::isatty(fd) == 0 || ::ioctl(fd, TIOCGWINSZ, &ws) != 0)
    return 0;
  return ws.ws_col;
}

void rate_meter::add(int64_t t_ms, uint64_t total) {
  samples_.emplace_back(t_ms, total);
  // keep exactly one sample at or before the window's start as the base
  while (samples_.size() > 2 && samples_[1].first <= t_ms - window_ms_)
    samples_.pop_front();
}

int64_t rate_meter::per_second() const {
  if (samples_.size() < 2)
    return 0;
  auto& [t0, n0] = samples_.front();
  auto& [t1, n1] = samples_.back();
  if (t1 <= t0)
    return 0;
  return static_cast<int64_t>((n1 - n0) * 1000 / static_cast<uint64_t>(t1 - t0));
}

} // namespace cafmesh::mainjob
