#pragma once

/// @file
/// The harness of a fuzz target (docs/testing.md#fuzzing): the invariant check that ends a
/// run with a report, the input as text, the UTF-8 test, the rendered round trip every
/// reader with a renderer promises, the regression runner that feeds a target's corpus and
/// findings to its `LLVMFuzzerTestOneInput` once, and the seed corpus that the seed writers
/// (`tests/fuzz/make_seeds.cpp`, `examples/mainjob/fuzz/make_seeds.cpp`) fill. A fuzz target is one
/// source defining `LLVMFuzzerTestOneInput` with these checks; built with libFuzzer it fuzzes,
/// built with any compiler next to a `main` calling `replay_main` it is a regression test. Header
/// only, so that a libFuzzer build links none of `cafmesh::testing`'s code.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

/// The fuzz target's entry point, defined by the target (libFuzzer's interface).
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace cafmesh::testing::fuzz {

/// Ends the run with `what` on stderr when `cond` is false: libFuzzer records the input as a
/// crash, the regression runner fails its test.
inline void check(bool cond, const char* what) {
  if (!cond) {
    std::fprintf(stderr, "fuzz invariant violated: %s\n", what);
    std::abort();
  }
}

/// The input as text (arbitrary bytes, NUL included).
inline std::string as_text(const uint8_t* data, size_t size) {
  return std::string{reinterpret_cast<const char*>(data), size};
}

/// True if `s` is valid UTF-8 (nlohmann's strict dump refuses anything else).
inline bool is_utf8(const std::string& s) {
  try {
    (void) nlohmann::json(s).dump();
    return true;
  } catch (const nlohmann::json::type_error&) {
    return false;
  }
}

/// Reads `text` with `parse` and checks what every reader with a renderer promises: a refusal
/// has an error line and an acceptance none; the rendering of an accepted value is accepted
/// again and renders the same (`parse(render(x))` gives back `x`). Answers the first read.
template <class Parse, class Render>
auto check_rendered_round_trip(const std::string& text, Parse parse, Render render) {
  auto res = parse(text);
  check(res.ok == res.errors.empty(), "a refusal has an error line, an acceptance none");
  if (res.ok) {
    auto rendered = render(res.value);
    auto again = parse(rendered);
    check(again.ok, "the rendering of an accepted value is accepted");
    check(render(again.value) == rendered, "reading the rendering gives back the value");
  }
  return res;
}

/// The regression runner (a fuzz target's `main` without libFuzzer): feeds every regular file
/// of every directory named in `argv`, in name order, to `LLVMFuzzerTestOneInput` once. A
/// `--nonempty` before a directory requires at least one file in it (the seed corpus); other
/// directories may be absent. Answers the process's exit code: 0 when every input ran.
inline int replay_main(int argc, char** argv) {
  namespace fs = std::filesystem;
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

/// The seed corpora of a set of fuzz targets, as a seed writer fills them: `write` puts one
/// seed into `<dir>/<target>/<name>`, making the folders it needs. A seed it cannot write is
/// named on `report` (stderr by default) and counted; the writer's `main` answers
/// `exit_code()`.
class seed_corpus {
public:
  explicit seed_corpus(std::filesystem::path dir, std::FILE* report = stderr)
    : dir_(std::move(dir)), report_(report) {}

  /// Writes `bytes` as seed `name` of fuzz target `target`, replacing a seed of that name.
  void write(const std::string& target, const std::string& name, const std::string& bytes) {
    auto folder = dir_ / target;
    auto file = folder / name;
    std::error_code ec;
    std::filesystem::create_directories(folder, ec);
    if (!ec) {
      std::ofstream out{file, std::ios::binary | std::ios::trunc};
      out << bytes;
      out.close();
      if (out.good())
        return;
    }
    std::fprintf(report_, "cannot write seed %s%s%s\n", file.c_str(), ec ? ": " : "",
                 ec ? ec.message().c_str() : "");
    ++failed_;
  }

  /// How many seeds could not be written.
  size_t failed() const noexcept { return failed_; }

  /// The seed writer's exit code: 0 when every seed was written, else 1.
  int exit_code() const noexcept { return failed_ == 0 ? 0 : 1; }

private:
  std::filesystem::path dir_;
  std::FILE* report_;
  size_t failed_ = 0;
};

} // namespace cafmesh::testing::fuzz
