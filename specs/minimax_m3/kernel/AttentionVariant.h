// One variant of the MiniMax-M3 attention launch, made and checked once: the config, the key
// (spec minimax_m3.attention: S, TP, the cache mode and the layer type), a rank's shape, and the
// launch's memory and placements. The attention plan builder and its stages read only this.
#pragma once
#include <cstdint>
#include <string>

#include "ir/Plan.h"
#include "specs/minimax_m3/kernel/AttentionLayout.h"
#include "specs/minimax_m3/kernel/Layout.h"
#include "specs/minimax_m3/kernel/ModelConfig.h"

namespace monogen::specs::minimax_m3 {

inline constexpr const char* kAttentionSpecId = "minimax_m3.attention";
inline constexpr int kAttentionSpecVersion = 1;
/// The attention launch's wait sites (the error word: site | token << 16; Sites.h's encoding).
inline constexpr int32_t kSiteAttnGemv = 32;   // attn_gemv: XRDY of every row
inline constexpr int32_t kSiteAttnHeads = 33;  // attn_heads: QRDY of every w_qkv row tile
inline constexpr int32_t kSiteAttnSplit = 34;  // attn_split: HRDY of every row
inline constexpr int32_t kSiteAttnMerge = 35;  // attn_merge: SRDY of the row's splits
inline constexpr int32_t kSiteAttnIndex = 36;  // attn_index: HRDY of every row
inline constexpr int32_t kSiteAttnSplitSel = 37;  // attn_split (sparse): IRDY of its (row, KV head)
/// attn_split (sparse): its selection came with a block id or a length out of range (token: the
/// selection, row x kvHeads + KV head); the split attends nothing.
inline constexpr int32_t kSiteAttnSelRange = 38;
/// attn_index (a scored row): CRDY of its (row, KV head)'s shares (token: the share, selection x 8 + p).
inline constexpr int32_t kSiteAttnIndexShare = 39;
inline constexpr int32_t kSiteAttnLast = kSiteAttnIndexShare;  // a launch that adds sites starts past it
/// attn_index (indexer CP, the layer launch): a peer's candidate in SEL_CP (token: the selection,
/// row x kvHeads + KV head); the candidate is dropped. Past the layer's own site.
inline constexpr int32_t kSiteAttnIndexMail = kSiteAttnLast + 3;
/// What an attention error word says, naming the site and its row: "attn_split waited past its
/// bound for IRDY 5"; "" for 0.
std::string attentionErrorMeaning(int32_t code);
/// Blocks a row the indexer ranks at most (its keys in LDS): 2^20 positions of 128.
inline constexpr int kMaxIndexBlocks = 8192;
/// Blocks one attn_index_share task scores at most: its pages' maxima f32 [waves][this] in LDS.
inline constexpr int kIndexTaskBlocks = kMaxIndexBlocks / kAttnSplits;
/// A selection's words in scratch: the topk blocks in slot order, then the sparse length.
inline constexpr int kSelWords = 32;

/// The attention launch's knobs: the cache mode (vllm, the default, or atom), the layer type
/// (sparse, the default, or full: no index rows, no index key) and indexer context parallelism.
struct AttentionKnobs {
  CacheMode mode = CacheMode::Vllm;
  bool fullLayer = false;
  /// Indexer context parallelism (sparse layers, TP > 1): a row of more blocks than this is
  /// scored a slice a rank; 0 (the default): off. On, w_qkv holds every index head's q rows.
  int indexCpFrom = 0;
  bool indexCp() const { return indexCpFrom > 0; }
  /// "cache=atom", "layer=full", "index_cp_from=N", comma-joined; "" at the defaults.
  std::string canonical() const;
  /// Parses canonical() text; InputError at `where` naming the token and what is allowed.
  static AttentionKnobs parse(const std::string& text, const std::string& where);
};

/// Where the launch's tasks run and what it keeps between stages.
struct AttentionLaunchLayout {
  int rows = 0, tp = 1, hidden = 0, blocks = 0, threads = 0, waves = 0;
  AttentionShape shape;  // rank 0's (every rank's counts and offsets are the same)
  int qkvRows = 0;       // w_qkv rows a rank of this layer type
  int qkvTiles = 0;      // its 16-row tiles: attn_gemv's tasks
  /// Head units a row: q heads, then K heads, V heads, then (sparse layers) the index q heads and
  /// the index key, then (indexer CP) the other index heads' q.
  int headUnits = 0;
  int headTasks = 0;  // tasks a row of the heads stage: ceil(headUnits / waves), one unit a wave
  /// Row 0's heads tasks [vTask0, vTask0 + vTasks) hold the V units, which append every row's V:
  /// row t > 0's inserts are done after its own headTasks tasks and those (heads_count counts them).
  int vTask0 = 0, vTasks = 0;
  int splitTasks = 0;  // S x kvHeads x 8: (row, local KV head, split) of the attention
  // scratch (per rank): the norm's outputs the GEMV reads
  int64_t x8Offset = 0;      // E4M3 [S, hidden]
  int64_t xScaleOffset = 0;  // f32 [S]
  int64_t rstdOffset = 0;    // f32 [S]
  int64_t qkvOffset = 0;     // bf16 [S, qkvRows]: the GEMV's rows
  int64_t splitOOffset = 0;  // bf16 [splitTasks, qGroup, headDim]: each split's o / l
  int64_t splitMOffset = 0;  // f32 [splitTasks, qGroup]: each split's m
  int64_t splitLOffset = 0;  // f32 [splitTasks, qGroup]: each split's l
  int64_t xrdyOffset = 0;    // pairs [S]: attn_norm's row done (x8, x_scale, rstd)
  int64_t qrdyOffset = 0;    // pairs [qkvTiles]: attn_gemv's tile done
  int64_t hrdyOffset = 0;    // pairs [S]: a row's q, index q and cache inserts are written
  int64_t srdyOffset = 0;    // pairs [splitTasks]: a split's outputs are written
  int64_t selOffset = 0;     // i32 [S x kvHeads][kSelWords]: each selection (sparse layers)
  int64_t irdyOffset = 0;    // pairs [S x kvHeads]: a selection is written
  int64_t candOffset = 0;    // i32 pairs [S x kvHeads][8 shares][topk]: each share's (key, block) by rank
  int64_t iscoreOffset = 0;  // i32 [S x kvHeads][kLongFromBlocks]: a short scored row's sort keys a block
  int64_t crdyOffset = 0;    // pairs [S x kvHeads x 8]: a share's candidates are written
  /// bf16 [S][cpHeads][indexDim] (indexer CP only): the other index heads' q, as iq holds the own
  int64_t iqCpOffset = -1;
  /// Indexer CP (the layer launch sets them): SEL_CP, pairs [parity][S][kvHeads][TP][cpParts][topk][2]
  /// at byte selCpOffset of the layer's symmetric buffer: the (key, block) candidates the ranks mail
  /// to the owners of the rank's index heads; selCpPairs, both halves. -1 / 0: off.
  int64_t selCpOffset = -1, selCpPairs = 0;
  /// Indexer CP: the runs a rank cuts its slice of a (row, index head) into, 8 / TP, so that an
  /// owner receives 8 x topk candidates.
  int cpParts = 0;
  /// pairs [S]: a row's attention row is written (ARDY, published by attn_merge), in the layer
  /// launch only (LayerVariant sets it past the rest); -1 in the attention launch alone.
  int64_t ardyOffset = -1;
  int64_t scratchBytes = 0;
  // LDS "red": the norm's group sums (32 f32) and wave maxima (waves f32); the GEMV's wave
  // accumulators f32 [waves][16 rows][16 tokens]; the split's (splitLds*); the merge's weights f32
  // [2][q heads x 8]
  int64_t ldsBytes = 0;
  // the split's LDS: wave maxima and l sums f32 [waves][16 heads], the tile's V scale maxima f32
  // [waves], P8 [waves][16 heads][32 keys], the waves' PV f32 [waves][16 heads][headDim]
  int64_t splitLdsM = 0, splitLdsL = 0, splitLdsV = 0, splitLdsP = 0, splitLdsPv = 0;
  // i32 [1 + topk]: the task's checked selection: its sparse length (-1: dropped), its blocks
  int64_t splitLdsSel = 0;
  // a split's tiles a pass (1 or 2): the M, L, V and PV slots above are [splitPass][..]
  int splitPass = 1;
  Placement norm, gemv, heads, indexShare, index, split, merge;
  /// Rows of topk < n <= kLongFromBlocks blocks scored by attn_index_share (ISCORE), not by
  /// attn_index: when the share tasks take at most 2 a CTA.
  bool indexSpread = true;
};

struct AttentionVariant {
  ModelConfig cfg;
  ir::Key key;  // key.config is cfg.attentionCanonical()
  AttentionKnobs knobs;
  AttentionLaunchLayout layout;

  /// Checks key against cfg once (spec id and version, parameters S and TP, config text, knobs,
  /// validateAttention); InputError naming the variant. `inLayer`: a part of the layer launch,
  /// which alone takes index_cp_from (its candidates go to peer ranks).
  static AttentionVariant make(const ModelConfig& cfg, const ir::Key& key, bool inLayer = false);
};

/// A key of the attention launch for (S, TP) on cfg.
ir::Key makeAttentionKey(const ModelConfig& cfg, int rows, int tp, const AttentionKnobs& knobs = {});

}  // namespace monogen::specs::minimax_m3
