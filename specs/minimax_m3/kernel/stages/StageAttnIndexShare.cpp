// attn_index_share (sparse layers): one task a (row, index head, share p of 8), the indexer's
// scoring spread over 8 CTAs a (row, head), a page a wave (scoreIndexPages). A row of
// topk < n <= kLongFromBlocks blocks: share p scores blocks p, p + 8, .. and writes their sort
// keys -> ISCORE (L.indexSpread; else attn_index scores them). Past it (the long path's first half, AttentionIndexer.h, selectBlocks): share
// p's blocks [p s, min(p s + s, n)), s = ceil(n / 8), scored, then ranked within the share by
// (key, block); its best topk (key, block) -> CAND in rank order ((INT32_MIN, -1) past the
// share's blocks). Either way CRDY (a row of <= topk blocks: CRDY alone). Indexer CP (the layer
// launch), a row past index_cp_from blocks: the row's task q < heads x parts is (index head q /
// parts, run q % parts) of this rank's slice (blocks b = rank mod TP; cpCandidates), its best topk
// -> SEL_CP of the head's owners.
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
  const bool cp = L.selCpOffset >= 0;
  Val cpRow;  // indexer CP: a row past index_cp_from blocks (not the long path's)
  if (cp) {
    cpRow = scored & (nBlk > c.i32(c.variant.knobs.indexCpFrom));
    longPath = longPath & !cpRow;
  }
  // short: blocks p, p + 8, ..; long: the share's contiguous span
  Val span = (nBlk + c.i32(kAttnSplits - 1)) / c.i32(kAttnSplits);
  Val lo = b.min(p * span, nBlk), hi = b.min(lo + span, nBlk);
  Val first = b.select(longPath, lo, p);
  Val step = b.select(longPath, c.i32(1), c.i32(kAttnSplits));
  Val strided = b.max(nBlk - p + c.i32(kAttnSplits - 1), c.i32(0)) / c.i32(kAttnSplits);
  Val count = b.select(scored, b.select(longPath, hi - lo, L.indexSpread ? strided : c.i32(0)), c.i32(0));
  // CP: the row's task q = KV 8 .. is (global index head g, part) = (q / parts, q % parts) while
  // q < heads x parts; its run: part `part` of this rank's slice, the blocks b = rank (mod TP)
  const int TP = L.tp, H = c.variant.cfg.indexHeads, parts = L.cpParts;
  Val g, part, cpTask, qHead;
  if (cp) {
    Val q = task % c.i32(KV * kAttnSplits), r = c.rank();
    g = q / c.i32(parts);
    part = q % c.i32(parts);
    cpTask = q < c.i32(H * parts);
    Val len = b.max(nBlk - r + c.i32(TP - 1), c.i32(0)) / c.i32(TP);
    Val cspan = (len + c.i32(parts - 1)) / c.i32(parts);
    Val clo = b.min(part * cspan, len), chi = b.min(clo + cspan, len);
    first = b.select(cpRow, r + c.i32(TP) * clo, first);
    step = b.select(cpRow, c.i32(TP), step);
    count = b.select(cpRow, b.select(cpTask, chi - clo, c.i32(0)), count);
    // g's q: the rank's own head in iq, another in IQCP (its slot: the heads in order, the own skipped)
    Val firstKv = TP <= H ? r * c.i32(H / TP) : r / c.i32(TP / H);
    Val own = (g >= firstKv) & (g < firstKv + c.i32(KV));
    Val j = b.select(g < firstKv, g, g - c.i32(KV));
    Val hq = b.select(cpRow, g - firstKv, h);
    Val qOwn = b.ptrAdd(c.arg(a::kIq), (t * c.i32(KV) + hq) * c.i32(2 * sh.indexDim));
    Val qOther = b.ptrAdd(c.arg(a::kScratch), c.i32(L.iqCpOffset) + (t * c.i32(sh.cpHeads) + j) * c.i32(2 * sh.indexDim));
    qHead = b.select(cpRow & !own, qOther, qOwn);
  }
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
  scoreIndexPages(c, t, h, first, step, count, nBlk, seq, entries, qHead);
  c.ctaSync(false);
  indexBlockKeys(c, first, step, count, nBlk);
  c.ctaSync(false);
  b.if_(cp ? scored & !longPath & !cpRow & b.i1(L.indexSpread) : scored & !longPath & b.i1(L.indexSpread), [&] {
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
  // CP: the run's best topk (key, block) by rank, (INT32_MIN, -1) past its blocks, to slot
  // [row][owned head][this rank][part][rank] of SEL_CP at each owner of g (TP 8: two ranks)
  if (cp) b.if_(cpRow & cpTask, [&] {
    const int owners = TP <= H ? 1 : TP / H;
    std::vector<Val> mailTo;
    for (int k = 0; k < owners; ++k) {
      Val o = TP <= H ? g / c.i32(H / TP) : g * c.i32(TP / H) + c.i32(k);
      Val ho = TP <= H ? g % c.i32(H / TP) : c.i32(0);
      Val at = c.parity() * c.i32(L.selCpPairs / 2) +
               ((((t * c.i32(KV) + ho) * c.i32(TP) + c.rank()) * c.i32(parts) + part) * c.i32(topk)) * c.i32(2);
      mailTo.push_back(b.ptrAdd(c.peerSym(o), c.i32(L.selCpOffset) + at * c.i32(8)));
    }
    auto mail = [&](Val slot, Val key, Val blk) {
      for (Val m : mailTo) {
        c.publishPeer(b.ptrAdd(m, slot * c.i32(16)), key);
        c.publishPeer(b.ptrAdd(m, slot * c.i32(16) + c.i32(8)), blk);
      }
    };
    auto keyOf = [&](Val i) { return b.load(Type::i32(), b.ptrAdd(c.red, i * c.i32(4))); };
    auto blockOf = [&](Val i) { return first + step * i; };
    b.for_(c.tid, count, c.i32(L.threads), [&](Val i) {
      Val kb = keyOf(i), bb = blockOf(i);
      Val r = indexRanksOf(c, count, keyOf, blockOf, {{kb, bb}})[0];
      b.if_(r < c.i32(topk), [&] { mail(r, kb, bb); });
    });
    b.if_((c.tid < c.i32(topk)) & (c.tid >= count), [&] { mail(c.tid, c.i32(INT32_MIN), c.i32(-1)); });
  });
  c.ctaSync(true);  // the keys or candidates before CRDY; LDS is rewritten by the CTA's next task
  b.if_(c.tid == c.i32(0), [&] { c.publish(c.pairAt(L.crdyOffset, task)); });
}

}  // namespace

extern const AttentionStageDef kAttnIndexShareStage = {
    [](const AttentionLaunchLayout& L) { return L.indexShare; },
    [](const AttentionLaunchLayout& L) { return std::vector<ir::FlagUse>{{"HRDY", L.rows}}; },
    [](const AttentionLaunchLayout& L) {
      std::vector<ir::FlagUse> p{{"CRDY", L.indexShare.tasks}};
      if (L.selCpOffset >= 0) p.push_back({"SEL_CP", L.selCpPairs / 2 * L.tp});
      return p;
    },
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
