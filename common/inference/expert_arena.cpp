#include "common/inference/expert_arena.h"

#include <linux/mempolicy.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

namespace dancemoe {

struct ExpertArena::State {
  struct Slab {
    HostBuffer memory;
    size_t n_slots = 0;
    size_t n_used = 0;
  };
  struct SizeClass {
    std::vector<Slab> slabs;
    std::vector<std::pair<size_t, uint8_t*>> free;  // (slab index, slot)
  };

  size_t slab_bytes;
  int numa_node = -1;
  mutable std::mutex mutex;
  std::map<size_t, SizeClass> classes;  // by slot bytes
  size_t mapped = 0;

  size_t slab_of(const SizeClass& c, const uint8_t* p) const {
    for (size_t i = 0; i < c.slabs.size(); ++i) {
      const auto* base = static_cast<const uint8_t*>(c.slabs[i].memory.data());
      if (p >= base && p < base + c.slabs[i].memory.size()) return i;
    }
    return c.slabs.size();
  }
};

namespace {

constexpr size_t kSlotAlign = 64;

// Binds fresh (untouched) pages to one NUMA node. The raw system call keeps
// libnuma out of the dependencies; failure only costs locality.
void bind_to_node(void* data, size_t n_bytes, int node) {
  if (node < 0 || node >= 64 || data == nullptr) return;
  const long page = ::sysconf(_SC_PAGESIZE);
  const auto begin = reinterpret_cast<uintptr_t>(data) / static_cast<uintptr_t>(page) *
                     static_cast<uintptr_t>(page);
  const auto end = reinterpret_cast<uintptr_t>(data) + n_bytes;
  const unsigned long mask = 1ul << node;
  (void)syscall(SYS_mbind, begin, end - begin, MPOL_BIND, &mask, 64ul, 0u);
}

}  // namespace

ExpertArena::ExpertArena(size_t slab_bytes, int numa_node) : state_(std::make_shared<State>()) {
  state_->slab_bytes = slab_bytes;
  state_->numa_node = numa_node;
}

Result<ExpertArena::Slot> ExpertArena::allocate(size_t n_bytes) {
  const size_t slot_bytes =
      std::max(kSlotAlign, (n_bytes + kSlotAlign - 1) / kSlotAlign * kSlotAlign);
  std::lock_guard<std::mutex> lock(state_->mutex);
  State::SizeClass& c = state_->classes[slot_bytes];
  if (c.free.empty()) {
    const size_t n_slots = std::max<size_t>(1, state_->slab_bytes / slot_bytes);
    DMOE_ASSIGN_OR_RETURN(HostBuffer memory, HostBuffer::allocate(n_slots * slot_bytes));
    bind_to_node(memory.data(), memory.size(), state_->numa_node);
    auto* base = static_cast<uint8_t*>(memory.data());
    const size_t slab_index = c.slabs.size();
    // Hand out low addresses first so a slab fills front to back.
    for (size_t i = n_slots; i-- > 0;) c.free.push_back({slab_index, base + i * slot_bytes});
    state_->mapped += memory.size();
    c.slabs.push_back({std::move(memory), n_slots, 0});
  }
  auto [slab_index, data] = c.free.back();
  c.free.pop_back();
  ++c.slabs[slab_index].n_used;
  Slot slot;
  slot.state_ = state_;
  slot.data_ = data;
  slot.size_ = n_bytes;
  slot.slot_bytes_ = slot_bytes;
  return slot;
}

size_t ExpertArena::mapped_bytes() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->mapped;
}

ExpertArena::Slot::~Slot() { release(); }

ExpertArena::Slot::Slot(Slot&& other) noexcept
    : state_(std::move(other.state_)),
      data_(std::exchange(other.data_, nullptr)),
      size_(other.size_),
      slot_bytes_(other.slot_bytes_) {}

ExpertArena::Slot& ExpertArena::Slot::operator=(Slot&& other) noexcept {
  if (this != &other) {
    release();
    state_ = std::move(other.state_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = other.size_;
    slot_bytes_ = other.slot_bytes_;
  }
  return *this;
}

void ExpertArena::Slot::release() {
  if (data_ == nullptr || state_ == nullptr) return;
  std::lock_guard<std::mutex> lock(state_->mutex);
  State::SizeClass& c = state_->classes[slot_bytes_];
  const size_t slab_index = state_->slab_of(c, data_);
  State::Slab& slab = c.slabs[slab_index];
  c.free.push_back({slab_index, data_});
  data_ = nullptr;
  if (--slab.n_used > 0 || slab_index + 1 != c.slabs.size()) return;
  // The last slab is empty: unmap it (earlier slabs stay, so indices held in
  // the free list remain valid).
  c.free.erase(std::remove_if(c.free.begin(), c.free.end(),
                              [&](const auto& entry) { return entry.first == slab_index; }),
               c.free.end());
  state_->mapped -= slab.memory.size();
  c.slabs.pop_back();
}

}  // namespace dancemoe
