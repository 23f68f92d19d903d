#include "specs/minimax_m3/testing/AttentionSave.h"

#include <fmt/format.h>

#include <cstring>

#include "ir/Error.h"
#include "specs/minimax_m3/kernel/AttentionLayout.h"
#include "specs/minimax_m3/kernel/LaunchArgs.h"
#include "specs/minimax_m3/testing/SaveLaunch.h"

namespace monogen::specs::minimax_m3 {

namespace {

using runtime::DType;
using runtime::HostTensor;

/// A tensor of `shape` holding the elements at `src` (as many as the shape's product).
template <class T>
HostTensor tensorOf(DType d, std::vector<int64_t> shape, const T* src) {
  HostTensor t = HostTensor::zeros(d, std::move(shape));
  if (!t.data.empty()) std::memcpy(t.data.data(), src, t.data.size());
  return t;
}
template <class T>
HostTensor tensorOf(DType d, std::vector<int64_t> shape, const std::vector<T>& v) {
  return HostTensor::of(d, std::move(shape), v, "attention save");
}

/// Each of `blocks`' `bytes` bytes at byte offset block x bytes of `src`, back to back.
std::vector<uint8_t> gather(const uint8_t* src, const std::vector<int64_t>& blocks, int64_t bytes) {
  std::vector<uint8_t> out(blocks.size() * static_cast<size_t>(bytes));
  for (size_t i = 0; i < blocks.size(); ++i) std::memcpy(&out[i * bytes], src + blocks[i] * bytes, static_cast<size_t>(bytes));
  return out;
}

}  // namespace

std::vector<AttentionRankOutputs> rankOutputsOf(const AttentionSimRun& run) {
  std::vector<AttentionRankOutputs> o;
  for (const AttentionSimRank& r : run.ranks) o.push_back({&r.h, &r.caches, &r.selections, &r.attn});
  return o;
}

std::vector<AttentionRankOutputs> rankOutputsOf(const AttentionResult& ref) {
  std::vector<AttentionRankOutputs> o;
  for (const AttentionRankResult& r : ref.ranks) o.push_back({&ref.h, &r.caches, &r.selections, &r.attn});
  return o;
}

void addCacheTensors(runtime::TensorMap& m, const ModelConfig& cfg, const AttentionLaunch& in, int rank,
                     const AttentionCaches& c) {
  const TouchedBlocks tb = touchedBlocks(in, cfg.indexBlock);
  const KvCacheGeometry& g = c.kv;
  const int64_t n = static_cast<int64_t>(tb.kv.size()), ppb = g.pagesPerBlock();
  const int64_t half = int64_t{g.kvHeads} * ppb * g.pageBytes();  // a block's K (or V) bytes
  if (g.mode == CacheMode::Vllm) {
    m[rankName("kv_cache", rank)] =
        tensorOf(DType::U8, {n, 2, g.kvHeads, ppb, g.pageBytes()}, gather(c.k.data(), tb.kv, 2 * half));
    m[rankName("k_scale", rank)] = tensorOf(DType::F32, {1}, c.kScale);
    m[rankName("v_scale", rank)] = tensorOf(DType::F32, {1}, c.vScale);
  } else {
    m[rankName("k_cache", rank)] = tensorOf(DType::U8, {n, g.kvHeads, ppb, g.pageBytes()}, gather(c.k.data(), tb.kv, half));
    m[rankName("v_cache", rank)] = tensorOf(DType::U8, {n, g.kvHeads, ppb, g.pageBytes()}, gather(c.v.data(), tb.kv, half));
    const int64_t scales = int64_t{g.kvHeads} * ppb * kPage16;  // a block's per-token scales
    for (const auto& [name, v] : {std::pair{"k_scale", &c.kScale}, std::pair{"v_scale", &c.vScale}}) {
      const std::vector<uint8_t> bytes =
          gather(reinterpret_cast<const uint8_t*>(v->data()), tb.kv, scales * static_cast<int64_t>(sizeof(float)));
      m[rankName(name, rank)] = tensorOf(DType::F32, {n, g.kvHeads, ppb, kPage16}, bytes.data());
    }
  }
  if (!in.fullLayer) {
    const int64_t blockBytes = int64_t{c.index.block} * c.index.indexDim;
    m[rankName("index_cache", rank)] =
        tensorOf(DType::U8, {static_cast<int64_t>(tb.index.size()), c.index.block, c.index.indexDim},
                 gather(c.indexKeys.data(), tb.index, blockBytes));
  }
}

runtime::TensorMap attentionInputTensors(const ModelConfig& cfg, const AttentionLaunch& in) {
  runtime::TensorMap m;
  const int64_t S = in.S, H = cfg.hidden;
  const AttentionWeights& w = in.weights;
  const AttentionRows& r = in.rows;
  m["x"] = tensorOf(DType::BF16, {S, H}, in.x);
  m["res"] = tensorOf(DType::BF16, {S, H}, in.res);
  m["g_in"] = tensorOf(DType::BF16, {H}, w.gIn);
  m["g_q"] = tensorOf(DType::BF16, {static_cast<int64_t>(w.gQ.size())}, w.gQ);
  m["g_k"] = tensorOf(DType::BF16, {static_cast<int64_t>(w.gK.size())}, w.gK);
  m["g_iq"] = tensorOf(DType::BF16, {static_cast<int64_t>(w.gIq.size())}, w.gIq);
  m["g_ik"] = tensorOf(DType::BF16, {static_cast<int64_t>(w.gIk.size())}, w.gIk);
  m["cos_sin"] = tensorOf(DType::BF16, {w.maxPositions, cfg.rotaryDim}, w.cosSin);
  m["positions"] = tensorOf(DType::I64, {S}, r.positions);
  m["seq_lens"] = tensorOf(DType::I32, {S}, r.seqLens);
  m["slots"] = tensorOf(DType::I64, {S}, r.slots);
  m["index_slots"] = tensorOf(DType::I64, {S}, r.indexSlots);
  m["block_tables"] = tensorOf(DType::I32, {S, r.tableWidth}, r.tables);
  if (in.mode == CacheMode::Vllm) m["index_block_tables"] = tensorOf(DType::I32, {S, r.tableWidth}, r.indexTables);
  const TouchedBlocks tb = touchedBlocks(in, cfg.indexBlock);
  m["cache_blocks"] = tensorOf(DType::I64, {static_cast<int64_t>(tb.kv.size())}, tb.kv);
  if (!in.fullLayer) m["index_cache_blocks"] = tensorOf(DType::I64, {static_cast<int64_t>(tb.index.size())}, tb.index);
  for (int k = 0; k < in.TP; ++k) {
    const int64_t rows = static_cast<int64_t>(w.sQkv.at(k).size());
    HostTensor wq = tensorOf(DType::U8, {rows, H}, w.wQkv.at(k));
    wq.layout = "shuffle16x16";  // AITER's (16,16) shuffle (shuffledOffset16x16)
    m[rankName("w_qkv", k)] = std::move(wq);
    m[rankName("s_qkv", k)] = tensorOf(DType::F32, {rows}, w.sQkv.at(k));
    addCacheTensors(m, cfg, in, k, in.caches.at(k));
  }
  return m;
}

runtime::TensorMap attentionOutputTensors(const ModelConfig& cfg, const AttentionLaunch& in,
                                          const std::vector<AttentionRankOutputs>& ranks) {
  runtime::TensorMap m;
  const int64_t S = in.S;
  for (int k = 0; k < static_cast<int>(ranks.size()); ++k) {
    const AttentionRankOutputs& o = ranks[k];
    m[rankName("res_out", k)] = tensorOf(DType::BF16, {S, cfg.hidden}, *o.h);
    addCacheTensors(m, cfg, in, k, *o.caches);
    const int64_t width = static_cast<int64_t>(o.attn->size()) / S;
    m[rankName("attn", k)] = tensorOf(DType::BF16, {S, width}, *o.attn);
    if (in.fullLayer) continue;
    const int64_t kv = static_cast<int64_t>(o.selections->size()) / S, topk = cfg.indexTopk;
    std::vector<int32_t> sel(static_cast<size_t>(S * kv * (topk + 1)), -1);
    for (size_t i = 0; i < o.selections->size(); ++i) {
      const Selection& s = (*o.selections)[i];
      if (s.blocks.empty()) continue;  // a padded row's
      for (size_t j = 0; j < s.blocks.size() && j < static_cast<size_t>(topk); ++j) sel[i * (topk + 1) + j] = s.blocks[j];
      sel[i * (topk + 1) + topk] = s.nCtx;
    }
    m[rankName("selection", k)] = tensorOf(DType::I32, {S, kv, topk + 1}, sel);
  }
  return m;
}

void saveAttentionLaunch(const std::filesystem::path& dir, const ModelConfig& cfg, const AttentionLaunch& in,
                         const AttentionSimRun& run, const AttentionResult& ref,
                         std::map<std::string, std::string> metadata) {
  metadata["launch"] = "attention";
  metadata["config"] = cfg.attentionCanonical();
  metadata["rows"] = std::to_string(in.S);
  metadata["tp"] = std::to_string(in.TP);
  metadata["cache"] = cacheModeName(in.mode);
  metadata["layer"] = in.fullLayer ? "full" : "sparse";
  writeLaunchFiles(dir, attentionInputTensors(cfg, in), attentionOutputTensors(cfg, in, rankOutputsOf(run)),
                   attentionOutputTensors(cfg, in, rankOutputsOf(ref)), metadata);
}

}  // namespace monogen::specs::minimax_m3
