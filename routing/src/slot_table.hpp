#pragma once

/// @file
/// A slab of records addressed by ids that carry their slot: the router core's legs live in
/// one (docs/delivery-costs.md#what-a-delivery-holds), so a leg costs no allocation of its own,
/// no hash node and no lookup beyond an index.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <stdexcept>
#include <utility>
#include <vector>

namespace cafmesh::routing::router_core_detail {

/// A slab of `T` records in chunks of 32, each addressed by an id whose low `slot_bits` bits
/// are its slot and whose high bits are a sequence number the owner chooses (so ids order as
/// their sequence numbers). `T` has a `uint64_t id` member, which the table sets. What needs
/// the records in id order walks them (`for_each`) and sorts.
///
/// Records never move while alive (intrusive links between them stay valid); a freed slot is
/// reused lowest first, so live records gather in the low chunks. A chunk goes back to the heap
/// as soon as its last record is erased, one at a time as a burst drains (never all at once),
/// except one empty chunk kept as a spare against churn at a boundary. `find` is O(1);
/// `emplace` is O(1) amortised.
template <class T>
class slot_table {
public:
  static constexpr unsigned slot_bits = 22;
  static constexpr uint64_t slot_mask = (uint64_t{1} << slot_bits) - 1;
  /// Slots handed out: 0 .. `max_size` - 1. The slot `slot_mask` is never handed out, so
  /// `foreign_id` ids name no record.
  static constexpr size_t max_size = slot_mask;
  static constexpr size_t chunk_size = 32;

  slot_table() = default;
  slot_table(const slot_table&) = delete;
  slot_table& operator=(const slot_table&) = delete;

  ~slot_table() {
    for (auto& c : chunks_)
      if (c)
        for (size_t k = 0; k < chunk_size; ++k)
          if ((c->used >> k) & 1u)
            c->at(k)->~T();
  }

  /// An id ordered with this table's ids by `seq` that names no record of it.
  static uint64_t foreign_id(uint64_t seq) { return (seq << slot_bits) | slot_mask; }

  /// The sequence number `id` carries.
  static uint64_t seq_of(uint64_t id) { return id >> slot_bits; }

  /// The record `id` names, or null.
  T* find(uint64_t id) {
    auto slot = id & slot_mask;
    auto ci = slot / chunk_size;
    if (ci >= chunks_.size() || !chunks_[ci])
      return nullptr;
    auto& c = *chunks_[ci];
    auto k = slot % chunk_size;
    if (((c.used >> k) & 1u) == 0)
      return nullptr;
    auto* p = c.at(k);
    return p->id == id ? p : nullptr;
  }

  /// The record `id` names; throws `std::out_of_range` if none.
  T& at(uint64_t id) {
    if (auto* p = find(id))
      return *p;
    throw std::out_of_range("slot_table: no record with this id");
  }

  size_t count(uint64_t id) { return find(id) != nullptr ? 1 : 0; }

  /// True when every slot is taken: `emplace` must not be called.
  bool full() const { return size_ >= max_size; }

  /// A new default-constructed record whose id carries `seq` and its slot.
  T& emplace(uint64_t seq) {
    while (hint_ < chunks_.size() && chunks_[hint_] && chunks_[hint_]->used == full_mask)
      ++hint_;
    if (hint_ == chunks_.size())
      chunks_.emplace_back();
    if (!chunks_[hint_])
      chunks_[hint_] = spare_ ? std::move(spare_) : std::make_unique<chunk>();
    auto& c = *chunks_[hint_];
    auto k = static_cast<size_t>(__builtin_ctzll(~c.used));
    auto* p = new (static_cast<void*>(c.bytes + k * sizeof(T))) T();
    c.used |= uint64_t{1} << k;
    p->id = (seq << slot_bits) | (hint_ * chunk_size + k);
    ++size_;
    return *p;
  }

  /// Destroys `x`, a record of this table.
  void erase(T& x) {
    auto slot = x.id & slot_mask;
    auto ci = slot / chunk_size;
    auto k = slot % chunk_size;
    x.~T();
    auto& c = chunks_[ci];
    c->used &= ~(uint64_t{1} << k);
    --size_;
    if (ci < hint_)
      hint_ = ci;
    if (c->used == 0) {
      // Empty: kept as the spare if there is none (a count oscillating at a chunk boundary
      // allocates nothing), else back to the heap.
      if (!spare_)
        spare_ = std::move(c);
      else
        c.reset();
      while (!chunks_.empty() && !chunks_.back())
        chunks_.pop_back();
      if (hint_ > chunks_.size())
        hint_ = chunks_.size();
    }
  }

  /// Calls `f(record)` for every live record, in slot order (not id order). `f` must not
  /// add or erase records.
  template <class F>
  void for_each(F f) {
    for (auto& c : chunks_)
      for (auto bits = c ? c->used : uint64_t{0}; bits != 0; bits &= bits - 1)
        f(*c->at(static_cast<size_t>(__builtin_ctzll(bits))));
  }

  size_t size() const { return size_; }

  /// Chunks held, the spare included (each `chunk_size` records' worth of heap).
  size_t chunks_held() const {
    size_t n = spare_ ? 1 : 0;
    for (auto& c : chunks_)
      n += c ? 1 : 0;
    return n;
  }

  bool empty() const { return size_ == 0; }

private:
  static_assert(chunk_size <= 64, "a chunk's occupancy is one 64-bit mask");
  static constexpr uint64_t full_mask = chunk_size == 64 ? ~uint64_t{0}
                                                         : (uint64_t{1} << chunk_size) - 1;

  struct chunk {
    uint64_t used = 0; ///< bit k: slot k holds a record
    alignas(T) unsigned char bytes[sizeof(T) * chunk_size];
    T* at(size_t k) { return std::launder(reinterpret_cast<T*>(bytes + k * sizeof(T))); }
  };

  std::vector<std::unique_ptr<chunk>> chunks_; ///< null: released (every slot free)
  std::unique_ptr<chunk> spare_;               ///< an empty chunk kept for the next one needed
  size_t hint_ = 0;                            ///< no chunk below it has a free slot
  size_t size_ = 0;
};

} // namespace cafmesh::routing::router_core_detail
