// Fuzz target: the trace reader of cafmesh-client (examples/mainjob/include/cafmesh/mainjob/
// trace_replay.hpp) on arbitrary text, and the replay of what it accepts. Invariants: a
// refusal has error lines and no entries; accepted entries keep the documented rules (times
// never decrease, kinds, streams, payload sizes); every replayed delivery, written back as a
// trace line, reads back as the entry it came from.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

#include "cafmesh/mainjob/trace_replay.hpp"
#include "cafmesh/testing/fuzz.hpp"

using namespace cafmesh;
namespace fuzz = cafmesh::testing::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto res = mainjob::parse_trace(fuzz::as_text(data, size));
  if (!res.ok) {
    fuzz::check(!res.errors.empty(), "a refused trace has an error line");
    fuzz::check(res.entries.empty(), "a refused trace has no entries");
    return 0;
  }
  fuzz::check(res.errors.empty(), "an accepted trace has no error line");
  int64_t last_line = 0;
  int64_t last_t_ms = 0;
  for (const auto& e : res.entries) {
    fuzz::check(e.line > last_line, "entries in line order");
    fuzz::check(e.t_ms >= last_t_ms, "times never decrease");
    fuzz::check(e.kind == "request" || e.kind == "post" || e.kind == "heartbeat"
                  || e.kind == "frame",
                "a known kind");
    fuzz::check((e.kind == "frame") == !e.stream.empty(), "a stream exactly on frames");
    fuzz::check(e.payload_bytes >= 0 && e.payload_bytes <= 1048575, "payload size in range");
    last_line = e.line;
    last_t_ms = e.t_ms;
  }
  mainjob::trace_replay replay{res.entries, "fuzz", "client:1"};
  auto due = replay.take_due(std::numeric_limits<int64_t>::max());
  fuzz::check(due.size() == res.entries.size(), "one paced delivery per entry");
  fuzz::check(!replay.next_due_ms().has_value(), "every entry taken");
  for (size_t i = 0; i < due.size(); ++i) {
    auto back = mainjob::parse_trace(mainjob::to_trace_line(due[i]));
    fuzz::check(back.ok && back.entries.size() == 1, "a written trace line reads back");
    auto x = back.entries.front();
    const auto& e = res.entries[i];
    fuzz::check(x.t_ms == e.t_ms && x.sender == e.sender && x.target == e.target
                  && x.stream == e.stream && x.payload_bytes == e.payload_bytes
                  && x.kind == e.kind,
                "a written trace line reads back as its entry");
  }
  return 0;
}
