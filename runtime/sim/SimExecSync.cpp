// The interpreter's sync class: the CTA barrier, (value, tag) pairs (Publish, Wait with its bound
// and error word), Sleep and the realtime clock; the ops that can block a wave.
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

namespace {

inline int64_t satAdd(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return b > 0 ? INT64_MAX : INT64_MIN;
  return r;
}

}  // namespace

SimLaunch::Status SimLaunch::visitSync(SimWave& w, const SimInst& in) {
  switch (static_cast<OpCode>(in.code)) {
    case OpCode::Barrier: {
      ++w.pc;
      SimCta& c = ctas_[w.ctaIndex];
      ++c.arrived;
      if (races_) [[unlikely]] races_->arrive(waveIndex(w));
      if (timing_) [[unlikely]] timing_->arrive(waveIndex(w));
      if (c.arrived >= c.live) {
        releaseBarrier(c);
        return kContinue;
      }
      block(w, SimWave::Barrier);
      return kBlocked;
    }
    case OpCode::Publish: execPublish(w, in); break;
    case OpCode::Wait: return execWait(w, in);
    case OpCode::Realtime: {
      // timed: the modeled clock at the op's issue, in realtime ticks
      const int64_t t = opts_.clockStart + (timing_ ? timing_->ticksAt(timing_->issuedAt(waveIndex(w))) : now_);
      FOR_LANES(w.exec, l) st<int64_t>(w.frame + in.res + 8 * l, t);
      break;
    }
    case OpCode::Sleep:
      ++w.pc;
      if (timing_) return kContinue;  // the model advanced the wave's clock (TimingModel::issue)
      block(w, SimWave::Sleep);
      deadlines_.push({now_ + std::max<int64_t>(1, in.op->attrs.imm), waveIndex(w), w.blockSeq});
      return kBlocked;
    default: cannotRun(w, in);
  }
  ++w.pc;
  return kContinue;
}

void SimLaunch::execPublish(SimWave& w, const SimInst& in) {
  const uint8_t* const fr = w.frame;
  const ir::AddrSpace sp = in.t0.space;
  SimRaceScope races = raceScope(w, *in.op);
  FOR_LANES(w.exec, l) {
    const SimLaneAccess a = laneAccess(w, in, l, in.opd[0], in.t0, 8, true);
    const uint64_t key = sp == ir::AddrSpace::Lds ? ((1ull << 63) | (static_cast<uint64_t>(w.ctaIndex) << 32) | a.addr) : a.addr;
    auto [it, fresh] = published_.try_emplace(key, PubRecord{w.rank, w.cta, w.wave, l, in.stage});
    if (!fresh) {
      const PubRecord& r = it->second;
      fail(w, in, l, fmt::format("pair published twice in one launch: {} {:#x} ({}) was already published by "
                                 "stage '{}', rank {} CTA {} wave {} lane {}",
                                 ir::addrSpaceName(sp), a.addr, a.alloc ? a.alloc->name : std::string("LDS"),
                                 stageName(r.stage), r.rank, r.cta, r.wave, r.lane));
    }
    const int32_t value = ld<int32_t>(fr + in.opd[1] + 4 * l), tag = ld<int32_t>(fr + in.opd[2] + 4 * l);
    if (a.shared()) [[unlikely]] {  // one 8-byte release store: the data before the pair
      simshared::storePair(a.p, value, tag);
    } else {
      st<int32_t>(a.p, value);
      st<int32_t>(a.p + 4, tag);
    }
    wrote(a, 8);
    races.write(a.alloc, a.addr, 8, true);
    if (timing_) [[unlikely]] timing_->publish(waveIndex(w), key, a.alloc ? a.alloc->rank : w.rank, !a.alloc);
  }
  countBytes(in, sp, 0, 8 * std::popcount(w.exec));
}

SimLaunch::Status SimLaunch::execWait(SimWave& w, const SimInst& in) {
  if (!w.inWait) {
    w.inWait = true;
    w.waitStart = now_;
    w.waitDone = 0;
  }
  // A realtime poll's re-check keeps the wave's block (its watchers and deadline) unless a lane
  // resolves: re-blocking on every poll would grow the watchers and deadlines without bound.
  const bool recheck = w.recheck;
  w.recheck = false;
  uint8_t* const fr = w.frame;
  const uint64_t exec = w.exec;
  SimRaceScope races = raceScope(w, *in.op);
  uint64_t resolved = 0;
  int64_t next = INT64_MAX;
  FOR_LANES(exec & ~w.waitDone, l) {
    const SimLaneAccess a = laneAccess(w, in, l, in.opd[0], in.t0, 8, true);
    const uint64_t pair = a.shared() ? simshared::loadPair(a.p) : ld<uint64_t>(a.p);  // one 8-byte acquire load
    const auto value = static_cast<int32_t>(static_cast<uint32_t>(pair));
    const auto tag = static_cast<int32_t>(static_cast<uint32_t>(pair >> 32));
    const int64_t deadline = satAdd(w.waitStart, ld<int64_t>(fr + in.opd[2] + 8 * l));
    const bool arrived = tag == ld<int32_t>(fr + in.opd[1] + 4 * l);
    if (arrived || now_ >= deadline) {  // a timed-out wait reads the stale pair: that is its protocol
      if (!arrived) waitTimeout(w, in, l);
      if (timing_) [[unlikely]] {
        const bool lds = in.t0.space == ir::AddrSpace::Lds;
        if (arrived)
          timing_->waitLane(waveIndex(w), lds ? ((1ull << 63) | (static_cast<uint64_t>(w.ctaIndex) << 32) | a.addr) : a.addr, lds);
        else
          timing_->waitTimedOut(waveIndex(w), deadline);
      }
      st<int32_t>(fr + in.res + 4 * l, value);
      resolved |= 1ull << l;
      races.read(a.alloc, a.addr, 8, true, SimRaces::Use::WaitPair);
      continue;
    }
    next = std::min(next, deadline);
    if (a.alloc && !recheck) watch(a.alloc, a.addr, waveIndex(w), w.blockSeq + 1);
  }
  countBytes(in, in.t0.space, 8 * static_cast<int64_t>(std::popcount(resolved)), 0);
  w.waitDone |= resolved;
  if ((exec & ~w.waitDone) == 0) {
    w.inWait = false;
    if (timing_) [[unlikely]] timing_->waitEnd(waveIndex(w), w.pc);
    ++w.pc;
    return kContinue;
  }
  if (recheck) {
    w.state = SimWave::Wait;
    removeRunnable(waveIndex(w));
    if (resolved && next != INT64_MAX) deadlines_.push({next, waveIndex(w), w.blockSeq});  // the earliest went
    return kBlocked;
  }
  block(w, SimWave::Wait);  // blockSeq becomes the one the watchers above recorded
  // A bound that saturates (INT64_MAX) is "forever": no deadline, so it can deadlock.
  if (next != INT64_MAX) deadlines_.push({next, waveIndex(w), w.blockSeq});
  return kBlocked;
}

void SimLaunch::waitTimeout(SimWave& w, const SimInst& in, int l) {
  const ir::Type et = plan_.kernel.typeOf(in.op->operands[3]);
  const SimLaneAccess ew = laneAccess(w, in, l, in.opd[3], et, 4, true);       // CAS 0 -> code
  uint8_t* ew1 = access(w, in, l, et.space, ew.addr + 4, 4, true, nullptr);  // atomic add 1
  if (ld<int32_t>(ew.p) == 0) st<int32_t>(ew.p, ld<int32_t>(w.frame + in.opd[4] + 4 * l));
  st<uint32_t>(ew1, ld<uint32_t>(ew1) + 1);
  ++stats_.waitTimeouts;
  if (ew.alloc && ew.alloc->watched) wakeWatchers(ew.alloc, ew.addr, 8);
}

}  // namespace monogen::runtime
