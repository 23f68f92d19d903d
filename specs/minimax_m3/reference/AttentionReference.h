// The native reference of the MiniMax-M3 attention launch, every TP rank: from the layer's input
// rows (the previous layer's all-reduced output and residual) to the attention rows o_proj reads,
// with the cache inserts, the indexer's selections and the splits on the way. Rounding points and
// sum orders are the serving stack's (docs/attention.md).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "specs/minimax_m3/kernel/AttentionLayout.h"
#include "specs/minimax_m3/kernel/ModelConfig.h"
#include "specs/minimax_m3/reference/AttentionIndexer.h"
#include "specs/minimax_m3/reference/AttentionSplit.h"
#include "specs/minimax_m3/reference/RefNumerics.h"

namespace monogen::specs::minimax_m3 {

/// The weights every rank reads alike, and each rank's fused w_qkv.
struct AttentionWeights {
  std::vector<uint16_t> gIn;           // bf16 [hidden] input_layernorm (1 + w)
  std::vector<uint16_t> gQ, gK;        // bf16 [headDim]
  std::vector<uint16_t> gIq, gIk;      // bf16 [indexDim]
  std::vector<uint16_t> cosSin;        // bf16 [maxPositions, rotaryDim]: cos, then sin
  int64_t maxPositions = 0;
  std::vector<std::vector<uint8_t>> wQkv;  // per rank: E4M3 [rows, hidden], (16,16)-shuffled
  std::vector<std::vector<float>> sQkv;    // per rank: f32 [rows], one scale a row
};

/// One rank's caches for the launch's layer (AttentionLayout.h).
struct AttentionCaches {
  KvCacheGeometry kv;
  IndexCacheGeometry index;
  std::vector<uint8_t> k;        // atom: the K tensor; vllm: `main` (the K view at 0, the V view after)
  std::vector<uint8_t> v;        // atom: the V tensor; vllm: empty
  std::vector<float> kScale, vScale;  // atom: per token [kv.scaleCount()]; vllm: one scalar each
  std::vector<uint8_t> indexKeys;     // E4M3 [index.blocks, block, indexDim]
  const uint8_t* kView() const { return k.data(); }
  const uint8_t* vView() const { return kv.mode == CacheMode::Vllm ? k.data() + kv.vViewOffset() : v.data(); }
  uint8_t* kView() { return k.data(); }
  uint8_t* vView() { return kv.mode == CacheMode::Vllm ? k.data() + kv.vViewOffset() : v.data(); }
};

/// The launch's rows: S rows, each its own position, sequence length and cache addresses.
/// A padded row has slot -1 (and index slot -1): it writes nothing and its outputs are 0.
struct AttentionRows {
  int S = 0;
  std::vector<int64_t> positions;   // [S]
  std::vector<int32_t> seqLens;     // [S]: keys the row attends (its position + 1 in decode)
  std::vector<int64_t> slots;       // [S]: the main cache's token address (AttentionLayout.h)
  std::vector<int64_t> indexSlots;  // [S]: vllm: the index cache's; atom: = slots
  int tableWidth = 0;
  std::vector<int32_t> tables;       // [S, tableWidth]: main block-table rows
  std::vector<int32_t> indexTables;  // [S, tableWidth]: vllm: the index cache's rows (physical page ids)
  std::vector<int32_t> requestLast;  // [S]: the request's last row (rows of one request: one selection path)
  bool live(int t) const { return slots[t] >= 0; }
};

/// One launch's inputs for TP ranks.
struct AttentionLaunch {
  int S = 0, TP = 1;
  CacheMode mode = CacheMode::Vllm;
  bool fullLayer = false;                 // a full-attention layer: every key, no indexer
  bool indexCp = false;                   // w_qkv holds the other index heads' q rows too (indexer CP)
  std::vector<uint16_t> x, res;           // bf16 [S, hidden]: the all-reduced output and residual
  AttentionWeights weights;
  AttentionRows rows;
  std::vector<AttentionCaches> caches;    // per rank
};

/// One rank's results.
struct AttentionRankResult {
  std::vector<uint16_t> qkv;    // bf16 [S, rows]: the GEMV's rows
  std::vector<uint16_t> q;      // bf16 [S, qHeads, headDim] after norm + RoPE
  std::vector<uint16_t> iq;     // bf16 [S, indexHeads, indexDim]: as the scorer reads it
  std::vector<Selection> selections;   // [S x kvHeads] (empty for padded rows and full layers)
  std::vector<SplitPartial> splits;    // [S x kvHeads x 8]
  std::vector<uint16_t> attn;   // bf16 [S, qHeads x headDim]: the attn.rR rows o_proj reads
  AttentionCaches caches;       // after the inserts
};
struct AttentionResult {
  std::vector<uint16_t> h;      // bf16 [S, hidden]: the new residual (every rank alike)
  std::vector<float> rstd, xScale;  // [S]
  std::vector<AttentionRankResult> ranks;
};

/// Throws InputError (where = `where`) naming the row and what was wrong: a position at or past
/// its sequence's length, seq_len 0 on a live row, a slot below -1, a block-table entry out of
/// range, two live rows writing one slot, a position past the cos/sin table.
void validateAttentionLaunch(const ModelConfig& cfg, const AttentionLaunch& in, const std::string& where);

/// The index-key cache block of row t's block b: vllm its index table's entry (a physical page
/// id), atom its main table's (the block id).
int64_t indexBlockOf(const AttentionRows& r, CacheMode mode, int t, int64_t b);

/// The physical blocks the live rows' tables name for their sequences (every block a row reads
/// or appends to), each list ascending and distinct: the K/V cache's and the index-key cache's
/// (sparse layers; empty on full ones). `in` must pass validateAttentionLaunch.
struct TouchedBlocks {
  std::vector<int64_t> kv, index;
};
TouchedBlocks touchedBlocks(const AttentionLaunch& in, int block);

/// The whole launch (validateAttentionLaunch first): every row's inserts before any row reads,
/// so a row sees the keys its launch appends for earlier positions of its sequence.
AttentionResult attentionReference(const ModelConfig& cfg, const AttentionLaunch& in,
                                   RefNumerics n = RefNumerics::Ir);

/// One row's keys of local KV head h in the attended order (sparse: the selection's blocks in
/// slot order, nCtx keys; full: keys 0 .. seqLen-1), read from the caches.
GatheredKeys gatherKeys(const AttentionCaches& c, const AttentionRows& rows, int t, int h, const Selection* sel,
                        int block);

}  // namespace monogen::specs::minimax_m3
