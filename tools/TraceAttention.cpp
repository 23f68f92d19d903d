#include "tools/TraceAttention.h"

#include <fmt/format.h>

#include "runtime/Trace.h"
#include "specs/minimax_m3/kernel/AttentionVariant.h"
#include "specs/minimax_m3/reference/AttentionReference.h"
#include "specs/minimax_m3/testing/AttentionInputs.h"
#include "specs/minimax_m3/testing/AttentionSim.h"
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

}  // namespace

int traceAttention(const VariantOptions& vo, uint64_t seed, const std::string& out,
                   std::shared_ptr<const runtime::timing::TimingParams> timing, bool irIssue) {
  const mm::ModelConfig cfg = configOf(vo);
  const ir::Key key = keyOf(vo, cfg, vo.rows, vo.tp);
  const mm::AttentionVariant v = mm::AttentionVariant::make(cfg, key);
  const ir::Plan plan = specOf(vo).plan(cfg, key);
  support::checkOutputFile(out, "-o");  // before the launch
  mm::AttentionInputOptions io;
  io.mode = v.knobs.mode;
  io.fullLayer = v.knobs.fullLayer;
  io.context = vo.context;
  const mm::AttentionLaunch in = mm::makeAttentionLaunch(cfg, vo.rows, vo.tp, seed, io);
  runtime::SimOptions so;
  so.seed = seed;
  so.stageSpans = true;
  so.timing = timingFor(timing, irIssue, plan);
  const mm::AttentionSimRun run = mm::runAttentionOnSim(plan, v, in, so);
  nlohmann::json j = runtime::chromeTrace(traceOf(plan, run.stats));
  j["otherData"]["clock"] = timing ? "modeled: the Sim's gfx950 timing model (docs/timing.md), a CTA's first and last "
                                     "op in each stage"
                                   : "the Sim's op-count clock (not a time): a CTA's first and last op in each stage";
  writeOutputFile(out, j.dump(1) + "\n");
  size_t spans = 0;
  for (const auto& e : j.at("traceEvents"))
    if (e.at("ph") == "X") ++spans;
  if (timing)
    fmt::print("{} on the Sim device, timed: {} ranks x {} CTAs, {} stages, {:.2f} us modeled (timestamps modeled)\n",
               key.variantName(), vo.tp, cfg.blocks, plan.stages.size(), run.stats.timed.us);
  else
    fmt::print("{} on the Sim device: {} ranks x {} CTAs, {} stages, {} ticks of the Sim's op-count clock (not a "
               "time)\n",
               key.variantName(), vo.tp, cfg.blocks, plan.stages.size(), run.stats.ticks);
  fmt::print("wrote {} stage events to {}\n", spans, out);
  const std::string verdict = attentionVerdict(in, mm::attentionReference(cfg, in), run, cfg);
  fmt::print("verdict: {}\n", verdict);
  return verdict == "bit-exact" ? 0 : 1;
}

}  // namespace monogen::tools
