// The interpreter's memory class: Load, Store, AtomicRmw, CmpXchg and Fence, each lane through
// laneAccess (checks), its SimRaceScope (the race detector) and countBytes (the byte counters).
#include <fmt/format.h>

#include <algorithm>
#include <bit>

#include "runtime/sim/SimLanes.h"
#include "runtime/sim/SimLaunch.h"
#include "runtime/sim/SimShared.h"
#include "runtime/sim/timing/TimingModel.h"

namespace monogen::runtime {

using namespace simlanes;
using ir::OpCode;
using ir::Scalar;

namespace {

/// AtomicRmw's new value from the old one and the operand v (n * 8 bits; f32 adds as floats).
uint64_t rmwApply(ir::RmwOp op, bool isF, int bits, uint64_t old, uint64_t v) {
  if (isF)
    return std::bit_cast<uint32_t>(std::bit_cast<float>(static_cast<uint32_t>(old)) +
                                   std::bit_cast<float>(static_cast<uint32_t>(v)));
  switch (op) {
    case ir::RmwOp::Add: return old + v;
    case ir::RmwOp::Or: return old | v;
    case ir::RmwOp::And: return old & v;
    case ir::RmwOp::Xor: return old ^ v;
    case ir::RmwOp::Max: return sx(old, bits) >= sx(v, bits) ? old : v;
    case ir::RmwOp::Min: return sx(old, bits) <= sx(v, bits) ? old : v;
    case ir::RmwOp::UMax: return old >= v ? old : v;
    case ir::RmwOp::UMin: return old <= v ? old : v;
    case ir::RmwOp::Xchg: return v;
  }
  return 0;
}

}  // namespace

SimLaunch::Status SimLaunch::visitMemory(SimWave& w, const SimInst& in) {
  switch (static_cast<OpCode>(in.code)) {
    case OpCode::Load: execLoad(w, in); break;
    case OpCode::Store: execStore(w, in); break;
    case OpCode::AtomicRmw: execAtomicRmw(w, in); break;
    case OpCode::CmpXchg: execCmpXchg(w, in); break;
    case OpCode::Fence:  // sequentially consistent already (docs/sim.md); the race detector keeps its edges
      if (races_) [[unlikely]] races_->fence(waveIndex(w), w.pc, in.op->attrs.order, in.op->attrs.scope);
      break;
    default: cannotRun(w, in);
  }
  ++w.pc;
  return kContinue;
}

void SimLaunch::execLoad(SimWave& w, const SimInst& in) {
  uint8_t* const fr = w.frame;
  const int n = in.rt.bytes();
  const bool atomic = in.op->attrs.order != ir::MemOrder::Plain;
  SimRaceScope races = raceScope(w, *in.op);
  uint64_t addrs[64];
  int na = 0;
  const SimMemory::Allocation* first = nullptr;
  FOR_LANES(w.exec, l) {
    const SimLaneAccess a = laneAccess(w, in, l, in.opd[0], in.t0, n, atomic);
    if (!na) first = a.alloc;
    addrs[na++] = a.addr;
    if (a.shared()) [[unlikely]]
      simshared::load(fr + in.res + n * l, a.p, n, atomic ? std::memory_order_acquire : std::memory_order_relaxed);
    else
      copyN(fr + in.res + n * l, a.p, n);
    races.read(a.alloc, a.addr, n, atomic);
    if (in.rt.scalar == Scalar::I1)
      for (int e = 0; e < in.rt.lanes; ++e) fr[in.res + n * l + e] &= 1;
  }
  if (in.t0.space != ir::AddrSpace::Lds) countBytes(in, in.t0.space, coalescedBytes(addrs, na, n), 0);
  if (timing_) [[unlikely]]
    timing_->memory(waveIndex(w), w.pc, timing::TimingModel::Access::Load, addrs, na, n, first);
}

void SimLaunch::timeAccess(const SimWave& w, const SimInst& in, int access, uint64_t* addrs, int na,
                           int n, const SimMemory::Allocation* first) {
  if (in.t0.space != ir::AddrSpace::Lds) std::sort(addrs, addrs + na);
  timing_->memory(waveIndex(w), w.pc, static_cast<timing::TimingModel::Access>(access), addrs, na, n, first);
}

void SimLaunch::execStore(SimWave& w, const SimInst& in) {
  const uint8_t* const fr = w.frame;
  const int n = in.t1.bytes();
  const bool atomic = in.op->attrs.order != ir::MemOrder::Plain;
  SimRaceScope races = raceScope(w, *in.op);
  uint64_t addrs[64];
  int na = 0;
  const SimMemory::Allocation* first = nullptr;
  FOR_LANES(w.exec, l) {
    const SimLaneAccess a = laneAccess(w, in, l, in.opd[0], in.t0, n, atomic);
    if (!na) first = a.alloc;
    addrs[na++] = a.addr;
    if (a.shared()) [[unlikely]]
      simshared::store(a.p, fr + in.opd[1] + n * l, n, atomic ? std::memory_order_release : std::memory_order_relaxed);
    else
      copyN(a.p, fr + in.opd[1] + n * l, n);
    wrote(a, n);
    races.write(a.alloc, a.addr, n, atomic);
  }
  countBytes(in, in.t0.space, 0, static_cast<int64_t>(n) * std::popcount(w.exec));
  if (timing_) [[unlikely]] timeAccess(w, in, static_cast<int>(timing::TimingModel::Access::Store), addrs, na, n, first);
}

void SimLaunch::execAtomicRmw(SimWave& w, const SimInst& in) {
  uint8_t* const fr = w.frame;
  const int n = in.rt.bytes();
  const bool isF = in.rt.scalar == Scalar::F32;
  const ir::RmwOp rop = in.op->attrs.rmw;
  SimRaceScope races = raceScope(w, *in.op);
  uint64_t addrs[64];
  int na = 0;
  const SimMemory::Allocation* first = nullptr;
  FOR_LANES(w.exec, l) {
    const SimLaneAccess a = laneAccess(w, in, l, in.opd[0], in.t0, n, true);
    if (!na) first = a.alloc;
    addrs[na++] = a.addr;
    const uint64_t v = ldN(fr + in.opd[1] + n * l, n);
    const auto apply = [&](uint64_t old) { return rmwApply(rop, isF, n * 8, old, v); };
    uint64_t old;
    if (a.shared()) [[unlikely]] {
      if (n != 4 && n != 8) fail(w, in, l, fmt::format("a {}-byte atomic on shared memory (4 or 8 only)", n));
      old = simshared::rmw(a.p, n, apply);
    } else {
      old = ldN(a.p, n);
      stN(a.p, n, apply(old));
    }
    stN(fr + in.res + n * l, n, old);
    wrote(a, n);
    races.readModifyWrite(a.alloc, a.addr, n, true);
  }
  const int64_t b = static_cast<int64_t>(n) * std::popcount(w.exec);
  countBytes(in, in.t0.space, b, b);
  if (timing_) [[unlikely]] timeAccess(w, in, static_cast<int>(timing::TimingModel::Access::Atomic), addrs, na, n, first);
}

void SimLaunch::execCmpXchg(SimWave& w, const SimInst& in) {
  uint8_t* const fr = w.frame;
  const int n = in.rt.bytes();
  SimRaceScope races = raceScope(w, *in.op);
  uint64_t addrs[64];
  int na = 0;
  const SimMemory::Allocation* first = nullptr;
  FOR_LANES(w.exec, l) {
    const SimLaneAccess a = laneAccess(w, in, l, in.opd[0], in.t0, n, true);
    if (!na) first = a.alloc;
    addrs[na++] = a.addr;
    const uint64_t expected = ldN(fr + in.opd[1] + n * l, n), desired = ldN(fr + in.opd[2] + n * l, n);
    if (a.shared() && n != 4 && n != 8) fail(w, in, l, fmt::format("a {}-byte cmpxchg on shared memory (4 or 8 only)", n));
    const uint64_t old = a.shared() ? simshared::cas(a.p, n, expected, desired) : ldN(a.p, n);
    const bool swapped = old == expected;
    if (swapped) {
      if (!a.shared()) stN(a.p, n, desired);
      wrote(a, n);
    }
    stN(fr + in.res + n * l, n, old);
    races.readModifyWrite(a.alloc, a.addr, n, swapped);
  }
  const int64_t b = static_cast<int64_t>(n) * std::popcount(w.exec);
  countBytes(in, in.t0.space, b, b);
  if (timing_) [[unlikely]] timeAccess(w, in, static_cast<int>(timing::TimingModel::Access::Atomic), addrs, na, n, first);
}

}  // namespace monogen::runtime
