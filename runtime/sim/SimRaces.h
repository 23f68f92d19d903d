// SimRaces: the Sim device's happens-before race detector and uninitialized-read check
// (SimOptions::races). Its rules, reports, cost and status: docs/sim.md, "Race detector".
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/Plan.h"
#include "runtime/sim/SimDevice.h"
#include "runtime/sim/SimProgram.h"

namespace monogen::runtime {

class SimRaces {
 public:
  /// One entry per wave: rank, CTA (within the rank) and CTA index (rank * blocks + cta), wave.
  struct WaveInfo {
    int32_t rank, cta, wave;
    uint32_t ctaIndex;
  };
  SimRaces(const ir::Plan& plan, const SimProgram& prog, std::vector<WaveInfo> waves, int64_t ldsBytes);

  /// The allocation backs Plan argument `arg` (a Scratch or Output pointer): reads of it are
  /// checked for bytes this launch never wrote.
  void own(const SimMemory::Allocation* alloc, int arg);

  /// What an access does with the uninitialized-read check: a read to check (Load, the read of
  /// an RMW / CmpXchg), a Wait's read of its pair (never reported; marks the pair waited), or
  /// nothing to check (a pure write).
  enum class Use : uint8_t { Write, Read, WaitPair };

  /// Marks an allocation read-only for the launch (the Sim marks every allocation a Weight-role
  /// argument points at): its reads get no shadow, and any write to it is reported as a race.
  void readOnly(const SimMemory::Allocation* alloc) { readOnly_.insert(alloc); }
  /// One lane's access of [addr, addr + n). alloc is the allocation (nullptr for LDS, then cta
  /// names whose LDS). atomic: order != Plain (or an RMW, CmpXchg, Publish, Wait).
  /// use: what the uninitialized-read check does with it (Use); a write marks its bytes written.
  void access(uint32_t wi, int32_t pc, const SimMemory::Allocation* alloc, uint64_t addr, int n, bool write,
              bool atomic, ir::MemScope scope, Use use);
  /// A store (or the write of an RMW) of [addr, addr + n) with order o at scope s sets the words'
  /// release records. rmw: keep an existing release (release sequence).
  void storeSync(uint32_t wi, int32_t pc, const SimMemory::Allocation* alloc, uint64_t addr, int n, ir::MemOrder o,
                 ir::MemScope s, bool rmw);
  /// An atomic read of [addr, addr + n) with order o at scope s: an acquire joins the words'
  /// releases; a relaxed read keeps them for a later acquire fence.
  void loadSync(uint32_t wi, int32_t pc, const SimMemory::Allocation* alloc, uint64_t addr, int n, ir::MemOrder o,
                ir::MemScope s);
  /// After an op whose lanes released: the wave's clock ticks.
  void endRelease(uint32_t wi);
  void fence(uint32_t wi, int32_t pc, ir::MemOrder o, ir::MemScope s);
  /// A wave arrives at its CTA's barrier; barrier() when it releases (all arrived waves join).
  void arrive(uint32_t wi) { arrived_[wi] = 1; }
  void barrier(uint32_t firstWave, uint32_t waves);

  /// Writes the race count and the reports into stats.
  void finish(SimStats& stats) const;

  static constexpr int kReads = 3;
  static constexpr int kMaxReports = 16;
  static constexpr int kMaxNotes = 64;

 private:
  using Clock = std::vector<uint32_t>;
  using ClockPtr = std::shared_ptr<const Clock>;
  struct Acc {
    uint32_t wave = UINT32_MAX;  // UINT32_MAX: none
    uint32_t clock = 0;
    int32_t pc = -1;
    uint8_t atomic = 0;
    uint8_t scope = 0;
    uint8_t bytes = 0;  // bits 0..3: the word's bytes the access touched (a write: and no later write did)
    uint8_t flags = 0;  // in Word::write (kept across writes): bits 0..3, the word's bytes this launch
                        // wrote; kWaited, kDropped, kSplit
  };
  static constexpr uint8_t kWaited = 0x10;   // a Wait of this launch read the pair word
  static constexpr uint8_t kDropped = 0x20;  // the word has reads in overflow_
  static constexpr uint8_t kSplit = 0x40;    // the word has earlier writes in splitWrites_
  /// Per 4-byte word: the last write and up to kReads reads, each with the bytes it touched; two
  /// accesses conflict only where their bytes overlap.
  struct Word {
    Acc write;
    Acc reads[kReads];
  };
  /// The release a store left on a 4-byte word (isRelease false: a relaxed store, kept so a race
  /// report can say the release is missing).
  struct SyncRec {
    ClockPtr clock;
    ClockPtr known;  // the releaser's whole clock (clock is its part visible at scope)
    uint32_t wave = 0;
    int32_t pc = -1;
    ir::MemScope scope = ir::MemScope::Agent;
    bool isRelease = false;
    int32_t fencePc = -1;  // a relaxed store released by the wave's earlier release fence: that fence
    uint32_t gen = 0;      // the release's place among its CTA's releases (ctaGen_)
  };
  /// A release -> acquire edge the wave did not get, and why: for the race report.
  struct Note {
    ClockPtr clock;     // the store's clock
    uint32_t relWave;   // the storing wave
    int32_t relPc, acqPc;
    uint8_t reason;     // kNotRelease, kNotAcquire, kRelScope, kAcqScope
    ir::MemScope relScope, acqScope;
    int32_t fencePc = -1;  // the store is relaxed, released by this earlier fence (SyncRec::fencePc)
    ClockPtr known;        // the storing wave's whole clock at the store (SyncRec::known)
    uint32_t gen = 0;      // SyncRec::gen
  };
  enum : uint8_t { kNotRelease, kNotAcquire, kRelScope, kAcqScope, kJoined };
  struct WaveState {
    Clock vc;
    /// What of vc is visible at agent (vis[0]) and system (vis[1]) scope: a wave's own accesses
    /// get there by its own release at that scope (a drain); others' by a barrier join of their
    /// vis, or an acquire of a release at that scope.
    Clock vis[2];
    ClockPtr snap[3];       // per level (0 workgroup = vc, 1 agent, 2 system): the clock a release
                            // there carries, while the clocks have not changed
    ClockPtr fenceSnap;     // the last release fence's clock
    int32_t fencePc = -1;   // and its op
    ir::MemScope fenceScope = ir::MemScope::Agent;
    bool released = false;  // this op released: tick at endRelease
    std::vector<SyncRec> pending;  // relaxed reads' releases, for an acquire fence
    std::vector<Note> notes;
    std::vector<Note> joins;  // releases this wave did acquire (kJoined), for "missing drain"
    uint32_t gen = 0;              // its CTA's ctaGen_ at its last access
    std::vector<uint32_t> epochGen;  // per own clock value: the ctaGen_ its accesses saw
    uint32_t fenceGen = 0;         // the last release fence's place among the CTA's releases
  };

  bool covers(ir::MemScope s, uint32_t a, uint32_t b) const;
  /// An access e that the access now by t (atomic, at scope) races with.
  bool conflicts(const Acc& e, uint32_t t, bool atomic, ir::MemScope scope) const;
  /// A read's shadow update of word s (the reads it keeps, kReads and the overflow list).
  void recordRead(Word& s, Acc cur, uint32_t t);
  /// A write's shadow update of word s: the reads and earlier writes of its bytes go.
  void recordWrite(Word& s, Acc cur);
  /// Drops the bytes m from v's accesses, then the accesses left with none.
  static void dropBytes(std::vector<Acc>& v, uint8_t m);
  /// Two accesses of one epoch (wave, clock) and kind: a conflict with one is one with the other.
  static bool sameEpoch(const Acc& a, const Acc& b) {
    return a.wave == b.wave && a.clock == b.clock && a.atomic == b.atomic && a.scope == b.scope;
  }
  /// The uninitialized-read check of [lo, lo + n) (lo: the offset in the shadow base covers).
  void checkUninit(uint32_t t, int32_t pc, const SimMemory::Allocation* alloc, int owned, Word* base, uint64_t lo,
                   int n, bool atomic, Use use);
  void reportReadOnlyWrite(uint32_t t, int32_t pc, const SimMemory::Allocation* alloc, uint64_t addr, bool atomic);
  bool hb(const Acc& e, uint32_t t) const { return e.wave == t || e.clock <= waves_[t].vc[e.wave]; }
  /// A release of e's CTA with place gen was issued after the access e (in the run's order).
  bool releasedAfter(uint32_t gen, const Acc& e) const { return waves_[e.wave].epochGen[e.clock] < gen; }
  /// The clock a release at scope s by wi carries (its own accesses made visible at s first).
  const ClockPtr& releaseClock(uint32_t wi, ir::MemScope s);
  /// An acquire of c, released at scope s: wi knows c, and c is visible at s's levels.
  void join(uint32_t wi, const Clock& c, ir::MemScope s);
  void acquireRec(uint32_t wi, int32_t pc, const SyncRec& r, ir::MemOrder o, ir::MemScope s);
  static void addNote(std::vector<Note>& notes, Note n);
  /// The word's shadow; *owned: the Plan argument the allocation backs (own()), -1 if none (LDS: -2).
  Word* shadow(const SimMemory::Allocation* alloc, uint32_t ctaIndex, uint64_t addr, int* owned);
  void reportUninit(uint32_t t, int32_t pc, const SimMemory::Allocation* alloc, int owned, uint64_t addr,
                    int bytes, int unwritten);
  uint64_t syncKey(const SimMemory::Allocation* alloc, uint32_t ctaIndex, uint64_t addr) const;
  void report(uint32_t t, int32_t pc, bool write, bool atomic, ir::MemScope scope, const Acc& prev, bool prevWrite,
              const SimMemory::Allocation* alloc, uint64_t addr);
  std::string describe(uint32_t wi, int32_t pc) const;
  /// The missing edge of a race between prev and the access now by t; the three parts try, in
  /// turn, the near misses t noted, the releases t did acquire, and those still on memory.
  std::string why(uint32_t t, const Acc& prev) const;
  std::string whyFromNotes(uint32_t t, const Acc& prev) const;
  std::string whyFromJoins(uint32_t t, const Acc& prev) const;
  std::string whyFromReleases(uint32_t t, const Acc& prev) const;
  std::string opOf(int32_t pc) const;                                // "op #N name"
  std::string uncovered(ir::MemScope s, uint32_t a, uint32_t b) const;  // "CTAs a and b" / "ranks a and b"

  const ir::Plan& plan_;
  const SimProgram& prog_;
  std::vector<WaveInfo> info_;
  std::vector<WaveState> waves_;
  std::vector<uint8_t> arrived_;
  int64_t ldsBytes_;
  struct AllocShadow {
    std::vector<Word> words;
    int arg = -1;  // own(): the Plan argument it backs, else -1
  };
  std::unordered_map<const SimMemory::Allocation*, AllocShadow> global_;
  std::unordered_set<const SimMemory::Allocation*> readOnly_;
  std::unordered_map<const Word*, std::vector<Acc>> overflow_;  // reads past a word's kReads
  /// Earlier writes that still hold some of a word's bytes (a later write of other bytes of it,
  /// by another access): the bf16 halves two waves store.
  std::unordered_map<const Word*, std::vector<Acc>> splitWrites_;
  bool lastReadOnly_ = false;  // lastAlloc_ is read-only
  const SimMemory::Allocation* lastAlloc_ = nullptr;
  AllocShadow* lastShadow_ = nullptr;
  std::vector<std::vector<Word>> lds_;  // per CTA, allocated on first use
  /// Per CTA, its waves' releases so far. A wave's clock ticks at its first access after one, so
  /// all accesses of an epoch lie between two of its CTA's releases (releasedAfter).
  std::vector<uint32_t> ctaGen_;
  std::unordered_map<uint64_t, SyncRec> sync_;  // 4-byte word -> its last store's release
  std::unordered_set<uint64_t> seenPairs_;      // (earlier pc, later pc) already reported
  std::vector<std::string> reports_;
  int64_t raceCount_ = 0, uncheckedWrites_ = 0, checks_ = 0;
  std::unordered_set<int32_t> uninitPcs_;  // reading ops already reported as uninitialized reads
  std::vector<std::string> uninitReports_;
};

}  // namespace monogen::runtime
