#include "common/base/mapped_file.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "tests/support/paths.h"

namespace dancemoe {
namespace {

// n bytes whose value at i is a hash of i, written to `path`.
std::vector<uint8_t> write_pattern(const std::filesystem::path& path, size_t n) {
  std::vector<uint8_t> bytes(n);
  for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<uint8_t>((i * 2654435761u) >> 13);
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(n));
  return bytes;
}

bool same(const MappedFile& map, const std::vector<uint8_t>& bytes) {
  return map.size() == bytes.size() && std::equal(bytes.begin(), bytes.end(), map.data());
}

// Resident bytes of the mapping that starts at `start` (/proc/self/smaps Rss).
uint64_t mapping_rss(const void* start) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool ours = false;
  while (std::getline(smaps, line)) {
    uintptr_t lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 &&
        line.find(' ') != std::string::npos && line.find('-') < line.find(' ')) {
      ours = lo == reinterpret_cast<uintptr_t>(start);
      continue;
    }
    uint64_t kb = 0;
    if (ours && std::sscanf(line.c_str(), "Rss: %lu kB", &kb) == 1) return kb << 10;
  }
  return 0;
}

}  // namespace

TEST_CASE(
    "mapped file: a big file maps 2 MiB-aligned and keeps its bytes through the huge-page "
    "request") {
  testing::TempDir dir("mapped_file");
  // Not a multiple of the page size: the tail past the last whole page too.
  const size_t n = (size_t{9} << 20) + 12345;
  const std::vector<uint8_t> bytes = write_pattern(dir.path() / "big.bin", n);
  Result<MappedFile> map = MappedFile::open(dir.path() / "big.bin");
  REQUIRE(map.is_ok());
  CHECK(reinterpret_cast<uintptr_t>(map->data()) % (uintptr_t{2} << 20) == 0);
  CHECK(same(*map, bytes));
  // Whatever the kernel allows here (THP off, a filesystem without large
  // folios, pages cached huge already), the bytes read are the file's: a
  // dropped page cache is read back from disk.
  const MappedFile::HugePages outcome = map->prefer_huge_pages();
  CHECK(outcome != MappedFile::HugePages::kTooSmall);
  CHECK(same(*map, bytes));
  if (outcome == MappedFile::HugePages::kReread || outcome == MappedFile::HugePages::kAlreadyHuge) {
    CHECK(map->huge_mapped_bytes() > 0);
  }
  MESSAGE("huge-page outcome " << static_cast<int>(outcome) << ", " << map->huge_mapped_bytes()
                               << " bytes mapped huge");
  // A second mapping of the same file shares the page cache, now huge where it could be.
  Result<MappedFile> again = MappedFile::open(dir.path() / "big.bin");
  REQUIRE(again.is_ok());
  CHECK(same(*again, bytes));
}

TEST_CASE("mapped file: bytes copied out leave the process's memory, and read back the same") {
  testing::TempDir dir("mapped_file");
  const size_t n = size_t{8} << 20;
  const std::vector<uint8_t> bytes = write_pattern(dir.path() / "copied.bin", n);
  Result<MappedFile> map = MappedFile::open(dir.path() / "copied.bin");
  REQUIRE(map.is_ok());
  CHECK(same(*map, bytes));  // every page read: mapped
  const uint64_t before = mapping_rss(map->data());
  CHECK(before >= n - (size_t{64} << 10));
  // 100 bytes from an odd offset in the third MiB: the whole 2-4 MiB window goes, the rest stays.
  map->drop_pages_around((size_t{2} << 20) + 4097, 100);
  const uint64_t after_window = mapping_rss(map->data());
  MESSAGE("mapping RSS " << before << " -> " << after_window << " bytes");
  CHECK(after_window <= before - (size_t{2} << 20));
  CHECK(after_window >= before - (size_t{2} << 20) - (size_t{64} << 10));
  // Across a window boundary: both windows around it; and the last window, to the end of the file.
  map->drop_pages_around((size_t{5} << 20) + 100, size_t{1} << 20);
  map->drop_pages_around(n - 10, 10);
  const uint64_t after = mapping_rss(map->data());
  CHECK(after <= before - (size_t{6} << 20));
  CHECK(same(*map, bytes));  // mapped again from the page cache on reading
  const uint64_t reread = mapping_rss(map->data());
  map->drop_pages_around(n - 10, 11);  // past the end: nothing
  map->drop_pages_around(0, 0);        // nothing
  CHECK(mapping_rss(map->data()) == reread);
}

TEST_CASE("mapped file: small and empty files ask for nothing") {
  testing::TempDir dir("mapped_file");
  const std::vector<uint8_t> bytes = write_pattern(dir.path() / "small.bin", 3 << 20);
  Result<MappedFile> map = MappedFile::open(dir.path() / "small.bin");
  REQUIRE(map.is_ok());
  CHECK(map->prefer_huge_pages() == MappedFile::HugePages::kTooSmall);
  CHECK(same(*map, bytes));
  std::ofstream(dir.path() / "empty.bin").close();
  Result<MappedFile> empty = MappedFile::open(dir.path() / "empty.bin");
  REQUIRE(empty.is_ok());
  CHECK(empty->size() == 0);
  CHECK(empty->prefer_huge_pages() == MappedFile::HugePages::kTooSmall);
  CHECK(empty->huge_mapped_bytes() == 0);
}

}  // namespace dancemoe
