// The Sim device: runs a Plan's kernel IR for every CTA of every rank on the CPU, the executable
// definition of the kernel's semantics. Its execution model is docs/sim.md, "Execution model".
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/Plan.h"

namespace monogen::runtime {

namespace timing {
struct TimingParams;
}

/// Fills [p, p + bytes) with the Sim's poison (what LDS and a fresh allocation hold before anyone
/// writes them): NaNs, infinities, random and negative words from `seed`, rarely a valid launch
/// tag. The pattern: docs/sim.md, "Execution model".
void poisonFill(uint8_t* p, int64_t bytes, uint64_t seed);

/// Simulated device memory: one 64-bit address space shared by every rank, made of named
/// allocations. Every kernel access is bounds-checked against the allocation it falls in.
class SimMemory {
 public:
  SimMemory();
  ~SimMemory();
  /// A poisoned allocation (poisonFill, seeded by its address) of `bytes` for `rank`, aligned to
  /// `align`; returns its device address. Like hipMalloc's memory it is not zeroed: the host
  /// zeroes (uploads) what the launch's contract needs before the first launch.
  uint64_t alloc(int64_t bytes, int rank, const std::string& name, int64_t align = 256);
  /// One rank per process (runtime/sim/SimRankDevice.h): `bytes` of memory this SimMemory does
  /// not own (a POSIX shared-memory mapping, `host` must outlive it) at the Sim address `base`,
  /// which the owner's process chose; throws SimError if it overlaps an allocation. Kernel
  /// accesses to it are atomic (SimOptions::sharedMemory, SimLaunch.h).
  void attachShared(uint64_t base, uint8_t* host, int64_t bytes, int rank, const std::string& name);
  /// Where the next allocation goes (one rank per process: each rank's own range, so the
  /// addresses its peers map its symmetric buffer at never collide with theirs).
  void setNextAddress(uint64_t addr) { next_ = addr; }
  /// Host view of [addr, addr + bytes); throws SimError if it is not inside one allocation.
  uint8_t* host(uint64_t addr, int64_t bytes);
  /// The allocation's name holding addr ("?" if none), for messages.
  std::string describe(uint64_t addr) const;
  /// The allocation nearest to addr, with addr's offset from it: "'x' (rank 0, 4096 bytes at
  /// 0x10000000), addr is 4 bytes past its end". For error messages.
  std::string nearest(uint64_t addr) const;

  struct Allocation {
    uint64_t base = 0;
    int64_t bytes = 0;
    int rank = 0;
    std::string name;
    std::vector<uint8_t> data;
    /// attachShared: the bytes live in memory other processes write (data is empty); every
    /// kernel access to them is a C++ atomic on that memory.
    uint8_t* shared = nullptr;
    uint8_t* bytesAt(uint64_t addr) { return (shared ? shared : data.data()) + (addr - base); }
    /// Sim-internal: how many 8-byte pairs in here a running launch's blocked waits watch. A
    /// write to a watched pair wakes its waiters to re-check; unwatched allocations cost nothing.
    int64_t watched = 0;
  };
  /// The allocation holding [addr, addr + bytes), or nullptr.
  Allocation* find(uint64_t addr, int64_t bytes);

 private:
  std::map<uint64_t, Allocation> allocs_;  // by base
  uint64_t next_ = 0x1000'0000;
};

/// Where a running simulated launch is (SimOptions::progress).
struct SimProgress {
  int64_t steps = 0;        // ops executed so far, all waves
  int64_t ticks = 0;        // the simulated clock
  int64_t wavesLeft = 0;    // waves not exited
  int64_t wavesTotal = 0;   // every wave of every CTA of every rank
};

/// Scheduler and clock knobs of one simulated launch.
struct SimOptions {
  uint64_t seed = 1;          // the scheduler's interleaving
  int maxQuantum = 32;        // a wave runs 1..maxQuantum ops before the scheduler picks again
  /// Test: CTA lastCta of every rank runs only while no other wave can (-1: none), so it ends last;
  /// the op-count clock only (not under `timing`).
  int lastCta = -1;
  int64_t maxSteps = 4'000'000'000;  // safety net: ops executed across all waves
  int64_t clockStart = 1'000'000;    // the realtime clock's value at launch start
  /// Every CTA's LDS starts every launch poisoned, as hardware's holds the previous kernel's data:
  /// poisonFill seeded by poisonSeed (0: the scheduler seed) and the CTA, so a read of LDS the
  /// launch never wrote is a NaN (bf16, f32), an Inf, -1 or garbage, and differs from CTA to CTA.
  uint64_t poisonSeed = 0;
  /// Called every progressEvery ops (and not at all when empty): for a long launch's progress line.
  std::function<void(const SimProgress&)> progress;
  int64_t progressEvery = 20'000'000;
  /// The happens-before race detector (runtime/sim/SimRaces.h): vector clocks per wave, shadow
  /// memory per 4-byte word; races land in SimStats::races. With it, the uninitialized-read check:
  /// a read of LDS, scratch or an output that no op of this launch wrote (SimStats::uninit; the
  /// rule: docs/sim.md). Off by default (it costs time and about 64 bytes a word of every
  /// allocation and LDS the launch touches).
  bool races = false;
  /// Per (rank, CTA, stage): the clock at the first and the last op a wave of the CTA executed in
  /// the stage (SimStats::stageSpans; under SimOptions::timing in modeled ticks). Off by default.
  bool stageSpans = false;
  /// One rank per process (runtime/sim/SimRankDevice.h): args[i] of a run is rank firstRank + i
  /// (messages and the kernel's view of its rank come from the arguments; this names waves).
  int firstRank = 0;
  /// Waits on pairs other processes write (one rank per process): an idle process sleeps
  /// pollMicros and advances the clock by the real time passed, so a wait's bound counts real time
  /// while it idles and no deadlock is reported while a wave waits (docs/sim.md).
  bool realtimeWaits = false;
  int pollMicros = 100;
  /// The gfx950 timing model (runtime/sim/timing, docs/timing.md): waves run in the order of their
  /// modeled clocks and SimStats::timed holds the modeled launch time. Null: off (the op-count clock).
  std::shared_ptr<const timing::TimingParams> timing;
};

/// One stage of the wave that ends last, under the timing model (all modeled microseconds).
struct SimTimedStage {
  std::string stage;
  double startUs = 0, endUs = 0;
  double issueUs = 0, memoryUs = 0, flagUs = 0, barrierUs = 0;  // the stage's time, split
};

/// What the timing model says of a launch (SimOptions::timing), every figure modeled.
struct SimTimedResult {
  bool on = false;
  double cycles = 0, us = 0;           // the launch's end: the last wave's last issue or store
  int rank = -1, cta = -1, wave = -1;  // the wave that ends last
  std::string stage;                   // its last stage
  double issueUs = 0, memoryUs = 0, flagUs = 0, barrierUs = 0;  // its whole time, split
  std::vector<SimTimedStage> stages;   // its stages in the order they started
  std::map<std::string, double> stageEndUs;  // per stage: when its last wave left it
  int64_t instructions = 0;            // machine instructions the model issued, all waves
  // TimingParams::isa (else -1): the compiled ISA's instructions the executed ops stand for, all
  // waves, each wave's unowned ones (prologue, line 0) counted once; and the unowned ones a wave.
  int64_t isaInstructions = -1, isaUnowned = -1;
};

/// SimOptions::stageSpans: the ticks of a CTA's first and last op in one Plan stage.
struct SimStageSpan {
  int rank = 0, cta = 0, stage = 0;
  int64_t start = 0, end = 0;
};

/// What a simulated launch did.
struct SimStats {
  int64_t steps = 0;          // ops executed, all waves
  int64_t ticks = 0;          // simulated realtime clock ticks the launch took
  int64_t waitTimeouts = 0;   // wait lanes that ran past their bound (each sets the error word)
  int64_t globalBytesLoaded = 0;  // bytes read from device memory (loads, waits, atomics), all ranks; a
                                  // wave's load counts the union of its lanes' bytes (coalesced)
  int64_t globalBytesStored = 0;  // bytes written (stores, publishes, atomics)
  std::map<std::string, int64_t> bytesLoadedByStage;  // per Plan stage name
  // SimOptions::races: distinct (earlier op, later op) pairs found racing, the first few as
  // messages naming both accesses, the region and the missing edge; and the writes to a word
  // whose shadow read set had overflowed (a write-after-read race there can go unseen; 0: none).
  int64_t raceCount = 0;
  std::vector<std::string> races;
  int64_t raceUncheckedWrites = 0;
  // SimOptions::races: distinct ops that read bytes of LDS, scratch or an output no op of this
  // launch wrote (docs/sim.md, "Uninitialized reads"), the first few as messages naming the op, the
  // region (pool / Plan region) and byte offset. A launch with one is never bit-exact.
  int64_t uninitCount = 0;
  std::vector<std::string> uninit;
  /// Races and uninitialized reads together: 0 when the launch is clean under SimOptions::races.
  int64_t findings() const { return raceCount + uninitCount; }
  int64_t raceChecks = 0;  // lane accesses the detector checked (0: it was off)
  SimTimedResult timed;    // SimOptions::timing: the modeled time
  std::vector<SimStageSpan> stageSpans;  // SimOptions::stageSpans: in (rank, CTA, stage) order
};

/// Runs every CTA of every rank of a launch, interleaving waves with a seeded scheduler.
class SimDevice {
 public:
  SimDevice();
  ~SimDevice();
  SimMemory& memory() { return mem_; }

  /// Runs one launch of `plan` on all its TP ranks at once. args[r][i] is the raw 64-bit value of
  /// kernel argument i on rank r (a SimMemory address for pointers, the scalar otherwise).
  /// Throws SimError on an out-of-bounds access (naming op and stage), a deadlock, or a pair
  /// published twice in one launch.
  SimStats run(const ir::Plan& plan, const std::vector<std::vector<uint64_t>>& args,
               const SimOptions& opts = {});

  /// Bytes of per-wave state (registers, variables, mask stack) the last run's program needed.
  int64_t lastFrameBytes() const { return lastFrameBytes_; }

 private:
  SimMemory mem_;
  int64_t lastFrameBytes_ = 0;
};

}  // namespace monogen::runtime
