#include "tools/SimLayer.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>

#include "ir/Verifier.h"
#include "specs/minimax_m3/kernel/LayerSpec.h"
#include "specs/minimax_m3/testing/LayerSim.h"
#include "tools/TimedCells.h"
#include "tools/TimedIsa.h"
#include "tools/Variant.h"
#include "tools/Verdict.h"

namespace monogen::tools {

namespace mm = specs::minimax_m3;

int simLayer(const mm::ModelConfig& cfg, const SimAttentionOptions& o) {
  mm::AttentionKnobs knobs = attentionKnobsOf(o.cache, o.layer);
  knobs.indexCpFrom = o.indexCpFrom;
  const mm::LayerVariant v = mm::LayerVariant::make(
      cfg, mm::makeLayerKey(cfg, o.rows, o.tp, knobs, {.wideFrom = o.wideFrom, .agRsFrom = o.agRsFrom}, mm::parseMoeQuant(o.moe, "--moe")));
  const ir::Plan plan = mm::buildLayerPlan(v);
  ir::verify(plan);
  const mm::AttentionInputOptions io = attentionInputOptions(o, knobs);
  fmt::print("{} on the Sim device: {} ranks x {} CTAs x {} threads\n", plan.key.variantName(), o.tp, cfg.blocks,
             cfg.threads);
  const mm::LayerInputs in = mm::makeLayerInputs(cfg, o.rows, o.tp, o.seed, io);
  const mm::LayerReference ref = mm::layerReference(cfg, in, v.moe);
  fmt::print("inputs: seed {}, {}; the FFN's natural routing\n", o.seed, io.describe());
  std::fflush(stdout);
  const auto timing = timingFor(o.timing, o.irIssue, plan);
  SeedTally tally;
  for (int i = 0; i < o.seeds; ++i) {
    runtime::SimOptions so;
    so.seed = o.seed + static_cast<uint64_t>(i);
    so.races = o.races;
    so.timing = timing;
    const auto t0 = std::chrono::steady_clock::now();
    const mm::LayerSimRun run = mm::runLayerOnSim(plan, v, in, so);
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const runtime::SimStats& st = run.ffn.stats;
    const std::string verdict = withFindings(mm::layerVerdict(cfg, in, ref, run), st);
    tally.add(verdict, so.seed);
    fmt::print("  seed {:<4} {:>10} ops {:>8} ticks {:6.2f} s  {}\n", so.seed, st.steps, st.ticks, sec, verdict);
    if (st.timed.on) printTimed(st.timed);
    printFindings(st, o.races);
  }
  fmt::print("verdict: {}\n", tally.overall());
  return tally.bad() ? 1 : 0;
}

}  // namespace monogen::tools
