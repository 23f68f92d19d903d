#include "ir/Op.h"
#include "specs/minimax_m3/Sites.h"
#include "specs/minimax_m3/Stages.h"

namespace monogen::specs::minimax_m3 {

using ir::MemOrder;
using ir::MemScope;
using ir::MfmaKind;
using ir::Type;
using ir::Val;

// Tile = task / parts (experts 16 tile ..), part = task % parts (columns part * routerK ..), the
// seeds' stage_router. The CTA first waits for RSTD of every row (site router; seed 000: it does
// not wait for XN) and computes its own columns of XN from SRES as the norm does, bf16((x rstd)(1
// + w)), so its B operands are XN's bits. Wave w takes
// columns part * routerK + w * routerWaveK .. (routerWaveK of them): for chunk ch, for m in
// 0..3, one v_mfma_f32_16x16x4_f32 whose A is the FP32 router weight of expert 16 tile +
// lane % 16 at column k = .. + 16 ch + 4 (lane / 16) + m and whose B is f32(XN) of row lane % 16
// at the same column (0 past the S rows). The accumulators start at 0; lane l's element i is
// expert 4 (l / 16) + i, row l % 16. Each wave writes its 16 x 16 tile to red; thread (e, t) <
// 256 sums the waves in order (0 + w_0 + ... + w_{WAVES-1}) and, for t < S, publishes the part
// to LOGIT[t][16 tile + e][part] (release, agent scope).
void stageRouter(KernelContext& c, Val task) {
  ir::Builder& b = c.b;
  const Layout& L = c.L;
  const MoeTiling& T = L.tiling;
  // seed 000, route on the norm's scale: thread t < S waits for RSTD[t] (site router) and puts it
  // in LDS (contrib, free until down); the router normalizes its own SRES columns with it
  b.if_(c.tid < c.i32(L.rows), [&] {
    Val code = c.i32(errorCode(kSiteRouter, 0, 0)) | c.rank << c.i32(8) | c.tid << c.i32(16);
    Val bits = c.wait(c.pairAt(c.scratch, L.rstd, c.tid), c.tag, c.waitTicks, c.err, code, kSiteRouter,
                      MemOrder::Acquire, MemScope::Agent);
    b.store(c.elemAt(c.contrib, c.tid, 4), bits);
  });
  c.ctaSync(/*drain=*/false);
  Val tile = task / c.i32(T.routerParts), part = task % c.i32(T.routerParts);
  Val g = c.lane / c.i32(16), col = c.lane % c.i32(16);
  Val expert = tile * c.i32(16) + col;
  Val rowOk = col < c.i32(L.rows);
  Val xrow = b.min(col, c.i32(L.rows - 1));
  Val base = part * c.i32(T.routerK) + c.wave * c.i32(T.routerWaveK);
  Val rstd = b.load(Type::f32(), c.elemAt(c.contrib, xrow, 4));
  Val acc = b.splat(b.f32(0.0), 4);
  for (int ch = 0; ch < T.routerChunks; ++ch) {
    Val k0 = base + c.i32(16 * ch) + g * c.i32(4);  // the lane's 4 columns k0 .. k0 + 3
    Val w4 = b.load(Type::vec(Type::f32(), 4), c.elemAt(c.routerW, expert * c.i32(L.hidden) + k0, 4));
    // XN's columns k0 .. k0 + 3 of row xrow as the norm writes them: bf16((x rstd)(1 + w))
    Val x4 = b.load(Type::vec(Type::f32(), 4), c.elemAt(c.scratch, L.sres, xrow * c.i32(L.hidden) + k0, 4));
    Val n4 = b.load(Type::vec(Type::bf16(), 4), c.elemAt(c.normW, k0, 2));
    for (int m = 0; m < 4; ++m) {
      Val xn = b.f32ToBf16((b.extract(x4, m) * rstd) * (b.f32(1.0) + b.bf16ToF32(b.extract(n4, m))));
      Val x = b.select(rowOk, b.bf16ToF32(xn), b.f32(0.0));
      acc = b.mfma(MfmaKind::F32_16x16x4_F32, b.extract(w4, m), x, acc);
    }
  }
  for (int i = 0; i < 4; ++i) {
    Val at = c.wave * c.i32(256) + (g * c.i32(4) + c.i32(i)) * c.i32(16) + col;
    b.store(b.ptrAdd(c.red, at * c.i32(4)), b.extract(acc, i));
  }
  c.ctaSync(/*drain=*/false);
  b.if_(c.tid < c.i32(256), [&] {
    Val e = c.tid / c.i32(16), t = c.tid % c.i32(16);
    Val tot = b.f32(0.0);
    for (int w = 0; w < L.waves; ++w) tot = tot + b.load(Type::f32(), b.ptrAdd(c.red, (c.i32(w * 256) + c.tid) * c.i32(4)));
    b.if_(t < c.i32(L.rows), [&] {
      Val at = (t * c.i32(L.experts) + tile * c.i32(16) + e) * c.i32(T.routerParts) + part;  // L.logitPair
      c.publish(c.pairAt(c.scratch, L.logit, at), b.bitcast(tot, Type::i32()), c.tag, MemOrder::Release,
                MemScope::Agent);
    });
  });
  c.ctaSync(/*drain=*/false);  // red is free for the next task
}

}  // namespace monogen::specs::minimax_m3
