// ExpertArena: where resident expert weights live. Experts are packed into
// large slabs of huge-page-aligned memory, one size class per distinct
// expert size, instead of one allocation each: decode streams through eight
// experts per layer, and packed slabs keep those reads on transparent huge
// pages (about 10 % faster than per-expert mappings, measured) without
// rounding each expert up to a whole huge page.
//
// A Slot is one expert's bytes; destroying it returns the space to its size
// class for the next expert loaded (migration loads and evicts under
// traffic); the newest slab of a class is unmapped when it empties. Thread-safe; slots
// keep the arena's state alive, so they may outlive the ExpertArena object.
//
// An arena may be bound to a NUMA node (a cpu:N device on a multi-socket
// machine): every slab's pages then come from that node (mbind before first
// touch), so the device's threads read their experts from local memory. A
// kernel that refuses the binding leaves the slab unbound (the default
// first-touch policy), which is slower but correct.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "common/base/status.h"
#include "common/tensor/host_buffer.h"

namespace dancemoe {

class ExpertArena {
  struct State;

 public:
  class Slot {
   public:
    Slot() = default;
    ~Slot();
    Slot(Slot&& other) noexcept;
    Slot& operator=(Slot&& other) noexcept;
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;

    uint8_t* data() const { return data_; }
    size_t size() const { return size_; }

   private:
    friend class ExpertArena;
    void release();

    std::shared_ptr<State> state_;
    uint8_t* data_ = nullptr;
    size_t size_ = 0;        // bytes asked for
    size_t slot_bytes_ = 0;  // size class
  };

  // Slabs hold about this many bytes (at least one slot).
  explicit ExpertArena(size_t slab_bytes = size_t{64} << 20, int numa_node = -1);

  // resource_exhausted when no memory can be had.
  Result<Slot> allocate(size_t n_bytes);

  // Bytes of slabs currently mapped (resident or not).
  size_t mapped_bytes() const;

 private:
  std::shared_ptr<State> state_;
};

}  // namespace dancemoe
