// attn_index (sparse layers): one task a (row, local index head = KV head): the lightning
// indexer's selection (AttentionIndexer.h; attentionReference). n <= topk blocks: every block in
// id order. Up to kLongFromBlocks blocks: the sort keys the 8 shares scored (attn_index_share,
// ISCORE; or, L.indexSpread false, its own: a page a wave) -> LDS, then a thread a block counts the entries that beat it on (key, block). Past
// it (the long path): the 8 shares' candidates (CAND) ranked the same way. The top 16 placed
// (the tail block last) -> SEL, IRDY. Indexer CP, a row past index_cp_from blocks: the ranks'
// mail (SEL_CP, 8 x topk candidates) ranked as the long path's (mergeCpCandidates).
#include "specs/minimax_m3/kernel/stages/AttentionIndexScore.h"
#include "specs/minimax_m3/kernel/stages/AttentionStageDef.h"
#include "specs/minimax_m3/kernel/LaunchArgs.h"

#include <fmt/format.h>

#include <climits>
#include <functional>

namespace monogen::specs::minimax_m3 {

using ir::Type;
using ir::Val;
namespace a = attn_arg;

namespace {

static_assert(kLongFromBlocks <= 8 * 64, "attn_index ranks a block a thread: the variant's 8 waves of 64");

void stageAttnIndex(AttentionContext& c, Val task) {
  ir::Builder& b = c.b;
  const AttentionLaunchLayout& L = c.L;
  const AttentionShape& sh = L.shape;
  const int KV = sh.kvHeads, blk = sh.block, topk = sh.topk, cands = kAttnSplits * topk;
  Val t = task / c.i32(KV);
  Val live = b.load(Type::i64(), b.ptrAdd(c.arg(a::kSlots), t * c.i32(8))) >= b.i64(0);
  Val seq = b.load(Type::i32(), b.ptrAdd(c.arg(a::kSeqLens), t * c.i32(4)));
  Val nBlk = (seq + c.i32(blk - 1)) / c.i32(blk);
  Val scored = live & (nBlk > c.i32(topk));
  Val longPath = scored & (nBlk > c.i32(kLongFromBlocks));
  const bool cp = L.selCpOffset >= 0;
  Val cpRow;  // indexer CP: a row past index_cp_from blocks, ranked from the peers' mail (SEL_CP)
  if (cp) {
    cpRow = scored & (nBlk > c.i32(c.variant.knobs.indexCpFrom));
    longPath = longPath & !cpRow;
  }
  // a short row's (every block ranked): not a CP row's
  auto shortRow = [&](Val x) { return cp ? x & !cpRow : x; };
  Val sel = b.ptrAdd(c.arg(a::kScratch), c.i32(L.selOffset) + task * c.i32(4 * kSelWords));

  // the entries ranked: short, every block (key LDS [b] from the shares' ISCORE, block b); long,
  // the shares' candidates (CAND: key LDS [i], block LDS [cands + i]; a share's unused slots
  // (INT32_MIN, -1) are beaten by every block and rank past topk)
  b.if_(longPath | shortRow(scored & b.i1(L.indexSpread)), [&] {
    b.if_(c.tid < c.i32(kAttnSplits), [&] {
      c.await(c.pairAt(L.crdyOffset, task * c.i32(kAttnSplits) + c.tid), kSiteAttnIndexShare,
              task * c.i32(kAttnSplits) + c.tid);
    });
  });
  c.ctaSync(false);
  Val lds = c.red;
  auto ldsAt = [&](Val i) { return b.ptrAdd(lds, i * c.i32(4)); };
  if (!L.indexSpread) {  // the row's blocks scored here, a page a wave
    Val here = b.select(shortRow(scored & !longPath), nBlk, c.i32(0));
    scoreIndexPages(c, t, task % c.i32(KV), c.i32(0), c.i32(1), here, nBlk, seq,
                    indexTableEntries(c, t, c.i32(0), c.i32(1), here));
    c.ctaSync(false);
    indexBlockKeys(c, c.i32(0), c.i32(1), here, nBlk);
  }
  b.if_(shortRow(scored & !longPath & b.i1(L.indexSpread)), [&] {
    Val keys = b.ptrAdd(c.arg(a::kScratch), c.i32(L.iscoreOffset) + task * c.i32(4 * kLongFromBlocks));
    b.for_(c.tid, nBlk, c.i32(L.threads), [&](Val i) {
      b.store(ldsAt(i), b.load(Type::i32(), b.ptrAdd(keys, i * c.i32(4))));
    });
  });
  b.if_(longPath & (c.tid < c.i32(cands)), [&] {
    Val cand = b.ptrAdd(c.arg(a::kScratch), c.i32(L.candOffset) + (task * c.i32(cands) + c.tid) * c.i32(8));
    b.store(ldsAt(c.tid), b.load(Type::i32(), cand));
    b.store(ldsAt(c.tid + c.i32(cands)), b.load(Type::i32(), b.ptrAdd(cand, c.i32(4))));
  });
  // CP: the mail of every rank's runs, [src rank][part][slot] = candidate i, as CAND's (a
  // candidate that did not come: dropped, (INT32_MIN, -1), the launch failed)
  if (cp) b.if_(cpRow & (c.tid < c.i32(cands)), [&] {
    Val at = c.parity() * c.i32(L.selCpPairs / 2) + ((t * c.i32(KV) + task % c.i32(KV)) * c.i32(cands) + c.tid) * c.i32(2);
    Val pair = b.ptrAdd(c.arg(arg::kSym), c.i32(L.selCpOffset) + at * c.i32(8));
    AwaitedPair key = c.awaitPeerChecked(pair, kSiteAttnIndexMail, task);
    AwaitedPair blk = c.awaitPeerChecked(b.ptrAdd(pair, c.i32(8)), kSiteAttnIndexMail, task);
    Val ok = key.ok & blk.ok;
    b.store(ldsAt(c.tid), b.select(ok, key.value, c.i32(INT32_MIN)));
    b.store(ldsAt(c.tid + c.i32(cands)), b.select(ok, blk.value, c.i32(-1)));
  });
  c.ctaSync(false);
  auto keyOf = [&](Val i) { return b.load(Type::i32(), ldsAt(i)); };
  auto candBlock = [&](Val i) { return b.load(Type::i32(), ldsAt(i + c.i32(cands))); };
  Val tail = nBlk - c.i32(1);
  // the ranking over `count` entries (<= threads): rank(e) = the entries that beat e on (key,
  // block), a thread an entry, the tail block's (nBlk - 1, its key kTail, tailIn: among the
  // entries) in the same pass; the top topk placed, the tail block last; the sparse length after
  auto rankAndPlace = [&](Val count, const std::function<Val(Val)>& blockOf, Val kTail, Val tailIn) {
    Val i = b.min(c.tid, count - c.i32(1));
    Val kb = keyOf(i), bb = blockOf(i);
    std::vector<Val> r = indexRanksOf(c, count, keyOf, blockOf, {{kb, bb}, {kTail, tail}});
    Val tailSel = tailIn & (r[1] < c.i32(topk));
    Val nFull = c.i32(topk) - b.select(tailSel, c.i32(1), c.i32(0));
    b.if_((c.tid < count) & (r[0] < c.i32(topk)), [&] {
      Val tailBeats = (kTail > kb) | ((kTail == kb) & (tail > bb));
      Val slot = b.select(bb == tail, nFull, r[0] - b.select(tailSel & tailBeats, c.i32(1), c.i32(0)));
      b.store(b.ptrAdd(sel, slot * c.i32(4)), bb);
    });
    b.if_(c.tid == c.i32(0), [&] {
      Val n = b.select(tailSel, nFull * c.i32(blk) + seq - tail * c.i32(blk), b.min(c.i32(topk * blk), seq));
      b.store(b.ptrAdd(sel, c.i32(4 * topk)), n);
    });
  };
  b.if_(shortRow(scored & !longPath), [&] { rankAndPlace(nBlk, [](Val i) { return i; }, keyOf(tail), b.i1(true)); });
  // long: the tail's key from the candidates; absent, it is not selected either (every block of
  // the global top topk is its share's candidate, with the same rank among the candidates)
  b.if_(cp ? longPath | cpRow : longPath, [&] {
    ir::Var kTail = b.var(c.i32(INT32_MIN), "k_tail"), tailIn = b.var(b.i1(false), "tail_in");
    b.for_(c.i32(0), c.i32(cands), c.i32(1), [&](Val i) {
      b.if_(candBlock(i) == tail, [&] {
        b.set(kTail, keyOf(i));
        b.set(tailIn, b.i1(true));
      });
    });
    rankAndPlace(c.i32(cands), candBlock, b.get(kTail), b.get(tailIn));
  });
  // n <= topk blocks: every block in id order (-1 past them), the whole sequence
  b.if_(live & !scored & (c.tid <= c.i32(topk)), [&] {
    Val v = b.select(c.tid == c.i32(topk), seq, b.select(c.tid < nBlk, c.tid, c.i32(-1)));
    b.store(b.ptrAdd(sel, c.tid * c.i32(4)), v);
  });
  c.ctaSync(true);  // the selection before IRDY; LDS is rewritten by the CTA's next task
  b.if_(c.tid == c.i32(0), [&] { c.publish(c.pairAt(L.irdyOffset, task)); });
}

}  // namespace

extern const AttentionStageDef kAttnIndexStage = {
    [](const AttentionLaunchLayout& L) { return L.index; },
    [](const AttentionLaunchLayout& L) {
      std::vector<ir::FlagUse> w{{"HRDY", L.rows}, {"CRDY", L.indexShare.tasks}};
      if (L.selCpOffset >= 0) w.push_back({"SEL_CP", L.selCpPairs / 2});
      return w;
    },
    [](const AttentionLaunchLayout& L) { return std::vector<ir::FlagUse>{{"IRDY", L.index.tasks}}; },
    [](const AttentionLaunchLayout& L) {
      return fmt::format("(row, index head) a task, rows past {} blocks: its {} shares' (CRDY) sort keys (up to {} "
                         "blocks) or candidates; a thread an entry's rank, the top {} -> SEL, IRDY",
                         L.shape.topk, kAttnSplits, kLongFromBlocks, L.shape.topk);
    },
    [](AttentionContext& c) {
      c.awaitAllOnce(c.L.index, c.L.hrdyOffset, c.L.rows, kSiteAttnIndex);
      c.forEachTask(c.L.index, [&](Val t) { stageAttnIndex(c, t); });
    },
    "the selection of attentionReference: indexSortKey, selectBlocks (AttentionIndexer.h)",
};

}  // namespace monogen::specs::minimax_m3
