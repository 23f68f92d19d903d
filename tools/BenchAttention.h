// monogen bench --launch attention: per (S, TP), the bytes the attention launch reads on the Sim
// device against the minimum a rank must read (specs/minimax_m3/testing/AttentionBytesModel.h),
// each cell's run checked bit for bit against the reference; with a timing model, each cell's
// modeled time beside its floor.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/sim/timing/TimingParams.h"
#include "specs/minimax_m3/kernel/ModelConfig.h"

namespace monogen::tools {

struct BenchAttentionOptions {
  std::vector<int> rows, tps;
  int context = 2048;          // keys each sequence holds before the launch
  std::string cache = "vllm";  // the cache mode knob
  std::string layer = "sparse";
  bool share = false;          // the rows share one sequence
  uint64_t seed = 1;
  bool breakdown = false;      // each cell's minimum by tensor and its stages' bytes
  bool noSim = false;          // the minimum alone
  std::shared_ptr<const runtime::timing::TimingParams> timing;  // --timed: the Sim's gfx950 timing model
  bool irIssue = false;        // --timed: issue by IR op class, not by the compiled ISA
  std::string json;            // --timed: the cells as JSON objects to this file
  std::string moe = "a16w4";   // --launch layer: the layer's experts' numerics (its moe knob)
  int wideFrom = 1;            // --launch layer: its wide_from knob (LayerPlacementKnobs{}.wideFrom)
  int indexCpFrom = 0;         // --launch layer: its index_cp_from knob (0: off; the two launches run without)
};

/// Prints the table. Returns 0 when every cell's run is bit-exact with its error words 0, else 1.
int benchAttention(const specs::minimax_m3::ModelConfig& cfg, const BenchAttentionOptions& o);

}  // namespace monogen::tools
