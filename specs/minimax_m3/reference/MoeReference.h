// The native CPU reference of the MiniMax-M3 FFN launch after the all-reduce (norm .. final),
// every TP rank: the bf16 rounding points and f32 sum orders the kernel reproduces bit for bit.
// Evaluated as written in f32, no FMA contraction (docs/reference-numerics.md).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/Tensor.h"
#include "specs/minimax_m3/kernel/ModelConfig.h"
#include "specs/minimax_m3/kernel/Knobs.h"
#include "specs/minimax_m3/kernel/LaunchArgs.h"
#include "specs/minimax_m3/kernel/MoeQuant.h"
#include "specs/minimax_m3/kernel/MoeTiling.h"
#include "specs/minimax_m3/reference/RefNumerics.h"

namespace monogen::specs::minimax_m3 {

// ---------------------------------------------------------------- declared scalar models
// Every function reading a RefNumerics takes it last (Ir when omitted).

/// a / b in f32: IEEE (Ir), or IEEE with a result below FLT_MIN -> +-0 (Gfx950Run).
float moeDiv(float a, float b, RefNumerics n = RefNumerics::Ir);
/// The IR's Exp2: exp2 in double rounded once to f32 (Ir), or the host's exp2f (Gfx950Run).
float moeExp2(float x, RefNumerics n = RefNumerics::Ir);
/// sigmoid(x) = 1 / (1 + exp2((-x) * f32(log2 e))), each op rounded to f32 (moeExp2, moeDiv).
/// NaN in, NaN out; sigmoid(0) = 0.5 exactly.
float moeSigmoid(float x, RefNumerics n = RefNumerics::Ir);
/// SwiGLU-OAI: g = min(gate, limit) (minNum), u = max(min(up, limit), -limit),
/// out = (g * sigmoid(f32(alpha) * g)) * (u + 1).
float swigluOai(float gate, float up, float limit, float alpha, RefNumerics n = RefNumerics::Ir);

/// The A16W4 dot: acc + the f32 products of wRow (dequantized to bf16) and x over K steps
/// [step0, step0 + steps) of 128, in the MFMA model's K order (docs/reference-numerics.md).
/// A K past the row's end adds +0.
float a16w4Dot(float acc, const float* wRow, const float* x, int64_t k, int step0, int steps);

/// One router part's logit partial of one (token, expert), FP32 weights times f32(xn), in the
/// f32 MFMA's K order: summed (Ir) or an fma chain (Gfx950Run); waves summed in order.
float routerPart(const float* wRow, const float* x, const MoeTiling& t, int part, RefNumerics n = RefNumerics::Ir);

/// One (token, expert)'s logit: the parts summed per quarter in order, then the quarters in order.
float routerLogit(const float* wRow, const float* x, const MoeTiling& t, RefNumerics n = RefNumerics::Ir);

/// The kernel's block sum of vals[0 .. n) over `threads` threads: each wave's xor butterfly
/// (offsets 32 .. 1), then 0 + wave_0 + wave_1 + ... in order.
float blockSum(const float* vals, int n, int threads);

// ---------------------------------------------------------------- the whole launch
/// One token's route: top-K distinct experts of sigmoid(logit) + bias (NaN -> -inf, ties to the
/// lower expert), weights renormalized times routedScale; a padded row's picks are -1.
void routeToken(const float* logits, const float* bias, int E, int K, float routedScale, bool valid,
                int32_t* picks, float* weights, RefNumerics n = RefNumerics::Ir);

/// The reference of one launch for all TP ranks: `in` (or `acts` for sres / ssq) as listed in
/// docs/reference-numerics.md, "moeReference's tensors"; returns rstd, xn, logits, picks,
/// weights, the slot table, mid.rR, contrib.rR, down.rR and out. `quant` picks the experts'
/// numerics (A8W4: each slot's up and down as moeReferenceA8w4).
runtime::TensorMap moeReference(const ModelConfig& cfg, int S, int TP, const runtime::TensorMap& in,
                                MoeExperts experts = MoeExperts::All, const runtime::TensorMap* acts = nullptr,
                                MoeQuant quant = MoeQuant::A16w4, RefNumerics n = RefNumerics::Ir);

/// The row-valid mask of `in` (slots / valid / all), S rows.
std::vector<bool> moeValidRows(const runtime::TensorMap& in, int S);

}  // namespace monogen::specs::minimax_m3
