#include "cafmesh/actors/frame_codec.hpp"

#include <array>
#include <atomic>
#include <mutex>
#include <string>

#include <caf/sec.hpp>

namespace cafmesh {

namespace {

/// The registered shapes. An entry is written once, before the count that publishes it; a
/// reader sees only published entries, so links read the table without a lock.
struct shape_table {
  std::array<frame_shape, max_frame_shapes + 1> by_id{};
  std::array<uint8_t, max_frame_shapes> order{};
  std::atomic<uint8_t> count{0};
  std::mutex writers;
};

shape_table& table() {
  static shape_table t;
  return t;
}

bool same(const frame_shape& x, const frame_shape& y) {
  return x.matches == y.matches && x.save == y.save && x.load == y.load;
}

} // namespace

bool register_frame_shape(uint8_t id, frame_shape shape) {
  if (id == 0 || id > max_frame_shapes || shape.matches == nullptr || shape.save == nullptr
      || shape.load == nullptr)
    return false;
  auto& t = table();
  std::lock_guard<std::mutex> guard{t.writers};
  auto n = t.count.load(std::memory_order_relaxed);
  for (uint8_t i = 0; i < n; ++i)
    if (t.order[i] == id)
      return same(t.by_id[id], shape);
  t.by_id[id] = shape;
  t.order[n] = id;
  t.count.store(static_cast<uint8_t>(n + 1), std::memory_order_release);
  return true;
}

caf::error save_frame_payload(caf::serializer& sink, const caf::message& m) {
  auto& t = table();
  auto n = t.count.load(std::memory_order_acquire);
  for (uint8_t i = 0; i < n; ++i) {
    auto id = t.order[i];
    auto& s = t.by_id[id];
    if (s.matches(m)) {
      if (auto err = sink(id))
        return err;
      return s.save(sink, m);
    }
  }
  uint8_t generic = 0;
  auto copy = m; // caf::message's inspect takes a mutable reference; the copy shares the data
  return sink(generic, copy);
}

caf::error load_frame_payload(caf::deserializer& source, caf::message& m) {
  m = caf::message{};
  uint8_t id = 0;
  if (auto err = source(id))
    return err;
  if (id == 0)
    return source(m);
  auto& t = table();
  auto n = t.count.load(std::memory_order_acquire);
  for (uint8_t i = 0; i < n; ++i)
    if (t.order[i] == id) {
      if (auto err = t.by_id[id].load(source, m)) {
        m = caf::message{};
        return err;
      }
      return caf::none;
    }
  return caf::make_error(caf::sec::malformed_basp_message,
                         "link frame payload of unknown shape " + std::to_string(id));
}

} // namespace cafmesh
