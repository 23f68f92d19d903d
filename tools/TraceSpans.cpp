#include "tools/TraceSpans.h"

#include <fmt/format.h>

#include "runtime/Trace.h"
#include "specs/minimax_m3/kernel/AttentionVariant.h"
#include "specs/minimax_m3/kernel/LayerVariant.h"
#include "specs/minimax_m3/reference/AttentionReference.h"
#include "specs/minimax_m3/testing/AttentionInputs.h"
#include "specs/minimax_m3/testing/AttentionSim.h"
#include "specs/minimax_m3/testing/LayerSim.h"
#include "support/AtomicFile.h"
#include "tools/SimAttention.h"
#include "tools/TimedIsa.h"

namespace monogen::tools {

namespace mm = specs::minimax_m3;

namespace {

/// The Sim's stage spans as trace buffers: stamps tick + 1 (0 is "never there").
runtime::TraceBuffers traceOf(const ir::Plan& plan, const runtime::SimStats& stats) {
  runtime::TraceBuffers t;
  t.name = plan.key.variantName();
  t.blocks = plan.grid.blocks;
  t.clockHz = plan.target().clockHz;
  for (const ir::Stage& s : plan.stages) t.stages.push_back(s.name);
  const size_t stages = plan.stages.size();
  t.ranks.assign(static_cast<size_t>(plan.ranks), std::vector<uint64_t>(size_t(t.blocks) * stages * 2, 0));
  for (const runtime::SimStageSpan& s : stats.stageSpans) {
    uint64_t* p = &t.ranks.at(s.rank)[(size_t(s.cta) * stages + size_t(s.stage)) * 2];
    p[0] = static_cast<uint64_t>(s.start) + 1;
    p[1] = static_cast<uint64_t>(s.end) + 1;
  }
  return t;
}

/// Writes the run's spans to `out` and prints the run's line, the spans written and `verdict`.
int writeSpans(const ir::Plan& plan, const runtime::SimStats& stats, bool timed, const std::string& out,
               const std::string& verdict) {
  nlohmann::json j = runtime::chromeTrace(traceOf(plan, stats));
  j["otherData"]["clock"] = timed ? "modeled: the Sim's gfx950 timing model (docs/timing.md), a CTA's first and last "
                                    "op in each stage"
                                  : "the Sim's op-count clock (not a time): a CTA's first and last op in each stage";
  writeOutputFile(out, j.dump(1) + "\n");
  size_t spans = 0;
  for (const auto& e : j.at("traceEvents"))
    if (e.at("ph") == "X") ++spans;
  if (timed)
    fmt::print("{} on the Sim device, timed: {} ranks x {} CTAs, {} stages, {:.2f} us modeled (timestamps modeled)\n",
               plan.key.variantName(), plan.ranks, plan.grid.blocks, plan.stages.size(), stats.timed.us);
  else
    fmt::print("{} on the Sim device: {} ranks x {} CTAs, {} stages, {} ticks of the Sim's op-count clock (not a "
               "time)\n",
               plan.key.variantName(), plan.ranks, plan.grid.blocks, plan.stages.size(), stats.ticks);
  fmt::print("wrote {} stage events to {}\n", spans, out);
  fmt::print("verdict: {}\n", verdict);
  return verdict == "bit-exact" ? 0 : 1;
}

/// The Sim's options for a traced run: spans on, under `timing` (the plan's ISA unless irIssue).
runtime::SimOptions spanOptions(uint64_t seed, const std::shared_ptr<const runtime::timing::TimingParams>& timing,
                                bool irIssue, const ir::Plan& plan) {
  runtime::SimOptions so;
  so.seed = seed;
  so.stageSpans = true;
  so.timing = timingFor(timing, irIssue, plan);
  return so;
}

}  // namespace

int traceAttention(const VariantOptions& vo, uint64_t seed, const std::string& out,
                   std::shared_ptr<const runtime::timing::TimingParams> timing, bool irIssue) {
  const mm::ModelConfig cfg = configOf(vo);
  const ir::Key key = keyOf(vo, cfg, vo.rows, vo.tp);
  const mm::AttentionVariant v = mm::AttentionVariant::make(cfg, key);
  const ir::Plan plan = specOf(vo).plan(cfg, key);
  support::checkOutputFile(out, "-o");  // before the launch
  const mm::AttentionLaunch in =
      mm::makeAttentionLaunch(cfg, vo.rows, vo.tp, seed, attentionInputOptions(v.knobs, vo.context));
  const mm::AttentionSimRun run = mm::runAttentionOnSim(plan, v, in, spanOptions(seed, timing, irIssue, plan));
  return writeSpans(plan, run.stats, timing != nullptr, out,
                    attentionVerdict(in, mm::attentionReference(cfg, in), run, cfg));
}

int traceLayer(const VariantOptions& vo, uint64_t seed, const std::string& out,
               std::shared_ptr<const runtime::timing::TimingParams> timing, bool irIssue) {
  const mm::ModelConfig cfg = configOf(vo);
  const ir::Key key = keyOf(vo, cfg, vo.rows, vo.tp);
  const mm::LayerVariant v = mm::LayerVariant::make(cfg, key);
  const ir::Plan plan = specOf(vo).plan(cfg, key);
  support::checkOutputFile(out, "-o");  // before the launch
  const mm::LayerInputs in = mm::makeLayerInputs(cfg, vo.rows, vo.tp, seed, attentionInputOptions(v.knobs, vo.context));
  const mm::LayerSimRun run = mm::runLayerOnSim(plan, v, in, spanOptions(seed, timing, irIssue, plan));
  return writeSpans(plan, run.ffn.stats, timing != nullptr, out,
                    mm::layerVerdict(cfg, in, mm::layerReference(cfg, in, v.moe), run));
}

}  // namespace monogen::tools
