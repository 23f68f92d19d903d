// monogen bench --device hip: one (S, TP, distinct experts) cell of the FFN launch timed on the
// node's GPUs, one process a rank through the per-rank runtime (specs/minimax_m3/testing/RankBench.h).
#pragma once
#include <string>
#include <vector>

#include "runtime/Tensor.h"
#include "specs/minimax_m3/kernel/ModelConfig.h"
#include "specs/minimax_m3/testing/RankBench.h"

namespace monogen::tools {

struct HipBenchCell {
  std::vector<double> rankUs;  // each rank's median over the repeats, measured us a launch
  double us = 0;               // the slowest rank's median: the step waits for it
  std::string verdict;         // the checked launch's, over every rank: bit-exact, MISMATCH, INVALID or ERROR
  std::string error;           // a rank that could not start, else ""
};

/// Forks job's TP ranks, relays their device, progress and check lines to stdout (prefixed with
/// `indent`) and returns the cell. `inputs` and `want` are every rank's, made by the caller.
HipBenchCell benchHipCell(const specs::minimax_m3::ModelConfig& cfg, int tp, const specs::minimax_m3::RankBenchJob& job,
                          const runtime::TensorMap& inputs, const runtime::TensorMap& want, bool noCache);

}  // namespace monogen::tools
