// attn_index (sparse layers): one task a (row, local index head = KV head): the lightning
// indexer's selection (AttentionIndexer.h; attentionReference). n <= topk blocks: every block in
// id order. Else a wave a block: the max over its keys of dot(bf16 index q, widened E4M3 key)
// (a bf16 MFMA chain over the channels ascending, the index q as row 0) x the scale, the pinned
// blocks' 1e30 / 1e29, the order-preserving sort key -> LDS; then a thread a block counts the
// entries that beat it on (key, block) and places the top 16 (the tail block last) -> SEL, IRDY.
// Every block is ranked at once, long requests too: the long path's shares select the same.
#include "specs/common/MfmaTile.h"
#include "specs/minimax_m3/kernel/AttentionConstants.h"
#include "specs/minimax_m3/kernel/stages/AttentionStageDef.h"

#include <fmt/format.h>

#include <climits>

namespace monogen::specs::minimax_m3 {

using ir::Type;
using ir::Val;
namespace a = attn_arg;

namespace {

/// indexSortKey in the IR: -0 -> 0; the float's order-preserving int; NaN -> INT32_MIN.
Val sortKey(ir::Builder& b, Val score) {
  Val bits = b.bitcast(score, Type::i32());
  bits = b.select(bits == b.i32(INT32_MIN), b.i32(0), bits);
  Val key = b.select(bits < b.i32(0), bits ^ b.i32(0x7fffffff), bits);
  return b.select((bits & b.i32(0x7fffffff)) > b.i32(0x7f800000), b.i32(INT32_MIN), key);
}

void stageAttnIndex(AttentionContext& c, Val task) {
  ir::Builder& b = c.b;
  const AttentionLaunchLayout& L = c.L;
  const AttentionShape& sh = L.shape;
  const ModelConfig& cfg = c.variant.cfg;
  const int ID = sh.indexDim, KV = sh.kvHeads, blk = sh.block, topk = sh.topk;
  const bool atom = c.variant.knobs.mode == CacheMode::Atom;
  Val t = task / c.i32(KV), h = task % c.i32(KV);
  Val live = b.load(Type::i64(), b.ptrAdd(c.arg(a::kSlots), t * c.i32(8))) >= b.i64(0);
  Val seq = b.load(Type::i32(), b.ptrAdd(c.arg(a::kSeqLens), t * c.i32(4)));
  Val nBlk = (seq + c.i32(blk - 1)) / c.i32(blk);
  Val scored = live & (nBlk > c.i32(topk));
  Val sel = b.ptrAdd(c.arg(a::kScratch), c.i32(L.selOffset) + task * c.i32(4 * kSelWords));
  Val stride = c.scalarI32(a::kTableStride);
  Val tables = b.ptrAdd(c.arg(atom ? a::kBlockTables : a::kIndexTables), t * stride * c.i32(4));

  // the scores: a wave a block, row 0 of A the index q (lanes 0, 16, 32, 48: channels 32 d + 8
  // group + e), B a 16-key page's widened keys; lanes 0 .. 15 hold its dots (accumulator row 0)
  b.if_(scored, [&] {
    const MfmaTile T = MfmaTile::at(c.lane, ir::MfmaKind::F32_16x16x32_BF16, 1);
    const Type bf8 = Type::vec(Type::bf16(), 8);
    std::vector<Val> qA;
    for (int d = 0; d < ID / 32; ++d) {
      Val v = b.load(bf8, b.ptrAdd(c.arg(a::kIq), ((t * c.i32(sh.indexHeads) + h) * c.i32(ID) + c.i32(32 * d) +
                                                   T.group * c.i32(8)) * c.i32(2)));
      qA.push_back(b.select(T.aRow() == c.i32(0), v, b.splat(b.bf16(0), 8)));
    }
    const float scale = indexScoreScale(cfg.indexHeadDim);
    b.for_(c.wave, nBlk, c.i32(L.waves), [&](Val blkId) {
      Val pinned = (blkId < c.i32(cfg.indexInit)) | (blkId >= nBlk - c.i32(cfg.indexLocal));
      ir::Var best = b.var(c.f32(-INFINITY), "best");
      b.if_(!pinned, [&] {
        Val base = b.sext(b.load(Type::i32(), b.ptrAdd(tables, blkId * c.i32(4))), Type::i64());
        for (int pg = 0; pg < blk / 16; ++pg) {
          Val key = c.i32(16 * pg) + T.bCol();
          Val at = (base * b.i64(blk) + b.sext(key, Type::i64())) * b.i64(ID);
          Val acc = b.splat(c.f32(0), 4);
          for (int d = 0; d < ID / 32; ++d) {
            Val bytes = b.load(Type::i64(), b.ptrAdd(c.arg(a::kIndexCache),
                                                     at + b.sext(c.i32(32 * d) + T.group * c.i32(8), Type::i64())));
            Val kv = b.splat(b.bf16(0), 8);
            for (int e = 0; e < 8; ++e)
              kv = b.insert(kv, b.f32ToBf16(b.fp8ToF32(b.trunc(b.lshr(bytes, b.i64(8 * e)), Type::i32()) & c.i32(0xff))), e);
            acc = b.mfma(T.kind, qA[d], kv, acc);
          }
          Val ok = blkId * c.i32(blk) + key < seq;
          b.set(best, b.max(b.get(best), b.select(ok, b.extract(acc, 0), c.f32(-INFINITY))));
        }
      });
      // lanes 0 .. 15 hold the block's keys (accumulator row 0); the other lanes' rows are not it
      Val m = b.butterfly(b.select(c.lane < c.i32(16), b.get(best), c.f32(-INFINITY)), {32, 16, 8, 4, 2, 1},
                          ir::OpCode::Max);
      Val score = b.select(pinned, c.f32(0), m * c.f32(scale));
      score = b.select(blkId < c.i32(cfg.indexInit), c.f32(1e30), score);
      score = b.select(blkId >= nBlk - c.i32(cfg.indexLocal), c.f32(1e29), score);
      b.if_(c.lane == c.i32(0), [&] { b.store(b.ptrAdd(c.red, blkId * c.i32(4)), sortKey(b, score)); });
    });
  });
  c.ctaSync(false);
  // the ranking: rank(b) = the entries that beat b on (key, block); the top topk placed, the
  // tail block (nBlk - 1) last; the sparse length after them
  auto keyOf = [&](Val i) { return b.load(Type::i32(), b.ptrAdd(c.red, i * c.i32(4))); };
  auto rankOf = [&](Val kb, Val bb) {
    ir::Var r = b.var(c.i32(0), "rank");
    b.for_(c.i32(0), nBlk, c.i32(1), [&](Val o) {
      Val ko = keyOf(o);
      Val beats = (ko > kb) | ((ko == kb) & (o > bb));
      b.set(r, b.get(r) + b.select(beats, c.i32(1), c.i32(0)));
    });
    return b.get(r);
  };
  b.if_(scored, [&] {
    Val tail = nBlk - c.i32(1), kTail = keyOf(tail);
    Val tailSel = rankOf(kTail, tail) < c.i32(topk);
    Val nFull = c.i32(topk) - b.select(tailSel, c.i32(1), c.i32(0));
    b.for_(c.tid, nBlk, c.i32(L.threads), [&](Val bb) {
      Val kb = keyOf(bb);
      Val r = rankOf(kb, bb);
      b.if_(r < c.i32(topk), [&] {
        Val tailBeats = (kTail > kb) | ((kTail == kb) & (tail > bb));
        Val slot = b.select(bb == tail, nFull, r - b.select(tailSel & tailBeats, c.i32(1), c.i32(0)));
        b.store(b.ptrAdd(sel, slot * c.i32(4)), bb);
      });
    });
    b.if_(c.tid == c.i32(0), [&] {
      Val n = b.select(tailSel, nFull * c.i32(blk) + seq - tail * c.i32(blk), b.min(c.i32(topk * blk), seq));
      b.store(b.ptrAdd(sel, c.i32(4 * topk)), n);
    });
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
    [](const AttentionLaunchLayout& L) { return std::vector<ir::FlagUse>{{"HRDY", L.rows}}; },
    [](const AttentionLaunchLayout& L) { return std::vector<ir::FlagUse>{{"IRDY", L.index.tasks}}; },
    [](const AttentionLaunchLayout& L) {
      return fmt::format("(row, index head) a task: a wave a block's max score (bf16 MFMA), the sort keys in LDS, "
                         "a thread a block's rank, the top {} -> SEL, IRDY",
                         L.shape.topk);
    },
    [](AttentionContext& c) {
      c.awaitAllOnce(c.L.index, c.L.hrdyOffset, c.L.rows, kSiteAttnIndex);
      c.forEachTask(c.L.index, [&](Val t) { stageAttnIndex(c, t); });
    },
    "the selection of attentionReference: indexSortKey, selectBlocks (AttentionIndexer.h)",
};

}  // namespace monogen::specs::minimax_m3
