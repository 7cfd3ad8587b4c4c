#include "common/inference/expert_arena.h"

#include <doctest/doctest.h>

#include <cstring>
#include <set>

namespace dancemoe {

TEST_CASE("expert arena: slots are aligned, disjoint and packed into shared slabs") {
  ExpertArena arena(1 << 20);
  std::vector<ExpertArena::Slot> slots;
  for (int i = 0; i < 10; ++i) {
    auto slot = arena.allocate(100'000);
    REQUIRE(slot.is_ok());
    CHECK(reinterpret_cast<uintptr_t>(slot->data()) % 64 == 0);
    std::memset(slot->data(), i, slot->size());
    slots.push_back(std::move(slot).value());
  }
  // 10 slots of ~100 kB fit in one or two 1 MiB slabs, not ten mappings.
  CHECK(arena.mapped_bytes() <= 2u << 21);
  for (int i = 0; i < 10; ++i) CHECK(slots[static_cast<size_t>(i)].data()[99'999] == i);
  std::set<uint8_t*> distinct;
  for (auto& s : slots) distinct.insert(s.data());
  CHECK(distinct.size() == 10);
}

TEST_CASE("expert arena: a freed slot is reused and an empty newest slab is unmapped") {
  ExpertArena arena(1 << 20);
  auto a = arena.allocate(300'000);
  REQUIRE(a.is_ok());
  uint8_t* first = a->data();
  const size_t mapped = arena.mapped_bytes();
  a = arena.allocate(300'000);  // the old slot is returned by the assignment
  REQUIRE(a.is_ok());
  {
    auto b = arena.allocate(300'000);
    REQUIRE(b.is_ok());
    CHECK(b->data() == first);
  }
  CHECK(arena.mapped_bytes() == mapped);
  *a = ExpertArena::Slot();
  CHECK(arena.mapped_bytes() == 0);
}

TEST_CASE("expert arena: slots outlive the arena object") {
  ExpertArena::Slot kept;
  {
    ExpertArena arena;
    auto slot = arena.allocate(4096);
    REQUIRE(slot.is_ok());
    kept = std::move(slot).value();
  }
  std::memset(kept.data(), 7, kept.size());
  CHECK(kept.data()[4095] == 7);
}

}  // namespace dancemoe
