#include "specs/minimax_m3/kernel/KernelContext.h"

#include <fmt/format.h>

#include <limits>

#include "ir/Error.h"

#include "specs/minimax_m3/kernel/Sites.h"

namespace monogen::specs::minimax_m3 {

using ir::AddrSpace;
using ir::Type;
using ir::Val;

KernelContext::KernelContext(const FfnVariant& v, const ir::Plan& plan, ir::Builder& b)
    : variant(v), cfg(v.cfg), L(v.layout), knobs(v.knobs), b(b), plan_(&plan), mutator_(v.knobs.mutation) {
  if (L.moe != knobs.moe)
    throw IrError(v.key.variantName(), fmt::format("the layout's moe {}: expected the knob's, {}", moeQuantName(L.moe),
                                                   moeQuantName(knobs.moe)));
  if (knobs.trace) {
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
  block = b.named(stageBlocks ? b.stageBlock() : b.block(), "block");
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
  if (knobs.trace) trace = argPtr(arg::kTrace);
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
  auto pair = [&](int e) {
    return b.f32x2ToFp8x2(b.bf16ToF32(b.extract(x8, e)) * scale, b.bf16ToF32(b.extract(x8, e + 1)) * scale);
  };
  Val lo = pair(0) | (pair(2) << 16), hi = pair(4) | (pair(6) << 16);
  return b.zext(lo, Type::i64()) | (b.zext(hi, Type::i64()) << b.i64(32));
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
  if (!knobs.trace) {
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
  const int64_t pn = heldScaleColumns(kBlocks, knobs.scales);
  if (knobs.scales == ScaleLayout::RowMajor) return expertByte(tensor, e, rows * pn, row * i32(kBlocks) + kb);
  // e8m0ShuffledOffset: ((((row/32 * pn/8 + kb/8) * 4 + kb%4) * 16 + row%16) * 2 + (kb/4)%2) * 2 + (row/16)%2
  Val off = (((((row / i32(32)) * i32(pn / 8) + kb / i32(8)) * i32(4) + kb % i32(4)) * i32(16) + row % i32(16)) * i32(2) +
             (kb / i32(4)) % i32(2)) * i32(2) +
            (row / i32(16)) % i32(2);
  return expertByte(tensor, e, rows * pn, off);
}

void KernelContext::ctaSync(bool drain) { specs::ctaSync(b, drain, mutator_); }

void KernelContext::publish(Val pair, Val value, Val tag, ir::MemOrder o, ir::MemScope s) {
  publishPair(b, pair, value, tag, o, s, mutator_);
}

Val KernelContext::await(Val pair, Val code, int site, ir::MemOrder o, ir::MemScope s) {
  return awaitPair(b, pair, tag, waitTicks, err, code, site, o, s, mutator_);
}

AwaitedPair KernelContext::awaitChecked(Val pair, Val code, int site, ir::MemOrder o, ir::MemScope s) {
  return awaitPairChecked(b, pair, tag, waitTicks, err, code, site, o, s, mutator_);
}

Val KernelContext::errorCode(int site, Val token) {
  return i32(minimax_m3::errorCode(site, 0, 0)) | rank << i32(8) | token << i32(16);
}

Val KernelContext::errorCode(int site) { return i32(minimax_m3::errorCode(site, 0, 0)) | rank << i32(8); }

Val KernelContext::errorCode(int site, int owner, Val token) {
  return i32(minimax_m3::errorCode(site, owner, 0)) | token << i32(16);
}

Val KernelContext::peerErrorCode(int site, Val peer) {
  return i32(minimax_m3::errorCode(site, 0, 0)) | peer << i32(8);
}

Val KernelContext::blockSum(Val v) { return specs::blockSum(b, v, lane, wave, red, L.waves, mutator_); }

void KernelContext::awaitX(int site) {
  b.if_(tid < i32(L.rows), [&] {
    Val code = errorCode(site, tid);
    await(pairAt(scratch, L.xrdy, tid), code, site);
  });
  ctaSync(false);
}

void KernelContext::forEachTask(const Placement& p, const std::function<void(Val)>& body) {
  specs::forEachTask(b, block, p.base, p.tasks, L.blocks, body, /*stageBlock=*/true);
}

}  // namespace monogen::specs::minimax_m3
