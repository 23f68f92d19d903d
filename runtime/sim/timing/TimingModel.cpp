// TimingModel: per-wave issue, the scoreboard, drains, flag visibility and the modeled result.
#include "runtime/sim/timing/TimingModel.h"

#include <algorithm>
#include <cmath>

namespace monogen::runtime::timing {

namespace {

bool releases(ir::MemOrder o) {
  return o == ir::MemOrder::Release || o == ir::MemOrder::AcqRel || o == ir::MemOrder::SeqCst;
}
bool acquires(ir::MemOrder o) {
  return o == ir::MemOrder::Acquire || o == ir::MemOrder::AcqRel || o == ir::MemOrder::SeqCst;
}
int regs(int bytes) { return std::max(1, (bytes + 3) / 4); }

}  // namespace

TimingModel::TimingModel(const TimingParams& params, const ir::Plan& plan, const SimProgram& prog, int ranks,
                         int blocks, int wavesPerCta)
    : c_(params),
      prog_(prog),
      mem_(c_, ranks),
      blocks_(blocks),
      wavesPerCta_(wavesPerCta),
      stages_(static_cast<int>(plan.stages.size())),
      slotsPerWave_(prog.frameBytes / 64 + 1) {
  const size_t nWave = static_cast<size_t>(ranks) * blocks * wavesPerCta;
  w_.resize(nWave);
  for (size_t wi = 0; wi < nWave; ++wi) {
    const size_t ci = wi / wavesPerCta;
    w_[wi].rank = static_cast<int32_t>(ci / blocks);
    w_[wi].cta = static_cast<int32_t>(ci % blocks);
    w_[wi].simd = static_cast<int32_t>((wi % wavesPerCta) % kSimdsPerCu);
  }
  class_.reserve(prog.insts.size());
  for (const SimInst& in : prog.insts) class_.push_back(costClassOf(in.code));
  constDiv_ = constantDivisions(prog);
  // Integer ops on wave-uniform values issue on the SALU (gfx950 has no scalar float ops).
  const std::vector<bool> uni = uniformResults(prog);
  scalar_.assign(prog.insts.size(), false);
  for (size_t pc = 0; pc < prog.insts.size(); ++pc) {
    const SimInst& in = prog.insts[pc];
    const auto code = static_cast<ir::OpCode>(in.code);
    scalar_[pc] = uni[pc] && (class_[pc] == CostClass::Valu || class_[pc] == CostClass::Divide) &&
                  !in.rt.isFloat() && !in.t0.isFloat() && !in.t1.isFloat() && code != ir::OpCode::ReadFirstLane &&
                  code != ir::OpCode::CtaUniform &&
                  code != ir::OpCode::Ballot && code != ir::OpCode::Shuffle;
  }
  // IR loop depths: a for spans its check .. its step, a while its condition .. its back jump.
  std::vector<int32_t> delta(prog.insts.size() + 1, 0);
  loopStart_.assign(prog.insts.size(), 0);
  for (size_t pc = 0; pc < prog.insts.size(); ++pc) {
    const SimInst& in = prog.insts[pc];
    if ((in.code == kSimForStep || in.code == kSimJump) && in.target >= 0 && static_cast<size_t>(in.target) <= pc) {
      ++delta[static_cast<size_t>(in.target)];
      --delta[pc + 1];
      loopStart_[static_cast<size_t>(in.target)] = 1;
    }
  }
  irDepth_.assign(prog.insts.size(), 0);
  for (size_t pc = 0, d = 0; pc < prog.insts.size(); ++pc) {
    d += delta[pc];
    irDepth_[pc] = static_cast<int32_t>(d);
    if (loopStart_[pc]) loopStart_[pc] = irDepth_[pc];
    maxIrDepth_ = std::max(maxIrDepth_, irDepth_[pc]);
  }
  if (params.isa) {
    // An ALU op (and a loop's or if's check) charges its op's attributed SALU / VALU / trans / cvt
    // instructions; memory, MFMA and sync ops keep their class cost; other pseudo-ops are free.
    const IsaCounts& ic = *params.isa;
    isaUnowned_ = ic.total(0);
    isa_.resize(prog.insts.size());
    const auto part = [](const std::array<int32_t, kIsaKinds>& n) {
      IsaPart p;
      for (int32_t k : n) p.all += k;
      p.s = n[kIsaSalu] + n[kIsaSmem] + n[kIsaBranch] + n[kIsaWaitcnt] + n[kIsaOther];
      p.t = n[kIsaTrans];
      p.c = n[kIsaCvt];
      p.v = p.all - p.s - p.t - p.c;  // VALU, and any VMEM / LDS / MFMA LLVM gave an ALU op
      return p;
    };
    for (size_t pc = 0; pc < prog.insts.size(); ++pc) {
      const SimInst& in = prog.insts[pc];
      const CostClass k = class_[pc];
      const bool pseudo = in.code >= kSimIfBegin;
      const bool check = in.code == kSimIfBegin || in.code == kSimForCheck || in.code == kSimWhileCheck;
      const bool alu = !pseudo && (k == CostClass::Free || k == CostClass::Salu || k == CostClass::Valu ||
                                   k == CostClass::Trans || k == CostClass::Convert || k == CostClass::Divide);
      IsaCharge& ch = isa_[pc];
      ch.use = alu || pseudo;
      if (pseudo && !check) continue;  // free: its op's instructions count at its check
      const auto op = static_cast<size_t>(in.opNum);
      if (op >= ic.byOp.size()) continue;
      if (op >= ic.byDepth.size() || ic.byDepth[op].empty()) {
        ch.every = part(ic.byOp[op]);
        continue;
      }
      const auto& byDepth = ic.byDepth[op];
      for (size_t d = 0; d < byDepth.size(); ++d) {
        IsaPart p = part(byDepth[d]);
        if (p.all == 0) continue;
        if (static_cast<int32_t>(d) >= irDepth_[pc]) {
          ch.every += p;
        } else {
          p.depth = static_cast<int32_t>(d);
          p.stamp = hoistedParts_++;
          ch.hoisted.push_back(p);
        }
      }
    }
    epochs_.assign(nWave * (static_cast<size_t>(maxIrDepth_) + 1), 0);
    stamps_.assign(nWave * static_cast<size_t>(hoistedParts_), -1);
  }
  ready_.assign(nWave * slotsPerWave_, 0.0);
  fromMem_.assign(nWave * slotsPerWave_, 0);
  pipes_.assign(static_cast<size_t>(ranks) * kXcds * kCusPerXcd * kSimdsPerCu * kPipes, 0.0);
  splits_.assign(nWave * (stages_ + 1) * kSplits, 0.0);
  for (size_t i = kFirst; i < splits_.size(); i += kSplits) splits_[i] = -1;
  barrierAt_.assign(static_cast<size_t>(ranks) * blocks, 0.0);
}

double TimingModel::drained(const Wave& w, ir::MemScope s) const {
  return std::max(w.loadsDone, w.storesDone + release(s));
}
double TimingModel::release(ir::MemScope s) const {
  return s == ir::MemScope::System ? c_.releaseSystem : s == ir::MemScope::Agent ? c_.releaseAgent : 0;
}
double TimingModel::acquire(ir::MemScope s) const {
  return s == ir::MemScope::System ? c_.acquireSystem : s == ir::MemScope::Agent ? c_.acquireAgent : 0;
}
double TimingModel::visibility(const TimingPlace& from, const TimingPlace& to) const {
  if (from.rank != to.rank) return c_.visiblePeer;
  return from.xcd != to.xcd ? c_.visibleOtherXcd : c_.visibleSameXcd;
}

void TimingModel::advance(uint32_t wi, double to, Split kind) {
  Wave& w = w_[wi];
  if (to <= w.t) return;
  double* sp = split(wi, w.curStage);
  sp[kind] += to - w.t;
  w.t = to;
  sp[kLast] = to;
}

bool TimingModel::issue(uint32_t wi, int32_t pc, double horizon) {
  if (!issueOp(wi, pc, horizon)) return false;
  if (isa_.empty()) return true;
  isaInstructions_ += isaDue(wi, pc, true).all;  // a deferred op counts when it issues
  if (loopStart_[pc]) ++epochs_[wi * (static_cast<size_t>(maxIrDepth_) + 1) + loopStart_[pc]];
  return true;
}

TimingModel::IsaPart TimingModel::isaDue(uint32_t wi, int32_t pc, bool take) {
  const IsaCharge& ch = isa_[pc];
  IsaPart due = ch.every;
  for (const IsaPart& h : ch.hoisted) {
    const int64_t epoch = epochs_[wi * (static_cast<size_t>(maxIrDepth_) + 1) + h.depth];
    int64_t& stamp = stamps_[wi * static_cast<size_t>(hoistedParts_) + h.stamp];
    if (stamp == epoch) continue;
    due += h;
    if (take) stamp = epoch;
  }
  return due;
}

bool TimingModel::issueOp(uint32_t wi, int32_t pc, double horizon) {
  Wave& w = w_[wi];
  const SimInst& in = prog_.insts[pc];
  const CostClass cls = class_[pc];
  if (in.stage != w.curStage) {
    w.curStage = in.stage;
    if (in.stage >= 0) w.lastStage = in.stage;
  }
  double* sp = split(wi, w.curStage);
  if (sp[kFirst] < 0) sp[kFirst] = w.t;
  // The operands' readiness (a variable is a register too).
  double opReady = 0;
  bool mem = false;
  auto input = [&](uint32_t slot) {
    if (slot == kSimNoSlot) return;
    const double r = ready(wi, slot);
    if (r > opReady) {
      opReady = r;
      mem = fromMemory(wi, slot) != 0;
    }
  };
  for (uint32_t s : in.opd) input(s);
  const auto code = static_cast<ir::OpCode>(in.code);
  const bool isVarLoad = in.code < kSimIfBegin && code == ir::OpCode::VarLoad;
  const bool isVarStore = in.code < kSimIfBegin && code == ir::OpCode::VarStore;
  if (isVarLoad) input(in.var);
  if (!isa_.empty() && isa_[pc].use) return issueIsa(wi, pc, in, opReady, mem, horizon);
  if (cls == CostClass::Free) {  // a register view: the value is ready when its inputs are
    const uint32_t out = isVarStore ? in.var : in.res;
    if (out != kSimNoSlot) {
      ready(wi, out) = opReady;
      fromMemory(wi, out) = mem;
    }
    return true;
  }
  const ir::Attrs& at = in.op->attrs;
  if (cls == CostClass::Fence) {
    if (at.scope != ir::MemScope::Workgroup) {
      double to = w.t;
      if (releases(at.order)) to = std::max(to, drained(w, at.scope));
      if (acquires(at.order)) to = std::max(to, w.loadsDone) + acquire(at.scope);
      if (to > horizon) {
        w.wake = to;
        return false;
      }
      advance(wi, to, kMemory);
    }
    w.wake = 0;
    return true;
  }
  Pipe p = kValu;
  double busy = c_.valuIssue, lat = c_.valuLatency;
  int count = 1;
  switch (cls) {
    case CostClass::Free: case CostClass::Fence: break;
    case CostClass::Salu: case CostClass::Barrier: case CostClass::Sleep:
      p = kSalu, busy = c_.saluIssue, lat = c_.saluLatency;
      break;
    case CostClass::Realtime: p = kSalu, busy = c_.saluIssue, lat = c_.realtimeLatency; break;
    case CostClass::Valu:
      count = regs(in.rt.bytes());
      if (scalar_[pc]) p = kSalu, busy = c_.saluIssue, lat = c_.saluLatency;
      break;
    case CostClass::Trans: busy = c_.transIssue, lat = c_.transLatency, count = regs(in.rt.bytes()); break;
    case CostClass::Convert:
      busy = c_.cvtIssue, lat = c_.cvtLatency, count = regs(std::max(in.rt.bytes(), in.t0.bytes()));
      break;
    case CostClass::Divide:
      busy = c_.divideIssue, lat = c_.divideIssue + c_.valuLatency;
      if (constDiv_[pc]) count = constDiv_[pc] * regs(in.rt.bytes()), busy = c_.valuIssue, lat = c_.valuLatency;
      if (scalar_[pc]) p = kSalu;
      break;
    case CostClass::Mfma:
      p = kXdl;
      // MfmaScale's A is E4M3 (ir/Mfma.h): an f8 operand takes 8 passes, not fp4/fp6's 4.
      if (code == ir::OpCode::MfmaScale) busy = c_.mfmaScaleF8Busy, lat = c_.mfmaScaleF8Latency;
      else if (at.mfma == ir::MfmaKind::F32_16x16x32_FP8) busy = c_.mfmaFp8Busy, lat = c_.mfmaFp8Latency;
      else if (at.mfma == ir::MfmaKind::F32_16x16x4_F32) busy = c_.mfmaF32Busy, lat = c_.mfmaF32Latency;
      else busy = c_.mfmaBf16Busy, lat = c_.mfmaBf16Latency;
      break;
    case CostClass::Memory: case CostClass::Publish: case CostClass::Wait: {
      const bool lds = in.t0.space == ir::AddrSpace::Lds;
      p = lds ? kLds : kVmem, busy = lds ? c_.ldsIssue : c_.vmemIssue, lat = 0;
      if (cls == CostClass::Memory) {
        const bool store = code == ir::OpCode::Store;
        count = std::max(1, ((store ? in.t1.bytes() : in.rt.bytes()) + 15) / 16);
        if (!lds && code != ir::OpCode::Load && releases(at.order) && at.scope != ir::MemScope::Workgroup &&
            drained(w, at.scope) > opReady) {
          opReady = drained(w, at.scope);
          mem = true;
        }
      } else if (cls == CostClass::Publish && !lds && releases(at.order) && at.scope != ir::MemScope::Workgroup &&
                 drained(w, at.scope) > opReady) {
        opReady = drained(w, at.scope);
        mem = true;
      }
      break;
    }
  }
  double& pf = pipe(w, p);
  const double start = std::max({w.t, pf, opReady});
  if (start > horizon) {
    w.wake = start;
    return false;
  }
  w.wake = 0;
  advance(wi, pf, kIssue);
  advance(wi, opReady, mem ? kMemory : kIssue);
  w.start = w.t;
  pf = w.start + count * busy;
  instructions_ += count;
  advance(wi, w.start + count * c_.issueInterval, kIssue);
  if (in.res != kSimNoSlot) {
    ready(wi, in.res) = w.start + (count - 1) * std::max(busy, c_.issueInterval) + lat;
    fromMemory(wi, in.res) = 0;
  }
  if (cls == CostClass::Sleep) advance(wi, w.t + static_cast<double>(std::max<int64_t>(1, at.imm)) * c_.sleepUnit, kFlag);
  if (cls == CostClass::Wait) {
    w.waitStart = w.start;
    w.waitVisible = -1;
  }
  return true;
}

bool TimingModel::issueIsa(uint32_t wi, int32_t pc, const SimInst& in, double opReady, bool mem, double horizon) {
  Wave& w = w_[wi];
  const IsaPart ch = isaDue(wi, pc, false);
  const auto code = static_cast<ir::OpCode>(in.code);
  const uint32_t out = in.code < kSimIfBegin && code == ir::OpCode::VarStore ? in.var : in.res;
  const int n = ch.s + ch.v + ch.t + ch.c;
  if (n == 0) {  // folded away: the value is ready when its inputs are
    if (out != kSimNoSlot) {
      ready(wi, out) = opReady;
      fromMemory(wi, out) = mem;
    }
    return true;
  }
  const int vec = ch.v + ch.t + ch.c;
  double pf = 0;
  if (ch.s) pf = std::max(pf, pipe(w, kSalu));
  if (vec) pf = std::max(pf, pipe(w, kValu));
  const double start = std::max({w.t, pf, opReady});
  if (start > horizon) {
    w.wake = start;
    return false;
  }
  w.wake = 0;
  advance(wi, pf, kIssue);
  advance(wi, opReady, mem ? kMemory : kIssue);
  w.start = w.t;
  if (ch.s) pipe(w, kSalu) = w.start + ch.s * c_.saluIssue;
  if (vec) pipe(w, kValu) = w.start + ch.v * c_.valuIssue + ch.t * c_.transIssue + ch.c * c_.cvtIssue;
  instructions_ += n;
  advance(wi, w.start + n * c_.issueInterval, kIssue);
  if (out != kSimNoSlot) {
    const double lat = ch.t ? c_.transLatency : ch.c ? c_.cvtLatency : ch.v ? c_.valuLatency : c_.saluLatency;
    ready(wi, out) = w.start + (n - 1) * c_.issueInterval + lat;
    fromMemory(wi, out) = 0;
  }
  return true;
}

void TimingModel::memory(uint32_t wi, int32_t pc, Access kind, const uint64_t* addrs, int na, int n,
                         const SimMemory::Allocation* alloc) {
  Wave& w = w_[wi];
  const SimInst& in = prog_.insts[pc];
  const TimingPlace at = TimingPlace::of(w.rank, w.cta);
  double done;
  if (in.t0.space == ir::AddrSpace::Lds) {
    done = mem_.lds(w.start, at, static_cast<double>(na) * n);
  } else {
    uint64_t lines[130];
    int nl = 0;
    for (int i = 0; i < na; ++i)
      for (uint64_t l = addrs[i] / kLineBytes; l <= (addrs[i] + n - 1) / kLineBytes; ++l)
        if (nl == 0 || lines[nl - 1] < l) {
          if (nl == 130) break;
          lines[nl++] = l;
        }
    const TimingTarget to{alloc ? alloc->rank : w.rank, alloc && weights_.count(alloc) != 0};
    done = kind == Access::Load    ? mem_.load(w.start, at, to, lines, nl)
           : kind == Access::Store ? mem_.store(w.start, at, to, lines, nl)
                                   : mem_.atomic(w.start, at, to, lines, nl);
  }
  if (kind != Access::Store) {
    if (acquires(in.op->attrs.order) && in.op->attrs.scope != ir::MemScope::Workgroup)
      done = std::max(done, w.loadsDone) + acquire(in.op->attrs.scope);
    if (in.res != kSimNoSlot) {
      ready(wi, in.res) = done;
      fromMemory(wi, in.res) = 1;
    }
    w.loadsDone = std::max(w.loadsDone, done);
  }
  if (kind != Access::Load) w.storesDone = std::max(w.storesDone, done);
}

void TimingModel::publish(uint32_t wi, uint64_t key, int owner, bool lds) {
  Wave& w = w_[wi];
  const TimingPlace at = TimingPlace::of(w.rank, w.cta);
  pubs_[key] = Pub{w.start, at};
  if (!lds) w.storesDone = std::max(w.storesDone, w.start + (owner != w.rank ? c_.visiblePeer : c_.storeLatency));
}

void TimingModel::waitLane(uint32_t wi, uint64_t key, bool lds) {
  Wave& w = w_[wi];
  auto it = pubs_.find(key);
  if (it == pubs_.end()) return;  // published before the launch
  const double v = it->second.t + (lds ? c_.ldsLatency : visibility(it->second.at, TimingPlace::of(w.rank, w.cta)));
  w.waitVisible = std::max(w.waitVisible, v);
}

void TimingModel::waitTimedOut(uint32_t wi, int64_t deadlineTicks) {
  w_[wi].waitVisible = std::max(w_[wi].waitVisible, cyclesAt(deadlineTicks));
}

void TimingModel::waitEnd(uint32_t wi, int32_t pc) {
  Wave& w = w_[wi];
  const SimInst& in = prog_.insts[pc];
  const bool lds = in.t0.space == ir::AddrSpace::Lds;
  const double period = lds ? c_.ldsLatency : c_.pollPeriod;
  const double late = w.waitVisible - w.waitStart;
  // the next poll after it became visible (a relative 1e-9 keeps an exact multiple from rounding up)
  double done = w.waitStart + (late > 0 ? std::ceil(late / period - 1e-9) : 0) * period + period;
  const ir::Attrs& at = in.op->attrs;
  if (!lds && acquires(at.order) && at.scope != ir::MemScope::Workgroup)
    done = std::max(done, w.loadsDone) + acquire(at.scope);
  advance(wi, done, kFlag);
  if (in.res != kSimNoSlot) {
    ready(wi, in.res) = done;
    fromMemory(wi, in.res) = 0;
  }
  w.loadsDone = std::max(w.loadsDone, done);
}

void TimingModel::arrive(uint32_t wi) {
  w_[wi].atBarrier = true;
  double& b = barrierAt_[wi / wavesPerCta_];
  b = std::max(b, w_[wi].t);
}

void TimingModel::releaseBarrier(uint32_t firstWave, uint32_t waves) {
  double& b = barrierAt_[firstWave / wavesPerCta_];
  const double open = b + c_.barrierLatency;
  for (uint32_t i = firstWave; i < firstWave + waves; ++i)
    if (w_[i].atBarrier) {
      advance(i, open, kBarrier);
      w_[i].atBarrier = false;
    }
  b = 0;
}

void TimingModel::exit(uint32_t wi) {
  Wave& w = w_[wi];
  advance(wi, std::max(w.t, w.storesDone), kMemory);
  w.end = w.t;
}

SimTimedResult TimingModel::result(const ir::Plan& plan) const {
  SimTimedResult r;
  r.on = true;
  const double us = 1e6 / c_.clock;
  size_t last = 0;
  for (size_t i = 0; i < w_.size(); ++i)
    if (w_[i].end > w_[last].end) last = i;
  if (w_.empty()) return r;
  const Wave& w = w_[last];
  const auto stageName = [&](int s) {
    return s >= 0 && s < stages_ ? plan.stages[s].name : std::string("(no stage)");
  };
  r.cycles = w.end;
  r.instructions = instructions_;
  r.isaInstructions = isa_.empty() ? -1 : isaInstructions_ + isaUnowned_ * static_cast<int64_t>(w_.size());
  r.isaUnowned = isa_.empty() ? -1 : isaUnowned_;
  r.us = w.end * us;
  r.rank = w.rank, r.cta = w.cta, r.wave = static_cast<int>(last % wavesPerCta_);
  r.stage = stageName(w.lastStage);
  for (int s = -1; s < stages_; ++s) {
    const double* sp = &splits_[(last * (stages_ + 1) + (s < 0 ? stages_ : s)) * kSplits];
    if (sp[kFirst] < 0) continue;
    SimTimedStage st{stageName(s), sp[kFirst] * us, sp[kLast] * us, sp[kIssue] * us, sp[kMemory] * us,
                     sp[kFlag] * us, sp[kBarrier] * us};
    r.issueUs += st.issueUs, r.memoryUs += st.memoryUs, r.flagUs += st.flagUs, r.barrierUs += st.barrierUs;
    r.stages.push_back(st);
  }
  std::sort(r.stages.begin(), r.stages.end(), [](const SimTimedStage& a, const SimTimedStage& b) {
    return a.startUs < b.startUs;
  });
  for (size_t i = 0; i < w_.size(); ++i)
    for (int s = -1; s < stages_; ++s) {
      const double* sp = &splits_[(i * (stages_ + 1) + (s < 0 ? stages_ : s)) * kSplits];
      if (sp[kFirst] < 0) continue;
      double& e = r.stageEndUs[stageName(s)];
      e = std::max(e, sp[kLast] * us);
    }
  return r;
}

}  // namespace monogen::runtime::timing
