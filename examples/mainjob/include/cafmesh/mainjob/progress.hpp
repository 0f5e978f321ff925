#pragma once

/// @file
/// The demo's live progress line: rate, in flight, delivered,
/// NACKed by verdict, and which silo is rolling at which lifecycle stage. On a terminal the
/// line rewrites itself (`\r` ... erase to end of line); otherwise it is printed as plain
/// periodic lines. Rendering only: the driver decides when to call it.

#include <cstdint>
#include <deque>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "cafmesh/actors/log.hpp"
#include "cafmesh/actors/stage.hpp"
#include "cafmesh/routing/verdict.hpp"

namespace cafmesh::mainjob {

/// Where the rolling silo stands.
enum class roll_phase : uint8_t {
  stopping,   ///< graceful stop in progress (stopping signal sent)
  stopped,    ///< stop complete, waiting to restart
  starting,   ///< new generation starting
  active,     ///< new generation Active
};

/// Renders `stopping`, `stopped`, `starting` or `active`.
std::string to_string(roll_phase x);

/// The rolling silo, if any.
struct roll_status {
  std::string silo;
  uint64_t generation = 0;
  roll_phase phase = roll_phase::stopping;
  std::optional<lifecycle::stage> stage; ///< the stage being started or stopped, if known
};

/// One progress sample.
struct progress_sample {
  int64_t elapsed_ms = 0;
  int64_t rate_per_s = 0;   ///< measured (see `rate_meter`)
  uint64_t in_flight = 0;   ///< accepted without a terminal outcome
  uint64_t delivered = 0;   ///< landed (posts, frames) or answered (requests)
  std::map<routing::verdict, uint64_t> nacked;
  std::optional<roll_status> roll;
};

/// Renders the line without any terminal control characters, e.g.
/// `[  12.3s] rate 1998/s | in flight 37 | delivered 24013 | NACKed 3 (shutting_down 3) |
/// roll: B@2 stopping, stage Active (20000)`; `NACKed 0` has no parenthesis; `roll: -` when
/// no silo is rolling; a roll without a known stage omits `, stage ...`.
std::string render_progress(const progress_sample& s);

/// How progress is shown.
enum class progress_mode : uint8_t { automatic, terminal, plain, off };

/// Parses `auto`, `terminal`, `plain` or `off`.
bool from_string(const std::string& name, progress_mode& out);

/// `automatic` becomes `terminal` if `is_tty`, else `plain`; other modes stay.
progress_mode resolve(progress_mode m, bool is_tty);

/// The text to write for one sample in mode `m` (resolved): terminal: `\r{line}\x1b[K`
/// (no newline); plain: `{line}\n`; off: empty.
std::string progress_text(const progress_sample& s, progress_mode m);

/// Writes the progress of one run to a stream, one sample per `print`. In terminal mode
/// each sample redraws the same line (`\r{line}\x1b[K`) and `finish` ends it with a
/// newline; in plain mode each sample is a line of its own; off writes nothing. A terminal
/// line is cut to one column less than `width_cols` (0: not cut): a line that wraps could
/// not be redrawn in place, since `\r` only returns to the start of its last row.
class progress_printer {
public:
  /// `mode` is resolved with `is_tty` (`resolve`); `out` null writes nothing.
  progress_printer(std::ostream* out, progress_mode mode, bool is_tty, int width_cols);

  /// The resolved mode.
  progress_mode mode() const { return mode_; }

  /// Writes `s` and flushes.
  void print(const progress_sample& s);

  /// Ends a drawn terminal line with a newline (once); nothing in the other modes.
  void finish();

private:
  std::ostream* out_;
  progress_mode mode_;
  int width_cols_;
  bool line_open_ = false;
};

/// The width of the terminal on file descriptor `fd` in columns; 0 when `fd` is no terminal
/// or does not tell.
int terminal_width(int fd);

/// A log line for standard error while a progress line is drawn on the same terminal:
/// `\r\x1b[K` erases the progress line the cursor stands on, then
/// `{timestamp} {level, padded to 8} {component}: {text}\n` (the stderr sink's layout); the
/// next progress sample redraws its line on the row below.
std::string terminal_log_line(const std::string& timestamp, log::level lvl,
                              const std::string& component, const std::string& text);

/// The current local time as the stderr sink writes it, `2026-12-01T19:24:59.095`.
std::string log_timestamp_now();

/// Measures a rate from (time, running total) samples over a sliding window: the rate is
/// (newest total - oldest total kept) * 1000 / (newest t - oldest t) in units per second,
/// integer division; 0 with fewer than two samples or no time between them. Samples older
/// than `window_ms` before the newest are forgotten (the newest one older than the window
/// is kept as the base). Time must not run backwards.
class rate_meter {
public:
  explicit rate_meter(int64_t window_ms = 1000) : window_ms_(window_ms) {}

  void add(int64_t t_ms, uint64_t total);

  int64_t per_second() const;

private:
  int64_t window_ms_;
  std::deque<std::pair<int64_t, uint64_t>> samples_;
};

} // namespace cafmesh::mainjob
