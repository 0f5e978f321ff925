// fuzz_make_mainjob_seeds <corpus dir>: writes the seed corpora of the main job's fuzz
// targets (examples/mainjob/fuzz/corpus/<target>/) from real values: the embedded default
// scenario rendered, trace lines and ledger events as the main job writes them. The shipped
// files of examples/scenarios/ are copied in by hand (docs/testing.md#fuzzing).

#include <cstdio>
#include <sstream>
#include <string>

#include "cafmesh/mainjob/ledger.hpp"
#include "cafmesh/mainjob/scenario.hpp"
#include "cafmesh/mainjob/trace_replay.hpp"
#include "cafmesh/testing/fuzz.hpp"

using namespace cafmesh;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_make_mainjob_seeds <corpus dir>\n");
    return 2;
  }
  testing::fuzz::seed_corpus corpus{argv[1]};

  // Scenarios: the embedded default, rendered.
  corpus.write("fuzz_scenario_reader", "default-rendered.json",
               mainjob::to_json_text(mainjob::default_scenario()));

  // Traces: one line of every kind, and a frame stream.
  std::string trace;
  int64_t t_ms = 0;
  for (auto kind : {mainjob::delivery_kind::request, mainjob::delivery_kind::post,
                    mainjob::delivery_kind::post, mainjob::delivery_kind::frame,
                    mainjob::delivery_kind::frame}) {
    mainjob::planned_delivery d;
    d.t_ms = t_ms += 5;
    d.kind = kind;
    d.sender = kind == mainjob::delivery_kind::frame ? "node/Owner/O1" : "portal/user1/tab1";
    d.target = kind == mainjob::delivery_kind::frame ? "portal/user1/tab1" : "node/Org/N1";
    d.stream = kind == mainjob::delivery_kind::frame ? "stream-1" : "";
    d.answer_suppressed = kind == mainjob::delivery_kind::post && t_ms == 15;
    d.payload_bytes = 64;
    trace += mainjob::to_trace_line(d) + "\n";
  }
  corpus.write("fuzz_trace_reader", "every-kind.jsonl", trace + "\n");

  // Ledger events: every event kind, as the ledger writes them.
  std::ostringstream events;
  mainjob::outcome_ledger ledger;
  ledger.write_events_to(&events);
  mainjob::accepted_delivery d;
  d.id = "c-1", d.kind = mainjob::delivery_kind::request, d.sender = "portal/user1/tab1";
  d.target = "node/Org/N1", d.origin = "client:1", d.accepted_ms = 1;
  ledger.accept(d);
  ledger.landed("c-1", 3);
  ledger.response("c-1", 4);
  d.id = "c-2", d.kind = mainjob::delivery_kind::post, d.accepted_ms = 2;
  ledger.accept(d);
  ledger.nack("c-2", routing::verdict::shutting_down, "silo stopping", 5);
  ledger.duplicate_dropped("c-2", 6);
  d.id = "c-3", d.kind = mainjob::delivery_kind::frame, d.stream = "stream-1", d.version = 4;
  d.sender = "node/Owner/O1", d.target = "portal/user1/tab1";
  ledger.accept(d);
  ledger.landed("c-3", 7);
  ledger.stale_dropped("portal/user1/tab1", "stream-1", 3, 8);
  d.id = "c-4", d.kind = mainjob::delivery_kind::post, d.stream = "", d.version = 0;
  d.answer_suppressed = true;
  ledger.accept(d);
  ledger.suppressed_failure("c-4", routing::verdict::unavailable, "no route", 9);
  d.id = "c-5", d.answer_suppressed = false;
  ledger.accept(d);
  ledger.unconfirmed("c-5", 10);
  d.id = "c-6", d.kind = mainjob::delivery_kind::request;
  ledger.accept(d);
  ledger.deadline("c-6", 11);
  corpus.write("fuzz_ledger_events", "every-event.jsonl", events.str());
  return corpus.exit_code();
}
