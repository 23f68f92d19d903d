// The lightning indexer's pieces both of its stages use (attn_index_share and attn_index): the
// blocks' scores and sort keys into LDS, a page a wave, and an entry's rank among entries by
// (key, block) (AttentionIndexer.h: indexSortKey, topRanked).
#pragma once
#include <functional>

#include "specs/minimax_m3/kernel/AttentionContext.h"

namespace monogen::specs::minimax_m3 {

/// Page `wave` of blocks first + step i, i < count (<= kIndexTaskBlocks), of (row t, index head h):
/// the max over the page's keys below seq of dot(bf16 index q, widened E4M3 key) -> LDS red f32
/// [wave][i]; -inf for a pinned block (not loaded). nBlk: the row's blocks. The CTA's waves are
/// a block's pages (checked by the variant).
void scoreIndexPages(AttentionContext& c, ir::Val t, ir::Val h, ir::Val first, ir::Val step, ir::Val count,
                     ir::Val nBlk, ir::Val seq);

/// After scoreIndexPages and a CTA sync: a thread a block i < count, the max of its pages x the
/// scale, the pinned blocks' 1e30 / 1e29, its sort key -> LDS red i32 [i] (over wave 0's maximum).
void indexBlockKeys(AttentionContext& c, ir::Val first, ir::Val step, ir::Val count, ir::Val nBlk);

/// How many of entries 0 .. count - 1 (keyAt(i), blockAt(i)) beat (kb, bb): a higher key, or the
/// same key and a higher block (a tie goes to the higher id).
ir::Val indexRankOf(AttentionContext& c, ir::Val count, const std::function<ir::Val(ir::Val)>& keyAt,
                    const std::function<ir::Val(ir::Val)>& blockAt, ir::Val kb, ir::Val bb);

}  // namespace monogen::specs::minimax_m3
