#include "common/tensor/host_buffer.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>

namespace dancemoe {

TEST_CASE("host buffer: a freed mapping serves the next buffer of its size, resident") {
  const size_t bytes = (384u << 10) + 100;  // a short sequence's KV cache, not page-rounded
  void* first = nullptr;
  {
    Result<HostBuffer> a = HostBuffer::allocate(bytes);
    REQUIRE(a.is_ok());
    first = a->data();
    CHECK(reinterpret_cast<uintptr_t>(first) % 64 == 0);
    std::memset(first, 0x5a, bytes);
  }
  // Same page-rounded size: the same mapping comes back, with its bytes
  // (allocate never promises zeroes).
  Result<HostBuffer> b = HostBuffer::allocate(bytes - 50);
  REQUIRE(b.is_ok());
  CHECK(b->data() == first);
  CHECK(b->size() == bytes - 50);
  CHECK(static_cast<const uint8_t*>(b->data())[bytes - 51] == 0x5a);
  // Another size while that one is in use: a mapping of its own.
  Result<HostBuffer> c = HostBuffer::allocate(2 * bytes);
  REQUIRE(c.is_ok());
  CHECK(c->data() != first);
  std::memset(c->data(), 1, 2 * bytes);
  // Small buffers come from the heap and are writable to their end.
  Result<HostBuffer> d = HostBuffer::allocate(1000);
  REQUIRE(d.is_ok());
  std::memset(d->data(), 2, 1000);
  CHECK(d->size() == 1000);
}

TEST_CASE("host buffer: moving hands the block over and freeing twice is impossible") {
  Result<HostBuffer> a = HostBuffer::allocate(1u << 20);
  REQUIRE(a.is_ok());
  void* p = a->data();
  HostBuffer moved = std::move(*a);
  CHECK(moved.data() == p);
  CHECK(a->data() == nullptr);  // NOLINT(bugprone-use-after-move): the moved-from state is defined
  HostBuffer assigned;
  assigned = std::move(moved);
  CHECK(assigned.data() == p);
  CHECK(assigned.size() == (1u << 20));
}

}  // namespace dancemoe
