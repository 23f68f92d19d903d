#include "specs/minimax_m3/reference/Reference.h"

#include "ir/Numerics.h"
#include "specs/minimax_m3/kernel/Layout.h"

namespace monogen::specs::minimax_m3 {

namespace num = ir::num;

// Each product and each add is its own statement: one f32 rounding each, never an FMA.
float pairSquares(float v0, float v1) {
  const float q0 = v0 * v0;  // rounds to f32
  const float q1 = v1 * v1;  // rounds to f32
  float s = 0.0f + q0;       // the kernel's literal 0 + v0 v0 (exact: q0 is never -0)
  s = s + q1;                // rounds to f32: column 2 pair, then column 2 pair + 1
  return s;
}

// The butterfly sq = sq + shuffle(sq, lane ^ m) for m = 8, 4, 2, 1 over a row's 16 lanes j, as
// lane 0 computes it (its own value first; f32 adds commute, so every lane gets these bits):
//   m = 8: a[i] = s[i] + s[i + 8]   i = 0..7
//   m = 4: b[i] = a[i] + a[i + 4]   i = 0..3
//   m = 2: c[i] = b[i] + b[i + 2]   i = 0..1
//   m = 1: d    = c[0] + c[1]
// i.e. d = ((a0 + a4) + (a2 + a6)) + ((a1 + a5) + (a3 + a7)), a_i = s_i + s_{i+8}; every add rounds to f32.
float butterfly16(const float s[16]) {
  float a[8], b[4], c[2];
  for (int i = 0; i < 8; ++i) a[i] = s[i] + s[i + 8];
  for (int i = 0; i < 4; ++i) b[i] = a[i] + a[i + 4];
  for (int i = 0; i < 2; ++i) c[i] = b[i] + b[i + 2];
  return c[0] + c[1];
}

AllReduceResult referenceAllReduce(int rows, int hidden, const std::vector<const uint16_t*>& parts,
                                   const uint16_t* resIn) {
  const int tasks = hidden / kTaskColumns;
  const size_t n = static_cast<size_t>(rows) * hidden;
  AllReduceResult out;
  out.resOut.resize(n);
  out.sres.resize(n);
  out.ssq.resize(static_cast<size_t>(rows) * tasks);

  for (size_t i = 0; i < n; ++i) {
    // The all-reduce: f32 sum over the ranks in rank order, acc = f32(p0), then acc + f32(pr)
    // for r = 1 .. TP - 1 (bf16 -> f32 is exact; each add rounds to f32).
    float acc = num::bf16ToF32(parts[0][i]);
    for (size_t r = 1; r < parts.size(); ++r) acc = acc + num::bf16ToF32(parts[r][i]);
    // The all-reduce's output is bf16: rounds to bf16 (RNE) and back to f32, exact.
    const float reduced = num::roundBf16(acc);
    // + the residual in f32: rounds to f32.
    const float v = reduced + num::bf16ToF32(resIn[i]);
    out.resOut[i] = num::f32ToBf16(v);  // rounds to bf16 (RNE)
    out.sres[i] = v;                    // f32, no rounding
  }

  // SSQ[t][task]: thread j of the task (pair 16 task + j, columns 2 pair, 2 pair + 1) squares its
  // two columns (pairSquares), then the row's 16 threads are summed by the butterfly.
  for (int t = 0; t < rows; ++t)
    for (int task = 0; task < tasks; ++task) {
      float s[kTaskPairs];
      for (int j = 0; j < kTaskPairs; ++j) {
        const size_t col = static_cast<size_t>(t) * hidden + 2 * (task * kTaskPairs + j);
        s[j] = pairSquares(out.sres[col], out.sres[col + 1]);
      }
      out.ssq[static_cast<size_t>(t) * tasks + task] = butterfly16(s);
    }
  return out;
}

}  // namespace monogen::specs::minimax_m3
