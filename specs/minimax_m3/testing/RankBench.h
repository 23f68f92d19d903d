// One rank's part of `monogen bench --device hip`: the FFN launch timed on its GPU as MI350X
// figures of it were measured (weights rotating through copies, events on the caller's stream,
// the median of repeated runs of back-to-back launches), after one launch checked bit-exact.
#pragma once
#include <cstdint>
#include <memory>

#include "runtime/Cache.h"
#include "runtime/RankProcesses.h"
#include "runtime/Tensor.h"
#include "specs/minimax_m3/kernel/Knobs.h"
#include "specs/minimax_m3/kernel/ModelConfig.h"

namespace monogen::specs::minimax_m3 {

struct RankBenchJob {
  int rows = 8;
  int copies = 4;       // buffer sets (weights included) the launches rotate through: weights stream from HBM
  int repeats = 5;      // timed runs; the figure is their median
  int launches = 200;   // back-to-back launches in one timed run
  int64_t waitTicks = 6'000'000'000;  // the kernel's wait bound (100 MHz ticks)
  FfnKnobs knobs;
};

/// Rank ch.rank() on HIP GPU ch.rank(): sets up the per-rank runtime, uploads `inputs` (every rank's,
/// makeLaunchInputs) into job.copies buffer sets, runs one launch and reports
///   {"event":"check", "rank", "tag", "verdict"} against `want` (launchReferenceOutputs),
/// then job.repeats timed runs of job.launches launches, each reported as
///   {"event":"timing", "rank", "repeat", "us": measured GPU microseconds a launch}.
/// Returns 0 when the checked launch was bit-exact. Not run on a GPU here: tests/fake_hip only.
int runHipBenchRank(const ModelConfig& cfg, const RankBenchJob& job, const runtime::TensorMap& inputs,
                    const runtime::TensorMap& want, runtime::RankChannel& ch, std::shared_ptr<runtime::Cache> cache);

}  // namespace monogen::specs::minimax_m3
