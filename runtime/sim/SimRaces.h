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
// is ordered after an earlier one replaces it, as FastTrack's argument allows: a write ordered
// after the later read is ordered after the earlier one, and one that is not races with the later
// read). Past kReads unordered readers the oldest moves to the word's overflow list (overflow_,
// out of line, only for such words: a CTA's 8 waves reading one LDS word of red, every CTA
// reading an XN word), pruned the same way, so a write is checked against every read since the
// last write (SimStats::raceUncheckedWrites stays 0; it counted the reads dropped before).
// Atomics (order != Plain, RMW, CmpXchg, Publish, Wait) do not race with each other when both
// scopes cover both waves; they do race with plain accesses. LDS has a shadow per CTA (so it is
// checked between that CTA's waves only). A wave's own accesses never race (program order; the
// hardware's LDS queue is in order too).
//
// Read-only allocations (the Sim marks every allocation a Weight-role argument points at; at
// full dims they are 3.9 GB, whose shadow would be 16x that): no shadow at all. This is sound: a
// race needs two accesses of one word of which one is a write; reads of a word no access of the
// launch writes cannot race; and any write to a read-only allocation is itself reported (counted
// in raceCount, the verdict RACE), so a launch with no report wrote none, and had no race there.
//
// Reports: the first kMaxReports distinct (earlier site, later site) pairs, each naming both
// accesses (stage, op #preorder and name, rank, CTA, wave), the region and byte offset, and the
// edge that is missing: between two waves of one CTA, the barrier; else, when the detector saw a
// near miss, a relaxed publish or wait read by the other side (also when the note itself fell out
// of the bounded list, kMaxNotes, but a store of the same release site carries the access), a
// release/acquire whose scope does not cover both waves, a relaxed store after a release fence
// that does not carry the access (its release is the fence, from before the access reached the
// wave: the publish should be a release), or a release acquired from the writer's CTA that did not
// carry the write (a missing drain/barrier before the release); see SimStats::races. Near misses
// travel with the acquiring wave and through its CTA's barriers. SimStats::raceChecks counts the
// lane accesses checked (0: the detector was off).
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
// see bench/bench_races (README: the Sim's ops/s off and on, reduced and full dims, interleaved).
// Memory on: the vector clocks (3 x waves^2 x 4 bytes: 0.8 GB at full dims, 8192 waves), the
// shadow (64 bytes a 4-byte word of every LDS a CTA touches and every written allocation), the
// release snapshots.
//
// Where it stands (issue 9): the MiniMax-M3 launch is race-free under it over the reduced S x TP
// matrix (tests/test_spec_races.cpp, in the suite) and at full dims S=1 TP=1 (bench_races);
// full dims S=8 TP=4 is tests/test_spec_races_full.cpp, opt-in, race-free and bit-exact there too
// (13.6 GB peak, 185 s of CPU: the clocks and release snapshots grow with the waves squared, 8192
// waves there, on top of the 8 GB of weights); each test-only mutation of
// one sync site (specs/minimax_m3/kernel/Mutation.h) is reported naming that site and the missing edge.
// The uninitialized-read check adds nothing measurable to the detector's cost, and the poison nothing
// off (process CPU seconds, medians of 3 interleaved runs: S8 TP4 off 3.66 -> 3.64, on 6.64 -> 6.08).
// Not yet: the error word a timed-out wait writes is not checked; reads of Input, Weight and
// Control arguments the host never wrote are not reported (host writes are not tracked); the other spec tests (ffn, rows, robust, replay) run with it off unless
// MONOGEN_TEST_RACES=1 (tests/test_spec_util.h); sparse clocks, which full dims at TP 4-8 want.
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
    uint8_t dropped = 0;  // in Word::write: reads since that write overflowed kReads (see overflow_)
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
    int32_t fencePc = -1;  // a relaxed store released by the wave's earlier release fence: that fence
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
  };

  bool covers(ir::MemScope s, uint32_t a, uint32_t b) const;
  /// An access e that the access now by t (atomic, at scope) races with.
  bool conflicts(const Acc& e, uint32_t t, bool atomic, ir::MemScope scope) const;
  /// A read's shadow update of word s (the reads it keeps, kReads and the overflow list).
  void recordRead(Word& s, const Acc& cur, uint32_t t);
  /// The uninitialized-read check of [lo, lo + n) (lo: the offset in the shadow base covers).
  void checkUninit(uint32_t t, int32_t pc, const SimMemory::Allocation* alloc, int owned, Word* base, uint64_t lo,
                   int n, bool atomic, Use use);
  void reportReadOnlyWrite(uint32_t t, int32_t pc, const SimMemory::Allocation* alloc, uint64_t addr, bool atomic);
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
  bool lastReadOnly_ = false;  // lastAlloc_ is read-only
  const SimMemory::Allocation* lastAlloc_ = nullptr;
  AllocShadow* lastShadow_ = nullptr;
  std::vector<std::vector<Word>> lds_;  // per CTA, allocated on first use
  std::unordered_map<uint64_t, SyncRec> sync_;  // 8-byte word -> its last store's release
  std::unordered_set<uint64_t> seenPairs_;      // (earlier pc, later pc) already reported
  std::vector<std::string> reports_;
  int64_t raceCount_ = 0, uncheckedWrites_ = 0, checks_ = 0;
  std::unordered_set<int32_t> uninitPcs_;  // reading ops already reported as uninitialized reads
  std::vector<std::string> uninitReports_;
};

}  // namespace monogen::runtime
