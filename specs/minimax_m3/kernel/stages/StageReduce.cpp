#include <algorithm>

#include "ir/Op.h"
#include "specs/minimax_m3/kernel/Sites.h"
#include "specs/minimax_m3/kernel/stages/Stages.h"

namespace monogen::specs::minimax_m3 {

using ir::MemOrder;
using ir::MemScope;
using ir::Type;
using ir::Val;

std::vector<Val> awaitRankPairs(KernelContext& c, const Area& area, Val t, Val pair, int site, MemOrder order) {
  const Layout& L = c.L;
  std::vector<Val> word;  // word[src]: source rank src's bf16 pair
  for (int src = 0; src < L.tp; ++src) {
    Val at = (src * L.rows + t) * c.i32(L.hidden / 2) + pair;
    Val code = c.errorCode(site, src, t);  // the rank that owes the pair
    word.push_back(c.await(c.pairAt(c.sym, area, at), code, site, order, MemScope::System));
  }
  return word;
}

Val awaitRankPair(KernelContext& c, const Area& area, Val src, Val t, Val pair, int site, MemOrder order) {
  const Layout& L = c.L;
  Val at = (src * L.rows + t) * c.i32(L.hidden / 2) + pair;
  Val code = c.i32(errorCode(site, 0, 0)) | src << c.i32(8) | t << c.i32(16);  // the rank that owes it
  return c.await(c.pairAt(c.sym, area, at), code, site, order, MemScope::System);
}

std::vector<Val> awaitRankPairsAtOnce(KernelContext& c, const Area& area, Val task, int site, MemOrder order) {
  ir::Builder& b = c.b;
  const Layout& L = c.L;
  const int active = L.rows * kTaskPairs, group = std::min(L.tp, L.threads / active);
  Val j = c.tid % active, g = c.tid / active;
  Val t = j / kTaskPairs, pair = task * kTaskPairs + j % kTaskPairs;
  auto wordAt = [&](Val src) { return b.ptrAdd(c.red, (src * active + j) * c.i32(4)); };  // red[src][active]
  for (int r = 0; r * group < L.tp; ++r) {
    Val src = g + r * group;
    b.if_((c.tid < group * active) & (src < c.i32(L.tp)),
          [&] { b.store(wordAt(src), awaitRankPair(c, area, src, t, pair, site, order)); });
  }
  c.ctaSync(/*drain=*/false);
  std::vector<Val> word;
  for (int src = 0; src < L.tp; ++src) word.push_back(b.load(Type::i32(), wordAt(c.i32(src))));
  return word;
}

Val sumRanksF32(ir::Builder& b, const std::vector<Val>& word, Val shift) {
  Val acc = b.bf16BitsToF32(b.lshr(word[0], shift));
  for (size_t src = 1; src < word.size(); ++src) acc = acc + b.bf16BitsToF32(b.lshr(word[src], shift));
  return acc;
}

// Pair `row` of the new residual v (f32 columns 2 pair, 2 pair + 1): res_out (bf16), SRES (f32),
// and the pair's sum of squares butterflied over the row's 16 lanes into sq.
static void storeResidualRow(KernelContext& c, Val row, const Val (&v)[2], ir::Var sq) {
  ir::Builder& b = c.b;
  Val out = b.insert(b.splat(b.f32ToBf16(v[0]), 2), b.f32ToBf16(v[1]), 1);
  b.store(c.elemAt(c.resOut, row, 4), out);
  Val sres = b.insert(b.splat(v[0], 2), v[1], 1);
  b.store(c.elemAt(c.scratch, c.L.sres, row, 8), sres);
  Val s = b.f32(0.0) + v[0] * v[0];
  s = s + v[1] * v[1];
  b.set(sq, b.butterfly(s, {8, 4, 2, 1}));
}

// The CTA's stores drained, each row's lane 0 publishes the task's sum of squares to SSQ[t][task]
// (release, agent).
static void publishSsq(KernelContext& c, Val task, ir::Var sq) {
  ir::Builder& b = c.b;
  const Layout& L = c.L;
  c.ctaSync(/*drain=*/true);
  b.if_((c.tid < L.rows * kTaskPairs) & (c.tid % kTaskPairs == c.i32(0)), [&] {
    Val t = c.tid / kTaskPairs;
    Val at = t * L.reduce.tasks + task;  // L.ssqPair(t, task)
    c.publish(c.pairAt(c.scratch, L.ssq, at), b.bitcast(b.get(sq), Type::i32()), c.tag, MemOrder::Release,
              MemScope::Agent);
  });
}

// Pairs 16 task .. of every row: waits for the TP ranks' pairs in ATTN at once (site reduce), sums
// them in rank order in f32, rounds to bf16, adds the residual: res_out, SRES, and the row's sum of squares
// published to SSQ[t][task] (release, agent). The order: docs/minimax-m3-kernel.md, "reduce".
void stageReduce(KernelContext& c, Val task) {
  ir::Builder& b = c.b;
  const Layout& L = c.L;
  const int active = L.rows * kTaskPairs;
  ir::Var sq = b.var(b.f32(0.0), "sq");

  // an input, loaded before the waits by the threads that own a pair only
  ir::Var resVar = b.var(c.i32(0), "res");
  b.if_(c.tid < active, [&] {
    b.set(resVar, b.load(Type::i32(), c.elemAt(c.resIn, c.tid / kTaskPairs * (L.hidden / 2) +
                                                           task * kTaskPairs + c.tid % kTaskPairs, 4)));
  });
  Val res = b.get(resVar);
  // the pairs are the data (pushed relaxed): no acquire, nothing else of the peers' is read
  const std::vector<Val> word = awaitRankPairsAtOnce(c, L.attn, task, kSiteReduce, MemOrder::Relaxed);
  b.if_(c.tid < active, [&] {
    Val t = b.named(c.tid / kTaskPairs, "t");
    Val pair = b.named(task * kTaskPairs + c.tid % kTaskPairs, "pair");
    Val row = t * (L.hidden / 2) + pair;  // the pair's index in a bf16 [S][hidden] tensor

    Val v[2];
    for (int h = 0; h < 2; ++h) {  // column 2 pair + h: bits 16 h .. of each word
      Val shift = c.i32(16 * h);
      Val acc = sumRanksF32(b, word, shift);
      v[h] = b.roundBf16(acc) + b.bf16BitsToF32(b.lshr(res, shift));
    }
    storeResidualRow(c, row, v, sq);
  });
  publishSsq(c, task, sq);
}

void reduceToOwner(KernelContext& c, Val task, const Area& from, const Area& to, int site) {
  ir::Builder& b = c.b;
  const Layout& L = c.L;
  b.if_(c.tid < L.rows * kTaskPairs, [&] {
    Val t = c.tid / kTaskPairs;
    Val pair = task * kTaskPairs + c.tid % kTaskPairs;
    b.if_(t % c.i32(L.tp) == c.rank, [&] {
      const std::vector<Val> word = awaitRankPairs(c, from, t, pair, site, MemOrder::Relaxed);  // the pairs are the data
      Val a[2];
      for (int h = 0; h < 2; ++h) a[h] = b.f32ToBf16(sumRanksF32(b, word, c.i32(16 * h)));
      Val sum = b.bitcast(b.insert(b.splat(a[0], 2), a[1], 1), Type::i32());
      for (int p = 0; p < L.tp; ++p)
        c.publish(c.pairAt(c.peerSym[p], to, t * c.i32(L.hidden / 2) + pair), sum, c.tag, MemOrder::Relaxed,
                  MemScope::System);
    });
  });
}

// Pairs 16 task .. of every row: waits for row t's all-reduced pair in A_AG (site reduce_ag; the
// owner's own too), adds the residual: res_out, SRES and SSQ, as stageReduce does after its sum.
static void stageReduceGather(KernelContext& c, Val task) {
  ir::Builder& b = c.b;
  const Layout& L = c.L;
  const int active = L.rows * kTaskPairs;
  ir::Var sq = b.var(b.f32(0.0), "sq");
  b.if_(c.tid < active, [&] {
    Val t = b.named(c.tid / kTaskPairs, "t");
    Val pair = b.named(task * kTaskPairs + c.tid % kTaskPairs, "pair");
    Val row = t * (L.hidden / 2) + pair;  // the pair's index in a bf16 [S][hidden] tensor
    Val code = c.i32(errorCode(kSiteReduceAg, 0, 0)) | (t % c.i32(L.tp)) << c.i32(8) | t << c.i32(16);
    Val sum = c.await(c.pairAt(c.sym, L.attnAg, row), code, kSiteReduceAg, MemOrder::Relaxed, MemScope::System);
    Val res = b.load(Type::i32(), c.elemAt(c.resIn, row, 4));
    Val v[2];
    for (int h = 0; h < 2; ++h) {
      Val shift = c.i32(16 * h);
      v[h] = b.bf16BitsToF32(b.lshr(sum, shift)) + b.bf16BitsToF32(b.lshr(res, shift));
    }
    storeResidualRow(c, row, v, sq);
  });
  publishSsq(c, task, sq);
}

extern const StageDef kReduceStage = {
    .placement = [](const Layout& L) { return L.reduce; },
    .waits =
        [](const Layout& L) {
          return std::vector<ir::FlagUse>{{L.attn.name, L.attnReduceScatter ? L.attn.publishedPairs : allToAllPairs(L)}};
        },
    .publishes =
        [](const Layout& L) {
          if (L.attnReduceScatter) return std::vector<ir::FlagUse>{{L.attnAg.name, gatherPairs(L)}};
          return std::vector<ir::FlagUse>{{L.ssq.name, ssqPairs(L)}};
        },
    .doc = [](const Layout&) -> std::string {
      return "the ranks' pairs in rank order, f32 -> bf16, + residual in f32 -> res_out (bf16), SRES (f32), "
             "SSQ (the task's sum of squares, a pair a row)";
    },
    .body =
        [](KernelContext& c) {
          if (!c.L.attnReduceScatter) return c.forEachTask(c.L.reduce, [&](Val t) { stageReduce(c, t); });
          c.loadPeers();
          c.forEachTask(c.L.reduce, [&](Val t) { reduceToOwner(c, t, c.L.attn, c.L.attnAg, kSiteReduce); });
        },
    .reference = "referenceAllReduce, pairSquares, butterfly16 (Reference.h)",
};

}  // namespace monogen::specs::minimax_m3

namespace monogen::specs::minimax_m3 {

extern const StageDef kReduceAgStage = {
    .placement = [](const Layout& L) { return Placement{"reduce_ag", L.reduce.tasks, L.reduce.base}; },
    .waits = [](const Layout& L) { return std::vector<ir::FlagUse>{{L.attnAg.name, gatherPairs(L)}}; },
    .publishes = [](const Layout& L) { return std::vector<ir::FlagUse>{{L.ssq.name, ssqPairs(L)}}; },
    .doc = [](const Layout&) -> std::string {
      return "the owner's all-reduced pairs (A_AG) + residual in f32 -> res_out (bf16), SRES (f32), SSQ";
    },
    .body = [](KernelContext& c) { c.forEachTask(c.L.reduce, [&](Val t) { stageReduceGather(c, t); }); },
    .reference = "referenceAllReduce, pairSquares, butterfly16 (Reference.h)",
};

}  // namespace monogen::specs::minimax_m3
