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

}  // namespace monogen::ir::mfma
