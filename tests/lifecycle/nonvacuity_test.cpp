// S12.20 non-vacuity: with the participant's stop replaced by an immediate answer, the
// quiescence scenarios fail; restored (this very binary), they pass.

#include <array>
#include <cstdio>
#include <string>

#include <doctest/doctest.h>

namespace {

/// Runs the mutant test binary on one test case and answers doctest's summary line.
std::string run_mutant(const std::string& filter) {
  std::string cmd = std::string{"\""} + CAFMESH_S12_20_MUTANT + "\" --no-colors=true -tc=\""
                    + filter + "\" 2>&1";
  std::string out;
  if (auto pipe = popen(cmd.c_str(), "r")) {
    std::array<char, 4096> buf;
    while (fgets(buf.data(), static_cast<int>(buf.size()), pipe) != nullptr)
      out += buf.data();
    pclose(pipe);
  }
  auto pos = out.find("[doctest] test cases:");
  return pos == std::string::npos ? out : out.substr(pos, out.find('\n', pos) - pos);
}

} // namespace

TEST_CASE("S12.20 with the participant answering at once, S12.10, S12.12, S12.13, S12.14 and S12.16 fail") {
  for (std::string scenario : {"S12.10*", "S12.12*", "S12.13*", "S12.14*", "S12.16*"}) {
    CAPTURE(scenario);
    auto summary = run_mutant(scenario);
    CAPTURE(summary);
    // Exactly one case ran, and it failed.
    int total = -1, passed = -1, failed = -1;
    REQUIRE(std::sscanf(summary.c_str(), "[doctest] test cases: %d | %d passed | %d failed",
                        &total, &passed, &failed)
            == 3);
    CHECK(total == 1);
    CHECK(passed == 0);
    CHECK(failed == 1);
  }
}
