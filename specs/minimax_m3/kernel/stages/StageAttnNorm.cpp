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
  Val x, res, g;           // the pack's loads (bf16 x 8)
};

/// One quad of the quant: 4 consecutive elements (one x8 word), thread tid's quads tid + threads j.
struct Quad {
  Val ok, at;              // q < hidden / 4; the quad's element offset (clamped into the row)
  Val x, res, g;           // the quad's loads (bf16 x 4)
};

void stageAttnNorm(AttentionContext& c, Val t) {
  ir::Builder& b = c.b;
  const AttentionLaunchLayout& L = c.L;
  const int H = L.hidden, packs = H / 8, quads = H / 4, groups = H / 256;
  const int perThread = (packs + L.threads - 1) / L.threads, quadsPerThread = (quads + L.threads - 1) / L.threads;
  Val x = c.arg(a::kX), res = c.arg(a::kRes), resOut = c.arg(a::kResOut), gIn = c.arg(a::kGIn);
  Val scratch = c.arg(a::kScratch);
  Val slot = b.load(Type::i64(), b.ptrAdd(c.arg(a::kSlots), t * c.i32(8)));
  const Type bf8 = Type::vec(Type::bf16(), 8), bf4 = Type::vec(Type::bf16(), 4);

  // every pack's and quad's x, res and g_in loaded before the first is used (a quad's elements
  // are a pack's too: the quant's n is the sum's, recomputed on the quad's thread)
  // a thread's j-th run of w elements: whether it is in the row, and its (clamped) element offset
  auto run = [&](int j, int w, Val& ok, Val& at) {
    Val idx = c.tid + c.i32(int64_t{L.threads} * j);
    ok = idx < c.i32(H / w);
    at = t * c.i32(H) + b.select(ok, idx, c.i32(H / w - 1)) * c.i32(w);
  };
  std::vector<Pack> ps;
  for (int j = 0; j < perThread; ++j) {
    Pack p;
    run(j, 8, p.ok, p.at);
    p.x = b.load(bf8, b.ptrAdd(x, p.at * c.i32(2)));
    p.res = b.load(bf8, b.ptrAdd(res, p.at * c.i32(2)));
    ps.push_back(std::move(p));
  }
  std::vector<Quad> qs;
  for (int j = 0; j < quadsPerThread; ++j) {
    Quad q;
    run(j, 4, q.ok, q.at);
    q.x = b.load(bf4, b.ptrAdd(x, q.at * c.i32(2)));
    q.res = b.load(bf4, b.ptrAdd(res, q.at * c.i32(2)));
    q.g = b.load(bf4, b.ptrAdd(gIn, (q.at - t * c.i32(H)) * c.i32(2)));
    qs.push_back(std::move(q));
  }
  Val live = slot >= b.i64(0);
  // h = bf16(acc) and each pack's fma chain of squares; a 32-pack group's butterfly -> red[g]
  for (int j = 0; j < perThread; ++j) {
    Pack& p = ps[j];
    Val idx = c.tid + c.i32(int64_t{L.threads} * j);
    Val ss = c.f32(0);
    Val h = b.splat(b.f32ToBf16(c.f32(0)), 8);
    for (int e = 0; e < 8; ++e) {
      Val acc = b.bf16ToF32(b.extract(p.x, e)) + b.bf16ToF32(b.extract(p.res, e));
      ss = b.fma(acc, acc, ss);
      h = b.insert(h, b.f32ToBf16(b.select(live, acc, c.f32(0))), e);
    }
    b.if_(p.ok, [&] { b.store(b.ptrAdd(resOut, p.at * c.i32(2)), h); });
    Val group = b.butterfly(b.select(p.ok, ss, c.f32(0)), {16, 8, 4, 2, 1});
    b.if_(p.ok & (c.lane % c.i32(32) == c.i32(0)), [&] { b.store(b.ptrAdd(c.red, (idx / c.i32(32)) * c.i32(4)), group); });
  }
  c.ctaSync(false);
  // the group sums, padded to 32, butterflied again (every wave alike)
  Val g32 = c.lane % c.i32(32);
  Val part = b.load(Type::f32(), b.ptrAdd(c.red, b.select(g32 < c.i32(groups), g32, c.i32(0)) * c.i32(4)));
  Val ss = b.butterfly(b.select(g32 < c.i32(groups), part, c.f32(0)), {16, 8, 4, 2, 1});
  Val rstd = b.named(b.rsq(ss / c.f32(H) + c.f32(static_cast<float>(c.variant.cfg.rmsEps))), "rstd");

  // n = (acc rstd)(1 + g) a quad; amax over the CTA (each wave's butterfly, then the waves)
  std::vector<std::vector<Val>> n(qs.size());
  Val amax = c.f32(0);
  for (size_t j = 0; j < qs.size(); ++j) {
    Val m = c.f32(0);
    for (int e = 0; e < 4; ++e) {
      Val acc = b.bf16ToF32(b.extract(qs[j].x, e)) + b.bf16ToF32(b.extract(qs[j].res, e));
      n[j].push_back((acc * rstd) * (b.bf16ToF32(b.extract(qs[j].g, e)) + c.f32(1)));
      m = b.max(m, b.unary(ir::OpCode::Abs, n[j][e]));
    }
    amax = b.max(amax, b.select(qs[j].ok, m, c.f32(0)));
  }
  amax = b.butterfly(amax, {32, 16, 8, 4, 2, 1}, ir::OpCode::Max);
  b.if_(c.lane == c.i32(0), [&] { b.store(b.ptrAdd(c.red, (c.i32(32) + c.wave) * c.i32(4)), amax); });
  c.ctaSync(false);
  std::vector<Val> waveMax;
  for (int w = 0; w < L.waves; ++w) waveMax.push_back(b.load(Type::f32(), b.ptrAdd(c.red, int64_t{4} * (32 + w))));
  Val cta = c.f32(0);
  for (int w = 0; w < L.waves; ++w) cta = b.max(cta, waveMax[w]);
  Val xScale = b.named(b.select(cta == c.f32(0), c.f32(1), cta / c.f32(448)), "x_scale");

  // x8 = E4M3(n / xScale), one 4-byte word a quad, to scratch; the row's scales (a padded row:
  // zeros, which the GEMV multiplies and the heads never append); then XRDY[t]
  for (size_t j = 0; j < qs.size(); ++j) {
    Val word = c.i32(0);
    for (int e = 0; e < 4; ++e) word = word | (e4m3Writer(b, n[j][e] / xScale) << c.i32(8 * e));
    b.if_(qs[j].ok, [&] {
      b.store(b.ptrAdd(scratch, c.i32(L.x8Offset) + qs[j].at), b.select(live, word, c.i32(0)));
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
