#include "tools/BenchAttention.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>

#include "ir/Error.h"
#include "ir/Verifier.h"
#include "specs/minimax_m3/kernel/AttentionSpec.h"
#include "specs/minimax_m3/kernel/AttentionVariant.h"
#include "specs/minimax_m3/testing/AttentionBytesModel.h"
#include "specs/minimax_m3/testing/AttentionInputs.h"
#include "specs/minimax_m3/testing/AttentionSim.h"
#include "tools/BytesTable.h"
#include "tools/SimAttention.h"
#include "tools/TimedCells.h"
#include "tools/TimedIsa.h"
#include "tools/Variant.h"

namespace monogen::tools {

namespace mm = specs::minimax_m3;

int benchAttention(const mm::ModelConfig& cfg, const BenchAttentionOptions& o) {
  const mm::AttentionKnobs knobs = attentionKnobsOf(o.cache, o.layer);
  mm::AttentionInputOptions io;
  io.mode = knobs.mode;
  io.fullLayer = knobs.fullLayer;
  io.context = o.context;
  io.shareSequence = o.share;
  fmt::print("monogen bench --launch attention: global-memory bytes a rank's launch reads on the Sim device vs the "
             "minimum\n");
  fmt::print("config: {}\ninputs: seed {}, {}\n", cfg.attentionCanonical(), o.seed, io.describe());
  fmt::print("a rank's bytes = SimStats::globalBytesLoaded / TP (all ranks run at once); KiB = 1024 bytes\n");
  fmt::print("minimum: AttentionBytesModel (the rows, norms, w_qkv and its scales, cos/sin rows, the rows' metadata "
             "and table entries, each K / V key the selections attend and each index key scored, once a rank; the "
             "keys the launch appends not counted), averaged over the ranks\n");
  fmt::print("{:>3} {:>3} {:>12} {:>12} {:>7}  {}\n", "S", "TP", "sim KiB", "min KiB", "ratio",
             "top stages (share of sim bytes); verdict");
  std::fflush(stdout);
  int bad = 0;
  std::vector<std::string> timedLines;
  nlohmann::json cellsJson = nlohmann::json::array();
  for (int S : o.rows)
    for (int TP : o.tps) {
      const auto t0 = std::chrono::steady_clock::now();
      std::fprintf(stderr, "S=%d TP=%d ...", S, TP);
      std::fflush(stderr);
      const mm::AttentionVariant v = mm::AttentionVariant::make(cfg, mm::makeAttentionKey(cfg, S, TP, knobs));
      const mm::AttentionLaunch in = mm::makeAttentionLaunch(cfg, S, TP, o.seed, io);
      const mm::AttentionResult ref = mm::attentionReference(cfg, in);
      int64_t minTotal = 0;
      for (int r = 0; r < TP; ++r) minTotal += mm::attentionMinimumBytes(cfg, in, ref, r).total();
      const int64_t minRank = minTotal / TP;
      std::string row;
      if (o.noSim) {
        row = fmt::format("{:>3} {:>3} {:>12} {:>12}", S, TP, "-", kib(minRank));
      } else {
        const ir::Plan plan = mm::buildAttentionPlan(v);
        ir::verify(plan);
        runtime::SimOptions so;
        so.seed = o.seed;
        so.timing = timingFor(o.timing, o.irIssue, plan);
        const mm::AttentionSimRun run = mm::runAttentionOnSim(plan, v, in, so);
        const std::string verdict = attentionVerdict(in, ref, run, cfg);
        if (verdict != "bit-exact") ++bad;
        const int64_t perRank = run.stats.globalBytesLoaded / TP;
        const std::string top = topStagesByBytes(run.stats);
        row = fmt::format("{:>3} {:>3} {:>12} {:>12} {:>7.2f}  {}; {}", S, TP, kib(perRank), kib(minRank),
                          static_cast<double>(perRank) / static_cast<double>(std::max<int64_t>(1, minRank)), top,
                          verdict);
        if (run.stats.timed.on) {
          const runtime::SimTimedResult& t = run.stats.timed;
          const double floorUs = static_cast<double>(minRank) / (o.timing->hbmBandwidth * 1e12) * 1e6;
          timedLines.push_back(fmt::format("{:>3} {:>3} {:>12.2f} {:>10.2f} {:>7.2f}  {}", S, TP, t.us, floorUs,
                                           t.us / floorUs, criticalPathText(t)));
          cellsJson.push_back({{"launch", "attention"}, {"rows", S},          {"tp", TP},
                               {"context", o.context},  {"layer", o.layer},  {"cache", o.cache},
                               {"share_sequence", o.share}, {"modeled_us", t.us}, {"floor_us", floorUs},
                               {"verdict", verdict}});
        }
        if (o.breakdown) {
          row += "\n      sim bytes a rank by stage:";
          for (const auto& [b, name] : stagesByBytes(run.stats)) row += fmt::format(" {} {}", name, b / TP);
        }
      }
      if (o.breakdown) {
        row += "\n      minimum of rank 0:\n";
        std::istringstream d(mm::attentionMinimumBytes(cfg, in, ref, 0).describe());
        for (std::string l; std::getline(d, l);) row += "        " + l + "\n";
        row.pop_back();
      }
      fmt::print("{}\n", row);
      std::fflush(stdout);
      std::fprintf(stderr, " %.2f s\n", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
  if (o.timing) {
    fmt::print("\ntimed (every us figure modeled by the Sim's gfx950 timing model, docs/timing.md; floor = a rank's "
               "minimum bytes / {} TB/s HBM)\n",
               o.timing->hbmBandwidth);
    fmt::print("{:>3} {:>3} {:>12} {:>10} {:>7}  critical path (modeled)\n", "S", "TP", "modeled us", "floor us",
               "ratio");
    for (const std::string& l : timedLines) fmt::print("{}\n", l);
    writeCellsJson(o.json, cellsJson);
  }
  return bad ? 1 : 0;
}

}  // namespace monogen::tools
