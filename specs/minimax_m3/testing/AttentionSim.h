// Runs the MiniMax-M3 attention launch on the Sim for every rank at once from an AttentionLaunch
// (AttentionInputs.h) and reads back what it wrote, for a bit-exact comparison with the native
// reference (AttentionReference.h).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ir/Plan.h"
#include "runtime/Device.h"
#include "runtime/sim/SimDevice.h"
#include "specs/minimax_m3/kernel/AttentionVariant.h"
#include "specs/minimax_m3/reference/AttentionReference.h"

namespace monogen::specs::minimax_m3 {

/// One rank's results of an attention launch on the Sim.
struct AttentionSimRank {
  std::vector<uint16_t> h;       // bf16 [S, hidden]: res_out
  std::vector<uint8_t> x8;       // E4M3 [S, hidden]: scratch X8
  std::vector<float> xScale, rstd;  // [S]
  std::vector<uint16_t> qkv;     // bf16 [S, w_qkv rows]: scratch QKV
  std::vector<uint16_t> q;       // bf16 [S, qHeads, headDim]
  std::vector<uint16_t> iq;      // bf16 [S, indexHeads, indexDim] (sparse layers; empty on full ones)
  std::vector<uint16_t> iqCp;    // bf16 [S, cpHeads, indexDim]: scratch IQCP (indexer CP; else empty)
  AttentionCaches caches;        // after the launch's appends
  std::vector<SplitPartial> splits;  // [S x kvHeads x 8] (empty for padded rows)
  std::vector<uint16_t> attn;    // bf16 [S, qHeads x headDim]: the attention rows
  std::vector<int32_t> headsCount;  // [S]: heads_count after the launch (0: every row's last task reset it)
  std::vector<uint64_t> hrdy;    // [S]: the HRDY pairs (value | tag << 32)
  std::vector<Selection> selections;  // [S x kvHeads] (sparse layers, live rows; blocks and nCtx)
};
struct AttentionSimRun {
  std::vector<AttentionSimRank> ranks;
  runtime::SimStats stats;
  std::vector<int32_t> errorWords;  // [TP]: each rank's error word (0: no wait timed out)
};

/// Each rank's buffers of an attention launch by argument name (scalars: their values).
using AttentionBuffers = std::vector<std::map<std::string, uint64_t>>;
/// Allocates and uploads every rank's buffers of `in` on dev (validateAttentionLaunch first, its
/// errors at `where`): the inputs, weights and caches, the scratch's flag arrays and heads_count
/// zeroed, the error word zeroed, the outputs and the rest of the scratch left poisoned.
AttentionBuffers uploadAttention(runtime::Device& dev, const AttentionVariant& v, const AttentionLaunch& in,
                                 int32_t tag, int64_t waitTicks, const std::string& where);
/// Rank r's inputs, weights and caches of `in` by argument name, as the bytes uploadAttention
/// uploads (a per-rank process uploads its own rank's from these).
std::map<std::string, std::vector<uint8_t>> attentionRankInputs(const AttentionLaunch& in, int r);
/// Rank r's outputs of a launch run on buffers `m` (uploadAttention's, or another launch's names).
AttentionSimRank readAttentionRank(runtime::Device& dev, const std::map<std::string, uint64_t>& m,
                                   const AttentionVariant& v, const AttentionLaunch& in, int r);
/// Copies [src, src + bytes) of one rank's device memory to dst.
using RankDownload = std::function<void(void* dst, uint64_t src, int64_t bytes)>;
/// The same from one rank's memory through `download` (a per-rank device's).
AttentionSimRank readAttentionRank(const RankDownload& download, const std::map<std::string, uint64_t>& m,
                                   const AttentionVariant& v, const AttentionLaunch& in, int r);

/// Called for each rank after its buffers are set up and before the launch, with its scratch's
/// address: a test plants garbage there (flag pairs, selections).
using ScratchPlant = std::function<void(runtime::Device& dev, int rank, uint64_t scratch)>;

/// One launch of `plan` (buildAttentionPlan) on `in` (each rank a copy of its caches) with tag
/// `tag`; the scratch's flag arrays and the error word are zeroed first, the rest left poisoned.
AttentionSimRun runAttentionOnSim(const ir::Plan& plan, const AttentionVariant& v, const AttentionLaunch& in,
                                  const runtime::SimOptions& opts = {}, int32_t tag = 0x2a5eed01,
                                  int64_t waitTicks = 100'000'000, const ScratchPlant& plant = {});

/// The same launch on any device (the Sim's adapter, gfx950-run, hip): `code` is the variant's code
/// object (a device that runs the IR ignores it). Its stats stay empty; the outputs are read back.
/// Throws InputError for inputs validateAttentionLaunch refuses, before anything is allocated.
AttentionSimRun runAttention(runtime::Device& dev, const runtime::CodeObjectBytes& code, const ir::Plan& plan,
                             const AttentionVariant& v, const AttentionLaunch& in, int32_t tag = 0x2a5eed01,
                             int64_t waitTicks = 100'000'000, const ScratchPlant& plant = {});

}  // namespace monogen::specs::minimax_m3
