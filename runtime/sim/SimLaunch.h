// SimLaunch: one simulated launch, every CTA of every rank as 64-lane waves under a seeded
// scheduler (SimScheduler.cpp), with memory access (SimAccess.cpp) and the interpreter
// (SimInterpreter.cpp, SimExec<Class>.cpp). Semantics and memory ordering: docs/sim.md.
#pragma once
#include <cstdint>
#include <cstring>
#include <memory>
#include <queue>
#include <unordered_map>
#include <vector>

#include "runtime/sim/SimDevice.h"
#include "runtime/sim/SimProgram.h"
#include "runtime/sim/SimRaces.h"
#include "runtime/sim/SimRng.h"

namespace monogen::runtime {

namespace timing {
class TimingModel;
}

/// One wave's state: pc, exec mask, the frame (registers, variables, mask stack) and what it is
/// blocked on. A wave can yield at any blocking op and resume there.
struct SimWave {
  enum State : uint8_t { Ready, Barrier, Wait, Sleep, Exited };
  uint8_t* frame = nullptr;
  uint64_t exec = 0;
  int32_t pc = 0;
  State state = Ready;
  bool inWait = false;       // a Wait op has started and not finished
  bool recheck = false;      // made runnable by a realtime poll only: a re-check that resolves nothing keeps its block
  int32_t rank = 0, cta = 0, wave = 0;
  uint32_t ctaIndex = 0;     // rank * blocks + cta
  uint32_t blockSeq = 0;     // bumped on every block, to tell stale wake-ups
  int32_t runIdx = -1;       // position in the runnable list, -1 if not there
  int64_t waitStart = 0;     // tick the current Wait started
  uint64_t waitDone = 0;     // lanes of the current Wait already resolved
};

/// One CTA: its LDS and its barrier.
struct SimCta {
  uint8_t* lds = nullptr;
  uint32_t firstWave = 0, waves = 0;
  int32_t live = 0;     // waves that have not exited
  int32_t arrived = 0;  // waves blocked at the barrier
};

/// One lane's access: its address, host bytes and allocation (null for LDS).
struct SimLaneAccess {
  uint64_t addr;
  uint8_t* p;
  SimMemory::Allocation* alloc;
  bool shared() const { return alloc && alloc->shared; }  // another process's memory (SimShared.h)
};

/// The race detector's bookkeeping for one op's lane accesses, nothing when races are off. Its
/// end ends the op's release (SimRaces::endRelease).
class SimRaceScope {
 public:
  SimRaceScope(SimRaces* races, uint32_t wave, int32_t pc, const ir::Attrs& attrs)
      : races_(races), wave_(wave), pc_(pc), attrs_(attrs) {}
  ~SimRaceScope() {
    if (races_) [[unlikely]] races_->endRelease(wave_);
  }
  SimRaceScope(const SimRaceScope&) = delete;
  SimRaceScope& operator=(const SimRaceScope&) = delete;

  /// A read (atomic: and its acquire) of [addr, addr + n).
  void read(const SimMemory::Allocation* alloc, uint64_t addr, int n, bool atomic,
            SimRaces::Use use = SimRaces::Use::Read) {
    if (!races_) [[likely]] return;
    races_->access(wave_, pc_, alloc, addr, n, false, atomic, attrs_.scope, use);
    if (atomic) races_->loadSync(wave_, pc_, alloc, addr, n, attrs_.order, attrs_.scope);
  }
  /// A store (and its release record) of [addr, addr + n).
  void write(const SimMemory::Allocation* alloc, uint64_t addr, int n, bool atomic) {
    if (!races_) [[likely]] return;
    races_->access(wave_, pc_, alloc, addr, n, true, atomic, attrs_.scope, SimRaces::Use::Write);
    races_->storeSync(wave_, pc_, alloc, addr, n, attrs_.order, attrs_.scope, false);
  }
  /// A read-modify-write of [addr, addr + n); `wrote`: it stored (a CmpXchg that swapped).
  void readModifyWrite(const SimMemory::Allocation* alloc, uint64_t addr, int n, bool wrote) {
    if (!races_) [[likely]] return;
    races_->loadSync(wave_, pc_, alloc, addr, n, attrs_.order, attrs_.scope);
    races_->access(wave_, pc_, alloc, addr, n, wrote, true, attrs_.scope, SimRaces::Use::Read);
    if (wrote) races_->storeSync(wave_, pc_, alloc, addr, n, attrs_.order, attrs_.scope, true);
  }

 private:
  SimRaces* races_;
  uint32_t wave_;
  int32_t pc_;
  const ir::Attrs& attrs_;
};

class SimLaunch {
 public:
  SimLaunch(SimMemory& mem, const ir::Plan& plan, const SimProgram& prog,
            const std::vector<std::vector<uint64_t>>& args, const SimOptions& opts);
  ~SimLaunch();
  SimLaunch(const SimLaunch&) = delete;
  SimLaunch& operator=(const SimLaunch&) = delete;

  SimStats run();

 private:
  // SimOptions::timing: the run loop in modeled-clock order (SimTimingScheduler.cpp).
  SimStats runTimed();
  void pushTimed(uint32_t wi);
  // Both run loops: progress and the maxSteps guard after each quantum, and the stats at the end.
  void afterQuantum();
  SimStats finishStats();
  struct TimedEntry {
    double t;
    uint64_t prio;
    uint32_t wave, seq;
    bool operator>(const TimedEntry& o) const {
      return t != o.t ? t > o.t : (prio != o.prio ? prio > o.prio : seq > o.seq);
    }
  };
  enum Status { kContinue, kBlocked, kExited, kYield };  // kYield: timed, the op starts past timedHorizon_
  struct Deadline {
    int64_t at;
    uint32_t wave, seq;
    bool operator>(const Deadline& o) const {
      return at != o.at ? at > o.at : (wave != o.wave ? wave > o.wave : seq > o.seq);
    }
  };
  struct PubRecord {
    int32_t rank, cta, wave, lane, stage;
  };

  // SimOptions::races: the detector, the memory the launch owns and the read-only weights.
  void setUpRaces();
  int runWave(uint32_t wi, int quantum);
  /// SimOptions::stageSpans: the wave's next op runs at `tick` (the op-count clock, or its modeled one).
  void noteSpan(const SimWave& w, int64_t tick);
  // The interpreter: step dispatches one flat instruction of w to its op class's visit, which runs
  // it and leaves w.pc at the next one (or blocks w at it).
  Status step(SimWave& w);
  Status visitControl(SimWave& w, const SimInst& in);    // SimExecControl.cpp: the SimCode pseudo-ops
  Status visitVariable(SimWave& w, const SimInst& in);   // VarLoad, VarStore
  [[noreturn]] void visitStructured(SimWave& w, const SimInst& in);  // If/For/While/StageScope, flattened away
  // An op its visit has no case for (the dispatch sent it to the wrong class): a SimError.
  [[noreturn]] void cannotRun(const SimWave& w, const SimInst& in) const;
  Status visitValue(SimWave& w, const SimInst& in);      // SimExecArith.cpp: constants, ids, Arg
  Status visitArith(SimWave& w, const SimInst& in);      // integer and float arithmetic
  Status visitDivide(SimWave& w, const SimInst& in);     // Div, Rem, UDiv, URem
  Status visitSelect(SimWave& w, const SimInst& in);     // Cmp, Select
  Status visitVector(SimWave& w, const SimInst& in);     // Extract, Insert, Splat, PtrAdd
  Status visitConvert(SimWave& w, const SimInst& in);    // SimExecConvert.cpp: casts, float formats
  Status visitMath(SimWave& w, const SimInst& in);       // Exp2, Rcp, Rsq, Sqrt
  Status visitMemory(SimWave& w, const SimInst& in);     // SimExecMemory.cpp: Load..Fence
  Status visitSync(SimWave& w, const SimInst& in);       // SimExecSync.cpp: Barrier, Publish, Wait, Sleep, Realtime
  Status visitWaveOp(SimWave& w, const SimInst& in);     // SimExecWave.cpp: Shuffle..Mfma
  void execLoad(SimWave& w, const SimInst& in);
  // SimOptions::timing: a store's or atomic's (access: TimingModel::Access) active lanes to the model,
  // as laneAccess resolved them (`first`: the first lane's allocation); sorts a global/peer op's addrs.
  void timeAccess(const SimWave& w, const SimInst& in, int access, uint64_t* addrs, int na, int n,
                  const SimMemory::Allocation* first);
  void execStore(SimWave& w, const SimInst& in);
  void execAtomicRmw(SimWave& w, const SimInst& in);
  void execCmpXchg(SimWave& w, const SimInst& in);
  void execPublish(SimWave& w, const SimInst& in);
  Status execWait(SimWave& w, const SimInst& in);
  // A wait's lane l past its bound: sets the error word (the first error wins word 0, word 1 counts).
  void waitTimeout(SimWave& w, const SimInst& in, int l);
  void exitWave(SimWave& w);
  void makeRunnable(uint32_t wi);
  void removeRunnable(uint32_t wi);
  void block(SimWave& w, SimWave::State s);
  void releaseBarrier(SimCta& c);
  void wakeDue();
  void watch(SimMemory::Allocation* a, uint64_t pair, uint32_t wi, uint32_t seq);
  void wakeWatchers(SimMemory::Allocation* a, uint64_t addr, int n);
  [[noreturn]] void deadlock();
  // SimOptions::realtimeWaits, nothing runnable: if a wave waits, sleep, advance the clock by
  // the real time that passed, make the waiting waves re-check their pairs; true if it did.
  bool pollPeers();

  // Memory: the host address of [addr, addr + n) for one lane; throws SimError if it is out
  // of bounds (or unaligned when atomic). alloc is set for global/peer accesses.
  uint8_t* access(const SimWave& w, const SimInst& in, int lane, ir::AddrSpace space, uint64_t addr, int n,
                  bool atomic, SimMemory::Allocation** alloc);
  /// One lane's access of n bytes at its pointer in register slot `slot` (of type t), checked as
  /// access() checks it.
  SimLaneAccess laneAccess(const SimWave& w, const SimInst& in, int lane, uint32_t slot, const ir::Type& t, int n,
                           bool atomic);
  /// After a lane wrote n bytes at a: wakes the waves waiting on a pair there.
  void wrote(const SimLaneAccess& a, int n) {
    if (a.alloc && a.alloc->watched) wakeWatchers(a.alloc, a.addr, n);
  }
  /// Counts an op's global (not LDS) bytes: loaded ones also to the op's stage.
  void countBytes(const SimInst& in, ir::AddrSpace space, int64_t loaded, int64_t stored);
  uint64_t ptrAt(const SimWave& w, uint32_t slot, const ir::Type& t, int lane) const;  // inline, below
  // The bytes one wave's load asks of memory (the union of its lanes' ranges); sorts addrs.
  static int64_t coalescedBytes(uint64_t* addrs, int count, int n);
  SimRaceScope raceScope(const SimWave& w, const ir::Op& op) {
    return SimRaceScope(races_.get(), waveIndex(w), w.pc, op.attrs);
  }

  uint32_t waveIndex(const SimWave& w) const { return static_cast<uint32_t>(&w - waves_.data()); }
  std::string where(const SimWave& w, const SimInst& in, int lane) const;
  std::string stageName(int stage) const;
  [[noreturn]] void fail(const SimWave& w, const SimInst& in, int lane, const std::string& what) const;
  /// CtaUniform: fails unless wave w's value `v` is what the CTA's first wave to run this
  /// instance of the op (its n-th run by each wave) held.
  void checkCtaUniform(const SimWave& w, const SimInst& in, uint64_t v);

  SimMemory& mem_;
  const ir::Plan& plan_;
  const SimProgram& prog_;
  const std::vector<std::vector<uint64_t>>& args_;
  SimOptions opts_;
  int tp_ = 1, blocks_ = 1, wavesPerCta_ = 1;

  uint8_t* frames_ = nullptr;
  uint8_t* ldsAll_ = nullptr;
  std::vector<SimWave> waves_;
  std::vector<SimCta> ctas_;
  std::vector<uint32_t> runnable_;
  int64_t lastRunnable_ = 0;  // runnable waves of SimOptions::lastCta
  std::priority_queue<Deadline, std::vector<Deadline>, std::greater<Deadline>> deadlines_;
  std::unordered_map<uint64_t, PubRecord> published_;
  struct Watch {
    SimMemory::Allocation* alloc = nullptr;
    std::vector<std::pair<uint32_t, uint32_t>> waiters;  // (wave, blockSeq)
  };
  std::unordered_map<uint64_t, Watch> watch_;  // pair address -> waves blocked waiting on it
  std::unordered_map<uint64_t, std::vector<uint64_t>> ctaUniformSeen_;  // (CTA, pc) -> value by instance
  std::unordered_map<uint64_t, uint32_t> ctaUniformRuns_;               // (wave, pc) -> instances run
  SimMemory::Allocation* lastAlloc_ = nullptr;
  SimRng rng_;
  std::unique_ptr<SimRaces> races_;  // SimOptions::races, else null
  std::unique_ptr<timing::TimingModel> timing_;  // SimOptions::timing, else null
  std::priority_queue<TimedEntry, std::vector<TimedEntry>, std::greater<TimedEntry>> timedQueue_;
  std::vector<uint32_t> timedSeq_;  // per wave: the seq of its live timedQueue_ entry
  double timedHorizon_ = 0;         // the running wave may start ops up to this modeled cycle

  int64_t now_ = 0;       // simulated clock ticks since launch start
  int64_t tickAccum_ = 0; // ops not yet turned into ticks
  int64_t live_ = 0;      // waves not exited
  int64_t nextProgress_ = 0;  // the op count of the next SimOptions::progress call
  SimStats stats_;
  std::vector<int64_t> stageBytes_;  // per stage, + one for "(no stage)"
  std::vector<std::pair<int64_t, int64_t>> spans_;  // SimOptions::stageSpans: [ctaIndex][stage] first, last tick
};

/// Lane `lane`'s pointer operand in register slot `slot` (an LDS pointer is 4 bytes a lane, the
/// others 8).
inline uint64_t SimLaunch::ptrAt(const SimWave& w, uint32_t slot, const ir::Type& t, int lane) const {
  if (t.space == ir::AddrSpace::Lds) {
    uint32_t v;
    std::memcpy(&v, w.frame + slot + 4 * lane, sizeof v);
    return v;
  }
  uint64_t v;
  std::memcpy(&v, w.frame + slot + 8 * lane, sizeof v);
  return v;
}

}  // namespace monogen::runtime
