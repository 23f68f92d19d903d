// monogen sim --launch layer: the one-launch decoder layer on the Sim against the attention
// reference followed by the FFN launch's, bit for bit, with the verdict line of `sim`.
#pragma once
#include "specs/minimax_m3/kernel/ModelConfig.h"
#include "tools/SimAttention.h"

namespace monogen::tools {

/// Runs it (o's rows, tp, context, cache, layer type, shared sequence, padded rows, seeds and races; the
/// caller refuses the rest), prints the Sim line per scheduler seed and "verdict: ...". Returns
/// the exit code: 0 only when every seed's run is bit-exact, its error words 0, and (races) clean.
int simLayer(const specs::minimax_m3::ModelConfig& cfg, const SimAttentionOptions& o);

}  // namespace monogen::tools
