#include "tools/BenchHip.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "runtime/RankProcesses.h"
#include "specs/minimax_m3/kernel/Generate.h"

namespace monogen::tools {

namespace mm = specs::minimax_m3;

HipBenchCell benchHipCell(const mm::ModelConfig& cfg, int tp, const mm::RankBenchJob& job,
                          const runtime::TensorMap& inputs, const runtime::TensorMap& want, bool noCache) {
  std::shared_ptr<runtime::Cache> cache = noCache ? nullptr : mm::defaultCache();
  std::vector<std::vector<double>> samples(tp);
  std::vector<std::string> verdicts(tp), errors(tp);
  runtime::RankProcesses procs(tp, [&](runtime::RankChannel& ch) {
    return mm::runHipBenchRank(cfg, job, inputs, want, ch, cache);
  });
  const std::vector<int> status = procs.run(
      [&](int r, const std::string& line) {
        if (line.rfind("error: ", 0) == 0) {
          errors[r] = line.substr(7);
          fmt::print("    rank {}: ERROR: {}\n", r, errors[r]);
        } else {
          const nlohmann::json j = nlohmann::json::parse(line);
          if (j["event"] == "device" && j.contains("gpu"))
            fmt::print("    rank {}: {}: {}, {} CUs\n", r, j["device"].get<std::string>(), j["gpu"].get<std::string>(),
                       j["cus"].get<int>());
          else if (j["event"] == "progress")
            fmt::print("    {}\n", j["line"].get<std::string>());
          else if (j["event"] == "check") {
            verdicts[r] = j["verdict"];
            fmt::print("    rank {} checked launch (tag {}): {}\n", r, j["tag"].get<int>(), verdicts[r]);
          } else if (j["event"] == "timing")
            samples[r].push_back(j["us"].get<double>());
        }
        std::fflush(stdout);
      },
      3600);
  HipBenchCell cell;
  cell.verdict = "bit-exact";
  for (int r = 0; r < tp; ++r) {
    if (!errors[r].empty() && cell.error.empty()) cell.error = fmt::format("rank {}: {}", r, errors[r]);
    const std::string& v = verdicts[r];
    if (v.empty() || (status[r] != 0 && status[r] != 1) || samples[r].size() != static_cast<size_t>(job.repeats))
      cell.verdict = "ERROR";
    else if (v.rfind("INVALID", 0) == 0 && cell.verdict != "ERROR")
      cell.verdict = "INVALID";
    else if (v.rfind("MISMATCH", 0) == 0 && cell.verdict == "bit-exact")
      cell.verdict = "MISMATCH";
    std::vector<double> s = samples[r];
    std::sort(s.begin(), s.end());
    const double median = s.empty() ? 0 : s.size() % 2 ? s[s.size() / 2] : 0.5 * (s[s.size() / 2 - 1] + s[s.size() / 2]);
    cell.rankUs.push_back(median);
    cell.us = std::max(cell.us, median);
  }
  return cell;
}

}  // namespace monogen::tools
