// Where the gfx950-run executor (../shared/tools/gfx950-run, AMD's rocjitsu) computes an IR op
// differently from the IR's declared model (ir/Numerics.h, ir/Mfma.h, which the Sim device runs),
// declared here and nowhere else. Each entry was measured on the executor:
// tests/test_executor_ops.cpp runs every op's lowering on it and compares with the Sim bit for
// bit, taking these models where a difference is declared; the executor numerics profile of the
// MiniMax-M3 reference (specs/minimax_m3/reference/RefNumerics.h, RefNumerics::Gfx950Run) is built on them.
// Anything not listed must agree exactly.
#pragma once
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "ir/Op.h"

namespace monogen::runtime::gfx950run {

/// One declared difference between the executor and the IR's model.
struct DeclaredDifference {
  ir::OpCode op;
  const char* where;   ///< which operands or types it applies to
  const char* reason;  ///< one line: why the executor differs (and what hardware does)
};

inline constexpr DeclaredDifference kDeclaredDifferences[] = {
    {ir::OpCode::Exp2, "every f32 operand",
     "its v_exp_f32 is the host's exp2f (below -126 LLVM's lowering scales: exp2f(x + 64) * 2^-64); the IR's model "
     "is exp2 in double rounded once (hardware: ~1 ulp)"},
    {ir::OpCode::Div, "f32 (and bf16, divided in f32) operands where v_div_scale_f32 rescales (divIsRescaled)",
     "its v_div_fmas_f32 / v_div_fixup_f32 undo the rescale wrongly: off by 2^64 or 2^128, 0 or NaN; not compared"},
    {ir::OpCode::Rcp, "subnormal operands and results", "its v_rcp_f32 flushes them to +-0 (so 1 / subnormal is +-Inf)"},
    {ir::OpCode::Rsq, "subnormal operands", "its v_rsq_f32 flushes them to +-0 (so the result is +-Inf)"},
    {ir::OpCode::Mfma, "F32_16x16x4_F32",
     "an fma chain, K ascending (products unrounded), not ir/Mfma.h's rounded products"},
};

inline int biasedExponent(float x) { return static_cast<int>((std::bit_cast<uint32_t>(x) >> 23) & 0xff); }
inline bool isSubnormal(float x) { return x != 0.0f && std::fabs(x) < std::numeric_limits<float>::min(); }

/// The executor's Exp2: LLVM's lowering of llvm.exp2.f32 with v_exp_f32 = exp2f. Below -126
/// (a subnormal result) the lowering computes v_exp_f32(x + 64) * 2^-64, rounding twice.
inline float exp2(float x) {
  if (x < -126.0f) return ::exp2f(x + 64.0f) * 0x1p-64f;
  return ::exp2f(x);
}

/// Whether a / b (finite, nonzero) is one v_div_scale_f32 rescales, where the executor's
/// division is wrong: |b| >= 2^126 or subnormal, |a| < 2^-103, exponent(a) - exponent(b) >= 96,
/// or a subnormal quotient. (Measured by tests/test_executor_ops.cpp: every differing division
/// lies here; LLVM's lowering is correctly rounded on hardware.) Elsewhere it is IEEE.
inline bool divIsRescaled(float a, float b) {
  if (!std::isfinite(a) || !std::isfinite(b) || a == 0.0f || b == 0.0f) return false;
  const int ea = biasedExponent(a), eb = biasedExponent(b);
  return eb == 0 || eb >= 253 || ea <= 23 || ea - eb >= 96 || isSubnormal(a / b);
}

/// The executor's f32 division on the operands the MiniMax-M3 launch divides (numerators of
/// about 1, so only the subnormal-quotient part of divIsRescaled: a sigmoid's 1 / (1 + e) with
/// e >= 2^126): IEEE, except a nonzero quotient below FLT_MIN is +-0. The whole-launch tests on
/// the executor (tests/test_gfx950run.cpp) confirm it there; for other operands in
/// divIsRescaled it is not the executor's value.
inline float div(float a, float b) {
  const float q = a / b;
  if (isSubnormal(q)) return std::copysign(0.0f, q);
  return q;
}

/// The executor's Rcp and Rsq: correctly rounded (as the IR's model) but for subnormals.
inline float rcp(float x) {
  if (isSubnormal(x)) x = std::copysign(0.0f, x);
  const float r = 1.0f / x;
  return isSubnormal(r) ? std::copysign(0.0f, r) : r;
}
inline float rsq(float x) {
  if (isSubnormal(x)) x = std::copysign(0.0f, x);
  return 1.0f / std::sqrt(x);
}

/// One output element of the executor's v_mfma_f32_16x16x4_f32: acc + sum_k a[k] b[k] as an fma
/// chain over k = 0..3.
inline float mfmaF32Element(const float a[4], const float b[4], float acc) {
  for (int k = 0; k < 4; ++k) acc = std::fma(a[k], b[k], acc);
  return acc;
}

}  // namespace monogen::runtime::gfx950run
