// The MiniMax-M3 FFN launch's MoE half (norm .. final) in double precision, unrounded past the
// bf16 inputs and weights, with a first-order error bound and a statistical sigma per output:
// a tolerance check of the bit-exact reference (docs/reference-numerics.md, "Float64 check").
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
