// The lightning indexer's pieces both of its stages use (attn_index and attn_index_share): a
// block's score and sort key into LDS, and an entry's rank among entries by (key, block)
// (AttentionIndexer.h: indexSortKey, topRanked).
#pragma once
#include <functional>

#include "specs/minimax_m3/kernel/AttentionContext.h"

namespace monogen::specs::minimax_m3 {

/// The scores of blocks [lo, hi) of (row t, index head h), a wave a block (lo + wave, + waves,
/// ..): the max over its keys below seq of dot(bf16 index q, widened E4M3 key) x the scale, the
/// pinned blocks' 1e30 / 1e29, its sort key -> LDS red i32 [block - lo]. nBlk: the row's blocks.
void scoreIndexBlocks(AttentionContext& c, ir::Val t, ir::Val h, ir::Val lo, ir::Val hi, ir::Val nBlk, ir::Val seq);

/// How many of entries 0 .. count - 1 (keyAt(i), blockAt(i)) beat (kb, bb): a higher key, or the
/// same key and a higher block (a tie goes to the higher id).
ir::Val indexRankOf(AttentionContext& c, ir::Val count, const std::function<ir::Val(ir::Val)>& keyAt,
                    const std::function<ir::Val(ir::Val)>& blockAt, ir::Val kb, ir::Val bb);

}  // namespace monogen::specs::minimax_m3
