// The native CPU reference of the MiniMax-M3 FFN launch after the all-reduce: norm, router,
// route, table, up, down (with the combine) and final, for every rank of a TP group.
//
// It defines, in plain C++, the numerics the generated kernel must reproduce bit for bit
// (DESIGN.md, "Numerics"): every bf16 rounding point and the order of every f32 sum, taken
// from the seeds' FlyDSL kernel (shared/seeds/002_*). Each is written next to its code.
// The one declared model beyond ir/Mfma.h is exp2 (moeExp2 below): the sim must compute the
// IR's Exp2 with it for the kernel's sigmoids to match.
//
// The latest seed changes (shared/seeds/000_*) keep these numerics: the router now normalizes
// its own columns from SRES with the norm's published rstd -- the same expression as XN,
// bf16((x * rstd) * (1 + w)), so the same bits -- and B operands from LDS, the weight
// prefetch and o_proj (outside this reference) change no sum order.
//
// Floating point: every expression here is evaluated as written in f32 (ISO C++, no FMA
// contraction: the project builds with -std=c++20, where GCC's default is -ffp-contract=off,
// and for x86-64 without -mfma); a sum "a + b + c" is ((a + b) + c).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/Tensor.h"
#include "specs/minimax_m3/kernel/ModelConfig.h"
#include "specs/minimax_m3/kernel/Knobs.h"
#include "specs/minimax_m3/kernel/LaunchArgs.h"
#include "specs/minimax_m3/kernel/MoeTiling.h"

namespace monogen::specs::minimax_m3 {


// ---------------------------------------------------------------- declared scalar models

/// Whose numerics the reference models. Ir (the default): the IR's declared models, which the
/// Sim device computes. Gfx950Run: the gfx950-run executor's (../shared/tools/gfx950-run.md,
/// "Known differences from gfx950 hardware"), so a launch on it compares bit for bit too.
/// The executor's declared differences live in runtime/Gfx950RunNumerics.h, measured op by op
/// by tests/test_executor_ops.cpp. Three reach this launch: exp2 (gfx950run::exp2, the host's
/// exp2f: sigmoids move by an ulp), the division of a sigmoid 1 / (1 + e) whose quotient is below
/// FLT_MIN (gfx950run::div gives +-0: MID elements that are +-0 instead of tiny), and the router's
/// v_mfma_f32_16x16x4_f32, an fma chain K ascending (routerPart accumulates with fma; this is
/// what moves the route weights by 1-3 ulp at the reduced config). The bf16 MFMAs are exact (a
/// bf16 x bf16 product is exact in f32). Every other op is the IR's.
enum class RefNumerics { Ir, Gfx950Run };
/// The profile the reference functions below use on this thread (Ir unless a scope set it).
RefNumerics refNumerics();
/// Sets the profile for this thread while it lives (the previous one is restored after).
class RefNumericsScope {
 public:
  explicit RefNumericsScope(RefNumerics n);
  ~RefNumericsScope();
  RefNumericsScope(const RefNumericsScope&) = delete;
  RefNumericsScope& operator=(const RefNumericsScope&) = delete;

 private:
  RefNumerics prev_;
};
/// a / b in f32 under the profile: IEEE (Ir), or IEEE with a result below FLT_MIN -> +-0
/// (Gfx950Run). Every reference division that mirrors the IR's Div goes through it.
float moeDiv(float a, float b);
/// The IR's Exp2 (declared model): exp2 evaluated in double and rounded once to f32 (under
/// RefNumerics::Gfx950Run: the host's exp2f, see above). This is
/// correctly rounded except where the double result lies within one double ulp of an f32
/// rounding boundary (probability about 2^-29 a call), and so the same on every host with
/// an IEEE double exp2 accurate to < 1 double ulp (glibc, musl, MSVC). gfx950's v_exp_f32 is
/// not correctly rounded (about 1 ulp): hardware sigmoids may differ from this model in the
/// last bit, the same kind of exception as the MFMA model's internal sums.
float moeExp2(float x);
/// sigmoid(x) = 1 / (1 + exp2(-x * log2(e))) in f32, each op rounded: t = (-x) * f32(log2 e)
/// (= -(x * log2 e) exactly), e = moeExp2(t), d = 1 + e, s = 1 / d (IEEE division, the IR's
/// Div). NaN in, NaN out; sigmoid(0) = 0.5 exactly. The seeds' _sigmoid source is not in the
/// seeds; this is the declared definition both the route and SwiGLU use.
float moeSigmoid(float x);
/// SwiGLU-OAI (the seeds' _swiglu, whose source is not shown; declared here):
///   g = min(gate, limit)            (IR Min: minNum, a NaN gate gives limit)
///   u = max(min(up, limit), -limit) (clamp: min first, then max)
///   out = (g * sigmoid(f32(alpha) * g)) * (u + 1)
float swigluOai(float gate, float up, float limit, float alpha);

/// THE A16W4 dot (declared model; the kernel's step_mfma / scale_f32 follow it):
/// acc += sum over K steps [step0, step0 + steps) of one weight row (wRow: the row's K
/// dequantized weights) times x (K bf16 values widened to f32).
///
/// A step is 128 K: lane group g (lanes 16 g .. 16 g + 15) holds K 32 g .. 32 g + 31 of the
/// step for its row (one 16-byte fp4x2 load of the shuffled tile = one e8m0 block) and for
/// its column (the seeds' x_operands: dwords (lane / 16) * 16 + step * 64 + d * 4, four
/// loads of 8 bf16). The weight is dequantized per element to the MFMA's bf16 A operand,
/// bf16(fp4 x 2^(s-127)) (exact: an e2m1 value times a power of two has 2 significant bits),
/// and the step runs 4 chained v_mfma_f32_16x16x32_bf16 (d = 0..3) whose MFMA-K index
/// kk = 8 g + e holds K = 32 g + 8 d + e. With ir/Mfma.h's model (products rounded to f32,
/// added to the accumulator one kk at a time, ascending), the order is:
///   for step s ascending, for d in 0..3, for g in 0..3, for e in 0..7:
///     k = 128 s + 32 g + 8 d + e;  acc = acc + f32(w[k] * x[k])
/// A K past the row's end (a partial last step, K % 128 != 0) adds a +0.0 product: the
/// kernel zeroes both operands there. (acc starts at +0 and is never -0, so this never
/// changes a value.)
/// The alternative, gfx950's block-scaled v_mfma_scale_f32_16x16x128_f8f6f4, needs B in an
/// f8/f6/f4 format too; A16W4's B is bf16, so the seeds' step_mfma cannot use it.
float a16w4Dot(float acc, const float* wRow, const float* x, int64_t k, int step0, int steps);

/// One router part's logit partial of one (token, expert): FP32 weights (wRow, hidden) times
/// f32(xn) (x, hidden), the seeds' stage_router order. Wave w's accumulator starts at 0 and
/// runs, for chunk ch in 0..routerChunks-1, for m in 0..3 (the MFMAs: h = m / 2, lo / hi =
/// m % 2), one v_mfma_f32_16x16x4_f32 whose K slot g = lane / 16 holds column
///   k = part * routerK + w * routerWaveK + 16 ch + 4 g + m,
/// adding f32(w[k] * x[k]) for g = 0..3 ascending (ir/Mfma.h). The part is then
/// 0 + acc_0 + acc_1 + ... + acc_{waves-1} (waves in order).
float routerPart(const float* wRow, const float* x, const MoeTiling& t, int part);

/// One (token, expert)'s logit as route sums the parts: per quarter q, 0 + part_{q P/4} + ... +
/// part_{q P/4 + P/4 - 1}; then 0 + q_0 + q_1 + ... in order (P = routerParts).
float routerLogit(const float* wRow, const float* x, const MoeTiling& t);

/// The seeds' block_sum of one value a thread (vals[tid], tid < n; the other threads 0):
/// each wave's butterfly over xor offsets 32, 16, 8, 4, 2, 1 (v = v + v[lane ^ off]), then
/// 0 + wave_0 + ... + wave_{waves-1} (lane 0's sums, waves in order).
float blockSum(const float* vals, int n, int threads);

// ---------------------------------------------------------------- the whole launch
/// The route stage for one token (the seeds' stage_route): sc = sigmoid(logit); selection on
/// sc + bias with a NaN -> -inf and its weight 0; top-K rounds, each taking the lowest untaken
/// expert with the best value (ties to the lower expert), so the K picks are distinct whatever
/// the scores; a pick whose best value is -inf (unusable) weighs 0; total = 0 + w_0 + w_1 + ...;
/// weight_k = w_k * (routedScale / max(total, 1e-20f)). A padded row's picks are -1.
void routeToken(const float* logits, const float* bias, int E, int K, float routedScale, bool valid,
                int32_t* picks, float* weights);

/// The reference of one launch for all TP ranks. `in` holds:
///   sres     F32 [S, hidden]   the reduce stage's f32 sum (identical on all ranks)
///   ssq      F32 [S, T]        the reduce tasks' sums of squares (T parts a token, T <= threads)
///   slots    I64 [S]           optional: a row is valid when its slot >= 0 (padded rows: -1);
///            or valid I32 [S]  (nonzero = valid); neither: every row valid
///   norm_w, router_w, bias     as in the weight contract (one copy: same on every rank)
///   w13.rR, s13.rR, w2.rR, s2.rR for R = 0 .. TP-1: rank R's contract tensors
///   experts  I32 [1]           optional knob (0 all, 1 shared, 2 routed); overrides `experts`
/// Returns:
///   rstd F32 [S]; xn BF16 [S, hidden]; logits F32 [S, E] (the route's sums);
///   picks I32 [S, topk] (-1 for padded rows); weights F32 [S, topk];
///   slot_expert I32 [n], slot_count I32 [n], slot_row I32 [n, 16], slot_pick I32 [n, 16]
///     (the table: slot 0 the shared expert over the valid rows, then the picked experts
///     ascending; a slot's columns its rows ascending; unused columns -1);
///   per rank R: mid.rR BF16 [n, 16, I/TP] (unused columns 0), contrib.rR F32 [(topk+1) S, hidden]
///     (the down GEMVs a pick: t topk + k routed, topk S + t shared; unwritten rows 0),
///     down.rR BF16 [S, hidden] (the rank's combined partial);
///   out BF16 [S, hidden].
/// `acts`, when given, holds sres and ssq instead of `in` (the weights are never copied).
runtime::TensorMap moeReference(const ModelConfig& cfg, int S, int TP, const runtime::TensorMap& in,
                                MoeExperts experts = MoeExperts::All, const runtime::TensorMap* acts = nullptr);

/// The row-valid mask of `in` (slots / valid / all), S rows.
std::vector<bool> moeValidRows(const runtime::TensorMap& in, int S);

}  // namespace monogen::specs::minimax_m3
