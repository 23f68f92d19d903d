// The scalar models the MiniMax-M3 attention reference computes with (docs/attention.md,
// "Numerics"): the E4M3 conversions of the serving stack's writers, its butterfly and chain
// sums, and its constants. Every function is evaluated in f32 as written, no FMA contraction.
#pragma once
#include <array>
#include <cstdint>

#include "specs/minimax_m3/kernel/AttentionConstants.h"
#include "specs/minimax_m3/reference/RefNumerics.h"

namespace monogen::specs::minimax_m3 {

/// f32 -> OCP E4M3 byte, RNE, saturating at +-448, NaN -> 0x7f: ir::num::f32ToFp8E4m3's
/// result by binary search (the same bits: tests/test_attention_reference.cpp sweeps them).
uint8_t e4m3Saturating(float x);
/// The serving stack's writers' conversion ("nonsaturating"): as e4m3Saturating, but |x| > 464
/// (past 448's rounding interval) and +-Inf give NaN (0x7f / 0xff).
uint8_t e4m3(float x);
/// E4M3 byte -> f32, exact (ir::num::fp8E4m3ToF32's 256 values).
extern const std::array<float, 256> kE4m3Values;
inline float e4m3Value(uint8_t b) { return kE4m3Values[b]; }

/// The sum a 2^k-lane xor butterfly leaves (offsets n/2, n/4, .., 1; lanes >= n hold 0):
/// v_i = v_i + v_(i ^ off) each step, lane 0's value (every lane's: the adds commute).
float butterflySum(const float* v, int n);

/// The IR's Exp2 (Ir) or gfx950-run's (Gfx950Run): moeExp2.
float attnExp2(float x, RefNumerics n);
/// The IR's Rcp (Ir: correctly rounded) or gfx950-run's v_rcp_f32 (Gfx950Run).
float attnRcp(float x, RefNumerics n);
/// The IR's Rsq (correctly rounded 1 / sqrt).
float attnRsq(float x);

}  // namespace monogen::specs::minimax_m3
