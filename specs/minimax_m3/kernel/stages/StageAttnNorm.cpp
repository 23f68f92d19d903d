// attn_norm: one row a task. The residual add (h = bf16(x + res), the new residual), the input
// RMSNorm over the f32 sum in the fused all-reduce's order, and the per-token FP8 quant the GEMV
// reads (AttentionPre.h, normRow).
#include "specs/minimax_m3/kernel/stages/AttentionStageDef.h"

#include <fmt/format.h>

namespace monogen::specs::minimax_m3 {

using ir::Type;
using ir::Val;
namespace a = attn_arg;

namespace {

/// One pack: 8 consecutive elements of the row, logical thread p's (elements 8 p .. 8 p + 7).
struct Pack {
  Val ok, at;              // p < hidden / 8; the pack's element offset (clamped into the row)
  std::vector<Val> acc;    // f32(x) + f32(res)
};

void stageAttnNorm(AttentionContext& c, Val t) {
  ir::Builder& b = c.b;
  const AttentionLaunchLayout& L = c.L;
  const int H = L.hidden, packs = H / 8, groups = H / 256;
  const int perThread = (packs + L.threads - 1) / L.threads;
  Val x = c.arg(a::kX), res = c.arg(a::kRes), resOut = c.arg(a::kResOut), gIn = c.arg(a::kGIn);
  Val scratch = c.arg(a::kScratch);
  Val live = b.load(Type::i64(), b.ptrAdd(c.arg(a::kSlots), t * c.i32(8))) >= b.i64(0);
  const Type bf8 = Type::vec(Type::bf16(), 8);

  // every pack's x, res and g_in loaded before the first is used
  std::vector<Pack> ps;
  std::vector<Val> xs, rs, gs;
  for (int j = 0; j < perThread; ++j) {
    Pack p;
    Val idx = c.tid + c.i32(int64_t{L.threads} * j);
    p.ok = idx < c.i32(packs);
    p.at = t * c.i32(H) + b.select(p.ok, idx, c.i32(packs - 1)) * c.i32(8);
    xs.push_back(b.load(bf8, b.ptrAdd(x, p.at * c.i32(2))));
    rs.push_back(b.load(bf8, b.ptrAdd(res, p.at * c.i32(2))));
    gs.push_back(b.load(bf8, b.ptrAdd(gIn, (p.at - t * c.i32(H)) * c.i32(2))));
    ps.push_back(std::move(p));
  }
  // h = bf16(acc) and each pack's fma chain of squares; a 32-pack group's butterfly -> red[g]
  for (int j = 0; j < perThread; ++j) {
    Pack& p = ps[j];
    Val idx = c.tid + c.i32(int64_t{L.threads} * j);
    Val xv = xs[j], rv = rs[j];
    Val ss = c.f32(0);
    for (int e = 0; e < 8; ++e) {
      p.acc.push_back(b.bf16ToF32(b.extract(xv, e)) + b.bf16ToF32(b.extract(rv, e)));
      ss = b.fma(p.acc[e], p.acc[e], ss);
    }
    b.if_(p.ok, [&] {
      for (int e = 0; e < 8; ++e)
        b.store(b.ptrAdd(resOut, (p.at + c.i32(e)) * c.i32(2)), b.f32ToBf16(b.select(live, p.acc[e], c.f32(0))));
    });
    Val group = b.butterfly(b.select(p.ok, ss, c.f32(0)), {16, 8, 4, 2, 1});
    b.if_(p.ok & (c.lane % c.i32(32) == c.i32(0)), [&] { b.store(b.ptrAdd(c.red, (idx / c.i32(32)) * c.i32(4)), group); });
  }
  c.ctaSync(false);
  // the group sums, padded to 32, butterflied again (every wave alike)
  Val g32 = c.lane % c.i32(32);
  Val part = b.load(Type::f32(), b.ptrAdd(c.red, b.select(g32 < c.i32(groups), g32, c.i32(0)) * c.i32(4)));
  Val ss = b.butterfly(b.select(g32 < c.i32(groups), part, c.f32(0)), {16, 8, 4, 2, 1});
  Val rstd = b.named(b.rsq(ss / c.f32(H) + c.f32(static_cast<float>(c.variant.cfg.rmsEps))), "rstd");

  // n = (acc rstd)(1 + g); amax over the CTA (each wave's butterfly, then the waves in order)
  std::vector<std::vector<Val>> n(ps.size());
  Val amax = c.f32(0);
  for (size_t j = 0; j < ps.size(); ++j) {
    Val gv = gs[j];
    Val m = c.f32(0);
    for (int e = 0; e < 8; ++e) {
      n[j].push_back((ps[j].acc[e] * rstd) * (b.bf16ToF32(b.extract(gv, e)) + c.f32(1)));
      m = b.max(m, b.unary(ir::OpCode::Abs, n[j][e]));
    }
    amax = b.max(amax, b.select(ps[j].ok, m, c.f32(0)));
  }
  amax = b.butterfly(amax, {32, 16, 8, 4, 2, 1}, ir::OpCode::Max);
  b.if_(c.lane == c.i32(0), [&] { b.store(b.ptrAdd(c.red, (c.i32(32) + c.wave) * c.i32(4)), amax); });
  c.ctaSync(false);
  std::vector<Val> waveMax;
  for (int w = 0; w < L.waves; ++w) waveMax.push_back(b.load(Type::f32(), b.ptrAdd(c.red, int64_t{4} * (32 + w))));
  Val cta = c.f32(0);
  for (int w = 0; w < L.waves; ++w) cta = b.max(cta, waveMax[w]);
  Val xScale = b.named(b.select(cta == c.f32(0), c.f32(1), cta / c.f32(448)), "x_scale");

  // x8 = E4M3(n / xScale), 8 bytes a pack, to scratch; the row's scales (a padded row: zeros,
  // which the GEMV multiplies and the heads never append); then XRDY[t]
  for (size_t j = 0; j < ps.size(); ++j) {
    Val word = b.constInt(Type::i64(), 0);
    for (int e = 0; e < 8; ++e)
      word = word | (b.zext(e4m3Writer(b, n[j][e] / xScale), Type::i64()) << b.i64(8 * e));
    b.if_(ps[j].ok, [&] {
      b.store(b.ptrAdd(scratch, c.i32(L.x8Offset) + ps[j].at), b.select(live, word, b.i64(0)));
    });
  }
  b.if_(c.tid == c.i32(0), [&] {
    b.store(b.ptrAdd(scratch, c.i32(L.xScaleOffset) + t * c.i32(4)), b.select(live, xScale, c.f32(0)));
    b.store(b.ptrAdd(scratch, c.i32(L.rstdOffset) + t * c.i32(4)), b.select(live, rstd, c.f32(0)));
  });
  c.ctaSync(true);  // the row's stores before XRDY; red is rewritten by the CTA's next task
  b.if_(c.tid == c.i32(0), [&] { c.publish(c.pairAt(L.xrdyOffset, t)); });
}

}  // namespace

extern const AttentionStageDef kAttnNormStage = {
    [](const AttentionLaunchLayout& L) { return L.norm; },
    [](const AttentionLaunchLayout&) { return std::vector<ir::FlagUse>{}; },
    [](const AttentionLaunchLayout& L) { return std::vector<ir::FlagUse>{{"XRDY", L.rows}}; },
    [](const AttentionLaunchLayout& L) {
      return fmt::format("row task: h = bf16(x + res) -> res_out; input RMSNorm of the f32 sum; x8, x_scale, rstd "
                         "-> scratch, XRDY ({} packs of 8 a row)",
                         L.hidden / 8);
    },
    [](AttentionContext& c) { c.forEachTask(c.L.norm, [&](Val t) { stageAttnNorm(c, t); }); },
    "normRow (AttentionPre.h)",
};

}  // namespace monogen::specs::minimax_m3
