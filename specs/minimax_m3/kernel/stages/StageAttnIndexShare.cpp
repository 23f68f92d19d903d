// attn_index_share (sparse layers): one task a (row, index head, share p of 8), the indexer's
// scoring spread over 8 CTAs a (row, head), a page a wave (scoreIndexPages). A row of
// topk < n <= kLongFromBlocks blocks: share p scores blocks p, p + 8, .. and writes their sort
// keys -> ISCORE (L.indexSpread; else attn_index scores them). Past it (the long path's first half, AttentionIndexer.h, selectBlocks): share
// p's blocks [p s, min(p s + s, n)), s = ceil(n / 8), scored, then ranked within the share by
// (key, block); its best topk (key, block) -> CAND in rank order ((INT32_MIN, -1) past the
// share's blocks). Either way CRDY (a row of <= topk blocks: CRDY alone).
#include "specs/minimax_m3/kernel/stages/AttentionIndexScore.h"
#include "specs/minimax_m3/kernel/stages/AttentionStageDef.h"

#include <fmt/format.h>

#include <climits>

namespace monogen::specs::minimax_m3 {

using ir::Type;
using ir::Val;
namespace a = attn_arg;

namespace {

void stageAttnIndexShare(AttentionContext& c, Val task) {
  ir::Builder& b = c.b;
  const AttentionLaunchLayout& L = c.L;
  const AttentionShape& sh = L.shape;
  const int KV = sh.kvHeads, topk = sh.topk;
  Val sel = task / c.i32(kAttnSplits), p = task % c.i32(kAttnSplits);
  Val t = sel / c.i32(KV), h = sel % c.i32(KV);
  Val live = b.load(Type::i64(), b.ptrAdd(c.arg(a::kSlots), t * c.i32(8))) >= b.i64(0);
  Val seq = b.load(Type::i32(), b.ptrAdd(c.arg(a::kSeqLens), t * c.i32(4)));
  Val nBlk = (seq + c.i32(sh.block - 1)) / c.i32(sh.block);
  Val scored = live & (nBlk > c.i32(topk));
  Val longPath = scored & (nBlk > c.i32(kLongFromBlocks));
  // short: blocks p, p + 8, ..; long: the share's contiguous span
  Val span = (nBlk + c.i32(kAttnSplits - 1)) / c.i32(kAttnSplits);
  Val lo = b.min(p * span, nBlk), hi = b.min(lo + span, nBlk);
  Val first = b.select(longPath, lo, p);
  Val step = b.select(longPath, c.i32(1), c.i32(kAttnSplits));
  Val strided = b.max(nBlk - p + c.i32(kAttnSplits - 1), c.i32(0)) / c.i32(kAttnSplits);
  Val count = b.select(scored, b.select(longPath, hi - lo, L.indexSpread ? strided : c.i32(0)), c.i32(0));
  // spread: the table entries before the wait for every row's inserts (HRDY; the keys after it);
  // else HRDY was waited for once a CTA
  Val entries = indexTableEntries(c, t, first, step, count);
  if (L.indexSpread) {
    for (int64_t r0 = 0; r0 < L.rows; r0 += L.threads) {
      Val r = c.tid + c.i32(r0);
      b.if_(r < c.i32(L.rows), [&] { c.await(c.pairAt(L.hrdyOffset, r), kSiteAttnIndex, r); });
    }
    c.ctaSync(false);
  }
  scoreIndexPages(c, t, h, first, step, count, nBlk, seq, entries);
  c.ctaSync(false);
  indexBlockKeys(c, first, step, count, nBlk);
  c.ctaSync(false);
  b.if_(scored & !longPath & b.i1(L.indexSpread), [&] {
    Val keys = b.ptrAdd(c.arg(a::kScratch), c.i32(L.iscoreOffset) + sel * c.i32(4 * kLongFromBlocks));
    b.for_(c.tid, count, c.i32(L.threads), [&](Val i) {
      b.store(b.ptrAdd(keys, (first + step * i) * c.i32(4)), b.load(Type::i32(), b.ptrAdd(c.red, i * c.i32(4))));
    });
  });
  b.if_(longPath, [&] {
    Val cand = b.ptrAdd(c.arg(a::kScratch), c.i32(L.candOffset) + task * c.i32(8 * topk));
    auto keyOf = [&](Val i) { return b.load(Type::i32(), b.ptrAdd(c.red, i * c.i32(4))); };
    auto blockOf = [&](Val i) { return lo + i; };
    b.for_(c.tid, count, c.i32(L.threads), [&](Val i) {
      Val kb = keyOf(i), bb = blockOf(i);
      Val r = indexRanksOf(c, count, keyOf, blockOf, {{kb, bb}})[0];
      b.if_(r < c.i32(topk), [&] {
        b.store(b.ptrAdd(cand, r * c.i32(8)), kb);
        b.store(b.ptrAdd(cand, r * c.i32(8) + c.i32(4)), bb);
      });
    });
    // the slots past the share's blocks (ranks are 0 .. count - 1, each once)
    b.if_((c.tid < c.i32(topk)) & (c.tid >= count), [&] {
      b.store(b.ptrAdd(cand, c.tid * c.i32(8)), c.i32(INT32_MIN));
      b.store(b.ptrAdd(cand, c.tid * c.i32(8) + c.i32(4)), c.i32(-1));
    });
  });
  c.ctaSync(true);  // the keys or candidates before CRDY; LDS is rewritten by the CTA's next task
  b.if_(c.tid == c.i32(0), [&] { c.publish(c.pairAt(L.crdyOffset, task)); });
}

}  // namespace

extern const AttentionStageDef kAttnIndexShareStage = {
    [](const AttentionLaunchLayout& L) { return L.indexShare; },
    [](const AttentionLaunchLayout& L) { return std::vector<ir::FlagUse>{{"HRDY", L.rows}}; },
    [](const AttentionLaunchLayout& L) { return std::vector<ir::FlagUse>{{"CRDY", L.indexShare.tasks}}; },
    [](const AttentionLaunchLayout& L) {
      return fmt::format("(row, index head, share of {}) a task, rows past {} blocks: the share's blocks scored (a "
                         "page a wave); up to {} blocks their sort keys -> ISCORE, past it ranked in the share, its "
                         "best {} -> CAND; CRDY",
                         kAttnSplits, L.shape.topk, kLongFromBlocks, L.shape.topk);
    },
    [](AttentionContext& c) {
      if (!c.L.indexSpread) c.awaitAllOnce(c.L.indexShare, c.L.hrdyOffset, c.L.rows, kSiteAttnIndex);
      c.forEachTask(c.L.indexShare, [&](Val t) { stageAttnIndexShare(c, t); });
    },
    "the block scores of attentionReference (indexSortKey); selectBlocks' long path: each share's topRanked "
    "(AttentionIndexer.h)",
};

}  // namespace monogen::specs::minimax_m3
