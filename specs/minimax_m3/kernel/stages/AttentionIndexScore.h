// The lightning indexer's pieces both of its stages use (attn_index_share and attn_index): the
// blocks' scores and sort keys into LDS, a page a wave, and an entry's rank among entries by
// (key, block) (AttentionIndexer.h: indexSortKey, topRanked).
#pragma once
#include <functional>
#include <utility>
#include <vector>

#include "specs/minimax_m3/kernel/AttentionContext.h"

namespace monogen::specs::minimax_m3 {

/// Lane j's table entry (index table, vllm; the main one, atom) of block first + step j of row t,
/// j < min(count, 64) (past count: the last block's; 0 when count is 0): the table is the host's,
/// so this may run before the launch's inserts are waited for.
ir::Val indexTableEntries(AttentionContext& c, ir::Val t, ir::Val first, ir::Val step, ir::Val count);

/// Page `wave` of blocks first + step i, i < count (<= kIndexTaskBlocks), of (row t, index head h):
/// the max over the page's keys below seq of dot(bf16 index q, widened E4M3 key) -> LDS red f32
/// [wave][i]; -inf for a pinned block. nBlk: the row's blocks; entries: indexTableEntries'. The
/// CTA's waves are a block's pages (the variant's 8 waves, its 128-key blocks). `qHead` (indexer
/// CP): a pointer to the head's bf16 [indexDim] q, read instead of iq's (t, h).
void scoreIndexPages(AttentionContext& c, ir::Val t, ir::Val h, ir::Val first, ir::Val step, ir::Val count,
                     ir::Val nBlk, ir::Val seq, ir::Val entries, ir::Val qHead = {});

/// After scoreIndexPages and a CTA sync: a thread a block i < count, the max of its pages x the
/// scale, the pinned blocks' 1e30 / 1e29, its sort key -> LDS red i32 [i] (over wave 0's maximum).
void indexBlockKeys(AttentionContext& c, ir::Val first, ir::Val step, ir::Val count, ir::Val nBlk);

/// For each (kb, bb) of `of`: how many of entries 0 .. count - 1 (keyAt(i), blockAt(i)), count
/// >= 1, beat it: a higher key, or the same key and a higher block (a tie goes to the higher id).
/// One pass over the entries for all of them, kIndexRankAhead entries' loads at a time.
std::vector<ir::Val> indexRanksOf(AttentionContext& c, ir::Val count, const std::function<ir::Val(ir::Val)>& keyAt,
                                  const std::function<ir::Val(ir::Val)>& blockAt,
                                  const std::vector<std::pair<ir::Val, ir::Val>>& of);

}  // namespace monogen::specs::minimax_m3
