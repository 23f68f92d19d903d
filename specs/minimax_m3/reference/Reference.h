// The native CPU reference of the MiniMax-M3 FFN launch's first two stages (push + reduce): the
// attention all-reduce in rank order, the residual add, SRES and each reduce task's sum of
// squares, with exactly the kernel's f32 sums and bf16 rounding points.
#pragma once
#include <cstdint>
#include <vector>

namespace monogen::specs::minimax_m3 {

/// What push + reduce leave on every rank (they are the same on every rank).
struct AllReduceResult {
  std::vector<uint16_t> resOut;  // bf16 bits [S][hidden]
  std::vector<float> sres;       // f32 [S][hidden]
  std::vector<float> ssq;        // f32 [S][hidden / 32]: SSQ[t][task]
};

/// parts[r]: rank r's o_proj partial, bf16 bits [S][hidden], in rank order; resIn: the residual,
/// bf16 bits [S][hidden].
AllReduceResult referenceAllReduce(int rows, int hidden, const std::vector<const uint16_t*>& parts,
                                   const uint16_t* resIn);

/// One reduce thread's two squares: (0 + v0 v0) + v1 v1, each product and add rounded to f32.
float pairSquares(float v0, float v1);
/// A row's sum over its 16 reduce threads' values s[0..15] in the kernel's butterfly order
/// (masks 8, 4, 2, 1; every lane ends with lane 0's value).
float butterfly16(const float s[16]);

}  // namespace monogen::specs::minimax_m3
