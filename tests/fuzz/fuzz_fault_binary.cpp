// Fuzz target: CAF binary deserialisation of the fault tree
// (actors/include/cafmesh/actors/fault.hpp) and its classification
// (routing/include/cafmesh/routing/classify.hpp). Invariants: a decoded fault writes and reads
// back equal, and survives the trip through a CAF error (`to_fault(to_error(f)) == f`).

#include <cstddef>
#include <cstdint>
#include <string>

#include "cafmesh/actors/fault.hpp"
#include "cafmesh/routing/classify.hpp"

#include "fuzz_binary.hpp"

using namespace cafmesh;
namespace fuzz = cafmesh::testing::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fault f;
  if (!fuzz::load(reinterpret_cast<const char*>(data), size, f))
    return 0;
  fuzz::check_binary_round_trip(f, "a decoded fault writes and reads back equal");
  (void) f.render();
  (void) to_string(f.code);
  (void) routing::classify(f);
  (void) routing::is_transient(f);
  (void) routing::is_resendable(f);
  (void) routing::has_response_timeout(f);
  (void) routing::re_resolves(f);
  (void) routing::departed_silos(f);
  (void) routing::has_leg_exclusion(f);
  (void) routing::may_retry_in_leg(f);
  (void) routing::retry_hint_ms(f);
  (void) routing::retry_in_leg(f);
  fuzz::check(to_fault(to_error(f)) == f, "to_fault(to_error(f)) gives back f");
  return 0;
}
