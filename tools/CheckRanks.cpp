#include "tools/CheckRanks.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "ir/Error.h"
#include "specs/minimax_m3/kernel/Generate.h"
#include "specs/minimax_m3/kernel/LayerVariant.h"
#include "specs/minimax_m3/testing/LayerRankHarness.h"
#include "tools/SimAttention.h"

namespace monogen::tools {

namespace mm = specs::minimax_m3;

int runRankCheck(int TP, int launches, const runtime::RankProcesses::Body& body) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::string> verdicts(static_cast<size_t>(TP) * launches), errors(TP);
  std::vector<bool> ready(TP, false);
  int setupFailed = -1;  // the first rank whose process failed before it was ready
  runtime::RankProcesses procs(TP, body);
  const std::vector<int> status = procs.run(
      [&](int r, const std::string& line) {
        if (line.rfind("error: ", 0) == 0) {
          errors[r] = line.substr(7);
          if (!ready[r] && setupFailed < 0) setupFailed = r;
          fmt::print("  rank {}: ERROR: {}\n", r, errors[r]);
          std::fflush(stdout);
          return;
        }
        const nlohmann::json j = nlohmann::json::parse(line);
        if (j["event"] == "device") {
          if (j.contains("gpu"))
            fmt::print("  rank {}: {}: {}, {} CUs; {}\n", r, j["device"].get<std::string>(),
                       j["gpu"].get<std::string>(), j["cus"].get<int>(), j["runtime"].get<std::string>());
          else
            fmt::print("  rank {}: {}\n", r, j["device"].get<std::string>());
        } else if (j["event"] == "progress") {
          fmt::print("  {}\n", j["line"].get<std::string>());
        } else if (j["event"] == "ready") {
          ready[r] = true;
          fmt::print("  rank {} (pid {}): ready in {:.2f} s (allocate, exchange, open, warm up, bind)\n", r,
                     procs.pid(r), j["seconds"].get<double>());
        } else if (j["event"] == "done") {
          const int k = j["launch"];
          verdicts[static_cast<size_t>(k) * TP + r] = j["verdict"];
          const std::string ops = j.contains("ops") ? fmt::format(" ({} ops)", j["ops"].get<int64_t>()) : "";
          fmt::print("  rank {} launch {} tag {}: {:6.2f} s{}  {}\n", r, k, j["tag"].get<int>(),
                     j["seconds"].get<double>(), ops, j["verdict"].get<std::string>());
        }
        std::fflush(stdout);
      },
      3600);
  const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (setupFailed >= 0) {
    fmt::print("{} processes in {:.2f} s\nverdict: ERROR (rank {} could not start)\n", TP, sec, setupFailed);
    std::fflush(stdout);
    std::fprintf(stderr, "monogen: rank %d: %s\n", setupFailed, errors[setupFailed].c_str());
    return 2;
  }
  std::string worst = "bit-exact";
  for (int r = 0; r < TP; ++r) {
    if (status[r] != 0 && status[r] != 1) {
      fmt::print("  rank {}: its process ended with status {}{}\n", r, status[r],
                 status[r] > 128 ? fmt::format(" (signal {})", status[r] - 128) : std::string());
      worst = "ERROR";
    }
    for (int k = 0; k < launches; ++k) {
      const std::string& vd = verdicts[static_cast<size_t>(k) * TP + r];
      if (vd.empty() && worst == "bit-exact") worst = "ERROR";
      else if (vd.rfind("INVALID", 0) == 0 && worst != "ERROR") worst = "INVALID";
      else if (vd.rfind("MISMATCH", 0) == 0 && worst == "bit-exact") worst = "MISMATCH";
    }
  }
  fmt::print("{} processes in {:.2f} s\nverdict: {}\n", TP, sec, worst);
  return worst == "bit-exact" ? 0 : 1;
}


int checkLayerPerRank(const VariantOptions& vo, const std::string& device, uint64_t seed, int launches,
                      double waitSeconds) {
  const mm::ModelConfig cfg = configOf(vo);
  const mm::LayerVariant v = mm::LayerVariant::make(cfg, keyOf(vo, cfg, vo.rows, vo.tp));
  const int S = v.ffn.layout.rows, TP = v.ffn.layout.tp;
  fmt::print("{} on the {} device, one process a rank (per-rank runtime): {} processes x {} CTAs x {} threads\n",
             v.key.variantName(), device, TP, cfg.blocks, cfg.threads);
  mm::LayerRankJob job;
  job.rows = S;
  job.launches = launches;
  job.seed = seed;
  job.waitTicks = static_cast<int64_t>(waitSeconds * 1e8);  // the kernel's wait_ticks run at 100 MHz
  job.sim.seed = seed;
  job.inputs = attentionInputOptions(v.knobs, vo.context);
  job.knobs = v.knobs;
  job.placement = v.placementKnobs;
  job.moe = v.moe;
  fmt::print("inputs: seed {} (launch k: seed + k), {}; the FFN's natural routing; {} launch{} of one bound "
             "argument set; wait bound {} s of idle\n",
             seed, job.inputs.describe(), launches, launches == 1 ? "" : "es", waitSeconds);
  flushStdout();
  const auto r0 = std::chrono::steady_clock::now();
  const mm::LayerRankData data = mm::makeLayerRankData(cfg, job, TP);  // once, before the fork: the ranks share it
  fmt::print("inputs and reference: {:.2f} s\n",
             std::chrono::duration<double>(std::chrono::steady_clock::now() - r0).count());
  flushStdout();
  std::shared_ptr<runtime::Cache> cache = vo.noCache ? nullptr : mm::defaultCache();
  return runRankCheck(TP, launches, [&](runtime::RankChannel& ch) {
    return device == "hip" ? mm::runHipLayerRank(cfg, job, data, ch, cache) : mm::runSimLayerRank(cfg, job, data, ch);
  });
}

}  // namespace monogen::tools
