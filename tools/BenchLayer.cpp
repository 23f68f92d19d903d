#include "tools/BenchLayer.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "ir/Error.h"
#include "specs/minimax_m3/kernel/AttentionVariant.h"
#include "specs/minimax_m3/kernel/Generate.h"
#include "specs/minimax_m3/kernel/LayerVariant.h"
#include "specs/minimax_m3/testing/AttentionBytesModel.h"
#include "specs/minimax_m3/testing/BytesModel.h"
#include "specs/minimax_m3/testing/LayerSim.h"
#include "specs/minimax_m3/testing/SimHarness.h"
#include "tools/SimAttention.h"
#include "tools/TimedCells.h"
#include "tools/TimedIsa.h"
#include "tools/Variant.h"

namespace monogen::tools {

namespace mm = specs::minimax_m3;

namespace {

/// The serving stack's whole layer measured on MI350X (full dims, TP 4; its layout module's
/// docstrings), by S; 0: none measured.
double servingMeasuredUs(int S, int TP) {
  if (TP != 4) return 0;
  return S == 2 ? 43.1 : S == 4 ? 54.09 : 0;
}

/// One cell's figures: each run's modeled us and verdict.
struct LayerCell {
  double layerUs = 0, attentionUs = 0, ffnUs = 0, floorUs = 0, measuredUs = 0;
  std::string layerVerdict, attentionVerdict, ffnVerdict;
  bool exact() const {
    return layerVerdict == "bit-exact" && attentionVerdict == "bit-exact" && ffnVerdict == "bit-exact";
  }
};

double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// Progress on stderr: the cell's runs as they end.
void progress(const char* run, std::chrono::steady_clock::time_point t0) {
  std::fprintf(stderr, " %s %.1f s;", run, secondsSince(t0));
  std::fflush(stderr);
}

LayerCell runCell(const mm::ModelConfig& cfg, const BenchAttentionOptions& o, const mm::AttentionKnobs& knobs,
                  const mm::AttentionInputOptions& io, int S, int TP) {
  LayerCell c;
  auto t0 = std::chrono::steady_clock::now();
  const mm::MoeQuant moe = mm::parseMoeQuant(o.moe, "--moe");
  const mm::LayerVariant v = mm::LayerVariant::make(cfg, mm::makeLayerKey(cfg, S, TP, knobs, {.wideFrom = o.wideFrom}, moe));
  mm::LayerInputs in = mm::makeLayerInputs(cfg, S, TP, o.seed, io);
  const mm::LayerReference ref = mm::layerReference(cfg, in, moe);
  int64_t minBytes = mm::minimumBytes(cfg, S, TP, ref.ffn.at("picks.r0")).total();  // a rank's, the layer's routing
  int64_t attentionMin = 0;
  for (int r = 0; r < TP; ++r) attentionMin += mm::attentionMinimumBytes(cfg, in.attention, ref.attention, r).total();
  minBytes += attentionMin / TP;
  c.floorUs = static_cast<double>(minBytes) / (o.timing->hbmBandwidth * 1e12) * 1e6;
  // the two launches without indexer CP (the attention launch alone has no peer memory): inputs
  // without the CP variant's w_qkv rows
  mm::AttentionKnobs plain = knobs;
  plain.indexCpFrom = 0;
  mm::AttentionInputOptions plainIo = io;
  plainIo.indexCp = false;
  const bool cp = knobs.indexCp();
  const mm::LayerInputs inPlain = cp ? mm::makeLayerInputs(cfg, S, TP, o.seed, plainIo) : mm::LayerInputs{};
  const mm::LayerReference refPlain = cp ? mm::layerReference(cfg, inPlain, moe) : mm::LayerReference{};
  const mm::LayerInputs& in2 = cp ? inPlain : in;
  const mm::LayerReference& ref2 = cp ? refPlain : ref;
  progress("inputs", t0);

  runtime::SimOptions so;
  so.seed = o.seed;
  {  // the fused layer
    t0 = std::chrono::steady_clock::now();
    const ir::Plan plan = mm::verifiedLayerPlan(cfg, v.key);
    so.timing = timingFor(o.timing, o.irIssue, plan);
    const mm::LayerSimRun run = mm::runLayerOnSim(plan, v, in, so);
    c.layerUs = run.ffn.stats.timed.us;
    c.layerVerdict = mm::layerVerdict(cfg, in, ref, run);
    progress("layer", t0);
  }
  {  // the attention launch on the layer's attention inputs
    t0 = std::chrono::steady_clock::now();
    const mm::AttentionVariant av = mm::AttentionVariant::make(cfg, mm::makeAttentionKey(cfg, S, TP, plain));
    const ir::Plan plan = mm::verifiedAttentionPlan(cfg, av.key);
    so.timing = timingFor(o.timing, o.irIssue, plan);
    const mm::AttentionSimRun run = mm::runAttentionOnSim(plan, av, in2.attention, so);
    c.attentionUs = run.stats.timed.us;
    c.attentionVerdict = attentionVerdict(in2.attention, ref2.attention, run, cfg);
    progress("attention", t0);
  }
  {  // the FFN launch (o_proj in the launch) on the layer's FFN inputs: their rows' natural routing
    t0 = std::chrono::steady_clock::now();
    // the FFN launch is A16W4 whatever the layer's moe: the A16W4 layer's FFN half (its layout too)
    const mm::FfnVariant ffn =
        moe == mm::MoeQuant::A16w4 ? v.ffn
                                   : mm::LayerVariant::make(cfg, mm::makeLayerKey(cfg, S, TP, plain, {}, mm::MoeQuant::A16w4)).ffn;
    mm::SimSession session(ffn);
    so.timing = timingFor(o.timing, o.irIssue, session.plan());
    const mm::SimRun run = session.launch(in2.ffn, so);
    c.ffnUs = run.stats.timed.us;
    if (!run.valid) {
      c.ffnVerdict = "INVALID: " + run.error;
    } else {
      const auto m = mm::firstMismatch(run.outputs, mm::launchReferenceOutputs(ffn, in2.ffn));
      c.ffnVerdict = m ? "MISMATCH: " + mm::describe(*m) : std::string("bit-exact");
    }
    progress("ffn", t0);
  }
  return c;
}

}  // namespace

int benchLayer(const mm::ModelConfig& cfg, const BenchAttentionOptions& o) {
  if (!o.timing) throw InputError("--launch layer", "bench prints the layer's modeled table: it needs --timed");
  mm::AttentionKnobs knobs = attentionKnobsOf(o.cache, o.layer);
  knobs.indexCpFrom = o.indexCpFrom;
  SimAttentionOptions so;
  so.context = o.context;
  so.share = o.share;
  const mm::AttentionInputOptions io = attentionInputOptions(so, knobs);
  const bool full = cfg.canonical() == mm::ModelConfig::byName("full").canonical();
  fmt::print("monogen bench --launch layer --timed: the one-launch layer against the two launches it fuses\n");
  fmt::print("config: {}\ninputs: seed {}, {}; the FFN's natural routing; the layer's moe={}, wide_from {} (the FFN "
             "launch: a16w4); index_cp_from {} (the attention launch: off)\n",
             cfg.attentionCanonical(), o.seed, io.describe(), o.moe, o.wideFrom, o.indexCpFrom);
  fmt::print("modeled: the Sim's gfx950 timing model (docs/timing.md), each run checked bit for bit; the two "
             "launches: the attention launch, then the FFN launch (o_proj in the launch) on the layer's FFN inputs\n");
  fmt::print("floor: a rank's minimum bytes (AttentionBytesModel + BytesModel at the layer's routing) / {} TB/s HBM; "
             "measured: the serving stack's whole layer on MI350X (full dims, TP 4)\n",
             o.timing->hbmBandwidth);
  fmt::print("{:>3} {:>3} {:>12} {:>12} {:>12} {:>12} {:>10} {:>12}  {}\n", "S", "TP", "layer", "attention", "ffn",
             "two launch", "floor", "serving", "verdicts (layer, attention, ffn)");
  fmt::print("{:>3} {:>3} {:>12} {:>12} {:>12} {:>12} {:>10} {:>12}\n", "", "", "modeled us", "modeled us",
             "modeled us", "modeled us", "us", "measured us");
  flushStdout();
  nlohmann::json cellsJson = nlohmann::json::array();
  int bad = 0, n = 0;
  const int cells = static_cast<int>(o.rows.size() * o.tps.size());
  for (int S : o.rows)
    for (int TP : o.tps) {
      const auto t0 = std::chrono::steady_clock::now();
      std::fprintf(stderr, "[%d/%d] S=%d TP=%d:", ++n, cells, S, TP);
      std::fflush(stderr);
      LayerCell c = runCell(cfg, o, knobs, io, S, TP);
      std::fprintf(stderr, " %.1f s\n", secondsSince(t0));
      c.measuredUs = full ? servingMeasuredUs(S, TP) : 0;
      if (!c.exact()) ++bad;
      const double two = c.attentionUs + c.ffnUs;
      const std::string verdicts = c.exact() ? std::string("bit-exact")
                                             : fmt::format("layer {}; attention {}; ffn {}", c.layerVerdict,
                                                           c.attentionVerdict, c.ffnVerdict);
      fmt::print("{:>3} {:>3} {:>12.2f} {:>12.2f} {:>12.2f} {:>12.2f} {:>10.2f} {:>12}  {}\n", S, TP, c.layerUs,
                 c.attentionUs, c.ffnUs, two, c.floorUs,
                 c.measuredUs > 0 ? fmt::format("{:.2f}", c.measuredUs) : std::string("-"), verdicts);
      flushStdout();
      nlohmann::json j = {{"launch", "layer"},
                          {"rows", S},
                          {"tp", TP},
                          {"context", o.context},
                          {"layer", o.layer},
                          {"cache", o.cache},
                          {"share_sequence", o.share},
                          {"moe", o.moe},
                          {"layer_modeled_us", c.layerUs},
                          {"attention_modeled_us", c.attentionUs},
                          {"ffn_modeled_us", c.ffnUs},
                          {"two_launches_modeled_us", two},
                          {"floor_us", c.floorUs},
                          {"layer_verdict", c.layerVerdict},
                          {"attention_verdict", c.attentionVerdict},
                          {"ffn_verdict", c.ffnVerdict}};
      j["serving_measured_us"] = c.measuredUs > 0 ? nlohmann::json(c.measuredUs) : nlohmann::json(nullptr);
      cellsJson.push_back(j);
    }
  writeCellsJson(o.json, cellsJson);
  flushStdout();
  return bad ? 1 : 0;
}

}  // namespace monogen::tools
