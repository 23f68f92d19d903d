#include "specs/minimax_m3/kernel/KernelContext.h"

#include <fmt/format.h>

#include <limits>

#include "ir/Error.h"

#include "specs/minimax_m3/kernel/Sites.h"

namespace monogen::specs::minimax_m3 {

using ir::AddrSpace;
using ir::Type;
using ir::Val;

KernelContext::KernelContext(const ModelConfig& cfg, const Layout& layout, const ir::Plan& plan, ir::Builder& b)
    : cfg(cfg), L(layout), b(b), experts(knobsOf(plan.key).experts), scales(knobsOf(plan.key).scales), plan_(&plan),
      mutator_(knobsOf(plan.key).mutation) {
  if (knobsOf(plan.key).trace) {
    Val n = b.named(i32(0), "trace_stages");  // the stage count, set by finishTrace
    traceStages_ = n.v;
  }
  // The launch's tag comes from device memory, not from an argument, so that replaying the same
  // arguments (a captured HIP graph) is a new launch each time. Every CTA reads the epoch (the
  // last launch's tag) once, here in the prologue, and takes the next tag, launchTagAfter(epoch);
  // CTA 0 moves the epoch on only once every CTA's mark is in (StageFinish.cpp), i.e. after every
  // CTA has read it.
  Val epochWord = b.load(Type::i32(), argPtr(arg::kEpoch), ir::MemOrder::Relaxed, ir::MemScope::Agent);
  launchTag_ = b.named((epochWord & i32(kLaunchTagMask)) + i32(1), "tag").v;
}

Val KernelContext::argPtr(const char* name) {
  return b.arg(plan_->argIndex(name), Type::ptr(AddrSpace::Global), name);
}

void KernelContext::bindStage() {
  tid = b.named(b.tid(), "tid");
  lane = b.named(b.lane(), "lane");
  block = b.named(b.block(), "block");
  wave = b.named(b.wave(), "wave");
  const bool oproj = plan_->argIndex(arg::kAttn) >= 0;
  if (!oproj) part = argPtr(arg::kPart);
  if (oproj) {
    attn = argPtr(arg::kAttn);
    wo = argPtr(arg::kWo);
    woScale = argPtr(arg::kWoScale);
  }
  resIn = argPtr(arg::kResIn);
  resOut = argPtr(arg::kResOut);
  scratch = argPtr(arg::kScratch);
  sym = argPtr(arg::kSym);
  err = argPtr(arg::kErr);
  tag = b.wrap(launchTag_);
  rank = b.arg(plan_->argIndex(arg::kRank), Type::i32(), arg::kRank);
  waitTicks = b.arg(plan_->argIndex(arg::kWaitTicks), Type::i64(), arg::kWaitTicks);
  parity = b.named(tag & i32(1), "parity");
  if (knobsOf(plan_->key).trace) trace = argPtr(arg::kTrace);
  normW = argPtr(arg::kNormW);
  routerW = argPtr(arg::kRouterW);
  bias = argPtr(arg::kBias);
  w13 = argPtr(arg::kW13);
  s13 = argPtr(arg::kS13);
  w2 = argPtr(arg::kW2);
  s2 = argPtr(arg::kS2);
  slots = argPtr(arg::kSlots);
  out = argPtr(arg::kOut);
  red = b.named(b.intToPtr(b.i32(L.red.offset), AddrSpace::Lds), "red");
  tab = b.named(b.intToPtr(b.i32(L.tab.offset), AddrSpace::Lds), "tab");
  contrib = b.named(b.intToPtr(b.i32(L.contrib.offset), AddrSpace::Lds), "contrib");
  if (L.bstage.bytes > 0) bstage = b.named(b.intToPtr(b.i32(L.bstage.offset), AddrSpace::Lds), "bstage");
  peerSym.clear();
}

Val KernelContext::shuffledOffset(Val row, Val byteCol, int64_t kBytes) {
  // row tile, 32-byte K tile, 16-byte half, row in the tile (a 16-byte chunk each)
  return (row / i32(16)) * i32(16 * kBytes) + (byteCol / i32(32)) * i32(512) + ((byteCol / i32(16)) % i32(2)) * i32(256) +
         (row % i32(16)) * i32(16);
}

Val KernelContext::fp8x8(Val x8, Val scale) {
  Val word = b.constInt(Type::i64(), 0);
  for (int e = 0; e < 8; ++e) {
    Val code = b.f32ToFp8(b.bf16ToF32(b.extract(x8, e)) * scale);
    word = word | (b.zext(code, Type::i64()) << b.i64(8 * e));
  }
  return word;
}

void KernelContext::loadPeers() {
  Val peers = argPtr(arg::kPeers);
  peerSym.clear();
  for (int p = 0; p < L.tp; ++p) {
    Val addr = b.load(Type::i64(), b.ptrAdd(peers, int64_t{p} * 8));
    peerSym.push_back(b.named(b.intToPtr(addr, AddrSpace::Peer), "sym_r" + std::to_string(p)));
  }
}

Val KernelContext::pairAt(Val base, const Area& area, Val index) {
  if (area.parity)  // this launch's half: pairs (tag & 1) x pairs / 2 ..
    return b.ptrAdd(base, i32(area.offset) + (parity * i32(area.pairs / 2) + index) * i32(kPairBytes));
  return b.ptrAdd(base, i32(area.offset) + index * i32(kPairBytes));
}

void KernelContext::fail(Val code) {
  b.cmpXchg(err, i32(0), code, ir::MemOrder::Relaxed, ir::MemScope::Agent);
  b.atomicRmw(ir::RmwOp::Add, b.ptrAdd(err, int64_t{4}), i32(1), ir::MemOrder::Relaxed, ir::MemScope::Agent);
}

void KernelContext::stage(int index, const std::function<void()>& body) {
  mutator_.enterStage(plan_->stages.at(static_cast<size_t>(index)).name);
  if (!knobsOf(plan_->key).trace) {
    b.stage(index, [&] {
      bindStage();
      body();
    });
    return;
  }
  auto stamp = [&](int end) {
    b.if_(tid == i32(0), [&] {
      Val n = b.wrap(traceStages_);
      Val at = ((block * n + i32(index)) * i32(2) + i32(end)) * i32(8);
      b.store(b.ptrAdd(trace, at), b.realtime());
    });
  };
  b.stage(index, [&] {
    bindStage();
    stamp(0);
    body();
    stamp(1);
  });
}

void KernelContext::finishTrace(ir::Plan& plan) {
  if (!trace.v) return;
  const int64_t n = static_cast<int64_t>(plan.stages.size());
  bool set = false;
  for (ir::Op& op : plan.kernel.body.ops)
    if (op.result == traceStages_) {
      op.attrs.imm = n;
      set = true;
    }
  if (!set) throw IrError(plan.key.variantName(), "the trace's stage count is not in the kernel's prologue");
  ir::KernelArg& a = plan.args.at(plan.argIndex(arg::kTrace));
  a.shape = {L.blocks, n, 2};
}

Val KernelContext::elemAt(Val base, const Area& area, Val index, int elemBytes) {
  return b.ptrAdd(base, i32(area.offset) + index * i32(elemBytes));
}

Val KernelContext::elemAt(Val base, Val index, int elemBytes) { return b.ptrAdd(base, index * i32(elemBytes)); }

Val KernelContext::expertByte(Val weights, Val e, int64_t bytesPerExpert, Val offset) {
  if (bytesPerExpert * cfg.expertsWithShared() > std::numeric_limits<int32_t>::max())
    return b.ptrAdd(weights, b.sext(e, Type::i64()) * b.i64(bytesPerExpert) + b.sext(offset, Type::i64()));
  return b.ptrAdd(weights, e * i32(bytesPerExpert) + offset);
}

Val KernelContext::scaleByte(Val tensor, Val e, Val row, Val kb, int64_t rows, int64_t kBlocks) {
  const int64_t pn = heldScaleColumns(kBlocks, scales);
  if (scales == ScaleLayout::RowMajor) return expertByte(tensor, e, rows * pn, row * i32(kBlocks) + kb);
  // e8m0ShuffledOffset: ((((row/32 * pn/8 + kb/8) * 4 + kb%4) * 16 + row%16) * 2 + (kb/4)%2) * 2 + (row/16)%2
  Val off = (((((row / i32(32)) * i32(pn / 8) + kb / i32(8)) * i32(4) + kb % i32(4)) * i32(16) + row % i32(16)) * i32(2) +
             (kb / i32(4)) % i32(2)) * i32(2) +
            (row / i32(16)) % i32(2);
  return expertByte(tensor, e, rows * pn, off);
}

void KernelContext::ctaSync(bool drain) {
  if (!mutator_.keepCtaSync(drain)) return;  // a race test's mutation (Mutation.h)
  if (drain) b.fence(ir::MemOrder::Release, ir::MemScope::Agent);
  b.barrier();
}

void KernelContext::publish(Val pair, Val value, Val tag, ir::MemOrder o, ir::MemScope s) {
  mutator_.publish(o, s);
  b.publish(pair, value, tag, o, s);
}

Val KernelContext::wait(Val pair, Val tag, Val bound, Val errWord, Val errCode, int site, ir::MemOrder o,
                        ir::MemScope s) {
  mutator_.wait(o, s);
  return b.wait(pair, tag, bound, errWord, errCode, site, o, s);
}

Val KernelContext::blockSum(Val v) {
  v = b.butterfly(v, {32, 16, 8, 4, 2, 1});
  ctaSync(false);  // the previous block sum's readers are done with red
  b.if_(lane == i32(0), [&] { b.store(b.ptrAdd(red, wave * i32(4)), v); });
  ctaSync(false);
  Val tot = b.f32(0.0);
  for (int w = 0; w < L.waves; ++w) tot = tot + b.load(Type::f32(), b.ptrAdd(red, int64_t{w} * 4));
  return tot;
}

void KernelContext::awaitX(int site) {
  b.if_(tid < i32(L.rows), [&] {
    Val code = i32(errorCode(site, 0, 0)) | rank << i32(8) | tid << i32(16);
    wait(pairAt(scratch, L.xrdy, tid), tag, waitTicks, err, code, site, ir::MemOrder::Acquire, ir::MemScope::Agent);
  });
  ctaSync(false);
}

void KernelContext::forEachTask(const Placement& p, const std::function<void(Val)>& body) {
  Val first = (block - i32(p.base % L.blocks) + i32(L.blocks)) % i32(L.blocks);
  b.for_(first, i32(p.tasks), i32(L.blocks), body);
}

MfmaTile MfmaTile::of(ir::MfmaKind kind, int chain) {
  namespace mf = ir::mfma;
  const std::string where = fmt::format("MfmaTile({})", ir::mfmaKindName(kind));
  MfmaTile t;
  t.kind = kind;
  t.shape = mf::shapeOf(kind);
  t.chain = chain;
  const mf::Shape& s = t.shape;
  if (s.m != 16 || s.n != 16 || s.abPerLane < 1 || s.accPerLane < 1)
    throw IrError(where, fmt::format("expected a 16 x 16 MFMA kind of ir/Mfma.h, got M x N = {} x {}", s.m, s.n));
  if (chain < 1) throw IrError(where, fmt::format("a step chains 1 or more MFMAs, got {}", chain));
  const int groups = mf::kWave / s.m;
  t.groupK = mf::aCol(kind, s.m, 0) - mf::aCol(kind, 0, 0);
  t.accRows = mf::dRow(s.m, 0) - mf::dRow(0, 0);
  if (t.groupK * groups != s.k || t.accRows * groups != s.m || s.accPerLane != t.accRows)
    throw IrError(where, fmt::format("the declared layout's K groups ({} K x {}) or accumulator rows ({} x {}) do "
                                     "not tile the {} x {} x {} shape",
                                     t.groupK, groups, t.accRows, groups, s.m, s.n, s.k));
  // The tile form, element by element, against the declared layout (one MFMA: kOf with d = 0).
  for (int l = 0; l < mf::kWave; ++l) {
    for (int e = 0; e < s.abPerLane; ++e) {
      const int k = t.groupK * (l / s.m) + e;
      if (mf::aRow(kind, l, e) != l % s.m || mf::aCol(kind, l, e) != k || mf::bRow(kind, l, e) != k ||
          mf::bCol(kind, l, e) != l % s.n)
        throw IrError(where, fmt::format("lane {} element {}: the declared A[{}][{}], B[{}][{}] is not the tile "
                                         "form A[{}][{}], B[{}][{}] (ir/Mfma.h)",
                                         l, e, mf::aRow(kind, l, e), mf::aCol(kind, l, e), mf::bRow(kind, l, e),
                                         mf::bCol(kind, l, e), l % s.m, k, k, l % s.n));
    }
    for (int i = 0; i < s.accPerLane; ++i)
      if (mf::dRow(l, i) != t.accRows * (l / s.m) + i || mf::dCol(l, i) != l % s.n)
        throw IrError(where, fmt::format("lane {} accumulator element {}: the declared D[{}][{}] is not the tile "
                                         "form D[{}][{}] (ir/Mfma.h)",
                                         l, i, mf::dRow(l, i), mf::dCol(l, i), t.accRows * (l / s.m) + i, l % s.n));
  }
  return t;
}

MfmaTile MfmaTile::at(Val lane, ir::MfmaKind kind, int chain) {
  MfmaTile t = of(kind, chain);
  ir::Builder& b = *lane.b;
  t.group = lane / b.i32(t.shape.m);
  t.col = lane % b.i32(t.shape.m);
  return t;
}

Val MfmaTile::laneK0() const { return group * group.b->i32(laneRunK()); }

Val MfmaTile::accRow(int i) const {
  ir::Builder& b = *group.b;
  return group * b.i32(accRows) + b.i32(i);
}

std::vector<Val> MfmaTile::load(Type operand, const std::function<Val(int)>& ptrOf) const {
  ir::Builder& b = *group.b;
  std::vector<Val> v;
  for (int d = 0; d < chain; ++d) v.push_back(b.load(operand, ptrOf(kOffset(d))));
  return v;
}

std::vector<Val> MfmaTile::load(Type operand, const std::function<Val(int)>& ptrOf, Val live) const {
  ir::Builder& b = *group.b;
  auto zero = [&] {  // +0 of the operand's type
    const Type e = operand.elem();
    Val z = !e.isFloat() ? b.constInt(e, 0) : e.scalar == ir::Scalar::BF16 ? b.bf16(0.0) : b.f32(0.0);
    return operand.isVector() ? b.splat(z, operand.lanes) : z;
  };
  std::vector<Val> v;
  for (int d = 0; d < chain; ++d) {
    Val x = b.load(operand, ptrOf(kOffset(d)));
    v.push_back(b.select(live, x, zero()));
  }
  return v;
}

Val MfmaTile::step(Val acc, const std::function<Val(int)>& a, const std::function<Val(int)>& bOp) const {
  ir::Builder& b = *acc.b;
  for (int d = 0; d < chain; ++d) {
    Val bd = bOp(d);  // B's ops first, then A's (the order the stages emitted them in)
    acc = b.mfma(kind, a(d), bd, acc);
  }
  return acc;
}

Val MfmaTile::step(Val acc, const std::vector<Val>& a, const std::vector<Val>& bOp) const {
  if (static_cast<int>(a.size()) != chain || static_cast<int>(bOp.size()) != chain)
    throw IrError(fmt::format("MfmaTile({}).step", ir::mfmaKindName(kind)),
                  fmt::format("expected {} A and B operands (one an MFMA of the chain), got {} and {}", chain,
                              a.size(), bOp.size()));
  return step(acc, [&](int d) { return a[static_cast<size_t>(d)]; }, [&](int d) { return bOp[static_cast<size_t>(d)]; });
}

void MfmaTile::storeAcc(Val acc, Val base, const std::function<Val(int)>& index) const {
  ir::Builder& b = *acc.b;
  const int64_t bytes = acc.type().elemBytes();
  for (int i = 0; i < shape.accPerLane; ++i) {
    Val at = index(i);
    b.store(b.ptrAdd(base, at * b.i32(bytes)), b.extract(acc, i));
  }
}

void MfmaTile::storeAcc(Val acc, const std::function<Val(int)>& ptrOf) const {
  ir::Builder& b = *acc.b;
  for (int i = 0; i < shape.accPerLane; ++i) {
    Val p = ptrOf(i);
    b.store(p, b.extract(acc, i));
  }
}

}  // namespace monogen::specs::minimax_m3
