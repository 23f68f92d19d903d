// monogen sim --launch attention: the MiniMax-M3 attention launch on the Sim against the native
// reference, bit for bit, with the verdict line of the FFN launch's `sim`.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "runtime/sim/timing/TimingParams.h"
#include "specs/minimax_m3/kernel/LayerPlacement.h"
#include "specs/minimax_m3/kernel/ModelConfig.h"
#include "specs/minimax_m3/testing/AttentionInputs.h"
#include "specs/minimax_m3/testing/AttentionSim.h"
#include "specs/minimax_m3/testing/AttentionVerdict.h"

namespace monogen::tools {

struct SimAttentionOptions {
  int rows = 8, tp = 4;
  int context = 128;           // keys each sequence holds before the launch
  std::string cache = "vllm";  // the cache mode knob
  std::string layer = "sparse";
  int agRsFrom = specs::minimax_m3::LayerPlacementKnobs{}.agRsFrom;           // the layer launch: its ag_rs_from knob
  int wideFrom = specs::minimax_m3::LayerPlacementKnobs{}.wideFrom;           // the layer launch: its wide_from knob
  std::string moe = "a16w4";   // the layer launch's moe knob
  int indexCpFrom = 0;         // the layer launch's index_cp_from knob (0: off)
  bool share = false;          // the rows share one sequence (speculative verify)
  int paddedRows = 0;
  uint64_t seed = 1;
  int seeds = 1;
  bool races = false;
  std::shared_ptr<runtime::timing::TimingParams> timing;  // --timed: the Sim's gfx950 timing model
  bool irIssue = false;  // --timed: issue by IR op class, not by the compiled ISA
  std::string save;  // --save DIR: the launch's tensors (AttentionSave.h), the first failing seed's run
};

/// The seeded inputs' options the variant's knobs and `context` ask for (no shared sequence, no
/// padded rows): check's and trace's, of the attention and the layer launch.
specs::minimax_m3::AttentionInputOptions attentionInputOptions(const specs::minimax_m3::AttentionKnobs& knobs,
                                                               int context);

/// The seeded inputs' options `o` and the variant's knobs ask for.
specs::minimax_m3::AttentionInputOptions attentionInputOptions(const SimAttentionOptions& o,
                                                               const specs::minimax_m3::AttentionKnobs& knobs);

/// Runs it, prints the Sim line per scheduler seed and "verdict: ...". Returns the exit code: 0
/// only when every seed's run is bit-exact, its error words 0, and (--races) clean.
int simAttention(const specs::minimax_m3::ModelConfig& cfg, const SimAttentionOptions& o);

}  // namespace monogen::tools
