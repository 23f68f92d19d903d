// The declared model of gfx950 MFMA shapes: lane layouts and internal numerics.
//
// The Sim device and the native reference both compute MFMAs through this one model, so they
// agree bit for bit. The lane layouts are the hardware's (LLVM AMDGPUUsage / CDNA3 ISA; the
// 16x16x32 bf16 one confirmed on AMD's gfx950 simulator). The numerics are a model, not the
// hardware: the hardware sums products in an internal tree of unspecified extra precision;
// this model adds the rounded f32 products to the accumulator one K at a time, ascending.
// A real MI350X result may therefore differ from the model in the last bits of a K-sum.
#pragma once
#include <array>
#include <cstdint>

#include "ir/Op.h"

namespace monogen::ir::mfma {

constexpr int kWave = 64;

/// Shape of an MFMA kind: M x N x K, and the elements per lane of A/B and of the accumulator.
struct Shape {
  int m, n, k, abPerLane, accPerLane;
};
Shape shapeOf(MfmaKind k);

/// Row/col of A held by lane l's element e (A is M x K): A[aRow][aCol].
inline int aRow(MfmaKind, int lane, int) { return lane % 16; }
inline int aCol(MfmaKind k, int lane, int e) {
  return k == MfmaKind::F32_16x16x32_BF16 ? 8 * (lane / 16) + e : lane / 16;
}
/// B is K x N: lane l's element e holds B[bRow][bCol].
inline int bRow(MfmaKind k, int lane, int e) { return aCol(k, lane, e); }
inline int bCol(MfmaKind, int lane, int) { return lane % 16; }
/// The accumulator: lane l's element i is D[4 (l / 16) + i][l % 16].
inline int dRow(int lane, int i) { return 4 * (lane / 16) + i; }
inline int dCol(int lane, int) { return lane % 16; }

/// One wave's MFMA on float values: a/b hold each lane's A/B elements as f32 (bf16 widened
/// exactly), acc each lane's accumulator; the result replaces acc. Model: for every (i, j),
/// acc[i][j] += f32(a[i][k] * b[k][j]) for k = 0 .. K-1 ascending, each add rounded to f32.
void run(MfmaKind kind, const float* a /*[64][abPerLane]*/, const float* b /*[64][abPerLane]*/,
         float* acc /*[64][4]*/);

}  // namespace monogen::ir::mfma
