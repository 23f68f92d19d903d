#include "ir/Mfma.h"

#include <cmath>

#include "ir/Numerics.h"

namespace monogen::ir::mfma {

Shape shapeOf(MfmaKind k) {
  switch (k) {
    case MfmaKind::F32_16x16x32_BF16: return {16, 16, 32, 8, 4};
    case MfmaKind::F32_16x16x4_F32: return {16, 16, 4, 1, 4};
    case MfmaKind::F32_16x16x32_FP8: return {16, 16, 32, 8, 4};
    case MfmaKind::None: break;
  }
  return {0, 0, 0, 0, 0};
}

Type operandType(MfmaKind k) {
  switch (k) {
    case MfmaKind::F32_16x16x32_BF16: return Type::vec(Type::bf16(), 8);
    case MfmaKind::F32_16x16x4_F32: return Type::f32();
    case MfmaKind::F32_16x16x32_FP8: return Type::i64();
    case MfmaKind::None: break;
  }
  return Type{};
}
Type accType() { return Type::vec(Type::f32(), 4); }

void run(MfmaKind kind, const float* a, const float* b, float* acc) {
  const Shape s = shapeOf(kind);
  float A[16][32] = {}, B[32][16] = {}, D[16][16] = {};
  for (int l = 0; l < kWave; ++l) {
    for (int e = 0; e < s.abPerLane; ++e) {
      A[aRow(kind, l, e)][aCol(kind, l, e)] = a[l * s.abPerLane + e];
      B[bRow(kind, l, e)][bCol(kind, l, e)] = b[l * s.abPerLane + e];
    }
    for (int i = 0; i < 4; ++i) D[dRow(l, i)][dCol(l, i)] = acc[l * 4 + i];
  }
  for (int i = 0; i < s.m; ++i)
    for (int j = 0; j < s.n; ++j) {
      float d = D[i][j];
      for (int k = 0; k < s.k; ++k) {
        volatile float p = A[i][k] * B[k][j];  // rounded to f32, no contraction into an fma
        d = d + p;
      }
      D[i][j] = d;
    }
  for (int l = 0; l < kWave; ++l)
    for (int i = 0; i < 4; ++i) acc[l * 4 + i] = D[dRow(l, i)][dCol(l, i)];
}

Type scaledAType() { return Type::vec(Type::i32(), 8); }
Type scaledBType() { return Type::vec(Type::i32(), 4); }

void runScaled(const uint8_t* a, const uint8_t* b, const uint8_t* scaleA, const uint8_t* scaleB, float* acc) {
  float A[16][128], B[128][16];
  for (int l = 0; l < kWave; ++l)
    for (int e = 0; e < 32; ++e) {
      A[l % 16][scaledAK(l, e)] = num::fp8E4m3ToF32(a[32 * l + e]);
      B[scaledBK(l, e)][l % 16] = num::fp4E2m1ToF32((b[16 * l + e / 2] >> (4 * (e % 2))) & 0xf);
    }
  for (int l = 0; l < kWave; ++l)
    for (int r = 0; r < 4; ++r) {
      const int i = dRow(l, r), j = dCol(l, r);
      float d = acc[4 * l + r];
      for (int t = 0; t < 4; ++t) {
        float s = 0.0f;
        for (int k = 32 * t; k < 32 * t + 32; ++k) {
          volatile float p = A[i][k] * B[k][j];  // exact: 4 x 2 significant bits
          s = s + p;
        }
        // rounded to f32 before the add, as gfx950-run does (docs/layer.md)
        volatile float scaled = std::ldexp(s, int{scaleA[scaleLane(t, i)]} + int{scaleB[scaleLane(t, j)]} - 254);
        d = d + scaled;
      }
      acc[4 * l + r] = d;
    }
}

}  // namespace monogen::ir::mfma
