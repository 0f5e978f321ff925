// Fuzz target: the outcome ledger's event reader (examples/mainjob/include/cafmesh/mainjob/
// ledger.hpp, `read_event_line`) on arbitrary lines, and the ledger's checks over whatever
// was read. Invariant: the event lines a ledger writes read back without an error into a
// fresh ledger, which writes exactly the same lines.

#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "cafmesh/mainjob/ledger.hpp"
#include "cafmesh/testing/fuzz.hpp"

using namespace cafmesh;
namespace fuzz = cafmesh::testing::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::istringstream in{fuzz::as_text(data, size)};
  std::ostringstream written;
  mainjob::outcome_ledger ledger;
  ledger.write_events_to(&written);
  std::string line;
  while (std::getline(in, line))
    (void) mainjob::read_event_line(line, ledger);
  (void) ledger.summarize();

  std::istringstream first{written.str()};
  std::ostringstream rewritten;
  mainjob::outcome_ledger again;
  again.write_events_to(&rewritten);
  while (std::getline(first, line))
    fuzz::check(mainjob::read_event_line(line, again).empty(),
                "a written event line reads back");
  fuzz::check(rewritten.str() == written.str(), "a re-read ledger writes the same lines");
  fuzz::check(again.size() == ledger.size() && again.in_flight() == ledger.in_flight()
                && again.landed_count() == ledger.landed_count()
                && again.nacked_counts() == ledger.nacked_counts(),
              "a re-read ledger counts the same");
  return 0;
}
