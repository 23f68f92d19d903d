#include <vector>

#include "ir/Op.h"
#include "specs/minimax_m3/kernel/Sites.h"
#include "specs/minimax_m3/kernel/stages/Stages.h"

namespace monogen::specs::minimax_m3 {

using ir::MemOrder;
using ir::MemScope;
using ir::MfmaKind;
using ir::Type;
using ir::Val;

// Tile = task / parts (experts 16 tile ..), part = task % parts: after RSTD of every row the CTA
// normalizes its own XN columns from SRES, runs chained f32 MFMAs per wave, sums the waves in order
// and publishes LOGIT[t][expert][part] (release, agent). Lane layout: docs/minimax-m3-kernel.md.
void stageRouter(KernelContext& c, Val task) {
  ir::Builder& b = c.b;
  const Layout& L = c.L;
  const MoeTiling& T = L.tiling;
  Val tile = task / T.routerParts, part = task % T.routerParts;
  // A chunk: 4 chained f32 16x16x4 MFMAs over 16 columns, 4 a lane group (a float4 a lane)
  MfmaTile t = c.mfmaTile(MfmaKind::F32_16x16x4_F32, 4);
  Val expert = tile * 16 + t.aRow();
  Val rowOk = t.bCol() < c.i32(L.rows);
  Val xrow = b.min(t.bCol(), c.i32(L.rows - 1));
  Val base = part * T.routerK + c.wave * T.routerWaveK;
  // the weights' loads (inputs) before the wait; SRES's after it (the RSTD acquire orders them)
  std::vector<Val> k0(T.routerChunks), w4(T.routerChunks), n4(T.routerChunks), x4(T.routerChunks);
  for (int ch = 0; ch < T.routerChunks; ++ch) {
    k0[ch] = base + t.stepK() * ch + t.laneK0();  // the lane's 4 columns k0 .. k0 + 3
    w4[ch] = b.load(Type::vec(Type::f32(), 4), c.elemAt(c.routerW, expert * L.hidden + k0[ch], 4));
    n4[ch] = b.load(Type::vec(Type::bf16(), 4), c.elemAt(c.normW, k0[ch], 2));
  }
  // Route on the norm's scale: thread t < S waits for RSTD[t] (site router) and puts it
  // in LDS (contrib, free until down); the router normalizes its own SRES columns with it
  b.if_(c.tid < L.rows, [&] {
    Val code = c.errorCode(kSiteRouter, c.tid);
    Val bits = c.await(c.pairAt(c.scratch, L.rstd, c.tid), code, kSiteRouter);
    b.store(c.elemAt(c.contrib, c.tid, 4), bits);
  });
  c.ctaSync(/*drain=*/false);
  for (int ch = 0; ch < T.routerChunks; ++ch)
    x4[ch] = b.load(Type::vec(Type::f32(), 4), c.elemAt(c.scratch, L.sres, xrow * L.hidden + k0[ch], 4));
  Val rstd = b.load(Type::f32(), c.elemAt(c.contrib, xrow, 4));
  Val acc = b.splat(b.f32(0.0), 4);
  for (int ch = 0; ch < T.routerChunks; ++ch) {
    // XN's columns k0 .. k0 + 3 of row xrow as the norm writes them: bf16((x rstd)(1 + w))
    acc = t.step(acc, [&](int m) { return b.extract(w4[ch], m); }, [&](int m) {
      Val xn = b.f32ToBf16((b.extract(x4[ch], m) * rstd) * (b.f32(1.0) + b.bf16ToF32(b.extract(n4[ch], m))));
      return b.select(rowOk, b.bf16ToF32(xn), b.f32(0.0));
    });
  }
  t.storeAcc(acc, c.red, [&](int i) {  // red[wave][expert][row], the wave's 16 x 16 tile row-major
    return c.wave * 256 + t.accRow(i) * c.i32(16) + t.accCol();
  });
  c.ctaSync(/*drain=*/false);
  b.if_(c.tid < 256, [&] {
    Val e = c.tid / 16, t = c.tid % 16;
    Val tot = b.f32(0.0);
    for (int w = 0; w < L.waves; ++w) tot = tot + b.load(Type::f32(), b.ptrAdd(c.red, (w * 256 + c.tid) * c.i32(4)));
    b.if_(t < L.rows, [&] {
      Val at = (t * L.experts + tile * 16 + e) * c.i32(T.routerParts) + part;  // L.logitPair
      c.publish(c.pairAt(c.scratch, L.logit, at), b.bitcast(tot, Type::i32()), c.tag, MemOrder::Release,
                MemScope::Agent);
    });
  });
  c.ctaSync(/*drain=*/false);  // red is free for the next task
}

extern const StageDef kRouterStage = {
    .placement = [](const Layout& L) { return L.router; },
    .waits = [](const Layout& L) { return std::vector<ir::FlagUse>{{L.rstd.name, L.rows * L.router.tasks}}; },
    .publishes = [](const Layout& L) { return std::vector<ir::FlagUse>{{L.logit.name, L.logit.pairs}}; },
    .doc = [](const Layout&) -> std::string {
      return "FP32 router weight x f32(XN) on v_mfma_f32_16x16x4_f32, 16 experts x a K part a task -> LOGIT; its "
             "columns of XN from SRES and the published RSTD (it never waits for XN)";
    },
    .body = [](KernelContext& c) { c.forEachTask(c.L.router, [&](Val t) { stageRouter(c, t); }); },
    .reference = "routerPart",
};

}  // namespace monogen::specs::minimax_m3
