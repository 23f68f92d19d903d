// SimMemory: the Sim device's one 64-bit address space of named, poisoned allocations (and the
// poison LDS starts with). Consecutive allocations are separated by an unmapped guard gap, so an
// access just past one end never lands in a neighbour and is reported as out of bounds.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "ir/Error.h"
#include "runtime/sim/SimDevice.h"
#include "runtime/sim/SimRng.h"

namespace monogen::runtime {

namespace {
constexpr uint64_t kGuardGap = 64 * 1024;
constexpr int kPoisonWords = 4096;  // the pattern's period: 16 KiB
}  // namespace

void poisonFill(uint8_t* p, int64_t bytes, uint64_t seed) {
  if (bytes <= 0) return;
  uint32_t tile[kPoisonWords];
  uint64_t st = seed;
  for (uint32_t& w : tile) {
    const uint64_t h = simSplitMix64(st);
    const uint32_t r = static_cast<uint32_t>(h >> 32), sign = (r & 1u) << 31;
    switch (h & 7) {
      case 0: w = sign | 0x7fc00000u | (r >> 10); break;                     // f32 quiet NaN
      case 1: w = sign | 0x7f800000u | ((r >> 10) & 0x1fffffu) | 1u; break;  // f32 signalling NaN
      case 2: w = 0x7fc07fc0u | ((r >> 8) & 0x3f003fu) | sign; break;        // two bf16 quiet NaNs
      case 3: w = 0x7f817f81u | ((r >> 8) & 0x1e001eu) | sign; break;        // two bf16 signalling NaNs
      case 4: w = sign | ((r & 2) ? 0x7f800000u : 0x7f7fffffu); break;       // +-Inf, +-FLT_MAX
      case 5: w = r; break;                                                   // garbage
      case 6: w = 0xffffffffu; break;                                         // -1, a NaN
      default: w = static_cast<uint32_t>(-1 - static_cast<int32_t>(r & 0xff)); break;  // -256 .. -1
    }
  }
  // Start the period at a seeded word, so two fills with different seeds differ everywhere.
  const size_t start = static_cast<size_t>(splitMix64Mix(seed) % kPoisonWords) * 4;
  const auto* src = reinterpret_cast<const uint8_t*>(tile);
  size_t done = 0, from = start;
  const size_t n = static_cast<size_t>(bytes);
  while (done < n) {
    const size_t k = std::min(n - done, sizeof tile - from);
    std::memcpy(p + done, src + from, k);
    done += k;
    from = 0;
  }
}

SimMemory::SimMemory() = default;
SimMemory::~SimMemory() = default;

uint64_t SimMemory::alloc(int64_t bytes, int rank, const std::string& name, int64_t align) {
  if (bytes < 0) throw SimError("SimMemory::alloc", fmt::format("'{}': negative size {}", name, bytes));
  if (align <= 0 || (align & (align - 1)) != 0)
    throw SimError("SimMemory::alloc", fmt::format("'{}': alignment {} is not a power of two", name, align));
  const uint64_t a = static_cast<uint64_t>(align);
  const uint64_t base = (next_ + a - 1) & ~(a - 1);
  Allocation& al = allocs_[base];
  al.base = base;
  al.bytes = bytes;
  al.rank = rank;
  al.name = name;
  al.data.resize(static_cast<size_t>(bytes));
  poisonFill(al.data.data(), bytes, splitMix64Mix(base ^ 0x9015011ull));
  next_ = base + static_cast<uint64_t>(bytes) + kGuardGap;
  return base;
}

SimMemory::Allocation* SimMemory::find(uint64_t addr, int64_t bytes) {
  auto it = allocs_.upper_bound(addr);
  if (it == allocs_.begin()) return nullptr;
  --it;
  Allocation& a = it->second;
  const uint64_t off = addr - a.base;  // addr >= base here
  if (bytes < 0 || off > static_cast<uint64_t>(a.bytes) || static_cast<uint64_t>(bytes) > static_cast<uint64_t>(a.bytes) - off)
    return nullptr;
  return &a;
}

uint8_t* SimMemory::host(uint64_t addr, int64_t bytes) {
  Allocation* a = find(addr, bytes);
  if (!a)
    throw SimError("SimMemory::host",
                   fmt::format("[{:#x}, +{}) is not inside one allocation; nearest: {}", addr, bytes, nearest(addr)));
  return a->bytesAt(addr);
}

void SimMemory::attachShared(uint64_t base, uint8_t* host, int64_t bytes, int rank, const std::string& name) {
  if (bytes <= 0 || !host)
    throw SimError("SimMemory::attachShared", fmt::format("'{}': {} bytes at host {}", name, bytes, fmt::ptr(host)));
  auto after = allocs_.lower_bound(base);
  if (after != allocs_.end() && after->first < base + static_cast<uint64_t>(bytes) + kGuardGap)
    throw SimError("SimMemory::attachShared", fmt::format("'{}' at [{:#x}, +{}) overlaps {}", name, base, bytes,
                                                          nearest(after->first)));
  if (after != allocs_.begin()) {
    const Allocation& b = std::prev(after)->second;
    if (b.base + static_cast<uint64_t>(b.bytes) + kGuardGap > base)
      throw SimError("SimMemory::attachShared",
                     fmt::format("'{}' at [{:#x}, +{}) overlaps {}", name, base, bytes, nearest(b.base)));
  }
  Allocation& al = allocs_[base];
  al.base = base;
  al.bytes = bytes;
  al.rank = rank;
  al.name = name;
  al.shared = host;
}

std::string SimMemory::describe(uint64_t addr) const {
  auto it = allocs_.upper_bound(addr);
  if (it == allocs_.begin()) return "?";
  --it;
  if (addr - it->second.base < static_cast<uint64_t>(it->second.bytes)) return it->second.name;
  return "?";
}

std::string SimMemory::nearest(uint64_t addr) const {
  if (allocs_.empty()) return "no allocations";
  auto after = allocs_.upper_bound(addr);
  const Allocation* best = nullptr;
  uint64_t bestDist = ~0ull;
  std::string rel;
  if (after != allocs_.begin()) {
    const Allocation& a = std::prev(after)->second;
    const uint64_t end = a.base + static_cast<uint64_t>(a.bytes);
    if (addr < end) {
      best = &a;
      bestDist = 0;
      rel = fmt::format("addr is at offset {}", addr - a.base);
    } else {
      best = &a;
      bestDist = addr - end;
      rel = fmt::format("addr is {} bytes past its end", addr - end);
    }
  }
  if (after != allocs_.end() && bestDist != 0) {
    const Allocation& a = after->second;
    if (a.base - addr < bestDist) {
      best = &a;
      rel = fmt::format("addr is {} bytes before its start", a.base - addr);
    }
  }
  return fmt::format("'{}' (rank {}, {} bytes at {:#x}), {}", best->name, best->rank, best->bytes, best->base, rel);
}

}  // namespace monogen::runtime
