#include "cafmesh/routing/payload_codec.hpp"

namespace cafmesh::routing {

namespace {

constexpr const char* prefix = "\"caf:";

int hex_value(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  return -1;
}

} // namespace

std::string caf_payload_text(const std::vector<char>& bytes) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out = prefix;
  out.reserve(out.size() + bytes.size() * 2 + 1);
  for (auto c : bytes) {
    auto b = static_cast<unsigned char>(c);
    out += digits[b >> 4];
    out += digits[b & 0x0F];
  }
  out += '"';
  return out;
}

bool caf_payload_bytes(const std::string& text, std::vector<char>& out) {
  std::string head = prefix;
  if (text.size() < head.size() + 1 || text.compare(0, head.size(), head) != 0
      || text.back() != '"')
    return false;
  auto n = text.size() - head.size() - 1;
  if (n % 2 != 0)
    return false;
  std::vector<char> bytes;
  bytes.reserve(n / 2);
  for (size_t i = head.size(); i + 1 < text.size(); i += 2) {
    auto hi = hex_value(text[i]);
    auto lo = hex_value(text[i + 1]);
    if (hi < 0 || lo < 0)
      return false;
    bytes.push_back(static_cast<char>((hi << 4) | lo));
  }
  out = std::move(bytes);
  return true;
}

} // namespace cafmesh::routing
