#include "tools/SimAttention.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <vector>

#include "ir/Error.h"
#include "ir/Verifier.h"
#include "specs/minimax_m3/kernel/AttentionSpec.h"
#include "specs/minimax_m3/reference/AttentionPre.h"
#include "specs/minimax_m3/reference/AttentionReference.h"
#include "specs/minimax_m3/testing/AttentionInputs.h"
#include "specs/minimax_m3/testing/AttentionSave.h"
#include "specs/minimax_m3/testing/AttentionSim.h"
#include "specs/minimax_m3/testing/AttentionVerdict.h"
#include "specs/minimax_m3/testing/SaveLaunch.h"
#include "tools/Variant.h"
#include "tools/TimedCells.h"
#include "tools/TimedIsa.h"
#include "tools/Verdict.h"

namespace monogen::tools {

namespace mm = specs::minimax_m3;

mm::AttentionInputOptions attentionInputOptions(const mm::AttentionKnobs& knobs, int context) {
  mm::AttentionInputOptions io;
  io.mode = knobs.mode;
  io.fullLayer = knobs.fullLayer;
  io.indexCp = knobs.indexCp();
  io.context = context;
  return io;
}

mm::AttentionInputOptions attentionInputOptions(const SimAttentionOptions& o, const mm::AttentionKnobs& knobs) {
  mm::AttentionInputOptions io = attentionInputOptions(knobs, o.context);
  io.shareSequence = o.share;
  io.paddedRows = o.paddedRows;
  return io;
}

int simAttention(const mm::ModelConfig& cfg, const SimAttentionOptions& o) {
  const mm::AttentionKnobs knobs = attentionKnobsOf(o.cache, o.layer);
  const mm::AttentionVariant v = mm::AttentionVariant::make(cfg, mm::makeAttentionKey(cfg, o.rows, o.tp, knobs));
  const ir::Plan plan = mm::buildAttentionPlan(v);
  ir::verify(plan);
  const mm::AttentionInputOptions io = attentionInputOptions(o, knobs);
  if (!o.save.empty()) mm::checkSaveDir(o.save, "--save");  // before the launch, not after it
  fmt::print("{} on the Sim device: {} ranks x {} CTAs x {} threads\n", plan.key.variantName(), o.tp, cfg.blocks,
             cfg.threads);
  const mm::AttentionLaunch in = mm::makeAttentionLaunch(cfg, o.rows, o.tp, o.seed, io);
  const mm::AttentionResult ref = mm::attentionReference(cfg, in);
  fmt::print("inputs: seed {}, {}\n", o.seed, io.describe());
  std::fflush(stdout);
  const auto timing = timingFor(o.timing, o.irIssue, plan);
  SeedTally tally;
  std::optional<mm::AttentionSimRun> saved;  // with --save: the first failing run, else the last
  std::string savedVerdict;
  uint64_t savedSeed = 0;
  for (int i = 0; i < o.seeds; ++i) {
    runtime::SimOptions so;
    so.seed = o.seed + static_cast<uint64_t>(i);
    so.races = o.races;
    so.timing = timing;
    const auto t0 = std::chrono::steady_clock::now();
    mm::AttentionSimRun run = mm::runAttentionOnSim(plan, v, in, so);
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const std::string verdict = withFindings(attentionVerdict(in, ref, run, cfg), run.stats);
    tally.add(verdict, so.seed);
    fmt::print("  seed {:<4} {:>10} ops {:>8} ticks {:6.2f} s  {}\n", so.seed, run.stats.steps, run.stats.ticks, sec,
               verdict);
    if (run.stats.timed.on) printTimed(run.stats.timed);
    printFindings(run.stats, o.races);
    if (!o.save.empty() && (!saved || savedVerdict == "bit-exact")) {
      saved = std::move(run);
      savedVerdict = verdict;
      savedSeed = so.seed;
    }
  }
  const std::string overall = tally.overall();
  if (!o.save.empty()) {
    mm::saveAttentionLaunch(o.save, cfg, in, *saved, ref,
                            {{"seed", std::to_string(o.seed)},
                             {"inputs", io.describe()},
                             {"variant", plan.key.variantName()},
                             {"sched_seed", std::to_string(savedSeed)},
                             {"verdict", savedVerdict},
                             {"seeds_verdict", overall}});
    fmt::print("saved the launch (inputs, the caches' touched blocks, scheduler seed {}'s outputs: {}; reference) to "
               "{}\n",
               savedSeed, savedVerdict.substr(0, savedVerdict.find(':')), o.save);
  }
  fmt::print("verdict: {}\n", overall);
  return tally.bad() ? 1 : 0;
}

}  // namespace monogen::tools
