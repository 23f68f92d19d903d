// The Sim device's race detector (the model: docs/sim.md, "Race detector"): vector clocks,
// release records and shadow memory per 4-byte word (with the bytes each access touched), and the
// race reports.
#include "runtime/sim/SimRaces.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>

#include "ir/Error.h"

namespace monogen::runtime {

namespace {
bool isAcq(ir::MemOrder o) {
  return o == ir::MemOrder::Acquire || o == ir::MemOrder::AcqRel || o == ir::MemOrder::SeqCst;
}
bool isRel(ir::MemOrder o) {
  return o == ir::MemOrder::Release || o == ir::MemOrder::AcqRel || o == ir::MemOrder::SeqCst;
}
}  // namespace

SimRaces::SimRaces(const ir::Plan& plan, const SimProgram& prog, std::vector<WaveInfo> waves, int64_t ldsBytes)
    : plan_(plan), prog_(prog), info_(std::move(waves)), ldsBytes_(ldsBytes) {
  const size_t n = info_.size();
  waves_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    waves_[i].vc.assign(n, 0);
    waves_[i].vc[i] = 1;
    waves_[i].vis[0].assign(n, 0);
    waves_[i].vis[1].assign(n, 0);
  }
  arrived_.assign(n, 0);
  uint32_t nCta = 0;
  for (const WaveInfo& w : info_) nCta = std::max(nCta, w.ctaIndex + 1);
  lds_.resize(nCta);
  ctaGen_.assign(nCta, 0);
}

bool SimRaces::covers(ir::MemScope s, uint32_t a, uint32_t b) const {
  switch (s) {
    case ir::MemScope::Workgroup: return info_[a].ctaIndex == info_[b].ctaIndex;
    case ir::MemScope::Agent: return info_[a].rank == info_[b].rank;
    default: return true;
  }
}

namespace {
int levelOf(ir::MemScope s) { return s == ir::MemScope::Workgroup ? 0 : s == ir::MemScope::Agent ? 1 : 2; }
}  // namespace

const SimRaces::ClockPtr& SimRaces::releaseClock(uint32_t wi, ir::MemScope s) {
  WaveState& w = waves_[wi];
  const int L = levelOf(s);
  for (int l = 1; l <= L; ++l)
    if (w.vis[l - 1][wi] != w.vc[wi]) {
      w.vis[l - 1][wi] = w.vc[wi];
      w.snap[l].reset();
    }
  if (!w.snap[L]) w.snap[L] = std::make_shared<const Clock>(L == 0 ? w.vc : w.vis[L - 1]);
  return w.snap[L];
}

void SimRaces::join(uint32_t wi, const Clock& c, ir::MemScope s) {
  WaveState& w = waves_[wi];
  const int L = levelOf(s);
  for (int l = 0; l <= L; ++l) {
    Clock& v = l == 0 ? w.vc : w.vis[l - 1];
    bool changed = false;
    for (size_t i = 0; i < c.size(); ++i)
      if (c[i] > v[i]) {
        v[i] = c[i];
        changed = true;
      }
    if (changed) w.snap[l].reset();
  }
}

void SimRaces::addNote(std::vector<Note>& notes, Note n) {
  for (const Note& o : notes)
    if (o.clock == n.clock && o.reason == n.reason && o.relPc == n.relPc) return;
  if (notes.size() >= kMaxNotes) notes.erase(notes.begin());
  notes.push_back(std::move(n));
}

void SimRaces::acquireRec(uint32_t wi, int32_t pc, const SyncRec& r, ir::MemOrder o, ir::MemScope s) {
  if (!r.clock || r.wave == wi) return;
  // A relaxed read of a relaxed store is a data pair, ordered (if at all) by something else: no
  // note, so the reads of many such pairs do not evict the notes a race report needs.
  if (!r.isRelease && !isAcq(o)) return;
  Note n{r.clock, r.wave, r.pc, pc, 0, r.scope, s, r.fencePc, r.known, r.gen};
  if (!r.isRelease) n.reason = kNotRelease;
  else if (!isAcq(o)) n.reason = kNotAcquire;
  else if (!covers(r.scope, r.wave, wi)) n.reason = kRelScope;
  else if (!covers(s, r.wave, wi)) n.reason = kAcqScope;
  else {
    join(wi, *r.clock, r.scope);
    n.reason = kJoined;
    addNote(waves_[wi].joins, std::move(n));
    return;
  }
  addNote(waves_[wi].notes, std::move(n));
}

uint64_t SimRaces::syncKey(const SimMemory::Allocation* alloc, uint32_t ctaIndex, uint64_t addr) const {
  addr &= ~3ull;
  return alloc ? addr : ((1ull << 63) | (static_cast<uint64_t>(ctaIndex) << 32) | addr);
}

void SimRaces::own(const SimMemory::Allocation* alloc, int arg) {
  global_[alloc].arg = arg;
  lastAlloc_ = nullptr;
}

SimRaces::Word* SimRaces::shadow(const SimMemory::Allocation* alloc, uint32_t ctaIndex, uint64_t addr, int* owned) {
  if (!alloc) {
    auto& v = lds_[ctaIndex];
    if (v.empty()) v.resize(static_cast<size_t>((ldsBytes_ + 3) / 4));
    *owned = -2;
    return v.data() + addr / 4;
  }
  if (alloc != lastAlloc_ || !lastShadow_) {
    AllocShadow& v = global_[alloc];
    if (v.words.empty()) v.words.resize(static_cast<size_t>((alloc->bytes + 3) / 4));
    lastAlloc_ = alloc;
    lastShadow_ = &v;
  }
  *owned = lastShadow_->arg;
  return lastShadow_->words.data() + (addr - alloc->base) / 4;
}

namespace {
/// The bytes of [lo, lo + n) in 4-byte word wd, as a mask of the word's 4 bytes.
uint8_t bytesIn(uint64_t lo, int n, uint64_t wd) {
  const uint64_t b0 = std::max(lo, wd * 4), b1 = std::min(lo + static_cast<uint64_t>(n), wd * 4 + 4);
  return static_cast<uint8_t>(((1u << (b1 - b0)) - 1) << (b0 - wd * 4));
}
}  // namespace

bool SimRaces::conflicts(const Acc& e, uint32_t t, bool atomic, ir::MemScope scope) const {
  if (e.wave == UINT32_MAX || hb(e, t)) return false;
  return !(atomic && e.atomic && covers(static_cast<ir::MemScope>(e.scope), e.wave, t) && covers(scope, e.wave, t));
}

void SimRaces::access(uint32_t t, int32_t pc, const SimMemory::Allocation* alloc, uint64_t addr, int n, bool write,
                      bool atomic, ir::MemScope scope, Use use) {
  const uint32_t ci = info_[t].ctaIndex;
  ++checks_;
  if (alloc && alloc != lastAlloc_) {
    lastReadOnly_ = readOnly_.count(alloc) > 0;
    if (lastReadOnly_) lastAlloc_ = alloc, lastShadow_ = nullptr;
  }
  if (alloc && lastReadOnly_) {  // no shadow: two reads never race, and a write is reported
    if (write) reportReadOnlyWrite(t, pc, alloc, addr, atomic);
    return;
  }
  const uint64_t lo = alloc ? addr - alloc->base : addr;
  const uint64_t first = lo / 4, last = (lo + static_cast<uint64_t>(n) - 1) / 4;
  int owned = -1;
  Word* base = shadow(alloc, ci, addr, &owned) - (lo / 4);
  if (owned != -1 && use != Use::Write) checkUninit(t, pc, alloc, owned, base, lo, n, atomic, use);
  if (WaveState& w = waves_[t]; w.gen != ctaGen_[ci] || w.epochGen.size() <= w.vc[t]) {
    if (w.gen != ctaGen_[ci]) {  // a CTA mate released since: a new epoch (releasedAfter)
      w.gen = ctaGen_[ci];
      ++w.vc[t];
      for (auto& sn : w.snap) sn.reset();
    }
    if (w.epochGen.size() <= w.vc[t]) w.epochGen.resize(w.vc[t] + 1, 0);
    w.epochGen[w.vc[t]] = w.gen;
  }
  Acc cur{t, waves_[t].vc[t], pc, static_cast<uint8_t>(atomic), static_cast<uint8_t>(scope)};
  for (uint64_t wd = first; wd <= last; ++wd) {
    Word& s = base[wd];
    cur.bytes = bytesIn(lo, n, wd);
    const uint64_t at = std::max((alloc ? alloc->base : 0) + wd * 4, addr);
    auto check = [&](const Acc& e, bool prevWrite) {
      if ((e.bytes & cur.bytes) && conflicts(e, t, atomic, scope))
        report(t, pc, write, atomic, scope, e, prevWrite, alloc, at);
    };
    check(s.write, true);
    if (s.write.flags & kSplit)
      for (const Acc& e : splitWrites_.find(&s)->second) check(e, true);
    if (!write) {
      recordRead(s, cur, t);
      continue;
    }
    for (const Acc& r : s.reads) check(r, false);
    if (s.write.flags & kDropped)  // the reads past kReads since the last write of their bytes
      for (const Acc& r : overflow_.find(&s)->second) check(r, false);
    recordWrite(s, cur);
  }
}

void SimRaces::dropBytes(std::vector<Acc>& v, uint8_t m) {
  for (Acc& a : v) a.bytes &= static_cast<uint8_t>(~m);
  v.erase(std::remove_if(v.begin(), v.end(), [](const Acc& a) { return !a.bytes; }), v.end());
}

void SimRaces::recordWrite(Word& s, Acc cur) {
  // A later access of these bytes is checked against this write, which is ordered after their
  // reads and earlier writes or was reported; the other bytes keep theirs.
  const uint8_t m = cur.bytes;
  uint8_t flags = s.write.flags | m;
  for (Acc& r : s.reads)
    if (r.bytes &= static_cast<uint8_t>(~m); !r.bytes) r = Acc{};
  for (auto [map, bit] : {std::pair{&overflow_, kDropped}, std::pair{&splitWrites_, kSplit}}) {
    if (!(flags & bit)) continue;
    auto it = map->find(&s);
    dropBytes(it->second, m);
    if (it->second.empty()) {
      map->erase(it);
      flags &= static_cast<uint8_t>(~bit);
    }
  }
  if (const Acc& old = s.write; old.bytes & ~m) {
    if (sameEpoch(old, cur)) {
      cur.bytes |= old.bytes;  // the lanes of one op (or one epoch of the wave): one record
    } else {
      Acc e = old;
      e.bytes &= static_cast<uint8_t>(~m);
      e.flags = 0;
      splitWrites_[&s].push_back(e);
      flags |= kSplit;
    }
  }
  s.write = cur;
  s.write.flags = flags;
}

void SimRaces::recordRead(Word& s, Acc cur, uint32_t t) {
  // Drop the bytes of the reads ordered before this one (merge those of its epoch), then add it.
  int k = 0;
  Acc keep[kReads];
  for (Acc r : s.reads) {
    if (!r.bytes) continue;
    if (sameEpoch(r, cur)) {
      cur.bytes |= r.bytes;
      continue;
    }
    if (hb(r, t) && !(r.bytes &= static_cast<uint8_t>(~cur.bytes))) continue;
    keep[k++] = r;
  }
  if (k == kReads) {
    // More unordered readers than the word holds: the oldest moves to the word's overflow list,
    // pruned of the bytes of reads ordered before this one, so a later write is checked against them all.
    std::vector<Acc>& o = overflow_[&s];
    for (Acc& r : o)
      if (hb(r, t)) r.bytes &= static_cast<uint8_t>(~cur.bytes);
    dropBytes(o, 0);
    o.push_back(keep[0]);
    std::move(keep + 1, keep + kReads, keep);
    --k;
    s.write.flags |= kDropped;
  }
  keep[k++] = cur;
  for (int i = 0; i < kReads; ++i) s.reads[i] = i < k ? keep[i] : Acc{};
}

void SimRaces::checkUninit(uint32_t t, int32_t pc, const SimMemory::Allocation* alloc, int owned, Word* base,
                           uint64_t lo, int n, bool atomic, Use use) {
  const uint64_t first = lo / 4, last = (lo + static_cast<uint64_t>(n) - 1) / 4;
  int unwritten = 0;
  uint64_t firstAddr = 0;
  for (uint64_t wd = first; wd <= last; ++wd) {
    uint8_t& init = base[wd].write.flags;
    if (use == Use::WaitPair) {
      init |= kWaited;
      continue;
    }
    const uint8_t miss = bytesIn(lo, n, wd) & ~init & 0xf;
    if (!miss || (atomic && (init & kWaited))) continue;
    if (!unwritten) firstAddr = (alloc ? alloc->base : 0) + wd * 4 + static_cast<uint64_t>(__builtin_ctz(miss));
    unwritten += std::popcount(miss);
  }
  if (unwritten) reportUninit(t, pc, alloc, owned, firstAddr, n, unwritten);
}

void SimRaces::reportReadOnlyWrite(uint32_t t, int32_t pc, const SimMemory::Allocation* alloc, uint64_t addr,
                                   bool atomic) {
  const uint64_t key = (uint64_t{1} << 62) | static_cast<uint64_t>(pc);
  if (!seenPairs_.insert(key).second) return;
  ++raceCount_;
  if (static_cast<int>(reports_.size()) < kMaxReports)
    reports_.push_back(fmt::format("race on '{}' (rank {}) + {}: {} by {} to a read-only weight argument "
                                   "(its reads are not tracked, so no write may touch it)",
                                   alloc->name, alloc->rank, addr - alloc->base, atomic ? "atomic write" : "write",
                                   describe(t, pc)));
}

void SimRaces::storeSync(uint32_t t, int32_t pc, const SimMemory::Allocation* alloc, uint64_t addr, int n,
                         ir::MemOrder o, ir::MemScope s, bool rmw) {
  WaveState& w = waves_[t];
  const uint32_t ci = info_[t].ctaIndex;
  for (uint64_t a = addr & ~3ull; a < addr + static_cast<uint64_t>(n); a += 4) {
    const uint64_t key = syncKey(alloc, ci, a);
    if (o == ir::MemOrder::Plain) {
      sync_.erase(key);
      continue;
    }
    SyncRec r;
    r.wave = t;
    r.pc = pc;
    r.scope = s;
    if (isRel(o)) {
      r.clock = releaseClock(t, s);
      r.known = releaseClock(t, ir::MemScope::Workgroup);
      r.isRelease = true;
      if (!w.released) ++ctaGen_[ci];
      r.gen = ctaGen_[ci];
      w.released = true;
    } else if (w.fenceSnap) {
      r.clock = w.fenceSnap;
      r.known = releaseClock(t, ir::MemScope::Workgroup);  // what the wave knew at the store
      r.fencePc = w.fencePc;
      r.scope = w.fenceScope;
      r.gen = w.fenceGen;
      r.isRelease = true;
    } else {
      r.clock = releaseClock(t, ir::MemScope::Workgroup);  // not a release: for the report only
    }
    if (rmw) {
      auto it = sync_.find(key);
      if (it != sync_.end() && it->second.isRelease) {
        if (!r.isRelease) continue;  // a relaxed RMW continues the release sequence
        Clock c = *r.clock;
        const Clock& old = *it->second.clock;
        for (size_t i = 0; i < c.size(); ++i) c[i] = std::max(c[i], old[i]);
        r.clock = std::make_shared<const Clock>(std::move(c));
      }
    }
    sync_[key] = std::move(r);
  }
}

void SimRaces::loadSync(uint32_t t, int32_t pc, const SimMemory::Allocation* alloc, uint64_t addr, int n,
                        ir::MemOrder o, ir::MemScope s) {
  const uint32_t ci = info_[t].ctaIndex;
  for (uint64_t a = addr & ~3ull; a < addr + static_cast<uint64_t>(n); a += 4) {
    auto it = sync_.find(syncKey(alloc, ci, a));
    if (it == sync_.end()) continue;
    const SyncRec& r = it->second;
    if (!isAcq(o) && r.isRelease && r.wave != t) {
      // Relaxed: an acquire fence later in this wave may still take it.
      auto& p = waves_[t].pending;
      bool have = false;
      for (const SyncRec& q : p) have |= q.clock == r.clock;
      if (!have) {
        if (p.size() >= 64) p.erase(p.begin());
        p.push_back(r);
      }
    }
    acquireRec(t, pc, r, o, s);
  }
}

void SimRaces::endRelease(uint32_t t) {
  WaveState& w = waves_[t];
  if (!w.released) return;
  w.released = false;
  ++w.vc[t];
  for (auto& p : w.snap) p.reset();
}

void SimRaces::fence(uint32_t t, int32_t pc, ir::MemOrder o, ir::MemScope s) {
  WaveState& w = waves_[t];
  if (isAcq(o)) {
    std::vector<SyncRec> p;
    p.swap(w.pending);
    for (const SyncRec& r : p) {
      // The relaxed read's notes were taken at the read; here the fence is the acquire.
      if (covers(r.scope, r.wave, t) && covers(s, r.wave, t)) {
        join(t, *r.clock, r.scope);
        addNote(w.joins, Note{r.clock, r.wave, r.pc, pc, kJoined, r.scope, s, r.fencePc, r.known, r.gen});
      } else addNote(w.notes, Note{r.clock, r.wave, r.pc, pc, covers(r.scope, r.wave, t) ? kAcqScope : kRelScope, r.scope, s, r.fencePc, r.known, r.gen});
    }
  }
  if (isRel(o)) {
    w.fenceSnap = releaseClock(t, s);
    w.fencePc = pc;
    w.fenceScope = s;
    if (!w.released) ++ctaGen_[info_[t].ctaIndex];
    w.fenceGen = ctaGen_[info_[t].ctaIndex];
    w.released = true;
    endRelease(t);
  }
}

void SimRaces::barrier(uint32_t firstWave, uint32_t waves) {
  Clock c(waves_.size(), 0), vis[2] = {c, c};
  std::vector<Note> notes, joins;
  for (uint32_t i = firstWave; i < firstWave + waves; ++i) {
    if (!arrived_[i]) continue;
    const Clock& v = waves_[i].vc;
    for (size_t j = 0; j < c.size(); ++j) c[j] = std::max(c[j], v[j]);
    for (int l = 0; l < 2; ++l)
      for (size_t j = 0; j < c.size(); ++j) vis[l][j] = std::max(vis[l][j], waves_[i].vis[l][j]);
    for (const Note& n : waves_[i].notes) notes.push_back(n);
    for (const Note& n : waves_[i].joins) joins.push_back(n);
  }
  for (uint32_t i = firstWave; i < firstWave + waves; ++i) {
    if (!arrived_[i]) continue;
    arrived_[i] = 0;
    WaveState& w = waves_[i];
    w.vc = c;
    ++w.vc[i];
    w.vis[0] = vis[0];
    w.vis[1] = vis[1];
    for (auto& p : w.snap) p.reset();
    for (const Note& n : notes) addNote(w.notes, n);
    for (const Note& n : joins) addNote(w.joins, n);
  }
}

// ---------------------------------------------------------------------------------------------
// Reports

std::string SimRaces::describe(uint32_t wi, int32_t pc) const {
  const SimInst& in = prog_.insts[static_cast<size_t>(pc)];
  const std::string stage =
      in.stage >= 0 && in.stage < static_cast<int>(plan_.stages.size()) ? plan_.stages[in.stage].name : "(no stage)";
  const WaveInfo& w = info_[wi];
  return fmt::format("stage '{}' op #{} {} (rank {} CTA {} wave {})", stage, in.opNum, ir::opName(in.op->code),
                     w.rank, w.cta, w.wave);
}

std::string SimRaces::opOf(int32_t pc) const {
  const SimInst& in = prog_.insts[static_cast<size_t>(pc)];
  return fmt::format("op #{} {}", in.opNum, ir::opName(in.op->code));
}

std::string SimRaces::uncovered(ir::MemScope s, uint32_t a, uint32_t b) const {
  if (s == ir::MemScope::Workgroup && info_[a].rank == info_[b].rank)
    return fmt::format("CTAs {} and {}", info_[a].cta, info_[b].cta);
  return fmt::format("ranks {} and {}", info_[a].rank, info_[b].rank);
}

std::string SimRaces::why(uint32_t t, const Acc& prev) const {
  // Two waves of one CTA (LDS, or global memory): what orders them is the CTA barrier; the notes
  // and release records are about edges between CTAs and would name the wrong one.
  if (info_[prev.wave].ctaIndex == info_[t].ctaIndex) return "no barrier or release/acquire between them";
  std::string r = whyFromNotes(t, prev);
  if (r.empty()) r = whyFromJoins(t, prev);
  if (r.empty()) r = whyFromReleases(t, prev);
  return r.empty() ? "no release/acquire between them" : r;
}

std::string SimRaces::whyFromNotes(uint32_t t, const Acc& prev) const {
  // A note whose store carried the access; failing that (notes are bounded, kMaxNotes), a note of
  // the same release site when another store of that site on memory carries it. A relaxed store
  // does not tick its wave's clock, so a match by its own wave is ambiguous: tried last.
  auto carries = [&](const ClockPtr& c, uint32_t storer, bool relaxed, bool strict) {
    const uint32_t v = (*c)[prev.wave];
    return strict && relaxed && storer == prev.wave ? v > prev.clock : v >= prev.clock;
  };
  const Note* found = nullptr;
  for (bool strict : {true, false}) {
    for (auto it = waves_[t].notes.rbegin(); it != waves_[t].notes.rend() && !found; ++it)
      if (carries(it->clock, it->relWave, it->reason == kNotRelease, strict)) found = &*it;
    for (auto it = waves_[t].notes.rbegin(); it != waves_[t].notes.rend() && !found; ++it)
      for (const auto& [key, r] : sync_)
        if (r.pc == it->relPc && r.clock && carries(r.clock, r.wave, !r.isRelease, strict)) {
          found = &*it;
          break;
        }
    if (found) break;
  }
  if (!found) return {};
  const Note& n = *found;
  switch (n.reason) {
    case kNotRelease:
      return fmt::format("missing release: {} (read by {}) is relaxed, not a release", opOf(n.relPc), opOf(n.acqPc));
    case kNotAcquire:
      return fmt::format("missing acquire: {} reads the release of {} but is relaxed, not an acquire", opOf(n.acqPc),
                         opOf(n.relPc));
    case kRelScope:
      return fmt::format("scope: the release at {} scope ({}) does not cover {}", ir::memScopeName(n.relScope),
                         opOf(n.relPc), uncovered(n.relScope, n.relWave, t));
    default:
      return fmt::format("scope: the acquire at {} scope ({}) does not cover {}", ir::memScopeName(n.acqScope),
                         opOf(n.acqPc), uncovered(n.acqScope, n.relWave, t));
  }
}

std::string SimRaces::whyFromJoins(uint32_t t, const Acc& prev) const {
  // A relaxed store after a release fence of its wave releases what that wave had done by the
  // fence: one this wave acquired whose storer knew of the access at the store but not at the
  // fence is a missing release (the publish should have been a release).
  for (auto it = waves_[t].joins.rbegin(); it != waves_[t].joins.rend(); ++it) {
    const Note& n = *it;
    if (n.fencePc < 0 || !n.known || (*n.clock)[prev.wave] >= prev.clock || (*n.known)[prev.wave] < prev.clock)
      continue;
    return fmt::format("missing release: {} by rank {} CTA {} wave {} (acquired by {}) is relaxed; its release is "
                       "that wave's earlier fence {}, which does not carry the access",
                       opOf(n.relPc), info_[n.relWave].rank, info_[n.relWave].cta, info_[n.relWave].wave,
                       opOf(n.acqPc), opOf(n.fencePc));
  }
  // A release this wave did acquire, from the writer's CTA, issued after the access, that did not
  // carry it: the writer's wave was not drained into the releasing wave (a barrier) before the release.
  for (auto it = waves_[t].joins.rbegin(); it != waves_[t].joins.rend(); ++it) {
    const Note& n = *it;
    if (n.relWave == prev.wave || info_[n.relWave].ctaIndex != info_[prev.wave].ctaIndex) continue;
    if ((*n.clock)[prev.wave] >= prev.clock || !releasedAfter(n.gen, prev)) continue;
    return fmt::format("missing drain: the release {} by wave {} (acquired by {}) does not carry wave {}'s access: "
                       "wave {} needs a release at {} scope (ctaSync(drain)'s fence) and then a barrier before it",
                       opOf(n.relPc), info_[n.relWave].wave, opOf(n.acqPc), info_[prev.wave].wave,
                       info_[prev.wave].wave, ir::memScopeName(n.relScope));
  }
  return {};
}

std::string SimRaces::whyFromReleases(uint32_t t, const Acc& prev) const {
  // Among the releases still on memory (the notes are bounded): one that carries the access at a
  // scope that does not cover this wave.
  for (const auto& [key, r] : sync_) {
    if (!r.isRelease || (*r.clock)[prev.wave] < prev.clock || covers(r.scope, r.wave, t)) continue;
    return fmt::format("scope: the release by {} carries it, but at {} scope, which does not cover {}",
                       describe(r.wave, r.pc), ir::memScopeName(r.scope), uncovered(r.scope, r.wave, t));
  }
  // One this wave acquired, by another wave of the writer's CTA (or a relaxed store released by an
  // earlier fence, from any CTA), that knew of the access but did not carry it.
  for (const auto& [key, r] : sync_) {
    if (!r.isRelease) continue;
    if (r.fencePc < 0 && (r.wave == prev.wave || info_[r.wave].ctaIndex != info_[prev.wave].ctaIndex)) continue;
    if ((*r.clock)[prev.wave] >= prev.clock || (*r.known)[prev.wave] < prev.clock ||
        waves_[t].vc[r.wave] < (*r.clock)[r.wave])
      continue;
    if (r.fencePc >= 0)
      return fmt::format("missing release: {} by rank {} CTA {} wave {} (which this wave acquired) is relaxed; its "
                         "release is that wave's earlier fence {}, which does not carry the access",
                         opOf(r.pc), info_[r.wave].rank, info_[r.wave].cta, info_[r.wave].wave, opOf(r.fencePc));
    return fmt::format("missing drain: the release {} by wave {} (which this wave acquired) does not carry wave {}'s "
                       "access: wave {} needs a release at {} scope (ctaSync(drain)'s fence) and then a barrier "
                       "before it",
                       opOf(r.pc), info_[r.wave].wave, info_[prev.wave].wave, info_[prev.wave].wave,
                       ir::memScopeName(r.scope));
  }
  return {};
}

void SimRaces::report(uint32_t t, int32_t pc, bool write, bool atomic, ir::MemScope scope, const Acc& prev,
                      bool prevWrite, const SimMemory::Allocation* alloc, uint64_t addr) {
  const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(prev.pc)) << 32) | static_cast<uint32_t>(pc);
  if (!seenPairs_.insert(key).second) return;
  ++raceCount_;
  if (static_cast<int>(reports_.size()) >= kMaxReports) return;
  auto kind = [](bool wr, bool at) { return fmt::format("{}{}", at ? "atomic " : "", wr ? "write" : "read"); };
  const std::string region =
      alloc ? fmt::format("'{}' (rank {}) + {}", alloc->name, alloc->rank, addr - alloc->base)
            : fmt::format("LDS of CTA {} (rank {}) + {}", info_[t].cta, info_[t].rank, addr);
  std::string reason;
  if (atomic && prev.atomic) {
    // Two atomics race only when a scope does not cover both waves.
    const auto ps = static_cast<ir::MemScope>(prev.scope);
    const bool rankWide = info_[prev.wave].rank != info_[t].rank;
    reason = fmt::format("scope: atomics at {} and {} scope do not cover {} {} and {}", ir::memScopeName(ps),
                         ir::memScopeName(scope), rankWide ? "ranks" : "CTAs",
                         rankWide ? info_[prev.wave].rank : info_[prev.wave].cta, rankWide ? info_[t].rank : info_[t].cta);
  } else {
    reason = why(t, prev);
  }
  reports_.push_back(fmt::format("race on {}: {} by {}, then {} by {}: {}", region, kind(prevWrite, prev.atomic),
                                 describe(prev.wave, prev.pc), kind(write, atomic), describe(t, pc), reason));
}

void SimRaces::reportUninit(uint32_t t, int32_t pc, const SimMemory::Allocation* alloc, int owned, uint64_t addr,
                            int bytes, int unwritten) {
  if (!uninitPcs_.insert(pc).second) return;
  if (static_cast<int>(uninitReports_.size()) >= kMaxReports) return;
  std::string region;
  if (!alloc) {
    region = fmt::format("LDS of CTA {} (rank {}) + {}", info_[t].cta, info_[t].rank, addr);
    std::string pools;
    for (const ir::LdsPool& p : plan_.pools)
      if (static_cast<int64_t>(addr) >= p.offset && static_cast<int64_t>(addr) < p.offset + p.bytes)
        pools += fmt::format("{}pool '{}' + {}", pools.empty() ? "" : ", ", p.name, static_cast<int64_t>(addr) - p.offset);
    if (!pools.empty()) region += " (" + pools + ")";
  } else {
    const int64_t off = static_cast<int64_t>(addr - alloc->base);
    region = fmt::format("'{}' (rank {}) + {}", alloc->name, alloc->rank, off);
    if (owned >= 0 && owned < static_cast<int>(plan_.args.size())) {
      const std::string& buf = plan_.args[static_cast<size_t>(owned)].name;
      std::string in = fmt::format("argument '{}'", buf);
      for (const ir::MemRegion& r : plan_.regions)
        if (r.buffer == buf && off >= r.offset && off < r.offset + r.bytes)
          in += fmt::format(", region '{}' + {}", r.name, off - r.offset);
      region += " (" + in + ")";
    }
  }
  uninitReports_.push_back(fmt::format("uninitialized read of {}: {} of the {} bytes read no op of this launch wrote, "
                                       "by {}",
                                       region, unwritten, bytes, describe(t, pc)));
}

void SimRaces::finish(SimStats& stats) const {
  stats.raceCount += raceCount_;
  stats.raceUncheckedWrites += uncheckedWrites_;
  stats.raceChecks += checks_;
  for (const std::string& r : reports_) stats.races.push_back(plan_.key.variantName() + ": " + r);
  stats.uninitCount += static_cast<int64_t>(uninitPcs_.size());
  for (const std::string& r : uninitReports_) stats.uninit.push_back(plan_.key.variantName() + ": " + r);
}

}  // namespace monogen::runtime
