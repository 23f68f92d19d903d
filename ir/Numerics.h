// Scalar numerics shared by the Sim device and the native references: the exact bit-level
// definitions of the IR's conversions (bf16 RNE, fp4 e2m1 with e8m0 scales, OCP fp8 e4m3fn).
#pragma once
#include <bit>
#include <cmath>
#include <cstdint>

namespace monogen::ir::num {

inline float bitsToF32(uint32_t b) { return std::bit_cast<float>(b); }
inline uint32_t f32ToBits(float f) { return std::bit_cast<uint32_t>(f); }

/// f32 -> bf16 bits, round to nearest even; a NaN stays a (quiet) NaN.
inline uint16_t f32ToBf16(float f) {
  uint32_t u = f32ToBits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}
/// bf16 bits -> f32, exact.
inline float bf16ToF32(uint16_t b) { return bitsToF32(static_cast<uint32_t>(b) << 16); }
/// The value a bf16 rounding point leaves: f32 -> bf16 (RNE) -> f32.
inline float roundBf16(float f) { return bf16ToF32(f32ToBf16(f)); }

/// e2m1 code (low 4 bits) -> its value: sign, then {0, 0.5, 1, 1.5, 2, 3, 4, 6}.
inline float fp4E2m1ToF32(uint32_t code) {
  static constexpr float mag[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  const float v = mag[code & 7u];
  return (code & 8u) ? -v : v;
}
/// e8m0 scale byte -> 2^(e - 127); 255 is NaN. (2^-127 is an f32 subnormal, exact.)
inline float e8m0ToF32(uint32_t e) {
  e &= 0xffu;
  if (e == 255) return bitsToF32(0x7fc00000u);
  if (e == 0) return bitsToF32(0x00400000u);
  return bitsToF32(e << 23);
}
/// fp4 code times an f32 scale, as the IR's Fp4ToF32 defines it (one f32 rounding).
inline float fp4ToF32(uint32_t code, float scale) { return fp4E2m1ToF32(code) * scale; }
/// Code e (bits 4e .. 4e + 3) of an fp4x8 word as the IR's Fp4x8ToBF16x8 defines it.
inline uint16_t fp4x8ElemToBf16(uint32_t word, int e, float scale) {
  return f32ToBf16(fp4ToF32((word >> (4 * e)) & 0xf, scale));
}

/// The IR's Exp2 (declared model): exp2 in double, rounded once to f32. Correctly rounded
/// except within one double ulp of an f32 rounding boundary, and the same on every host with
/// an IEEE double exp2 accurate to < 1 double ulp. gfx950's v_exp_f32 is about 1 ulp.
inline float exp2(float x) { return static_cast<float>(std::exp2(static_cast<double>(x))); }
/// The IR's Rcp and Rsq (declared models): correctly rounded 1 / x and 1 / sqrt(x) in f32.
/// gfx950's v_rcp_f32 / v_rsq_f32 are about 1 ulp; stages that must match the reference bit
/// for bit use Div and Sqrt, which are correctly rounded on both.
inline float rcp(float x) { return 1.0f / x; }
inline float rsq(float x) { return 1.0f / std::sqrt(x); }

/// The IR's float Min/Max: a NaN operand (quiet or signalling) yields the other, so NaN only
/// when both are; of operands that compare equal (+0 and -0) the first. (The IR leaves the sign
/// of a zero result open, ir/Op.h: LLVM's minnum may return either zero.)
inline float minNum(float a, float b) {
  if (std::isnan(a)) return b;
  if (std::isnan(b)) return a;
  return b < a ? b : a;
}
inline float maxNum(float a, float b) {
  if (std::isnan(a)) return b;
  if (std::isnan(b)) return a;
  return b > a ? b : a;
}

/// OCP e4m3fn byte -> f32, exact. 0x7f / 0xff are NaN; no infinities.
inline float fp8E4m3ToF32(uint32_t b) {
  b &= 0xffu;
  const bool neg = b & 0x80u;
  const uint32_t e = (b >> 3) & 0xfu, m = b & 7u;
  float v;
  if (e == 0xf && m == 7) return bitsToF32(0x7fc00000u);
  if (e == 0) v = std::ldexp(static_cast<float>(m), -9);  // subnormal: m/8 * 2^-6
  else v = std::ldexp(1.0f + static_cast<float>(m) / 8.0f, static_cast<int>(e) - 7);
  return neg ? -v : v;
}
/// f32 -> OCP e4m3fn byte: round to nearest even, saturating to +-448; NaN -> 0x7f.
inline uint32_t f32ToFp8E4m3(float f) {
  if (std::isnan(f)) return 0x7fu;
  const uint32_t sign = std::signbit(f) ? 0x80u : 0u;
  float a = std::fabs(f);
  if (a >= 448.0f) return sign | 0x7eu;
  // Candidates are exact in f32; pick the nearest, ties to even code.
  uint32_t best = 0;
  float bestErr = a;
  for (uint32_t c = 1; c <= 0x7eu; ++c) {
    const float err = std::fabs(fp8E4m3ToF32(c) - a);
    if (err < bestErr || (err == bestErr && (c & 1u) == 0 && (best & 1u) == 1)) {
      best = c;
      bestErr = err;
    }
  }
  return sign | best;
}

}  // namespace monogen::ir::num
