// o_proj inside the launch (input=attn; seed 000, issue 12), on the push CTAs: AITER's per-token
// FP8 quant of the attention rows, then the rowwise-FP8 GEMM of the task's 32 output channels, the
// bf16 partial to OPART and, as pairs, to every rank's ATTN (what stagePush sends from `part`).
// The numerics are OprojReference.h's, op for op.
//
// The work, per CTA (K = heads head_dim / TP, S <= 16 rows, 8 waves):
//  - oprojTokenScales, once a CTA that has push tasks: wave w takes rows w, w + 8; each lane reads
//    16-byte runs (8 bf16) of the row, run j 64 + lane, and keeps max |x| (IR Max); the wave's
//    butterfly (32 .. 1) of Max gives amax (exact: max is order-free); lane 0 writes
//    scale = amax * f32(1/448) and inv = amax == 0 ? 0 : rcp(scale) to LDS (CTA 0 also writes
//    scale to XSCALE, for checks). Barrier.
//    Every push CTA does this for every row (redundantly: S x K x 2 bytes of reads, 32 KB at
//    S = 8 TP = 4), so no CTA waits for another's quant.
//  - stageOprojPush, a task (channels 32 task .. 32 task + 31): wave w takes channel tile
//    nt = w % 2 (16 channels: the MFMA's A rows) and K part p = w / 2 of 4 (K / 4: its MFMA
//    steps s = p K / 128 .. (p + 1) K / 128 - 1 in order, one accumulator chain from +0). A step
//    is one v_mfma_f32_16x16x32_fp8_fp8: A the weight tile (rows, K 32 s ..: one 512-byte tile
//    of the (16,16)-shuffled weight, 8 bytes a lane), B the quantized rows (the MFMA's columns
//    are the tokens; a lane's 8 K of token lane % 16 read as bf16 and quantized with the token's
//    inv, fp8x8; lanes of tokens >= S read row S - 1, their columns are never used). Each wave
//    stores its 16 x 16 f32 tile to LDS [p][channel][token]; barrier; thread tid < 16 S
//    (token t = tid / 16, pair q = tid % 16: channels 2q, 2q + 1) sums the parts
//    ((p0 + p1) + p2) + p3, then bf16((acc * scale[t]) * w_scale[channel]) for both channels,
//    stores the word to OPART and pushes it (pushPair); barrier (LDS is the next task's).
// LDS: the `red` pool (16 KB; the norm, router and up use it later, after barriers): part sums
// f32 [4][32][16] at 0, scale f32 [16] at 8192, inv f32 [16] at 8256.
// SGLang's smallm_fp8_gemm picks its waves, K steps and chains per row count; its source was not
// in the index we searched, so this order is ours and SGLang bit-equality is unchecked.
#include "ir/Op.h"
#include "specs/minimax_m3/kernel/OprojShape.h"
#include "specs/minimax_m3/kernel/stages/Stages.h"

namespace monogen::specs::minimax_m3 {

using ir::AddrSpace;
using ir::MfmaKind;
using ir::Type;
using ir::Val;

namespace {

constexpr int kSumsBytes = kOprojKParts * kTaskColumns * 16 * 4;  // f32 [parts][32 channels][16 tokens]
constexpr int kScaleAt = kSumsBytes, kInvAt = kSumsBytes + 16 * 4;
static_assert(kInvAt + 16 * 4 <= 2 * 8 * 256 * 4, "o_proj's LDS fits the red pool (Layout)");

/// f32 element `index` of the red pool at byte `at`.
Val redF32(KernelContext& c, int at, Val index) { return c.b.ptrAdd(c.red, (c.i32(at / 4) + index) * c.i32(4)); }

/// bf16 x8 run of row t at K k0 of the attention rows.
Val attnRun(KernelContext& c, Val t, Val k0) {
  return c.b.load(Type::vec(Type::bf16(), 8), c.elemAt(c.attn, t * c.i32(c.L.attnWidth) + k0, 2));
}

}  // namespace

void oprojTokenScales(KernelContext& c) {
  ir::Builder& b = c.b;
  const Layout& L = c.L;
  const int K = L.attnWidth, runs = K / 8;
  b.if_(c.block < c.i32(L.push.tasks), [&] {
    for (int r = 0; r * L.waves < L.rows; ++r) {
      Val t = b.named(c.wave + c.i32(r * L.waves), "t");
      b.if_(t < c.i32(L.rows), [&] {
        ir::Var amax = b.var(b.f32(0.0), "amax");
        for (int j = 0; j * 64 < runs; ++j) {
          Val run = c.lane + c.i32(j * 64);
          b.if_(run < c.i32(runs), [&] {
            Val x = attnRun(c, t, run * c.i32(8));
            Val m = b.get(amax);
            for (int e = 0; e < 8; ++e) {
              Val v = b.bf16ToF32(b.extract(x, e));
              m = b.max(m, b.bitcast(b.bitcast(v, Type::i32()) & c.i32(0x7fffffff), Type::f32()));  // |x|
            }
            b.set(amax, m);
          });
        }
        Val a = b.named(b.butterfly(b.get(amax), {32, 16, 8, 4, 2, 1}, ir::OpCode::Max), "amax");
        b.if_(c.lane == c.i32(0), [&] {
          Val scale = a * b.f32(static_cast<double>(kFp8InvMax));
          Val inv = b.select(a == b.f32(0.0), b.f32(0.0), b.rcp(scale));
          b.store(redF32(c, kScaleAt, t), scale);
          b.store(redF32(c, kInvAt, t), inv);
          b.if_(c.block == c.i32(0), [&] { b.store(c.elemAt(c.scratch, L.xscale, t, 4), scale); });  // for checks
        });
      });
    }
    c.ctaSync(false);
  });
}

void stageOprojPush(KernelContext& c, Val task) {
  ir::Builder& b = c.b;
  const Layout& L = c.L;
  const int K = L.attnWidth, partSteps = K / 32 / kOprojKParts;
  const MfmaTile T = MfmaTile::at(c.lane, MfmaKind::F32_16x16x32_FP8, 1);
  Val nt = b.named(c.wave % c.i32(2), "nt"), part = b.named(c.wave / c.i32(2), "kpart");
  Val chan0 = b.named(task * c.i32(kTaskColumns) + nt * c.i32(16), "chan0");  // the tile's first channel
  Val token = b.named(b.min(T.bCol(), c.i32(L.rows - 1)), "token");
  Val inv = b.load(Type::f32(), redF32(c, kInvAt, token));
  ir::Var acc = b.var(b.splat(b.f32(0.0), 4), "acc");
  Val s0 = part * c.i32(partSteps);
  b.for_(s0, s0 + c.i32(partSteps), c.i32(1), [&](Val s) {
    Val k0 = s * c.i32(32) + T.laneK0();  // the lane's first K of the step
    Val bq = c.fp8x8(attnRun(c, token, k0), inv);
    Val wOff = c.shuffledOffset(chan0 + T.aRow(), k0, K) + k0 % c.i32(16);
    Val a = b.load(Type::i64(), b.ptrAdd(c.wo, wOff));
    b.set(acc, T.step(b.get(acc), std::vector<Val>{a}, std::vector<Val>{bq}));
  });
  // [part][channel in the task][token]
  T.storeAcc(b.get(acc), c.red, [&](int i) {
    return (part * c.i32(kTaskColumns) + nt * c.i32(16) + T.accRow(i)) * c.i32(16) + T.accCol();
  });
  c.ctaSync(false);
  b.if_(c.tid < c.i32(L.rows * kTaskPairs), [&] {
    Val t = b.named(c.tid / c.i32(kTaskPairs), "t");
    Val q = c.tid % c.i32(kTaskPairs);
    Val pair = b.named(task * c.i32(kTaskPairs) + q, "pair");
    Val scale = b.load(Type::f32(), redF32(c, kScaleAt, t));
    Val word = b.splat(b.bf16(0.0), 2);
    for (int h = 0; h < 2; ++h) {
      Val ch = q * c.i32(2) + c.i32(h);  // channel in the task
      Val sum;
      for (int p = 0; p < kOprojKParts; ++p) {
        Val v = b.load(Type::f32(), redF32(c, 0, (c.i32(p * kTaskColumns) + ch) * c.i32(16) + t));
        sum = p == 0 ? v : sum + v;
      }
      Val ws = b.load(Type::f32(), c.elemAt(c.woScale, task * c.i32(kTaskColumns) + ch, 4));
      word = b.insert(word, b.f32ToBf16((sum * scale) * ws), h);
    }
    Val bits = b.bitcast(word, Type::i32());
    b.store(c.elemAt(c.scratch, L.opart, t * c.i32(L.hidden / 2) + pair, 4), bits);
    pushPair(c, t, pair, bits);
  });
  c.ctaSync(false);
}

}  // namespace monogen::specs::minimax_m3
