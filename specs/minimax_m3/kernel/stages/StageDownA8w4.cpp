#include <algorithm>
#include <vector>
#include <utility>

#include "ir/Op.h"
#include "specs/common/TaskLoop.h"
#include "specs/minimax_m3/kernel/Mxfp8.h"
#include "specs/minimax_m3/kernel/stages/A8w4Operand.h"
#include "specs/minimax_m3/kernel/stages/Stages.h"

namespace monogen::specs::minimax_m3 {

using ir::Type;
using ir::Val;

// A slot's chain issues the w2 / s2 loads of this many K steps before it uses the first of them.
constexpr int kDownA8w4StepsAhead = 8;

namespace {
// One K step's w2 dwords and s2 byte. live is null on a whole step; on the partial last step a
// lane whose run lies past I/TP (live false) reads K 0 and gives zero nibbles under scale 127.
struct A8w4DownStep {
  int step = 0;
  Val live, w4, s;
};

// Wide down's prologue, once a CTA: every pick p's MID column (its slot's column, from the table)
// as MXFP8 to bstage row p, E4M3 bytes [S (topk + 1)][I/TP] then the code words [..][I/TP / 32];
// a pick in no slot (a lost pick, a padded row's shared pick) is not staged. Then the barrier.
void stageMidMxfp8ToLds(KernelContext& c, Val words) {
  ir::Builder& b = c.b;
  const Layout& L = c.L;
  const auto& W = L.tw;
  const int IP = L.tiling.interPerRank, K = L.topk, S = L.rows, runsRow = IP / 8;
  Val vmask = c.tabLd(W.misc, 1);
  // pick p's MID column u * 16 + col, and whether it is in a slot
  const auto columnOf = [&](Val p) -> std::pair<Val, Val> {
    Val routed = p < c.i32(S * K);
    Val t = b.select(routed, p / K, p - c.i32(S * K));
    Val e = c.tabLd(W.pickE, b.min(p, c.i32(S * K - 1)));
    Val u = b.select(routed, c.tabLd(W.eslot, b.max(e, c.i32(0))), c.i32(0));
    Val col = b.popcount(c.tabLd(W.slotMask, u) & ((c.i32(1) << t) - c.i32(1)));
    Val live = b.select(routed, e >= c.i32(0), ((vmask >> t) & c.i32(1)) != c.i32(0));
    return {u * 16 + col, live};
  };
  mxfp8QuantizeRuns(
      c, c.tid, c.i32(int64_t{S} * (K + 1) * runsRow), c.i32(L.threads), c.bstage, words,
      [&](Val i) {
        Val column = columnOf(i / runsRow).first;
        return b.load(Type::vec(Type::bf16(), 8), c.elemAt(c.scratch, L.mid, column * IP + (i % runsRow) * 8, 2));
      },
      [&](Val i) { return columnOf(i / runsRow).second; });
  c.ctaSync(/*drain=*/false);
}

// A wave's w2 / s2 of its next chain's first K steps (at most kDownA8w4StepsAhead), held across
// chains: the CTA's first loaded before awaitUp, each next one as the chain before it ends.
struct A8w4DownHeld {
  std::vector<ir::Var> w4, s;
};

// Step st's lane run (live, and kc if asked), no loads: on the partial last step a lane whose run lies past
// I/TP (live false) reads K 0, to be zero nibbles under scale 127.
A8w4DownStep a8w4DownLanes(KernelContext& c, const MfmaTile& t, int st, Val* kc) {
  const MoeTiling& T = c.L.tiling;
  A8w4DownStep in;
  in.step = st;
  Val k0 = c.i32(st * T.kStep) + t.laneK0();
  const bool whole = (st + 1) * T.kStep <= T.interPerRank;
  in.live = whole ? Val{} : k0 < T.interPerRank;
  if (kc) *kc = whole ? k0 : c.b.select(in.live, k0, c.i32(0));
  return in;
}

// Step st of expert e's w2 row wrow: its lane run and its w2 / s2 loads.
A8w4DownStep loadA8w4DownStep(KernelContext& c, const MfmaTile& t, Val e, Val wrow, int st) {
  ir::Builder& b = c.b;
  const int H = c.L.hidden, IP = c.L.tiling.interPerRank;
  Val kc;
  A8w4DownStep in = a8w4DownLanes(c, t, st, &kc);
  Val off = c.shuffledOffset(wrow, kc / 2, IP / 2);
  in.w4 = b.load(Type::vec(Type::i32(), 4), c.expertByte(c.w2, e, int64_t{H} * (IP / 2), off));
  in.s = b.zext(b.load(Type::i8(), c.scaleByte(c.s2, e, wrow, kc / 32, H, IP / 32)), Type::i32());
  return in;
}

int heldA8w4DownSteps(const Layout& L) { return std::min(kDownA8w4StepsAhead, L.tiling.downSteps); }

// Loads slot u's chain of `task` into held (nothing for a task past down's or a slot past the
// table's: that chain does not run).
void loadHeld(KernelContext& c, Val task, Val u, A8w4DownHeld& held) {
  ir::Builder& b = c.b;
  MfmaTile t = a16w4Tile(c);
  b.if_((task < c.i32(c.L.down.tasks)) & (u < c.slotCount()), [&] {
    Val e = c.tabLd(c.L.tw.slotE, u);
    for (int st = 0; st < heldA8w4DownSteps(c.L); ++st) {
      const A8w4DownStep in = loadA8w4DownStep(c, t, e, task * 16 + t.bCol(), st);
      b.set(held.w4[static_cast<size_t>(st)], in.w4);
      b.set(held.s[static_cast<size_t>(st)], in.s);
    }
  });
}

// One A8W4 down task (docs/layer.md, "The A8W4 MoE"): a wave a slot, its chain of scaled MFMAs
// over I/TP from +0: A the slot's MID columns (token l % 16, clamped to the count) as MXFP8 (wide:
// every pick's staged once a CTA; narrow: the slot's in the wave's bstage region when midInLds, else
// quantized a step at a time), B the lane's w2 run (hidden row 16 task + l % 16) and scale byte,
// the first steps from held. D's element i (token accRow(i), hidden row accCol()) ->
// CONTRIB[pick of the token][row]; then the combine.
void stageDownA8w4Task(KernelContext& c, Val task, A8w4DownHeld& held) {
  ir::Builder& b = c.b;
  const Layout& L = c.L;
  const MoeTiling& T = L.tiling;
  const auto& W = L.tw;
  const int IP = T.interPerRank, nHeld = heldA8w4DownSteps(L);
  Val nSlots = c.slotCount();
  MfmaTile t = a16w4Tile(c);  // its lane group / column and lane K run are the B operand's
  // wide: the CTA's first task (the only one below blocks) stages every pick's MID column
  Val pool = c.elemAt(c.bstage, c.i32(int64_t{L.rows} * (L.topk + 1) * IP), 1);
  if (L.moeWide) b.if_(task < c.i32(L.blocks), [&] { stageMidMxfp8ToLds(c, pool); });

  b.for_(c.wave, nSlots, c.i32(L.waves), [&](Val u) {
    Val e = c.tabLd(W.slotE, u);
    Val cnt = b.popcount(c.tabLd(W.slotMask, u));
    b.if_(cnt > 0, [&] {  // a slot of no rows: no MID column, no CONTRIB row (as stageDown)
      Val xcol = b.max(b.min(t.bCol(), cnt - 1), c.i32(0));  // A's row: the slot's column xcol
      Val wrow = task * 16 + t.bCol();                          // B's column: a w2 row
      const auto loadGroup = [&](int first) {
        std::vector<A8w4DownStep> group;
        for (int st = first; st < std::min(first + kDownA8w4StepsAhead, T.downSteps); ++st)
          group.push_back(loadA8w4DownStep(c, t, e, wrow, st));
        return group;
      };
      // The first group is held: its loads were issued a chain ahead (the CTA's first before awaitUp).
      std::vector<A8w4DownStep> group;
      for (int st = 0; st < nHeld; ++st) {
        A8w4DownStep in = a8w4DownLanes(c, t, st, nullptr);
        in.w4 = b.get(held.w4[static_cast<size_t>(st)]);
        in.s = b.get(held.s[static_cast<size_t>(st)]);
        group.push_back(in);
      }
      // midInLds: the wave's slot's MID columns quantized once to MXFP8 in its region (E4M3 bytes
      // [S][I/TP], then the code words [S][I/TP / 32]); else each step quantizes its A in the wave
      Val region, words, arow = xcol;
      if (L.moeWide) {  // A's row: the pick of the slot's column xcol
        region = c.bstage, words = pool;
        arow = c.tabLd(W.slotPick, u * 16 + xcol);
      } else if (L.midInLds) {
        region = b.ptrAdd(c.bstage, c.wave * L.midWaveBytes);
        words = c.elemAt(region, c.i32(int64_t{L.rows} * IP), 1);
        mxfp8QuantizeRuns(
            c, c.lane, cnt * (IP / 8), c.i32(64), region, words,
            [&](Val i) {
              return b.load(Type::vec(Type::bf16(), 8), c.elemAt(c.scratch, L.mid, u * (16 * IP) + i * 8, 2));
            },
            nullptr);
      }
      // A in the wave: the lane's 32 K of MID column xcol, 64 (e / 16) + 16 group + e % 16
      // (ir/Mfma.h), 8 bf16 a load; a run past I/TP (the partial step's upper half) is +0 read at K 0
      const auto quantizeMidA = [&](int step) {
        std::vector<Val> xs;
        for (int run = 0; run < 4; ++run) {
          const int kr0 = step * T.kStep + 64 * (run / 2) + 8 * (run % 2);
          Val kr = c.i32(kr0) + t.group * 16;
          const bool whole = kr0 + 56 <= IP;  // every lane group's run lies inside I/TP
          Val live = whole ? Val{} : kr < IP;
          Val k = whole ? kr : b.select(live, kr, c.i32(0));
          Val v = b.load(Type::vec(Type::bf16(), 8), c.elemAt(c.scratch, L.mid, (u * 16 + xcol) * c.i32(IP) + k, 2));
          if (live.v) v = b.select(live, v, b.splat(b.bf16(0.0), 8));
          for (int i = 0; i < 8; ++i) xs.push_back(b.extract(v, i));
        }
        return mxfp8QuantizeA(b, xs);
      };
      ir::Var acc = b.var(b.splat(b.f32(0.0), 4), "acc_a8w4");
      for (int first = 0; first < T.downSteps; first += kDownA8w4StepsAhead) {
        if (first > 0) group = loadGroup(first);
        for (const A8w4DownStep& in : group) {
          const Mxfp8Operand a = L.moeWide || L.midInLds ? mxfp8StagedA(c, region, words, arow, IP, in.step, IP)
                                                         : quantizeMidA(in.step);
          Val w4 = in.live.v ? b.select(in.live, in.w4, b.splat(c.i32(0), 4)) : in.w4;
          Val s = in.live.v ? b.select(in.live, in.s, c.i32(127)) : in.s;
          b.set(acc, b.mfmaScale(a.a, w4, b.get(acc), a.scale, s));
        }
      }
      Val d = b.get(acc);
      for (int i = 0; i < 4; ++i) {  // CONTRIB[pick of token accRow(i)][hidden row accCol()]
        Val tok = t.accRow(i);
        b.if_(tok < cnt, [&] {
          Val pick = c.tabLd(W.slotPick, u * 16 + tok);
          b.store(b.ptrAdd(c.contrib, (pick * 16 + t.accCol()) * c.i32(4)), b.extract(d, i));
        });
      }
    });
    // the wave's next chain: the task's next slot, else its first of the CTA's next task
    Val more = u + L.waves < nSlots;
    loadHeld(c, b.select(more, task, task + L.blocks), b.select(more, u + L.waves, c.wave), held);
  });
  combineDown(c, task, c.i32(1));
}
}  // namespace

void stageDownA8w4(KernelContext& c) {
  A8w4DownHeld held;
  for (int st = 0; st < heldA8w4DownSteps(c.L); ++st) {
    held.w4.push_back(c.b.var(c.b.splat(c.i32(0), 4), "down_a8w4_w4"));
    held.s.push_back(c.b.var(c.i32(127), "down_a8w4_scale"));
  }
  // the table is in LDS already: the wave's first chain's weights load before the wait
  Val first = c.L.down.base == 0 ? c.block : specs::stageFirstTask(c.b, c.block, c.L.down.base, c.L.blocks);
  loadHeld(c, first, c.wave, held);
  awaitUp(c);
  c.forEachTask(c.L.down, [&](Val t) { stageDownA8w4Task(c, t, held); });
}

}  // namespace monogen::specs::minimax_m3
