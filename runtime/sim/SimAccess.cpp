// The Sim device's memory access: a lane's [addr, addr + n) resolved to host bytes (LDS or the
// SimMemory allocation holding it, the last one found tried first), checked for bounds and the
// alignment of atomics with messages naming the nearest allocation; and the byte counters.
#include "runtime/sim/SimLaunch.h"

#include <fmt/format.h>

#include <algorithm>

namespace monogen::runtime {

/// The bytes one wave's load asks of memory: the union of its lanes' [addr, addr + n) ranges (lanes
/// that read the same bytes, a uniform load's for one, are one request, as the memory system
/// coalesces them).
int64_t SimLaunch::coalescedBytes(uint64_t* addrs, int count, int n) {
  bool ascending = true;
  for (int i = 1; i < count && ascending; ++i) ascending = addrs[i] >= addrs[i - 1];
  if (!ascending) std::sort(addrs, addrs + count);
  int64_t total = 0;
  uint64_t end = 0;  // the covered union so far ends here
  for (int i = 0; i < count; ++i) {
    const uint64_t lo = addrs[i], hi = lo + static_cast<uint64_t>(n);
    if (i == 0 || lo >= end) total += n;
    else if (hi > end) total += static_cast<int64_t>(hi - end);
    end = i == 0 ? hi : std::max(end, hi);
  }
  return total;
}

uint8_t* SimLaunch::access(const SimWave& w, const SimInst& in, int lane, ir::AddrSpace space, uint64_t addr,
                           int n, bool atomic, SimMemory::Allocation** alloc) {
  if (atomic && (addr % static_cast<uint64_t>(n)) != 0) {
    const std::string near = space == ir::AddrSpace::Lds ? fmt::format("LDS of {} bytes", plan_.ldsBytes)
                                                         : mem_.nearest(addr);
    fail(w, in, lane, fmt::format("unaligned atomic access of {} bytes at {} {:#x}; nearest allocation: {}", n,
                                  ir::addrSpaceName(space), addr, near));
  }
  if (space == ir::AddrSpace::Lds) {
    if (addr > static_cast<uint64_t>(plan_.ldsBytes) || static_cast<uint64_t>(n) > static_cast<uint64_t>(plan_.ldsBytes) - addr)
      fail(w, in, lane, fmt::format("out-of-bounds access of {} bytes at LDS offset {:#x}; the CTA's LDS is {} bytes "
                                    "(nearest allocation: LDS of CTA {})", n, addr, plan_.ldsBytes, w.cta));
    if (alloc) *alloc = nullptr;
    return ctas_[w.ctaIndex].lds + addr;
  }
  SimMemory::Allocation* a = lastAlloc_;
  if (!a || addr < a->base || addr - a->base > static_cast<uint64_t>(a->bytes) ||
      static_cast<uint64_t>(n) > static_cast<uint64_t>(a->bytes) - (addr - a->base)) {
    a = mem_.find(addr, n);
    if (!a)
      fail(w, in, lane, fmt::format("out-of-bounds access of {} bytes at {} address {:#x}; nearest allocation: {}", n,
                                    ir::addrSpaceName(space), addr, mem_.nearest(addr)));
    lastAlloc_ = a;
  }
  if (alloc) *alloc = a;
  return a->bytesAt(addr);
}

SimLaneAccess SimLaunch::laneAccess(const SimWave& w, const SimInst& in, int lane, uint32_t slot, const ir::Type& t,
                                    int n, bool atomic) {
  SimLaneAccess a{ptrAt(w, slot, t, lane), nullptr, nullptr};
  a.p = access(w, in, lane, t.space, a.addr, n, atomic, &a.alloc);
  return a;
}

void SimLaunch::countBytes(const SimInst& in, ir::AddrSpace space, int64_t loaded, int64_t stored) {
  if (space == ir::AddrSpace::Lds) return;
  stats_.globalBytesLoaded += loaded;
  stats_.globalBytesStored += stored;
  stageBytes_[in.stage >= 0 ? in.stage : static_cast<int>(plan_.stages.size())] += loaded;
}

}  // namespace monogen::runtime
