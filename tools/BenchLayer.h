// monogen bench --launch layer --timed: per (S, TP), the one-launch decoder layer's modeled time
// beside the two launches it fuses (the attention launch, then the FFN launch with o_proj),
// modeled on the same inputs, the bytes floor and the serving stack's measured layer.
#pragma once
#include "specs/minimax_m3/kernel/ModelConfig.h"
#include "tools/BenchAttention.h"

namespace monogen::tools {

/// Prints the table (o.timing required; o.breakdown and o.noSim do not apply) and writes o.json.
/// Returns 0 when every cell's three runs are bit-exact with their error words 0, else 1.
int benchLayer(const specs::minimax_m3::ModelConfig& cfg, const BenchAttentionOptions& o);

}  // namespace monogen::tools
