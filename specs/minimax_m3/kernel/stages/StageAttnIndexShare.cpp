// attn_index_share (sparse layers): one task a (row, index head, share p of 8), the long path's
// first half (AttentionIndexer.h, selectBlocks' long path): for a row past kLongFromBlocks
// blocks, share p's blocks [p s, min(p s + s, n)), s = ceil(n / 8), scored as attn_index scores
// them (a wave a block), then ranked within the share by (key, block); its best topk (key,
// block) -> CAND in rank order ((INT32_MIN, -1) past the share's blocks), CRDY. Other rows: CRDY.
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
  Val longPath = live & (nBlk > c.i32(kLongFromBlocks));
  Val span = (nBlk + c.i32(kAttnSplits - 1)) / c.i32(kAttnSplits);
  Val lo = b.min(p * span, nBlk), hi = b.min(lo + span, nBlk);
  b.if_(longPath, [&] { scoreIndexBlocks(c, t, h, lo, hi, nBlk, seq); });
  c.ctaSync(false);
  b.if_(longPath, [&] {
    Val cand = b.ptrAdd(c.arg(a::kScratch), c.i32(L.candOffset) + task * c.i32(8 * topk));
    auto keyOf = [&](Val i) { return b.load(Type::i32(), b.ptrAdd(c.red, i * c.i32(4))); };
    auto blockOf = [&](Val i) { return lo + i; };
    Val count = hi - lo;
    b.for_(c.tid, count, c.i32(L.threads), [&](Val i) {
      Val kb = keyOf(i), bb = blockOf(i);
      Val r = indexRankOf(c, count, keyOf, blockOf, kb, bb);
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
  c.ctaSync(true);  // the candidates before CRDY; LDS is rewritten by the CTA's next task
  b.if_(c.tid == c.i32(0), [&] { c.publish(c.pairAt(L.crdyOffset, task)); });
}

}  // namespace

extern const AttentionStageDef kAttnIndexShareStage = {
    [](const AttentionLaunchLayout& L) { return L.indexShare; },
    [](const AttentionLaunchLayout& L) { return std::vector<ir::FlagUse>{{"HRDY", L.rows}}; },
    [](const AttentionLaunchLayout& L) { return std::vector<ir::FlagUse>{{"CRDY", L.indexShare.tasks}}; },
    [](const AttentionLaunchLayout& L) {
      return fmt::format("(row, index head, share of {}) a task, rows past {} blocks: the share's blocks scored (a "
                         "wave a block), ranked in the share, its best {} -> CAND, CRDY",
                         kAttnSplits, kLongFromBlocks, L.shape.topk);
    },
    [](AttentionContext& c) {
      c.awaitAllOnce(c.L.indexShare, c.L.hrdyOffset, c.L.rows, kSiteAttnIndex);
      c.forEachTask(c.L.indexShare, [&](Val t) { stageAttnIndexShare(c, t); });
    },
    "selectBlocks' long path: each share's topRanked (AttentionIndexer.h)",
};

}  // namespace monogen::specs::minimax_m3
