// The attention launch as tensors for `monogen sim --launch attention --save DIR`: the inputs (the
// rows, the weights, the metadata and the caches' touched blocks before the launch) and, for the
// Sim's run and the reference alike, the outputs (the new residual, the caches' touched blocks
// after the appends, each (row, KV head)'s selection, the attention rows); docs/attention.md.
#pragma once
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "runtime/Tensor.h"
#include "specs/minimax_m3/kernel/ModelConfig.h"
#include "specs/minimax_m3/reference/AttentionReference.h"
#include "specs/minimax_m3/testing/AttentionSim.h"

namespace monogen::specs::minimax_m3 {

/// One rank's outputs, whichever side computed them.
struct AttentionRankOutputs {
  const std::vector<uint16_t>* h = nullptr;  // bf16 [S, hidden]
  const AttentionCaches* caches = nullptr;
  const std::vector<Selection>* selections = nullptr;  // [S x kvHeads]
  const std::vector<uint16_t>* attn = nullptr;         // bf16 [S, attnWidth]
};
std::vector<AttentionRankOutputs> rankOutputsOf(const AttentionSimRun& run);
std::vector<AttentionRankOutputs> rankOutputsOf(const AttentionResult& ref);

/// x, res, the norms, cos_sin, positions, seq_lens, slots, index_slots, block_tables
/// (index_block_tables in vllm mode), w_qkv.rR, s_qkv.rR, cache_blocks (index_cache_blocks) and
/// each rank's caches at those blocks (cacheTensors).
runtime::TensorMap attentionInputTensors(const ModelConfig& cfg, const AttentionLaunch& in);

/// res_out.rR, the caches at the touched blocks, selection.rR (sparse layers: I32 [S, kvHeads,
/// topk + 1], the blocks in slot order then the sparse length; -1 on padded rows) and attn.rR.
runtime::TensorMap attentionOutputTensors(const ModelConfig& cfg, const AttentionLaunch& in,
                                          const std::vector<AttentionRankOutputs>& ranks);

/// Rank r's caches at the touched blocks, in touchedBlocks' order: vllm kv_cache.rR U8 [n, 2 (K
/// half, V half), kvHeads, block/16, 16 headDim], k_scale.rR and v_scale.rR F32 [1]; atom
/// k_cache.rR, v_cache.rR U8 [n, kvHeads, block/16, 16 headDim] and k_scale.rR, v_scale.rR F32
/// [n, kvHeads, block/16, 16]; sparse layers index_cache.rR U8 [n index, block, indexDim].
void addCacheTensors(runtime::TensorMap& m, const ModelConfig& cfg, const AttentionLaunch& in, int rank,
                     const AttentionCaches& c);

/// Writes DIR/inputs, outputs (the run's) and reference .safetensors (writeLaunchFiles) with
/// metadata: launch, config (attentionCanonical), rows, tp, cache, layer and the caller's.
void saveAttentionLaunch(const std::filesystem::path& dir, const ModelConfig& cfg, const AttentionLaunch& in,
                         const AttentionSimRun& run, const AttentionResult& ref,
                         std::map<std::string, std::string> metadata);

}  // namespace monogen::specs::minimax_m3
