// The Sim device: runs a Plan's kernel IR for every CTA of every rank on the CPU. It is the
// executable definition of the kernel's semantics (see DESIGN.md, "Sim device").
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/Plan.h"

namespace monogen::runtime {

/// Simulated device memory: one 64-bit address space shared by every rank, made of named
/// allocations. Every kernel access is bounds-checked against the allocation it falls in.
class SimMemory {
 public:
  SimMemory();
  ~SimMemory();
  /// A zeroed allocation of `bytes` for `rank`, aligned to `align`; returns its device address.
  uint64_t alloc(int64_t bytes, int rank, const std::string& name, int64_t align = 256);
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

/// Scheduler and clock knobs of one simulated launch.
struct SimOptions {
  uint64_t seed = 1;          // the scheduler's interleaving
  int maxQuantum = 32;        // a wave runs 1..maxQuantum ops before the scheduler picks again
  int64_t maxSteps = 4'000'000'000;  // safety net: ops executed across all waves
  int64_t clockStart = 1'000'000;    // the realtime clock's value at launch start
};

/// What a simulated launch did.
struct SimStats {
  int64_t steps = 0;          // ops executed, all waves
  int64_t ticks = 0;          // simulated realtime clock ticks the launch took
  int64_t waitTimeouts = 0;   // waits that ran past their bound
  int64_t globalBytesLoaded = 0;  // bytes read from device memory (loads, waits), all ranks
  int64_t globalBytesStored = 0;
  std::map<std::string, int64_t> bytesLoadedByStage;  // per Plan stage name
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
