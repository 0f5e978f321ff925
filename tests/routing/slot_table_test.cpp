// The router core's slab of legs (routing/src/slot_table.hpp, private to the library):
// ids carry their slot and order by their sequence number, a freed slot answers no id, slots
// are reused lowest first and a burst's chunks go back to the heap.

#include <cstdint>
#include <vector>

#include <doctest/doctest.h>

#include "slot_table.hpp"

using cafmesh::routing::router_core_detail::slot_table;

namespace {

struct rec {
  uint64_t id = 0;
  int value = 0;
};

} // namespace

TEST_CASE("slot table: ids order by sequence, find answers the live record only") {
  slot_table<rec> t;
  auto& a = t.emplace(1);
  auto& b = t.emplace(2);
  a.value = 10;
  b.value = 20;
  auto ida = a.id;
  auto idb = b.id;
  CHECK(ida < idb);
  CHECK(slot_table<rec>::seq_of(ida) == 1);
  CHECK(slot_table<rec>::seq_of(idb) == 2);
  CHECK(t.size() == 2);
  REQUIRE(t.find(ida) != nullptr);
  CHECK(t.find(ida)->value == 10);
  CHECK(t.at(idb).value == 20);
  t.erase(a);
  CHECK(t.find(ida) == nullptr);
  CHECK(t.count(ida) == 0);
  CHECK_THROWS_AS(t.at(ida), std::out_of_range);
  // The freed slot is reused by the next record, under a new id: the old id still names none.
  auto& c = t.emplace(3);
  CHECK((c.id & slot_table<rec>::slot_mask) == (ida & slot_table<rec>::slot_mask));
  CHECK(c.id != ida);
  CHECK(t.find(ida) == nullptr);
  CHECK(t.find(c.id) == &c);
  CHECK(c.value == 0);
  // A foreign id orders with the table's ids and names no record.
  auto f = slot_table<rec>::foreign_id(4);
  CHECK(f > c.id);
  CHECK(t.find(f) == nullptr);
  CHECK(t.size() == 2);
}

TEST_CASE("slot table: records keep their address while others come and go, slots are reused "
          "lowest first") {
  slot_table<rec> t;
  std::vector<rec*> xs;
  for (uint64_t k = 1; k <= 100; ++k)
    xs.push_back(&t.emplace(k));
  auto first = xs[0];
  auto id0 = first->id;
  for (size_t k = 1; k < 100; ++k)
    t.erase(*xs[k]);
  CHECK(t.size() == 1);
  CHECK(t.find(id0) == first);
  auto& y = t.emplace(101);
  CHECK((y.id & slot_table<rec>::slot_mask) == 1);
  t.erase(y);
  t.erase(*first);
  CHECK(t.empty());
  // 100 records took 4 chunks; all erased, one is kept as the spare.
  CHECK(t.chunks_held() == 1);
  for (uint64_t k = 0; k < 2 * slot_table<rec>::chunk_size; ++k)
    CHECK((t.emplace(200 + k).id & slot_table<rec>::slot_mask) == k);
  CHECK(t.chunks_held() == 2);
}

TEST_CASE("slot table: a chunk goes back to the heap as its last record goes, not all at the "
          "end of a burst") {
  slot_table<rec> t;
  constexpr uint64_t n = 8 * slot_table<rec>::chunk_size;
  std::vector<rec*> xs;
  for (uint64_t k = 0; k < n; ++k)
    xs.push_back(&t.emplace(k + 1));
  CHECK(t.chunks_held() == 8);
  // Erased in acceptance order: each chunk goes as it empties (the first one as the spare).
  for (uint64_t k = 0; k < n; ++k) {
    t.erase(*xs[k]);
    // After j whole chunks: 8 - j chunks with records and the spare.
    if ((k + 1) % slot_table<rec>::chunk_size == 0)
      CHECK(t.chunks_held() == 9 - (k + 1) / slot_table<rec>::chunk_size);
  }
  CHECK(t.empty());
  CHECK(t.chunks_held() == 1);
}
