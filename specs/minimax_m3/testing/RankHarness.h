// The MiniMax-M3 FFN launch through the per-rank runtime (runtime/RankRuntime.h), one process a
// rank: a rank's buffers, read-back and reference, and runRank, the one body that runSimRank (the
// Sim) and runHipRank (HIP) run on their device, for `monogen check --per-rank` and the tests.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <map>
#include <string>
#include <vector>

#include "ir/Plan.h"
#include "runtime/Cache.h"
#include "runtime/HipRankDevice.h"
#include "runtime/RankRuntime.h"
#include "runtime/Tensor.h"
#include "runtime/RankProcesses.h"
#include "runtime/sim/SimDevice.h"
#include "specs/minimax_m3/kernel/FfnVariant.h"
#include "specs/minimax_m3/kernel/Knobs.h"
#include "specs/minimax_m3/kernel/ModelConfig.h"

namespace monogen::specs::minimax_m3 {

/// key(S) = makeKey(cfg, S, tp, knobs); the symmetric buffer is `sym`, the rank scalar `rank`.
runtime::RankRuntimeOptions rankRuntimeOptions(const ModelConfig& cfg, int rank, int tp, std::vector<int> rows,
                                               const FfnKnobs& knobs = {});

/// The caller's buffers of one rank for one S: every Input, Output and Weight argument.
struct RankIo {
  int rows = 0;
  std::map<std::string, uint64_t> addr;  // by argument name
};
RankIo allocRankIo(runtime::RankDevice& dev, const ir::Plan& plan);
/// Uploads rank `rank`'s share of a makeLaunchInputs map (part.r<rank>, or attn.r<rank> with
/// wo.r<rank> and wo_scale for input=attn; res_in, slots, the weights: w13.r<rank> ... and the
/// shared ones); MoE inputs it lacks are zeroed (a missing part / attn / res_in / wo / wo_scale is
/// an InputError); outputs zeroed.
/// s13 / s2 must declare the variant's scale layout (checkDeclaredScales: InputError otherwise).
/// `plan` is v's (the rank runtime's for v's S).
void uploadRankInputs(runtime::RankDevice& dev, const FfnVariant& v, const ir::Plan& plan, const RankIo& io, int rank,
                      const runtime::TensorMap& inputs);
/// What the caller binds: io's tensors (s13 / s2 declaring the variant's layout, argLayouts, as
/// uploadRankInputs checked the uploaded ones), wait_ticks and handshake.
runtime::RankArgs rankArgs(const ir::Plan& plan, const RankIo& io, int64_t waitTicks, bool handshake = false);
/// The same with the layouts `layouts` declared (a larger launch's: the layer's FFN part).
runtime::RankArgs rankArgs(const ir::Plan& plan, const RankIo& io, int64_t waitTicks, bool handshake,
                           const runtime::ArgLayouts& layouts);

/// One rank's results of the launch that ran on `tag` (its epoch before the launch was
/// epochBefore(tag)): res_out, sres, ssq, ssq_tag, err, epoch, xscale and opart (input=attn: the
/// quant's scales, the o_proj partial push sent), the MoE's (xn, rstd, out, picks,
/// weights, slot table, mid) as "<name>.r<rank>", and down.r<src> for every src: the partial
/// rank src pushed, read from this rank's own symmetric buffer.
/// v is the variant of the launch (its S one of rt's).
runtime::TensorMap readRankOutputs(const FfnVariant& v, runtime::RankRuntime& rt, const RankIo& io, int32_t tag);
/// launchReferenceOutputs's entries a rank can check: "<name>.r<rank>" and down.r<src> for every src.
runtime::TensorMap rankReference(const runtime::TensorMap& all, int rank, int tp);
/// "" when rank's error word is 0, else "rank R: error word 0x.. (site .., rank .., token ..), N
/// failures: <meaning, naming the rank at fault>".
std::string rankError(const runtime::TensorMap& outputs, int rank);

/// Which ranks' pushes of the launch of `tag` are not all in this rank's symmetric buffer (the
/// ATTN and FFN pairs rank src owes it; reduce-scattered, those of this rank's rows and A_AG and
/// FFN_AG of src's): "this launch's pairs never came from rank 2 (ATTN 0 of 1536, FFN 0 of 1536
/// pairs came)"; "" when every pair is there. The error word holds only the first wait that ran
/// out, which may be a local one; this names the rank that went missing.
std::string missingPeers(const FfnVariant& v, runtime::RankRuntime& rt, int32_t tag);
/// The same for the variant of rt's Plan for S = rows (the Python bindings' way in).
std::string missingPeers(const ModelConfig& cfg, runtime::RankRuntime& rt, int rows, int32_t tag);

/// A RankRuntimeOptions::progress that reports each line as {"event":"progress", "rank", "line"}.
std::function<void(const std::string&)> reportProgress(runtime::RankChannel& ch);
/// allocate, the handle exchange over ch (an all-gather, then a barrier), peersOpened, warmUp.
void setUpRank(runtime::RankRuntime& rt, runtime::RankChannel& ch);
/// "bit-exact", "INVALID: <rankError>; <missingPeers>" or "MISMATCH: <the first mismatch>" for the
/// launch of `tag` on io, against `want` (launchReferenceOutputs, every rank's).
std::string rankVerdict(const FfnVariant& v, runtime::RankRuntime& rt, const RankIo& io, int32_t tag,
                        const runtime::TensorMap& want);
/// The tag the next launch of S = rows runs on (read from the device's epoch).
int32_t nextTag(runtime::RankRuntime& rt, int rows);
/// Reports {"event":"device", "rank", "device", "gpu", "cus", "runtime"} for a HIP rank.
void reportHipDevice(runtime::RankChannel& ch, runtime::HipRankDevice& dev);

/// One rank's part of a multi-process run (the Sim's or the GPUs': `sim` is the Sim's only).
struct SimRankJob {
  std::vector<int> rows{2};    // the S values, each warmed up; each runs `launches` launches in turn
  int launches = 3;            // back-to-back launches of one bound buffer set (the replay)
  uint64_t seed = 1;           // launch k of S gets inputs makeLaunchInputs(cfg, S, TP, seed + k)
  int64_t waitTicks = 100'000'000;  // the bound: real time while this process idles (SimRankDevice.h)
  runtime::SimOptions sim;     // scheduler seed and knobs (firstRank, realtimeWaits are set for it)
  FfnKnobs knobs;
  /// Fault demonstration: before every launch, write the epoch so that every launch runs on this
  /// tag (what a tag kernel argument does under graph replay). 0: never (the device epoch decides).
  int32_t fixedTag = 0;
};

/// A job's inputs and references (launchReferenceOutputs, every rank's), by S then launch: made
/// once, in the parent before it forks the ranks' processes, which share them.
struct SimRankData {
  std::map<int, std::vector<runtime::TensorMap>> inputs, want;
};
SimRankData makeSimRankData(const ModelConfig& cfg, const SimRankJob& job, int tp);

/// One launch kind's part of runRankLaunches (the FFN's, the layer's): the runtime's options, how
/// S's caller buffers are bound, each launch's inputs uploaded and its verdict made.
struct RankLaunchSteps {
  runtime::RankRuntimeOptions opts;
  /// After setUpRank: allocates S's caller buffers and binds them once.
  std::function<runtime::BoundLaunch&(runtime::RankRuntime& rt, int rows)> bind;
  /// Launch k's inputs of S into the bound buffers (new activations, the same buffers).
  std::function<void(runtime::RankRuntime& rt, int rows, int k)> upload;
  /// "bit-exact", "INVALID: ..." or "MISMATCH: ..." for launch k of S, which ran on `tag`.
  std::function<std::string(runtime::RankRuntime& rt, int rows, int k, int32_t tag)> verdict;
};
/// The loop of a rank's process: the runtime on `dev`, setUpRank over `ch`, each S bound, then
/// `launches` launches of each S in turn (before each, with fixedTag, the epoch written so the
/// launch runs on it), reporting ready, start and done (JSON lines). 0 when every launch was bit-exact.
int runRankLaunches(const RankLaunchSteps& steps, const std::vector<int>& rows, int launches, int32_t fixedTag,
                    runtime::RankChannel& ch, runtime::RankDevice& dev, runtime::Generator& gen,
                    std::chrono::steady_clock::time_point started, const std::function<int64_t()>& ops, void* stream);

/// The body of rank ch.rank()'s process on `dev`: allocate, exchange handles over `ch`, open, warm
/// up, bind, then run each launch and compare it with data.want, reporting JSON lines (progress,
/// ready, start, done: docs/minimax-m3-kernel.md). Returns 0 when every launch was bit-exact.
int runRank(const ModelConfig& cfg, const SimRankJob& job, const SimRankData& data, runtime::RankChannel& ch,
            runtime::RankDevice& dev, runtime::Generator& gen, std::chrono::steady_clock::time_point started,
            const std::function<int64_t()>& ops, void* stream);

/// runRank on a SimRankDevice (job.sim), Plans only: first reports
///   {"event":"device", "rank", "device": "sim rank r of TP"}.
int runSimRank(const ModelConfig& cfg, const SimRankJob& job, const SimRankData& data, runtime::RankChannel& ch);

/// runRank on a HipRankDevice on GPU ch.rank() (runtime/HipRankDevice.h; the library HipApi
/// loads, MONOGEN_HIP_LIBRARY included), code objects from `cache` (or compiled), on a stream it creates (HipStream) and destroys.
/// Constructing the device is what finds no library, a missing entry point or no gfx950 GPU: a
/// RuntimeError before anything is reported. Then first reports
///   {"event":"device", "rank", "device", "gpu": "HIP device 0 (gfx950)", "cus", "runtime": HipApi::describe()}.
/// NOT RUN HERE on a GPU (there is none): run against tests/fake_hip only.
int runHipRank(const ModelConfig& cfg, const SimRankJob& job, const SimRankData& data, runtime::RankChannel& ch,
               std::shared_ptr<runtime::Cache> cache);

}  // namespace monogen::specs::minimax_m3
