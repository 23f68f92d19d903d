// SimMemory: the Sim device's one 64-bit address space of named, zeroed allocations. Consecutive
// allocations are separated by an unmapped guard gap, so an access just past one end never lands
// in a neighbour and is reported as out of bounds.
#include <fmt/format.h>

#include "ir/Error.h"
#include "runtime/sim/SimDevice.h"

namespace monogen::runtime {

namespace {
constexpr uint64_t kGuardGap = 64 * 1024;
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
  al.data.assign(static_cast<size_t>(bytes), 0);
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
