// The MiniMax-M3 attention launch's contract with the serving stack: a rank's heads and fused
// w_qkv rows, the E4M3 K/V page-16 cache and the index-key cache with their addressing in the
// two cache modes (vllm: ABI 1; atom: per-token scales). The kernel and the reference both use
// these functions; docs/attention.md holds the layouts and where each fact comes from.
#pragma once
#include <cstdint>
#include <string>

#include "specs/minimax_m3/kernel/ModelConfig.h"

namespace monogen::specs::minimax_m3 {

/// The cache mode knob: Vllm (ABI 1, the default): scalar K/V scales, the index cache addressed
/// by its own slots and table, unit-FP8 index q; Atom: per-token K/V scales, the index cache on
/// the main slots and table.
enum class CacheMode { Vllm = 0, Atom = 1 };
const char* cacheModeName(CacheMode m);  // "vllm", "atom"
/// The mode `name` names; InputError at `where` naming what was given and what is allowed.
CacheMode cacheModeOf(const std::string& name, const std::string& where);

/// Tokens a page-16 (the FP8 MFMA B operand's 16 columns).
inline constexpr int kPage16 = 16;
/// Split tasks a row (each one 256-key tile of the selection in atom mode).
inline constexpr int kAttnSplits = 8;
inline constexpr int kSplitKeys = 256;
/// Past this many blocks a request's selection takes the long path (8 shares of candidates).
inline constexpr int kLongFromBlocks = 512;

/// One rank's share of the attention: its heads and its fused w_qkv rows
/// q (qHeads x headDim) | k (kvHeads x headDim) | v (same) | index q (indexHeads x indexDim) |
/// index k (indexDim) | (indexer CP only) the other index heads' q (cpHeads x indexDim, global
/// order), each head's rows in channel order.
struct AttentionShape {
  int tp = 1, rank = 0;
  int hidden = 0, headDim = 0, indexDim = 0, rotaryDim = 0, block = 0, topk = 0;
  int qHeads = 0;       // query heads a rank: heads / TP
  int kvHeads = 0;      // KV heads a rank: kvHeads / TP, or 1 when TP > kvHeads (shared by TP / kvHeads ranks)
  int indexHeads = 0;   // index heads a rank: one a KV head
  int firstQHead = 0;   // the rank's first query head (global)
  int firstKvHead = 0;  // the rank's first KV head (global) = its first index head
  int qGroup = 0;       // query heads a KV head on this rank (TP8, full: 8; TP1..4: 16)
  int qOff = 0, kOff = 0, vOff = 0, iqOff = 0, ikOff = 0, rows = 0;  // w_qkv row offsets, rows
  /// Indexer context parallelism: the other ranks' index heads (all index heads but this rank's;
  /// 0 when off), their q rows from cpOff (= ikOff + indexDim).
  int cpHeads = 0, cpOff = 0;
  /// The global index head of the rank's other head j (0 .. cpHeads-1): the heads in order, the
  /// rank's own skipped.
  int cpHeadOf(int j) const { return j < firstKvHead ? j : j + indexHeads; }
  /// The attention rows this rank produces: qHeads x headDim (= ModelConfig::attnWidth(tp), the
  /// attn.rR slice o_proj reads: columns rank x attnWidth .. of the logical o_proj weight).
  int attnWidth() const { return qHeads * headDim; }
  /// w_qkv rows of a layer: a full-attention layer has no index rows (q | k | v only).
  int rowsOf(bool fullLayer) const { return fullLayer ? iqOff : rows; }
  /// The local KV head (0 .. kvHeads-1) local query head `q` reads.
  int kvOfQ(int q) const { return q / qGroup; }

  /// Throws InputError at `where` unless cfg (validateAttention) splits over TP ranks: TP in
  /// {1, 2, 4, 8}, heads and kvHeads divisible (or kvHeads dividing TP), rows a multiple of 16.
  /// `indexCp`: the rows of indexer context parallelism (the other index heads' q) too.
  static AttentionShape make(const ModelConfig& cfg, int tp, int rank, const std::string& where,
                             bool indexCp = false);
};

/// What a local w_qkv row is: which projection, its global head and channel.
struct QkvRow {
  enum Kind { Q, K, V, IndexQ, IndexK } kind = Q;
  int head = 0;     // global head (query / KV / index head; 0 for IndexK)
  int channel = 0;  // 0 .. headDim-1 or indexDim-1
};
QkvRow qkvRowOf(const AttentionShape& s, int localRow);

/// One rank's KV cache geometry: `blocks` physical blocks of `block` tokens for kvHeads heads.
/// A block of one head is block/16 page-16s of 16 x headDim bytes. Page ids:
///   atom: K and V are separate tensors; page(m, h, j) = (m kvHeads + h) block/16 + j;
///   vllm: one packed `main` tensor; block m = its K half (kvHeads block/16 pages) then its V
///         half; the K view starts at main, the V view kvHeads block/16 pages later, and
///         page(m, h, j) = 2 m kvHeads block/16 + h block/16 + j in either view.
struct KvCacheGeometry {
  CacheMode mode = CacheMode::Vllm;
  int kvHeads = 1, headDim = 128, block = 128;
  int64_t blocks = 0;
  int pagesPerBlock() const { return block / kPage16; }
  int64_t pageBytes() const { return int64_t{kPage16} * headDim; }
  /// Page-16s in the K view (= the V view): the atom K tensor's, or main's K-view extent.
  int64_t pages() const;
  /// Bytes of the cache tensors: atom K (= V); vllm `main` (K and V halves together).
  int64_t kBytes() const;
  /// Per-token scales (atom): one f32 a (page, token) of the K view, for K and V alike.
  int64_t scaleCount() const { return pages() * kPage16; }

  /// The block table entry of physical block m: atom m; vllm 2 kvHeads m (the K half's first page / 8).
  int64_t tableEntry(int64_t m) const;
  /// The physical block of a table entry (InputError at `where` when it is no block's entry).
  int64_t blockOfEntry(int64_t entry, const std::string& where) const;
  /// The slot (token address) of token i of physical block m: atom m block + i; vllm
  /// 16 page(m, 0, i / 16) + i % 16.
  int64_t slotOf(int64_t m, int i) const;
  /// A slot's page-16 for local head h and its token in the page.
  struct PageToken {
    int64_t page;
    int token;
  };
  PageToken pageOfSlot(int64_t slot, int h) const;
  /// The page-16 of head h holding key `key` (0-based in its sequence) of a row whose table row
  /// names block-table entries (table[key / block]).
  PageToken pageOfKey(int64_t tableEntry, int64_t key, int h) const;
  /// K byte (page p, token t, channel d) in the K view: p pageBytes + (d / 16) 256 + t 16 + d % 16.
  int64_t kByte(int64_t page, int t, int d) const { return page * pageBytes() + (d / 16) * 256 + t * 16 + d % 16; }
  /// V byte in the V view: p pageBytes + d 16 + t (channel-major, token-minor).
  int64_t vByte(int64_t page, int t, int d) const { return page * pageBytes() + int64_t{d} * kPage16 + t; }
  /// Where the V view starts in its tensor: atom 0 (its own tensor); vllm kvHeads block/16 pages.
  int64_t vViewOffset() const;
  /// The atom mode's per-token scale index of (page, token).
  int64_t scaleIndex(int64_t page, int t) const { return page * kPage16 + t; }
};

/// The index-key cache: [blocks, block, indexDim] E4M3, unit scale; one key a position (shared
/// by the index heads). Byte of (index slot s, channel d) = s indexDim + d; slot = m block + i.
struct IndexCacheGeometry {
  int indexDim = 128, block = 128;
  int64_t blocks = 0;
  int64_t bytes() const { return blocks * block * indexDim; }
  int64_t slotOf(int64_t m, int i) const { return m * block + i; }
  int64_t byteOf(int64_t slot, int d) const { return slot * indexDim + d; }
};

}  // namespace monogen::specs::minimax_m3
