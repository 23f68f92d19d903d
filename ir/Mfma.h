// The declared model of gfx950 MFMA shapes: lane layouts (the hardware's) and numerics (a model
// the Sim and the native reference share, so they agree bit for bit; real hardware may differ in
// the last bits of a K-sum). docs/how-to-add-an-op.md, "The MFMA model", says how and why.
#pragma once
#include <array>
#include <cstdint>

#include "ir/Op.h"
#include "ir/Type.h"

namespace monogen::ir::mfma {

constexpr int kWave = 64;

/// Shape of an MFMA kind: M x N x K, and the elements per lane of A/B and of the accumulator.
struct Shape {
  int m, n, k, abPerLane, accPerLane;
};
Shape shapeOf(MfmaKind k);
/// The IR type of a lane's A and B operand: <8 x bf16>, f32, or i64 (8 e4m3fn bytes).
Type operandType(MfmaKind k);
/// The accumulator's IR type: <4 x f32> for every shape.
Type accType();

/// Row/col of A held by lane l's element e (A is M x K): A[aRow][aCol].
inline int aRow(MfmaKind, int lane, int) { return lane % 16; }
inline int aCol(MfmaKind k, int lane, int e) {
  return k == MfmaKind::F32_16x16x4_F32 ? lane / 16 : 8 * (lane / 16) + e;
}
/// B is K x N: lane l's element e holds B[bRow][bCol].
inline int bRow(MfmaKind k, int lane, int e) { return aCol(k, lane, e); }
inline int bCol(MfmaKind, int lane, int) { return lane % 16; }
/// The accumulator: lane l's element i is D[4 (l / 16) + i][l % 16].
inline int dRow(int lane, int i) { return 4 * (lane / 16) + i; }
inline int dCol(int lane, int) { return lane % 16; }

/// One wave's MFMA on float values: a/b hold each lane's A/B elements as f32 (bf16 and e4m3fn
/// widened exactly), acc each lane's accumulator; the result replaces acc. Model: for every (i, j),
/// acc[i][j] += f32(a[i][k] * b[k][j]) for k = 0 .. K-1 ascending, each add rounded to f32.
void run(MfmaKind kind, const float* a /*[64][abPerLane]*/, const float* b /*[64][abPerLane]*/,
         float* acc /*[64][4]*/);

/// The block-scaled 16x16x128 MFMA (MfmaScale: v_mfma_scale_f32_16x16x128_f8f6f4, A E4M3, B E2M1).
/// A: lane l's byte e is A[l % 16][scaledAK(l, e)]; B: lane l's nibble n (byte n / 2, low nibble
/// first) is B[scaledBK(l, n)][l % 16]; the E8M0 scale of A's row i (B's column j) in K block
/// t = K / 32 is byte 0 of lane 16 t + i (16 t + j). Measured on gfx950-run (docs/layer.md).
Type scaledAType();  // <8 x i32>
Type scaledBType();  // <4 x i32>
inline int scaledAK(int lane, int e) { return 64 * (e / 16) + 16 * (lane / 16) + e % 16; }
inline int scaledBK(int lane, int n) { return 32 * (lane / 16) + n; }
inline int scaleLane(int block, int rowOrCol) { return 16 * block + rowOrCol; }

/// One wave's MfmaScale on raw operands: a[64][32] E4M3 bytes, b[64][16] E2M1 pairs, scaleA/B[64]
/// E8M0 bytes, acc[64][4] replaced. Model: for every (i, j), from d = acc, for each K block t in
/// order: s = in-order f32 sum from 0 of the block's exact products a x b, then
/// d = f32(d + f32(ldexp(s, scaleA + scaleB - 254))): the scaled block is rounded (subnormals kept,
/// Inf past FLT_MAX) before the add; code 255 is 2^128, not NaN.
void runScaled(const uint8_t* a, const uint8_t* b, const uint8_t* scaleA, const uint8_t* scaleB, float* acc);

}  // namespace monogen::ir::mfma
