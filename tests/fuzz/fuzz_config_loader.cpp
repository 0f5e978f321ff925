// Fuzz target: the configuration loader (config/include/cafmesh/config/load.hpp) on arbitrary
// text. Invariants: a refusal has at least one error line and leaves the value at its
// default; an accepted document renders to a text that is accepted again and renders the
// same (`parse(to_json_text(c))` gives back `c`).

#include <cstddef>
#include <cstdint>
#include <string>

#include "cafmesh/config/load.hpp"
#include "cafmesh/testing/fuzz.hpp"

using namespace cafmesh;
namespace fuzz = cafmesh::testing::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto res = fuzz::check_rendered_round_trip(
    fuzz::as_text(data, size), [](const std::string& text) { return config::parse(text); },
    [](const config::mesh_config& c) { return config::to_json_text(c); });
  if (res.ok)
    fuzz::check(config::validate(res.value).ok, "validate accepts an accepted configuration");
  else
    fuzz::check(config::to_json_text(res.value) == config::to_json_text(config::mesh_config{}),
                "a refused configuration leaves the value at mesh_config{}");
  return 0;
}
