// Fuzz target: the main job's scenario reader (examples/mainjob/include/cafmesh/mainjob/
// scenario.hpp) on arbitrary text. Invariants: a refusal has at least one error line; an
// accepted scenario renders to a text that is accepted again and renders the same
// (`parse_scenario(to_json_text(s))` gives back `s`), and every process configuration it
// yields goes through the config loader without a crash.

#include <cstddef>
#include <cstdint>
#include <string>

#include "cafmesh/mainjob/scenario.hpp"
#include "cafmesh/testing/fuzz.hpp"

using namespace cafmesh;
namespace fuzz = cafmesh::testing::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto res = fuzz::check_rendered_round_trip(
    fuzz::as_text(data, size),
    [](const std::string& text) { return mainjob::parse_scenario(text); },
    [](const mainjob::scenario& s) { return mainjob::to_json_text(s); });
  if (!res.ok)
    return 0;
  for (auto role : {config::process_role::silo_host, config::process_role::pure_client,
                    config::process_role::monolith}) {
    auto cfg = mainjob::process_config(res.value, role, "fuzz");
    fuzz::check(cfg.ok || !cfg.errors.empty(), "a refused process configuration says why");
  }
  return 0;
}
