#include "cafmesh/config/text.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <vector>

namespace cafmesh::config {

int read_text_file(const std::string& path, std::string& out) {
  out.clear();
  auto* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr)
    return errno;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), file)) > 0)
    out.append(buf, n);
  int err = std::ferror(file) != 0 ? errno : 0;
  std::fclose(file);
  return err;
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = above;
    }
  }
  return row[b.size()];
}

} // namespace cafmesh::config
