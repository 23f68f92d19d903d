// The MiniMax-M3 one-launch decoder layer through the per-rank runtime (runtime/RankRuntime.h),
// one process a rank: a rank's layer buffers (the attention's inputs, weights and caches, the
// FFN's), its read-back and verdict against the layer reference, and the body runSimLayerRank
// (the Sim) and runHipLayerRank (HIP) run, for `monogen check --launch layer --per-rank | --device hip`.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/Cache.h"
#include "runtime/RankDevice.h"
#include "runtime/RankProcesses.h"
#include "runtime/RankRuntime.h"
#include "runtime/sim/SimDevice.h"
#include "specs/minimax_m3/kernel/LayerVariant.h"
#include "specs/minimax_m3/testing/LayerSim.h"
#include "specs/minimax_m3/testing/RankHarness.h"

namespace monogen::specs::minimax_m3 {

/// key(S) = makeLayerKey(cfg, S, tp, knobs, placement, moe); the symmetric buffer is `sym`, the
/// rank scalar `rank` (the Python LayerRunner's runtime too).
runtime::RankRuntimeOptions layerRankRuntimeOptions(const ModelConfig& cfg, int rank, int tp, std::vector<int> rows,
                                                    const AttentionKnobs& knobs = {},
                                                    const LayerPlacementKnobs& placement = {},
                                                    MoeQuant moe = MoeQuant::A16w4);

/// One rank's part of a multi-process layer run (the Sim's or the GPUs').
struct LayerRankJob {
  int rows = 2;
  int launches = 1;      // back-to-back launches of one bound buffer set (the replay)
  uint64_t seed = 1;     // launch k gets makeLayerInputs(cfg, S, TP, seed + k, inputs)
  int64_t waitTicks = 100'000'000;  // the bound: real time while a Sim process idles (SimRankDevice.h)
  runtime::SimOptions sim;          // the Sim's scheduler seed and knobs
  AttentionInputOptions inputs;     // context, cache mode, layer type (the variant's knobs')
  AttentionKnobs knobs;
  LayerPlacementKnobs placement;
  MoeQuant moe = MoeQuant::A16w4;
};

/// A job's inputs and references by launch: made once, in the parent before it forks the ranks'
/// processes, which share them.
struct LayerRankData {
  std::vector<LayerInputs> inputs;
  std::vector<LayerReference> want;
};
LayerRankData makeLayerRankData(const ModelConfig& cfg, const LayerRankJob& job, int tp);

/// The caller's buffers of one rank: every Input, Output and Weight argument of the layer's Plan,
/// each of the most bytes its Plan shape or any launch's inputs hold (the caches, the tables and
/// cos_sin are the caller's length).
struct LayerRankIo {
  RankIo io;
  std::map<std::string, int64_t> bytes;  // by argument name
  int64_t tableStride = 0;               // block_tables' width, every launch's
};
LayerRankIo allocLayerRankIo(runtime::RankDevice& dev, const ir::Plan& plan, const LayerRankData& data, int rank);
/// Uploads rank `rank`'s share of `in`: the FFN's (uploadRankInputs: its weights and the slots,
/// the outputs zeroed), then the attention's inputs, weights and caches (attentionRankInputs).
void uploadLayerRankInputs(runtime::RankDevice& dev, const LayerVariant& v, const ir::Plan& plan,
                           const LayerRankIo& io, int rank, const LayerInputs& in);
/// What the caller binds: rankArgs' (the tensors, s13 / s2 declaring argLayouts(plan), wait_ticks,
/// handshake) and table_stride.
runtime::RankArgs layerRankArgs(const ir::Plan& plan, const LayerRankIo& io, int64_t waitTicks);
/// "bit-exact", "INVALID: <rankError>; <missingPeers>" or "MISMATCH: <the first mismatch>" (the
/// attention's outputs of this rank, then the FFN's in dataflow order) for the launch of `tag`.
/// Reduce-scattered (S >= ag_rs_from), the partials down.r<src> are compared on this rank's rows.
std::string layerRankVerdict(const LayerVariant& v, runtime::RankRuntime& rt, const LayerRankIo& io, int32_t tag,
                             const LayerInputs& in, const LayerReference& want);

/// The body of rank ch.rank()'s process on `dev` (runRankLaunches with the layer's steps).
int runLayerRank(const ModelConfig& cfg, const LayerRankJob& job, const LayerRankData& data, runtime::RankChannel& ch,
                 runtime::RankDevice& dev, runtime::Generator& gen, std::chrono::steady_clock::time_point started,
                 const std::function<int64_t()>& ops, void* stream);
/// runLayerRank on a SimRankDevice (job.sim), Plans only; first reports {"event":"device", ...}.
int runSimLayerRank(const ModelConfig& cfg, const LayerRankJob& job, const LayerRankData& data,
                    runtime::RankChannel& ch);
/// runLayerRank on a HipRankDevice on GPU ch.rank() (the layer's code object from `cache`, or
/// compiled), on a stream it creates; first reports the device as runHipRank does.
/// NOT RUN HERE on a GPU (there is none): run against tests/fake_hip only.
int runHipLayerRank(const ModelConfig& cfg, const LayerRankJob& job, const LayerRankData& data,
                    runtime::RankChannel& ch, std::shared_ptr<runtime::Cache> cache);

}  // namespace monogen::specs::minimax_m3
