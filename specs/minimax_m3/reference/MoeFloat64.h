// The MiniMax-M3 FFN launch's MoE half (norm .. final) in double precision with
// straightforward math, for a tolerance check of the bit-exact reference (MoeReference).
//
// Only the model's bf16 dataflow by definition stays: the inputs (sres, the bf16 norm
// weight) and the MXFP4 / FP32 weights, read exactly. Nothing else is rounded: the norm uses
// the sum of squares of sres itself (not the reduce's SSQ parts), xn, the logits, the
// sigmoids, the expert GEMVs, SwiGLU and the partials are doubles, and the ranks' partials
// are summed exactly. The result does not depend on TP.
//
// Next to every output it carries a first-order bound on |reference - float64| (see
// MoeFloat64.cpp): every bf16 rounding point of the reference contributes at most
// u = 2^-8 (bf16's unit roundoff: 8 significant bits, half its 2^-7 epsilon) of the value it rounds, every f32 chain of n adds at most
// n 2^-24 of its absolute sum, and these errors are propagated through the GEMVs, SwiGLU
// and the routing weights with absolute values; the bound is twice that first-order sum
// (the factor covers the second-order terms). It depends on TP: the reference rounds each
// rank's partial.
//
// `sigma` is the statistical counterpart: each rounding error taken as independent uniform
// noise in [-u |v|, u |v|] (variance (u v)^2 / 3), propagated as variances (squared weights
// through the GEMVs, squared slopes through SwiGLU and the routing weights). The reference's
// error is a sum of many such terms, close to normal: |error| beyond 8 sigma has probability
// about 1e-15 an element.
#pragma once
#include <vector>

#include "runtime/Tensor.h"
#include "specs/minimax_m3/kernel/ModelConfig.h"
#include "specs/minimax_m3/reference/MoeReference.h"

namespace monogen::specs::minimax_m3 {

struct MoeFloat64Result {
  std::vector<double> rstd;     // [S]
  std::vector<double> logits;   // [S, E]
  std::vector<int> picks;       // [S, topk], -1 for padded rows
  std::vector<double> weights;  // [S, topk]
  std::vector<double> margin;   // [S]: selection value of the last pick minus the best unpicked
  std::vector<double> out;      // [S, hidden]
  std::vector<double> bound;    // [S, hidden]: first-order bound on |reference out - out|
  std::vector<double> sigma;    // [S, hidden]: its standard deviation, rounding errors as noise
};

/// `in` as for moeReference (ssq is not read). TP names the ranks' weight tensors and
/// shapes the bound; the value is TP-independent.
MoeFloat64Result moeFloat64(const ModelConfig& cfg, int S, int TP, const runtime::TensorMap& in,
                            MoeExperts experts = MoeExperts::All);

}  // namespace monogen::specs::minimax_m3
