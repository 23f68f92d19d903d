// The gfx950 timing model of one simulated launch (SimOptions::timing): each wave's modeled clock,
// its SIMD's issue pipes, a scoreboard of when each register's value is ready, the memory queues
// (TimingMemory), release/acquire costs and when a published flag becomes visible where it is
// waited for. The Sim's scheduler runs the wave whose clock is earliest (SimTimingScheduler.cpp).
#pragma once
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/Plan.h"
#include "runtime/sim/SimDevice.h"
#include "runtime/sim/SimProgram.h"
#include "runtime/sim/timing/TimingCost.h"
#include "runtime/sim/timing/TimingMemory.h"
#include "runtime/sim/timing/TimingUniform.h"

namespace monogen::runtime::timing {

class TimingModel {
 public:
  /// `ranks` x `blocks` CTAs of `wavesPerCta` waves, wave index (rank * blocks + cta) * wavesPerCta + wave.
  TimingModel(const TimingParams& params, const ir::Plan& plan, const SimProgram& prog, int ranks, int blocks,
              int wavesPerCta);

  const TimingCycles& cycles() const { return c_; }
  /// The cycle wave wi issues its next instruction at (or, deferred, the cycle it can start it).
  double time(uint32_t wi) const { return w_[wi].t > w_[wi].wake ? w_[wi].t : w_[wi].wake; }
  /// Cycles -> realtime ticks, and back.
  int64_t ticksAt(double cycles) const { return static_cast<int64_t>(cycles * c_.ticksPerCycle()); }
  double cyclesAt(int64_t ticks) const { return static_cast<double>(ticks) / c_.ticksPerCycle(); }
  /// Marks an allocation as a weight (streamed from HBM, never cached).
  void weight(const SimMemory::Allocation* a) { weights_.insert(a); }

  /// Before wave wi runs instruction `pc` (not a Wait it resumes): charges the operands' stalls, the
  /// pipe and the issue, drains for a release, a Fence, a Sleep; sets the result's ready time for
  /// an op of fixed latency. If it would start past `horizon`, charges nothing and returns false:
  /// the wave waits in the queue until then (so memory queues see requests in time order).
  bool issue(uint32_t wi, int32_t pc, double horizon);
  /// The issue cycle of wave wi's current instruction (Realtime reads it).
  double issuedAt(uint32_t wi) const { return w_[wi].start; }
  /// A global/peer/LDS load, store or atomic of wave wi's current instruction: `addrs` its active
  /// lanes' addresses (sorted for global/peer), `n` bytes each, `alloc` the first lane's allocation.
  enum class Access : uint8_t { Load, Store, Atomic };
  void memory(uint32_t wi, int32_t pc, Access kind, const uint64_t* addrs, int na, int n,
              const SimMemory::Allocation* alloc);
  /// Publish: lane pairs `keys` (an LDS pair's key names its CTA) issued now; `peerOwner` the pairs'
  /// rank (-1: LDS).
  void publish(uint32_t wi, uint64_t key, int owner, bool lds);
  /// Wait: lane pair `key` resolved (it carries the tag); a timed-out lane passes `deadlineTicks`.
  void waitLane(uint32_t wi, uint64_t key, bool lds);
  void waitTimedOut(uint32_t wi, int64_t deadlineTicks);
  /// Wait: every lane resolved; the wave resumes at its next poll after the latest flag was visible.
  void waitEnd(uint32_t wi, int32_t pc);
  /// Barrier: wave wi arrived (after issue()); releaseBarrier: the CTA's barrier opens.
  void arrive(uint32_t wi);
  void releaseBarrier(uint32_t firstWave, uint32_t waves);
  /// Wave wi exited: its end is its last issue or its last store's arrival.
  void exit(uint32_t wi);

  /// The modeled result: end time, the wave that ends last and its stages' split.
  SimTimedResult result(const ir::Plan& plan) const;

 private:
  struct Wave {
    double t = 0, start = 0;  // next issue; the current instruction's issue
    double wake = 0;          // a deferred instruction's start
    double loadsDone = 0, storesDone = 0, end = -1;
    double waitStart = 0, waitVisible = -1;
    bool atBarrier = false;
    int16_t lastStage = -1, curStage = -1;
    int32_t rank = 0, cta = 0, simd = 0;
  };
  enum Pipe : uint8_t { kSalu, kValu, kXdl, kVmem, kLds, kPipes };
  enum Split : uint8_t { kIssue, kMemory, kFlag, kBarrier, kFirst, kLast, kSplits };
  double& ready(uint32_t wi, uint32_t slot) { return ready_[static_cast<size_t>(wi) * slotsPerWave_ + (slot >> 6)]; }
  uint8_t& fromMemory(uint32_t wi, uint32_t slot) {
    return fromMem_[static_cast<size_t>(wi) * slotsPerWave_ + (slot >> 6)];
  }
  double& pipe(const Wave& w, Pipe p) {
    const TimingPlace pl = TimingPlace::of(w.rank, w.cta);
    return pipes_[((static_cast<size_t>(w.rank) * kXcds * kCusPerXcd + pl.cu) * kSimdsPerCu + w.simd) * kPipes + p];
  }
  double* split(uint32_t wi, int stage) {
    return &splits_[(static_cast<size_t>(wi) * (stages_ + 1) + (stage < 0 ? stages_ : stage)) * kSplits];
  }
  // Moves wave wi's clock to `to`, charging the gap to `kind` in the current stage.
  void advance(uint32_t wi, double to, Split kind);
  /// When a release at scope s may go: its write-back past the wave's stores, and gfx9's
  /// `s_waitcnt vmcnt(0)` past the wave's loads in flight too (one counter for both).
  double drained(const Wave& w, ir::MemScope s) const;
  double release(ir::MemScope s) const;
  double acquire(ir::MemScope s) const;
  double visibility(const TimingPlace& from, const TimingPlace& to) const;

  TimingCycles c_;
  const SimProgram& prog_;
  TimingMemory mem_;
  int blocks_, wavesPerCta_, stages_;
  size_t slotsPerWave_;
  std::vector<Wave> w_;
  std::vector<CostClass> class_;  // per flat instruction
  std::vector<int> constDiv_;     // per flat instruction: constantDivisions
  std::vector<bool> scalar_;      // per flat instruction: an integer op on wave-uniform values (SALU)
  // TimingParams::isa: per flat instruction, the attributed instructions its issue charges (use:
  // instead of its class cost) by pipe, and `all` its op's attributed instructions (the ISA count).
  // `every` issue each execution; a hoisted part (compiled at loop depth `depth`, below the op's
  // IR depth) issues at the op's first execution in each iteration of its depth-`depth` loop.
  struct IsaPart {
    int32_t s = 0, v = 0, t = 0, c = 0, all = 0;
    int32_t depth = 0, stamp = 0;  // hoisted: the loop depth it runs at, its index in stamps_
    IsaPart& operator+=(const IsaPart& o) {
      s += o.s, v += o.v, t += o.t, c += o.c, all += o.all;
      return *this;
    }
  };
  struct IsaCharge {
    bool use = false;
    IsaPart every;
    std::vector<IsaPart> hoisted;
  };
  std::vector<IsaCharge> isa_;
  int64_t isaInstructions_ = 0, isaUnowned_ = 0;
  // The flat program's loops: per instruction its IR loop depth, and the depth of the loop whose
  // iteration it starts (a for's check, a while's first condition op; else 0). Per wave: epochs_
  // counts the iterations started at each depth, stamps_ the epoch each hoisted part last issued in.
  std::vector<int32_t> irDepth_, loopStart_;
  int maxIrDepth_ = 0, hoistedParts_ = 0;
  std::vector<int64_t> epochs_, stamps_;
  // The ISA instructions wave wi's instruction `pc` issues now (the hoisted parts due marked issued
  // when `take`).
  IsaPart isaDue(uint32_t wi, int32_t pc, bool take);
  bool issueOp(uint32_t wi, int32_t pc, double horizon);
  bool issueIsa(uint32_t wi, int32_t pc, const SimInst& in, double opReady, bool mem, double horizon);
  std::vector<double> ready_;
  std::vector<uint8_t> fromMem_;
  std::vector<double> pipes_;
  std::vector<double> splits_;
  std::vector<double> barrierAt_;  // per CTA: the latest arrival
  struct Pub {
    double t;
    TimingPlace at;
  };
  std::unordered_map<uint64_t, Pub> pubs_;
  std::unordered_set<const SimMemory::Allocation*> weights_;
  int64_t instructions_ = 0;
};

}  // namespace monogen::runtime::timing
