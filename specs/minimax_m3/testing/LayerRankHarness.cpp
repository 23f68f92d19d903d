#include "specs/minimax_m3/testing/LayerRankHarness.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "ir/Error.h"
#include "runtime/HipRankDevice.h"
#include "runtime/sim/SimRankDevice.h"
#include "specs/minimax_m3/kernel/AttentionContext.h"
#include "specs/minimax_m3/kernel/Generate.h"
#include "specs/minimax_m3/kernel/KernelContext.h"
#include "specs/minimax_m3/kernel/LayerSpec.h"
#include "specs/minimax_m3/kernel/Spec.h"
#include "specs/minimax_m3/testing/AttentionSim.h"
#include "specs/minimax_m3/testing/AttentionVerdict.h"

namespace monogen::specs::minimax_m3 {

runtime::RankRuntimeOptions layerRankRuntimeOptions(const ModelConfig& cfg, int rank, int tp, std::vector<int> rows,
                                                    const AttentionKnobs& knobs, const LayerPlacementKnobs& placement,
                                                    MoeQuant moe) {
  runtime::RankRuntimeOptions o;
  o.rank = rank;
  o.tp = tp;
  o.rows = std::move(rows);
  o.key = [cfg, tp, knobs, placement, moe](int s) { return makeLayerKey(cfg, s, tp, knobs, placement, moe); };
  o.symmetricArg = arg::kSym;
  o.rankArg = arg::kRank;
  return o;
}

LayerRankData makeLayerRankData(const ModelConfig& cfg, const LayerRankJob& job, int tp) {
  LayerRankData d;
  for (int k = 0; k < job.launches; ++k) {
    d.inputs.push_back(makeLayerInputs(cfg, job.rows, tp, job.seed + static_cast<uint64_t>(k), job.inputs));
    d.want.push_back(layerReference(cfg, d.inputs.back(), job.moe));
  }
  return d;
}

LayerRankIo allocLayerRankIo(runtime::RankDevice& dev, const ir::Plan& plan, const LayerRankData& data, int rank) {
  LayerRankIo io;
  io.io.rows = rowsOf(plan.key);
  for (const ir::KernelArg& a : plan.args)
    if (a.isPointer && (a.role == ir::ArgRole::Input || a.role == ir::ArgRole::Output || a.role == ir::ArgRole::Weight))
      io.bytes[a.name] = std::max<int64_t>(a.bytes(), 1);
  io.tableStride = data.inputs.at(0).attention.rows.tableWidth;
  for (const LayerInputs& in : data.inputs) {
    if (in.attention.rows.tableWidth != io.tableStride)
      throw InputError("layer rank inputs", fmt::format("block_tables is {} wide in one launch and {} in another: one "
                                                        "bound argument set has one table_stride",
                                                        io.tableStride, in.attention.rows.tableWidth));
    for (const auto& [name, b] : attentionRankInputs(in.attention, rank))
      if (auto it = io.bytes.find(name); it != io.bytes.end()) it->second = std::max<int64_t>(it->second, b.size());
  }
  for (const auto& [name, bytes] : io.bytes) io.io.addr[name] = dev.alloc(bytes, rankName(name.c_str(), rank), 256);
  return io;
}

void uploadLayerRankInputs(runtime::RankDevice& dev, const LayerVariant& v, const ir::Plan& plan,
                           const LayerRankIo& io, int rank, const LayerInputs& in) {
  uploadRankInputs(dev, v.ffn, plan, io.io, rank, in.ffn);  // the FFN's; the attention's zeroed
  for (const auto& [name, b] : attentionRankInputs(in.attention, rank)) {
    auto it = io.io.addr.find(name);
    if (it == io.io.addr.end()) continue;  // not an argument of this layer type (the index tables of a full one)
    if (static_cast<int64_t>(b.size()) > io.bytes.at(name))
      throw InputError("layer rank inputs", fmt::format("rank {}: '{}' holds {} bytes, its buffer {}", rank, name,
                                                        b.size(), io.bytes.at(name)));
    if (!b.empty()) dev.upload(it->second, b.data(), static_cast<int64_t>(b.size()));
  }
}

runtime::RankArgs layerRankArgs(const ir::Plan& plan, const LayerRankIo& io, int64_t waitTicks) {
  runtime::RankArgs args = rankArgs(plan, io.io, waitTicks, false, argLayouts(plan));
  args[attn_arg::kTableStride] = runtime::LaunchArg::scalar(io.tableStride);
  return args;
}

namespace {

/// Reduce-scattered, row t's partials land on its owner rank t % TP alone: down.r<src> holds this
/// rank's rows only, in what it read and in the reference.
void keepOwnedRows(const Layout& L, int rank, runtime::TensorMap& got, runtime::TensorMap& want) {
  for (int src = 0; src < L.tp; ++src)
    for (runtime::TensorMap* m : {&got, &want}) {
      auto it = m->find(rankName("down", src));
      if (it == m->end()) continue;
      for (int t = 0; t < L.rows; ++t)
        if (t % L.tp != rank)
          std::fill_n(it->second.as<uint16_t>() + int64_t{t} * L.hidden, L.hidden, uint16_t{0});
    }
}

}  // namespace

std::string layerRankVerdict(const LayerVariant& v, runtime::RankRuntime& rt, const LayerRankIo& io, int32_t tag,
                             const LayerInputs& in, const LayerReference& want) {
  const int r = rt.rank(), rows = io.io.rows;
  const Layout& L = v.ffn.layout;
  runtime::TensorMap got = readRankOutputs(v.ffn, rt, io.io, tag);
  if (const std::string err = rankError(got, r); !err.empty()) {
    const std::string m = missingPeers(v.ffn, rt, tag);
    return "INVALID: " + err + (m.empty() ? "" : "; " + m);
  }
  // the attention's buffers by its own names: its scratch and res_out are the layer's attn_scratch and res_in
  std::map<std::string, uint64_t> at = io.io.addr;
  at[attn_arg::kScratch] = rt.buffer(rows, kLayerAttnScratch);
  at[attn_arg::kResOut] = io.io.addr.at(arg::kResIn);
  at[attn_arg::kHeadsCount] = rt.buffer(rows, attn_arg::kHeadsCount);
  runtime::RankDevice& dev = rt.device();
  const AttentionSimRank a = readAttentionRank(
      [&dev](void* dst, uint64_t src, int64_t bytes) { dev.download(dst, src, bytes); }, at, v.attention,
      in.attention, r);
  if (const std::string m = attentionRankMismatch(in.attention, want.attention, a, r, v.cfg); !m.empty())
    return "MISMATCH: " + m;
  runtime::TensorMap ref = rankReference(want.ffn, r, rt.tp());
  if (L.ffnReduceScatter) keepOwnedRows(L, r, got, ref);
  if (const auto m = firstMismatch(got, ref)) return "MISMATCH: " + describe(*m);
  return "bit-exact";
}

int runLayerRank(const ModelConfig& cfg, const LayerRankJob& job, const LayerRankData& data, runtime::RankChannel& ch,
                 runtime::RankDevice& dev, runtime::Generator& gen, std::chrono::steady_clock::time_point started,
                 const std::function<int64_t()>& ops, void* stream) {
  const int r = ch.rank(), tp = ch.tp();
  if (data.inputs.size() < static_cast<size_t>(job.launches) || data.want.size() < static_cast<size_t>(job.launches))
    throw InputError("runLayerRank", fmt::format("no inputs or references for {} launches", job.launches));
  RankLaunchSteps steps;
  steps.opts = layerRankRuntimeOptions(cfg, r, tp, {job.rows}, job.knobs, job.placement, job.moe);
  steps.opts.progress = reportProgress(ch);
  const LayerVariant v = LayerVariant::make(cfg, steps.opts.key(job.rows));
  LayerRankIo io;
  steps.bind = [&](runtime::RankRuntime& rt, int s) -> runtime::BoundLaunch& {
    io = allocLayerRankIo(dev, rt.plan(s), data, r);
    return rt.bind(s, layerRankArgs(rt.plan(s), io, job.waitTicks));
  };
  steps.upload = [&](runtime::RankRuntime& rt, int s, int k) {
    uploadLayerRankInputs(dev, v, rt.plan(s), io, r, data.inputs[k]);
  };
  steps.verdict = [&](runtime::RankRuntime& rt, int, int k, int32_t tag) {
    return layerRankVerdict(v, rt, io, tag, data.inputs[k], data.want[k]);
  };
  return runRankLaunches(steps, {job.rows}, job.launches, 0, ch, dev, gen, started, ops, stream);
}

int runSimLayerRank(const ModelConfig& cfg, const LayerRankJob& job, const LayerRankData& data,
                    runtime::RankChannel& ch) {
  const auto started = std::chrono::steady_clock::now();
  runtime::SimRankDevice dev(ch.rank(), ch.tp(), job.sim);
  ch.report(nlohmann::json{{"event", "device"}, {"rank", ch.rank()}, {"device", dev.name()}}.dump());
  runtime::Generator gen = makeLayerGenerator(cfg, nullptr);  // the Sim needs Plans only
  return runLayerRank(cfg, job, data, ch, dev, gen, started, [&] { return dev.lastStats().steps; }, nullptr);
}

int runHipLayerRank(const ModelConfig& cfg, const LayerRankJob& job, const LayerRankData& data,
                    runtime::RankChannel& ch, std::shared_ptr<runtime::Cache> cache) {
  const auto started = std::chrono::steady_clock::now();
  runtime::HipRankDevice dev(ch.rank(), ch.tp());  // GPU `rank`; no library / entry point / gfx950: RuntimeError
  reportHipDevice(ch, dev);
  runtime::Generator gen = makeLayerGenerator(cfg, std::move(cache));
  const runtime::HipStream stream(dev);
  return runLayerRank(cfg, job, data, ch, dev, gen, started, {}, stream.get());
}

}  // namespace monogen::specs::minimax_m3
