// SimRaces: the Sim device's happens-before race detector (SimOptions::races; issue 9).
//
// The Sim device executes sequentially consistently, so a missing release, acquire or barrier
// never changes a result there. This detector finds them anyway: it keeps a vector clock per wave
// (over every wave of every rank) and shadow memory per 4-byte word, and reports any two
// conflicting accesses by different waves that no happens-before chain orders.
//
// Happens-before edges (FastTrack-style: a wave's own clock ticks at each release and barrier;
// an access is the epoch (wave, clock)):
// - program order within a wave;
// - the CTA barrier: every wave that arrives joins every other's clock;
// - visibility (drains): besides its clock, a wave keeps what of it is visible at agent and at
//   system scope. A wave's own accesses reach scope S only by its own release at S (a release
//   fence, as ctaSync(drain) does, or a release store); a barrier joins each level separately;
//   and a release at S carries only the S-visible clock. So "barrier, then wave 0 publishes" does
//   not carry wave 1's stores to another CTA unless wave 1 released at agent scope before the
//   barrier (on the hardware a wave's release waits for its own stores only).
// - release -> acquire: a release (a Publish or Store with a release order, an RMW/CmpXchg with
//   one, or any atomic store after a release Fence of the same wave) leaves a copy of the
//   releaser's clock on each 8-byte word it writes; an acquire (a Wait or Load with an acquire
//   order, an RMW/CmpXchg with one, or an acquire Fence after a relaxed atomic read) that reads the
//   word joins it. A relaxed RMW keeps the word's release (a release sequence); any other store
//   replaces it.
// - An edge counts only when both the release's and the acquire's scope cover both waves:
//   Workgroup = the same CTA, Agent = the same rank, System = any two waves.
// The (value, tag) pair is an atomic 8-byte access (the LL protocol): a Wait never races with the
// Publish it reads, but data outside the pair needs the release/acquire above.
//
// Shadow memory: per 4-byte word the last write's epoch and up to kReads read epochs (a read that
// is ordered after an earlier one replaces it, as FastTrack's argument allows; past kReads
// unordered readers the oldest is dropped, so a write-after-read race with it can be missed:
// SimStats::raceUncheckedWrites counts the writes to a word whose read set overflowed since its
// last write; 0 means no race was missed that way). Atomics (order != Plain, RMW, CmpXchg, Publish, Wait)
// do not race with each other when both scopes cover both waves; they do race with plain accesses.
// LDS has a shadow per CTA (so it is checked between that CTA's waves only). A wave's own accesses
// never race (program order; the hardware's LDS queue is in order too).
//
// Reports: the first kMaxReports distinct (earlier site, later site) pairs, each naming both
// accesses (stage, op #preorder and name, rank, CTA, wave), the region and byte offset, and the
// edge that is missing when the detector saw a near miss (a relaxed publish or wait read by the
// other side, a release/acquire whose scope does not cover both waves, or a release acquired from
// the writer's CTA that did not carry the write: a missing drain/barrier before the release); see
// SimStats::races. Near misses travel with the acquiring wave and through its CTA's barriers.
//
// Uninitialized reads (SimOptions::races too). LDS starts every launch poisoned and so does every
// Sim allocation (poisonFill, SimDevice.h); the host zeroes what the contract needs once (the
// flag arrays, the epoch, the error word: SimHarness.cpp's SimSession::allocate). The rule:
// - a read of LDS (any CTA, any wave) of a byte that no op of this launch wrote on that CTA's
//   LDS is reported; LDS is never carried across launches;
// - so is a read of a byte of an allocation the launch owns, one that backs a Scratch or Output
//   pointer argument of the Plan on some rank (scratch, the symmetric peer buffers `sym` through
//   `peers` too, and the outputs), that no op of this launch wrote;
// - except the flag pairs' protocol, which carries them across launches: a Wait's read of its
//   8-byte pair is never reported (a stale pair, from an earlier launch or the host's zero, is
//   what a wait reads until the publish lands; a timed-out wait returns it), and an atomic read
//   of a pair word a Wait of this launch already read is not either (the handshake reads the tag
//   of the pair it waited for, to tell a flag that came from a stale one). A plain load of a pair,
//   or any read of a pair no wait has read, is checked like any other word;
// - arguments the host writes (Input, Weight, Peers) and the Control ones the contract carries
//   across launches (the epoch counter: the last launch's tag; the error word; inject; trace) are
//   not checked: their bytes are defined before the launch by the host or by the last launch.
// A read is a Load (plain or atomic), or the read half of an AtomicRmw / CmpXchg; any write
// (Store, Publish, RMW, a CmpXchg that swapped) marks its bytes written. The check is per byte (a
// bf16 store covers half a word), regardless of order: whether the write is ordered before the
// read is the race detector's question. Reports (SimStats::uninit) name the reading op (stage,
// op #preorder and name, rank, CTA, wave), the first byte's region (LDS of CTA c + offset and the
// pool, or the allocation + offset and the Plan region) and how many bytes of the access were
// unwritten; one report per reading op (SimStats::uninitCount counts the ops).
//
// Cost: SimOptions::races off is one predictable branch per access (no measurable change); on,
// the reduced launch runs at about half the ops/s (S2 TP2: 3.3 -> 1.7 M ops/s; S8 TP4: 3.0 -> 1.5).
// The uninitialized-read check adds nothing measurable to that, and the poison (a 16 KiB pattern
// copied over each allocation once and each CTA's LDS every launch) nothing off: process CPU
// seconds, medians of 3 interleaved runs against the tree before both, on a loaded 2-core
// machine: S2 TP2 off 1.53 -> 1.54, on 2.57 -> 2.46; S8 TP4 off 3.66 -> 3.64, on 6.64 -> 6.08;
// full dims S1 TP1 off, user 19.11 -> 19.17 s, peak 7.79 -> 7.80 GB.
// Not yet (issue 9): the detector on in the spec tests over the S x TP matrix and at full dims
// (the degenerate-routing cases of test_spec_rows and test_spec_replay's launches run with it);
// in-tree mutation tests of the stages; a read set that does not overflow (raceUncheckedWrites
// says when it mattered); the error word a timed-out wait writes is not checked; reads of Input,
// Weight and Control arguments the host never wrote (poison read as an epoch or a weight) are
// not reported: the host's writes are not tracked.
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
  static constexpr int kMaxNotes = 16;

 private:
  using Clock = std::vector<uint32_t>;
  using ClockPtr = std::shared_ptr<const Clock>;
  struct Acc {
    uint32_t wave = UINT32_MAX;  // UINT32_MAX: none
    uint32_t clock = 0;
    int32_t pc = -1;
    uint8_t atomic = 0;
    uint8_t scope = 0;
    uint8_t dropped = 0;  // in Word::write: a read since that write was dropped (kReads overflowed)
    uint8_t init = 0;     // in Word::write (kept across writes): bits 0..3, the word's bytes this
                          // launch wrote; kWaited, a Wait of this launch read the pair word
  };
  static constexpr uint8_t kWaited = 0x10;
  struct Word {
    Acc write;
    Acc reads[kReads];
  };
  /// The release a store left on an 8-byte word (isRelease false: a relaxed store, kept so a race
  /// report can say the release is missing).
  struct SyncRec {
    ClockPtr clock;
    ClockPtr known;  // the releaser's whole clock (clock is its part visible at scope)
    uint32_t wave = 0;
    int32_t pc = -1;
    ir::MemScope scope = ir::MemScope::Agent;
    bool isRelease = false;
  };
  /// A release -> acquire edge the wave did not get, and why: for the race report.
  struct Note {
    ClockPtr clock;     // the store's clock
    uint32_t relWave;   // the storing wave
    int32_t relPc, acqPc;
    uint8_t reason;     // kNotRelease, kNotAcquire, kRelScope, kAcqScope
    ir::MemScope relScope, acqScope;
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
    ir::MemScope fenceScope = ir::MemScope::Agent;
    bool released = false;  // this op released: tick at endRelease
    std::vector<SyncRec> pending;  // relaxed reads' releases, for an acquire fence
    std::vector<Note> notes;
    std::vector<Note> joins;  // releases this wave did acquire (kJoined), for "missing drain"
  };

  bool covers(ir::MemScope s, uint32_t a, uint32_t b) const;
  bool hb(const Acc& e, uint32_t t) const { return e.wave == t || e.clock <= waves_[t].vc[e.wave]; }
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
  std::string why(uint32_t t, const Acc& prev) const;

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
  const SimMemory::Allocation* lastAlloc_ = nullptr;
  AllocShadow* lastShadow_ = nullptr;
  std::vector<std::vector<Word>> lds_;  // per CTA, allocated on first use
  std::unordered_map<uint64_t, SyncRec> sync_;  // 8-byte word -> its last store's release
  std::unordered_set<uint64_t> seenPairs_;      // (earlier pc, later pc) already reported
  std::vector<std::string> reports_;
  int64_t raceCount_ = 0, uncheckedWrites_ = 0;
  std::unordered_set<int32_t> uninitPcs_;  // reading ops already reported as uninitialized reads
  std::vector<std::string> uninitReports_;
};

}  // namespace monogen::runtime
