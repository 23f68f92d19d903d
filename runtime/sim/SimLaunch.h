// SimLaunch: one simulated launch. Every CTA of every rank as 64-lane waves, a seeded cooperative
// scheduler, a simulated realtime clock, and the interpreter of the flat SimProgram. One class in
// three files: SimScheduler.cpp (waves, blocking and wake-ups, the clock, the run loop),
// SimAccess.cpp (address resolution, access checks, coalescing) and SimInterpreter.cpp (the
// per-op switch and its numerics).
//
// Memory ordering: the launch executes one op of one wave at a time and every access acts on
// memory at once, so the execution is sequentially consistent. The order/scope attributes are
// checked (atomics must be aligned) but have no other effect on the execution; weak-memory bugs (a
// missing release/acquire, fence or barrier, a scope too narrow) are found by the race detector
// (SimOptions::races, SimRaces.h), which the interpreter calls behind one `if (races_)` per access.
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

/// One wave's state: pc, exec mask, the frame (registers, variables, mask stack) and what it is
/// blocked on. A wave can yield at any blocking op and resume there.
struct SimWave {
  enum State : uint8_t { Ready, Barrier, Wait, Sleep, Exited };
  uint8_t* frame = nullptr;
  uint64_t exec = 0;
  int32_t pc = 0;
  State state = Ready;
  bool inWait = false;       // a Wait op has started and not finished
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

class SimLaunch {
 public:
  SimLaunch(SimMemory& mem, const ir::Plan& plan, const SimProgram& prog,
            const std::vector<std::vector<uint64_t>>& args, const SimOptions& opts);
  ~SimLaunch();
  SimLaunch(const SimLaunch&) = delete;
  SimLaunch& operator=(const SimLaunch&) = delete;

  SimStats run();

 private:
  enum Status { kContinue, kBlocked, kExited };
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

  int runWave(uint32_t wi, int quantum);
  Status step(SimWave& w);
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
  uint64_t ptrAt(const SimWave& w, uint32_t slot, const ir::Type& t, int lane) const;  // inline, below
  // The bytes one wave's load asks of memory (the union of its lanes' ranges); sorts addrs.
  static int64_t coalescedBytes(uint64_t* addrs, int count, int n);

  uint32_t waveIndex(const SimWave& w) const { return static_cast<uint32_t>(&w - waves_.data()); }
  std::string where(const SimWave& w, const SimInst& in, int lane) const;
  std::string stageName(int stage) const;
  [[noreturn]] void fail(const SimWave& w, const SimInst& in, int lane, const std::string& what) const;

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
  std::priority_queue<Deadline, std::vector<Deadline>, std::greater<Deadline>> deadlines_;
  std::unordered_map<uint64_t, PubRecord> published_;
  struct Watch {
    SimMemory::Allocation* alloc = nullptr;
    std::vector<std::pair<uint32_t, uint32_t>> waiters;  // (wave, blockSeq)
  };
  std::unordered_map<uint64_t, Watch> watch_;  // pair address -> waves blocked waiting on it
  SimMemory::Allocation* lastAlloc_ = nullptr;
  SimRng rng_;
  std::unique_ptr<SimRaces> races_;  // SimOptions::races, else null

  int64_t now_ = 0;       // simulated clock ticks since launch start
  int64_t tickAccum_ = 0; // ops not yet turned into ticks
  int64_t live_ = 0;      // waves not exited
  int64_t nextProgress_ = 0;  // the op count of the next SimOptions::progress call
  SimStats stats_;
  std::vector<int64_t> stageBytes_;  // per stage, + one for "(no stage)"
};

/// Lane `lane`'s pointer operand in register slot `slot` (an LDS pointer is 4 bytes a lane, the
/// others 8). Inline here, not in SimAccess.cpp: the interpreter reads it for every lane.
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
