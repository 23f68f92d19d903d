// The MiniMax-M3 lightning indexer's reference: block scores, the pinned blocks, the top-k by
// (score, block id) on an order-preserving int key, the short path (every block ranked at once)
// and the long path (8 shares, their best 16 each, then the candidates), and the placement of
// the selected blocks, and context parallelism's selection: each rank's slice of the blocks,
// its candidates, the owner's merge (docs/attention.md, "The indexer").
#pragma once
#include <cstdint>
#include <vector>

#include "specs/minimax_m3/kernel/AttentionConstants.h"

namespace monogen::specs::minimax_m3 {

/// The selection sort key of block b's score: init blocks forced to 1e30, the last `local` to
/// 1e29; -0 -> 0; the float's order-preserving int32; NaN -> INT32_MIN (below -inf).
int32_t indexSortKey(int b, float score, int nBlocks, int init, int local);

/// One ranked entry: its key and block; (key, block) descending, so a tie goes to the higher id.
struct RankedBlock {
  int32_t key;
  int block;
};
inline bool beats(const RankedBlock& a, const RankedBlock& b) {
  return a.key != b.key ? a.key > b.key : a.block > b.block;
}

/// The blocks of rank < n among `entries` (rank = how many entries beat it), each with its rank.
std::vector<std::pair<RankedBlock, int>> topRanked(const std::vector<RankedBlock>& entries, int n);

/// One row's selection: blocks in slot order (the full blocks by rank, the tail block, the one
/// holding the row's last key, last) and the sparse context length nCtx (the selected keys).
struct Selection {
  std::vector<int> blocks;  // topk entries, -1 past the selection
  int nCtx = 0;
  bool longPath = false;
};

/// Selects from nBlocks blocks (blocks 0 .. nBlocks-1 of a row of seqLen keys) by keys[b]
/// (indexSortKey, or -b for a context of <= topk blocks): short = every block ranked at once,
/// long = 8 shares of ceil(nBlocks / 8) blocks, each share's best topk, then those ranked.
Selection selectBlocks(const std::vector<int32_t>& keys, int seqLen, int block, int topk, bool longPath);

/// The candidate of an unused mail slot: (INT32_MIN, -1) loses to every block, a NaN one too.
inline constexpr RankedBlock kNoCandidate{INT32_MIN, -1};

/// Context parallelism's mail to one (row, index head)'s owner, [rank][part][slot]: rank r's
/// slice is the blocks b = r (mod tp) ascending, cut into `parts` runs of ceil(len / parts);
/// each run's best topk by rank (topRanked), the slots past them kNoCandidate. InputError on a
/// tp, parts or topk below 1.
std::vector<RankedBlock> cpCandidates(const std::vector<int32_t>& keys, int topk, int tp, int parts);

/// The owner's merge of that mail: the candidates' top min(nBlocks, topk) placed as selectBlocks
/// places them (the tail block's key taken from the mail). Equals selectBlocks' selection.
Selection mergeCpCandidates(const std::vector<RankedBlock>& mail, int nBlocks, int seqLen, int block, int topk);

}  // namespace monogen::specs::minimax_m3
