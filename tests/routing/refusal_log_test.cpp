// Tests for refusal log windowing (docs/behaviour/routing.md#saturation-report-and-refusal-log).

#include <cstdint>
#include <string>

#include <doctest/doctest.h>

#include "cafmesh/routing/refusal_log.hpp"

using cafmesh::routing::refusal_log;
using cafmesh::routing::refusal_log_decision;

TEST_CASE("refusal log: one line per 60 s window per (target, sender) pair, with the repeat "
          "count") {
  refusal_log r;
  auto d = r.record("node/Org/Dead", "portal/alice", 0);
  CHECK(d.log);
  CHECK(d.repeats == 0);
  CHECK(with_repeats("refused", d) == "refused");
  for (int64_t t : {1000, 2000, 30000, 59000, 59999}) {
    d = r.record("node/Org/Dead", "portal/alice", t);
    CHECK_FALSE(d.log);
  }
  d = r.record("node/Org/Dead", "portal/alice", 60000);
  CHECK(d.log);
  CHECK(d.repeats == 5);
  CHECK(with_repeats("refused", d) == "refused (repeated 5 time(s) since the last line)");
  CHECK_FALSE(r.record("node/Org/Dead", "portal/alice", 60001).log);
  CHECK_FALSE(r.record("node/Org/Dead", "portal/alice", 119999).log);
  d = r.record("node/Org/Dead", "portal/alice", 130000);
  CHECK(d.log);
  CHECK(d.repeats == 2);
  // A quiet window: the next refusal is logged with no repeats.
  d = r.record("node/Org/Dead", "portal/alice", 400000);
  CHECK(d.log);
  CHECK(d.repeats == 0);
  CHECK(r.size() == 1);
}

TEST_CASE("refusal log: pairs are windowed independently and compared as pairs") {
  refusal_log r;
  CHECK(r.record("node/Org/Dead", "portal/alice", 0).log);
  CHECK(r.record("node/Org/Dead", "portal/bob", 10).log);
  CHECK(r.record("node/Org/Other", "portal/alice", 20).log);
  // ("x/a", "b") and ("x", "a/b") would collide as one concatenated string.
  CHECK(r.record("x/a", "b", 30).log);
  CHECK(r.record("x", "a/b", 40).log);
  CHECK_FALSE(r.record("node/Org/Dead", "portal/bob", 50).log);
  CHECK(r.size() == 5);
}

TEST_CASE("refusal log: above 512 entries the table is swept of pairs idle for 10 windows") {
  refusal_log r;
  for (int i = 0; i < 100; ++i)
    r.record("node/Org/Dead", "client/" + std::to_string(i), 0);
  r.record("node/Org/Dead", "client/recent", 1);
  for (int i = 100; i < 511; ++i)
    r.record("node/Org/Dead", "client/" + std::to_string(i), 600000);
  CHECK(r.size() == 512);
  CHECK(r.sweeps() == 0);
  // The 513th entry triggers the sweep: the 100 pairs last seen at 0 are 600,000 ms (10
  // windows) idle and go; the one last seen at 1 ms is 599,999 ms idle and stays.
  CHECK(r.record("node/Org/Dead", "client/511", 600000).log);
  CHECK(r.sweeps() == 1);
  CHECK(r.evicted() == 100);
  CHECK(r.size() == 413);
  CHECK_FALSE(r.contains("node/Org/Dead", "client/0"));
  CHECK(r.contains("node/Org/Dead", "client/recent"));
  CHECK(r.contains("node/Org/Dead", "client/511"));
  // An evicted pair starts afresh.
  auto d = r.record("node/Org/Dead", "client/0", 600001);
  CHECK(d.log);
  CHECK(d.repeats == 0);
}

TEST_CASE("refusal log: a table of busy pairs is not swept on every insert") {
  refusal_log r;
  for (int i = 0; i < 513; ++i)
    r.record("node/Org/Dead", "client/" + std::to_string(i), 0);
  CHECK(r.sweeps() == 1);
  CHECK(r.evicted() == 0);
  for (int i = 513; i < 1026; ++i)
    r.record("node/Org/Dead", "client/" + std::to_string(i), 1000);
  CHECK(r.sweeps() == 1);
  CHECK(r.size() == 1026);
  r.record("node/Org/Dead", "client/1026", 700000);
  CHECK(r.sweeps() == 2);
  CHECK(r.evicted() == 1026);
  CHECK(r.size() == 1);
}

TEST_CASE("refusal log: window, sweep size and idle windows come from the routing "
          "configuration") {
  cafmesh::config::routing_section cfg;
  cfg.refusal_log_window_ms = 100;
  cfg.refusal_log_sweep_entries = 2;
  cfg.refusal_log_idle_windows = 3;
  refusal_log r{cfg};
  CHECK(r.record("t", "a", 0).log);
  CHECK_FALSE(r.record("t", "a", 99).log);
  auto d = r.record("t", "a", 100);
  CHECK(d.log);
  CHECK(d.repeats == 1);
  CHECK(r.record("t", "b", 100).log);
  CHECK(r.record("t", "c", 400).log); // 3 entries > 2: sweep; "a" and "b" idle 300 ms
  CHECK(r.sweeps() == 1);
  CHECK(r.size() == 1);
  CHECK(r.contains("t", "c"));
}
