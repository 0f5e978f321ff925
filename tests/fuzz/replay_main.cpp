// The regression runner of a fuzz target, built with any compiler (docs/testing.md#fuzzing):
// feeds every regular file of every directory given on the command line, in name
// order, to the target's LLVMFuzzerTestOneInput once. A `--nonempty` before a directory
// requires at least one file in it (the seed corpus); other directories may be absent.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace fs = std::filesystem;

int main(int argc, char** argv) {
  bool require = false;
  size_t total = 0;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--nonempty") {
      require = true;
      continue;
    }
    std::vector<fs::path> files;
    std::error_code ec;
    if (fs::is_directory(arg, ec))
      for (const auto& e : fs::directory_iterator{arg})
        if (e.is_regular_file())
          files.push_back(e.path());
    std::sort(files.begin(), files.end());
    if (require && files.empty()) {
      std::fprintf(stderr, "no input files in %s\n", arg.c_str());
      return 1;
    }
    require = false;
    for (const auto& f : files) {
      std::ifstream in{f, std::ios::binary};
      std::vector<char> bytes{std::istreambuf_iterator<char>{in}, {}};
      if (!in.good() && !in.eof()) {
        std::fprintf(stderr, "cannot read %s\n", f.c_str());
        return 1;
      }
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    }
    std::printf("%s: %zu inputs\n", arg.c_str(), files.size());
    total += files.size();
  }
  std::printf("%zu inputs, no finding\n", total);
  return 0;
}
