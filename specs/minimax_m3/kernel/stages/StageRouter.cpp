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

// Tile = task / parts (experts 16 tile ..), part = task % parts: the rows' rstd from their SSQ
// parts, then the CTA's XN columns from SRES through chained f32 MFMAs a wave, the waves summed in
// order -> LOGIT[t][expert][part] (relaxed, agent: the pair is the data). docs/minimax-m3-kernel.md.
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
  // the weights' loads (inputs) before the waits; SRES's after them (the SSQ acquires order them)
  std::vector<Val> k0(T.routerChunks), w4(T.routerChunks), n4(T.routerChunks), x4(T.routerChunks);
  for (int ch = 0; ch < T.routerChunks; ++ch) {
    k0[ch] = base + t.stepK() * ch + t.laneK0();  // the lane's 4 columns k0 .. k0 + 3
    w4[ch] = b.load(Type::vec(Type::f32(), 4), c.elemAt(c.routerW, expert * L.hidden + k0[ch], 4));
    n4[ch] = b.load(Type::vec(Type::bf16(), 4), c.elemAt(c.normW, k0[ch], 2));
  }
  // The norm's rstd, summed here rather than awaited from the norm's CTA: unit u = (row u / G,
  // 64-part group u % G) on wave u % waves; its lanes wait for the row's SSQ parts (site router),
  // butterfly them as blockSum's wave does and put the group's sum in LDS (contrib, free until down)
  const int parts = static_cast<int>(L.reduce.tasks), groups = (parts + 63) / 64, units = L.rows * groups;
  for (int r = 0; r * L.waves < units; ++r) {
    Val u = c.wave + r * L.waves;
    b.if_(u < c.i32(units), [&] {
      Val row = u / groups, part = (u % groups) * 64 + c.lane;
      ir::Var ssq = b.var(b.f32(0.0), "ssq_part");
      b.if_(part < c.i32(parts), [&] {
        Val code = c.errorCode(kSiteRouter, row);
        b.set(ssq, b.bitcast(c.await(c.pairAt(c.scratch, L.ssq, row * parts + part), code, kSiteRouter),
                             Type::f32()));
      });
      Val sum = specs::waveSum(b, b.get(ssq));
      b.if_(c.lane == 0, [&] { b.store(c.elemAt(c.contrib, u, 4), sum); });
    });
  }
  c.ctaSync(/*drain=*/false);
  for (int ch = 0; ch < T.routerChunks; ++ch)
    x4[ch] = b.load(Type::vec(Type::f32(), 4), c.elemAt(c.scratch, L.sres, xrow * L.hidden + k0[ch], 4));
  // the row's total in blockSum's order: the waves' sums in wave order, a wave past the parts +0
  Val total = b.f32(0.0);
  for (int w = 0; w < L.waves; ++w)
    total = total + (w < groups ? b.load(Type::f32(), c.elemAt(c.contrib, xrow * groups + w, 4)) : b.f32(0.0));
  Val rstd = rstdOf(c, total);
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
      // relaxed: the pair is the data (route reads nothing else of the router's)
      c.publish(c.pairAt(c.scratch, L.logit, at), b.bitcast(tot, Type::i32()), c.tag, MemOrder::Relaxed,
                MemScope::Agent);
    });
  });
  c.ctaSync(/*drain=*/false);  // red is free for the next task
}

extern const StageDef kRouterStage = {
    .placement = [](const Layout& L) { return L.router; },
    .waits = [](const Layout& L) { return std::vector<ir::FlagUse>{{L.ssq.name, ssqPairs(L) * L.router.tasks}}; },
    .publishes = [](const Layout& L) { return std::vector<ir::FlagUse>{{L.logit.name, L.logit.pairs}}; },
    .doc = [](const Layout&) -> std::string {
      return "FP32 router weight x f32(XN) on v_mfma_f32_16x16x4_f32, 16 experts x a K part a task -> LOGIT; its "
             "columns of XN from SRES and its own rstd of the SSQ parts (it never waits for XN)";
    },
    .body = [](KernelContext& c) { c.forEachTask(c.L.router, [&](Val t) { stageRouter(c, t); }); },
    .reference = "routerPart",
};

}  // namespace monogen::specs::minimax_m3
