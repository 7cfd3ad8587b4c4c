// The grouped expert kernels' tile list (kernels/cuda/moe_tiles.h), the code
// the grouping kernel and the CUDA expert engine both run, checked on the
// host: every pair of every group is in exactly one tile of its group, tiles
// start at multiples of kExpertTileRows within their group, empty groups get
// none, and the count stays within max_expert_tiles. Needs no GPU.
#include "kernels/cuda/moe_tiles.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <vector>

namespace dancemoe::kernels::cuda {
namespace {

// Offsets of groups with the given pair counts.
std::vector<int32_t> offsets_of(const std::vector<int32_t>& counts) {
  std::vector<int32_t> offsets(counts.size() + 1, 0);
  for (size_t g = 0; g < counts.size(); ++g) offsets[g + 1] = offsets[g] + counts[g];
  return offsets;
}

void check_tiles(const std::vector<int32_t>& counts) {
  const std::vector<int32_t> offsets = offsets_of(counts);
  const int64_t n_groups = static_cast<int64_t>(counts.size());
  const int64_t n_pairs = offsets.back();
  const int64_t bound = max_expert_tiles(n_pairs, n_groups);
  // One spare entry past the bound, poisoned, to see that it stays untouched.
  std::vector<int32_t> tile_group(static_cast<size_t>(bound) + 1, -7);
  std::vector<int32_t> tile_row0(static_cast<size_t>(bound) + 1, -7);
  const int32_t n_tiles =
      write_expert_tiles(offsets.data(), n_groups, tile_group.data(), tile_row0.data());
  REQUIRE(n_tiles <= bound);
  CHECK(tile_group[static_cast<size_t>(bound)] == -7);
  int64_t want_tiles = 0;
  for (int32_t c : counts) want_tiles += expert_tiles_for(c);
  CHECK(n_tiles == want_tiles);
  // Each pair is covered by exactly one tile, of its own group.
  std::vector<int> covered(static_cast<size_t>(n_pairs), 0);
  for (int32_t t = 0; t < n_tiles; ++t) {
    const int32_t g = tile_group[static_cast<size_t>(t)];
    const int32_t r0 = tile_row0[static_cast<size_t>(t)];
    REQUIRE(g >= 0);
    REQUIRE(g < n_groups);
    REQUIRE(r0 >= offsets[static_cast<size_t>(g)]);
    REQUIRE(r0 < offsets[static_cast<size_t>(g) + 1]);
    CHECK((r0 - offsets[static_cast<size_t>(g)]) % kExpertTileRows == 0);
    if (t > 0) CHECK(tile_group[static_cast<size_t>(t) - 1] <= g);  // in group order
    const int32_t end = std::min<int32_t>(r0 + static_cast<int32_t>(kExpertTileRows),
                                          offsets[static_cast<size_t>(g) + 1]);
    for (int32_t r = r0; r < end; ++r) ++covered[static_cast<size_t>(r)];
  }
  for (int64_t p = 0; p < n_pairs; ++p) {
    CAPTURE(p);
    REQUIRE(covered[static_cast<size_t>(p)] == 1);
  }
}

TEST_CASE("moe tiles: edge cases -- no pairs, empty groups, exact and partial tiles") {
  check_tiles({});
  check_tiles({0});
  check_tiles({0, 0, 0});
  check_tiles({1});
  check_tiles({64});
  check_tiles({65});
  check_tiles({0, 64, 0, 63, 128, 1, 0});
  CHECK(expert_tiles_for(0) == 0);
  CHECK(expert_tiles_for(64) == 1);
  CHECK(expert_tiles_for(65) == 2);
}

TEST_CASE("moe tiles: random routings stay within the bound and cover every pair once") {
  std::mt19937 rng(2024);
  for (int trial = 0; trial < 200; ++trial) {
    const int n_groups = 1 + static_cast<int>(rng() % 160);
    const int skew = static_cast<int>(rng() % 3);
    std::vector<int32_t> counts(static_cast<size_t>(n_groups));
    for (int32_t& c : counts) {
      // Mostly small and often empty groups (decode), sometimes big ones (prefill).
      const uint32_t r = rng();
      c = skew == 0 ? static_cast<int32_t>(r % 4)
                    : static_cast<int32_t>(r % (skew == 1 ? 70 : 700));
      if (r % 5 == 0) c = 0;
    }
    CAPTURE(trial);
    check_tiles(counts);
  }
}

}  // namespace
}  // namespace dancemoe::kernels::cuda
