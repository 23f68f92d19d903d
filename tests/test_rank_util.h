// Shared by the per-rank runtime tests: TP rank processes (runtime::RankProcesses) run one body,
// their report lines collected by rank.
#pragma once
#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "runtime/RankProcesses.h"

namespace ranktest {

/// What the rank processes reported, by rank.
struct Outcome {
  std::vector<int> status;                        // exit code, 128 + signal
  std::vector<std::vector<nlohmann::json>> done;  // the "done" reports
  std::vector<std::string> errors;                // the "error: ..." line
  double seconds = 0;                             // from the fork to the last exit
};

/// Called on every report of rank r but its error line; may kill a rank.
using OnReport = std::function<void(monogen::runtime::RankProcesses&, int r, const nlohmann::json&)>;

/// Runs `body` on tp processes, one a rank, for at most timeoutSec; collects what they report.
inline Outcome runRankProcesses(int tp, const monogen::runtime::RankProcesses::Body& body, double timeoutSec,
                                const OnReport& onReport = {}) {
  Outcome o;
  o.done.resize(tp);
  o.errors.resize(tp);
  const auto t0 = std::chrono::steady_clock::now();
  monogen::runtime::RankProcesses procs(tp, body);
  o.status = procs.run(
      [&](int r, const std::string& line) {
        if (line.rfind("error: ", 0) == 0) {
          o.errors[r] = line;
          return;
        }
        const nlohmann::json j = nlohmann::json::parse(line);
        if (j["event"] == "done") o.done[r].push_back(j);
        if (onReport) onReport(procs, r, j);
      },
      timeoutSec);
  o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return o;
}

}  // namespace ranktest
