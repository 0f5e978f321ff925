// The seed writer of the fuzz targets (cafmesh/testing/fuzz.hpp `seed_corpus`), shared by
// tests/fuzz/make_seeds.cpp and examples/mainjob/fuzz/make_seeds.cpp (docs/testing.md#fuzzing).

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <doctest/doctest.h>

#include "cafmesh/testing/fuzz.hpp"

namespace fs = std::filesystem;
using cafmesh::testing::fuzz::seed_corpus;

namespace {

// A fresh folder under the system's temporary folder, removed with the object.
struct scratch_dir {
  fs::path path;
  scratch_dir() {
    std::string tmpl = (fs::temp_directory_path() / "cafmesh-seed-corpus-XXXXXX").string();
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  ~scratch_dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::string read_file(const fs::path& p) {
  std::ifstream in{p, std::ios::binary};
  return std::string{std::istreambuf_iterator<char>{in}, {}};
}

} // namespace

TEST_CASE("fuzz seed corpus: each seed lands in <dir>/<target>/<name> byte for byte") {
  scratch_dir dir;
  seed_corpus corpus{dir.path / "corpus"};
  const std::string binary{"\0\x01\xff"
                           "x",
                           4};
  corpus.write("fuzz_a", "one.bin", binary);
  corpus.write("fuzz_a", "two.json", "{\"k\": 1}\n");
  corpus.write("fuzz_b", "empty.txt", "");
  CHECK(read_file(dir.path / "corpus" / "fuzz_a" / "one.bin") == binary);
  CHECK(read_file(dir.path / "corpus" / "fuzz_a" / "two.json") == "{\"k\": 1}\n");
  CHECK(fs::is_regular_file(dir.path / "corpus" / "fuzz_b" / "empty.txt"));
  CHECK(fs::file_size(dir.path / "corpus" / "fuzz_b" / "empty.txt") == 0);
  CHECK(corpus.failed() == 0);
  CHECK(corpus.exit_code() == 0);
}

TEST_CASE("fuzz seed corpus: a seed it cannot write is named, counted and fails the writer") {
  scratch_dir dir;
  // The target's folder is taken by a regular file: neither the folder nor the seed can be made.
  std::ofstream{dir.path / "fuzz_a"} << "not a folder";
  std::FILE* report = std::tmpfile();
  REQUIRE(report != nullptr);
  seed_corpus corpus{dir.path, report};
  corpus.write("fuzz_a", "one.bin", "x");
  corpus.write("fuzz_b", "two.bin", "y");
  CHECK(corpus.failed() == 1);
  CHECK(corpus.exit_code() == 1);
  CHECK(read_file(dir.path / "fuzz_a") == "not a folder");
  CHECK(read_file(dir.path / "fuzz_b" / "two.bin") == "y");
  std::rewind(report);
  std::string said;
  for (int c; (c = std::fgetc(report)) != EOF;)
    said += static_cast<char>(c);
  std::fclose(report);
  CHECK(said
        == "cannot write seed " + (dir.path / "fuzz_a" / "one.bin").string()
             + ": Not a directory\n");
}
