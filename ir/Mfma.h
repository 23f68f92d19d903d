// The declared model of gfx950 MFMA shapes: lane layouts and internal numerics.
//
// The Sim device and the native reference both compute MFMAs through this one model, so they
// agree bit for bit. The lane layouts are the hardware's (LLVM AMDGPUUsage / CDNA3 ISA; the
// 16x16x32 bf16 one confirmed on AMD's gfx950 simulator). The numerics are a model, not the
// hardware: the hardware sums products in an internal tree of unspecified extra precision;
// this model adds the rounded f32 products to the accumulator one K at a time, ascending.
// A real MI350X result may therefore differ from the model in the last bits of a K-sum.
//
// The FP8 shape, F32_16x16x32_FP8 (gfx950's v_mfma_f32_16x16x32_fp8_fp8, LLVM's
// llvm.amdgcn.mfma.f32.16x16x32.fp8.fp8): A and B are OCP e4m3fn (gfx950 reads the fp8 MFMA
// operands as OCP; gfx942 read them as fnuz, bias 8), 8 bytes a lane in an i64, byte e the
// lane's element e, in the bf16 16x16x32 shape's layout: lane l holds A[l % 16][8 (l / 16) + e]
// and B[8 (l / 16) + e][l % 16]; the accumulator as every 16x16 shape. Its model is the bf16
// one's: each byte widened exactly (num::fp8E4m3ToF32: 0x7f / 0xff NaN), products rounded to f32
// (exact here: a product of two e4m3 values has at most 8 significant bits and lies within
// 2^-18 .. 448^2), added to the accumulator one K at a time, ascending. Checked on gfx950-run by
// tests/test_executor_ops.cpp ("mfma.16x16x32.fp8").
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

}  // namespace monogen::ir::mfma
