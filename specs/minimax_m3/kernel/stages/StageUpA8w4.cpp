#include <algorithm>
#include <vector>

#include "ir/Op.h"
#include "specs/minimax_m3/kernel/Mxfp8.h"
#include "specs/minimax_m3/kernel/stages/A8w4Operand.h"
#include "specs/minimax_m3/kernel/stages/Stages.h"

namespace monogen::specs::minimax_m3 {

using ir::Type;
using ir::Val;

// A wave's up chain issues the w13 / s13 loads of this many K steps before it uses the first.
constexpr int kUpA8w4StepsAhead = 8;

void mxfp8QuantizeRuns(KernelContext& c, Val first, Val end, Val stride, Val bytes, Val words,
                       const std::function<Val(Val)>& load, const std::function<Val(Val)>& live) {
  ir::Builder& b = c.b;
  b.for_(first, end, stride, [&](Val i) {
    const auto run = [&] {
      Val v = load(i);
      std::vector<Val> x;
      for (int e = 0; e < 8; ++e) x.push_back(b.bf16ToF32(b.extract(v, e)));
      // the block's amax over its lane quad, then mxfp8QuantizeA's code and bytes
      Val amax = mxfp8Amax(b, x);
      amax = b.max(amax, b.shuffle(amax, c.lane ^ 1));
      amax = b.max(amax, b.shuffle(amax, c.lane ^ 2));
      Val code = mxfp8ScaleCode(b, amax), inv = mxfp8InvScale(b, code);
      Val q = b.splat(c.i32(0), 2);
      for (int w = 0; w < 2; ++w) {
        Val word = c.i32(0);
        for (int k = 0; k < 4; ++k) word = word | (mxfp8Encode(b, x[static_cast<size_t>(4 * w + k)], inv) << (8 * k));
        q = b.insert(q, word, w);
      }
      b.store(c.elemAt(bytes, i * 8, 1), q);
      b.if_((i & 3) == 0, [&] { b.store(c.elemAt(words, i / 4, 4), code); });
    };
    if (live) b.if_(live(i), run);
    else run();
  });
}

Mxfp8Operand mxfp8StagedA(KernelContext& c, Val bytes, Val words, Val row, int rowK, int st, int kEnd) {
  ir::Builder& b = c.b;
  Val g = b.lshr(c.lane, c.i32(4));
  Val half[2];
  for (int h = 0; h < 2; ++h) {
    const int k0 = 128 * st + 64 * h;
    Val k = c.i32(k0) + g * 16;
    const bool whole = kEnd == 0 || k0 + 64 <= kEnd;  // every lane group's run lies before kEnd
    Val live = whole ? Val{} : k < kEnd;
    Val at = row * rowK + (whole ? k : b.select(live, k, c.i32(0)));
    Val v = b.load(Type::vec(Type::i32(), 4), c.elemAt(bytes, at, 1));
    half[h] = whole ? v : b.select(live, v, b.splat(c.i32(0), 4));
  }
  Val blk = c.i32(4 * st) + g;
  const bool whole = kEnd == 0 || 128 * (st + 1) <= kEnd;
  Val live = whole ? Val{} : blk * 32 < kEnd;
  Val w = b.load(Type::i32(), c.elemAt(words, row * (rowK / 32) + (whole ? blk : b.select(live, blk, c.i32(0))), 4));
  return {b.concat(half[0], half[1]), whole ? w : b.select(live, w, c.i32(0))};
}

namespace {
// The CTA's XN rows its up tasks read (from its first, as stageXnToLds picks them) to bstage as
// MXFP8: E4M3 bytes [S][hidden], then the code words [S][hidden / 32]; then the CTA's barrier.
void stageXnMxfp8ToLds(KernelContext& c) {
  ir::Builder& b = c.b;
  const Layout& L = c.L;
  const MoeTiling& T = L.tiling;
  const int runsRow = L.hidden / 8;
  Val tasks = c.slotCount() * c.i32(T.upTiles);
  ir::Var need = b.var(c.i32(0), "xn_rows");
  b.for_(upFirstTask(c), tasks, c.i32(L.blocks),
         [&](Val t) { b.set(need, b.get(need) | c.tabLd(L.tw.slotMask, t / T.upTiles)); });
  Val rows = b.get(need);
  mxfp8QuantizeRuns(
      c, c.tid, c.i32(int64_t{L.rows} * runsRow), c.i32(L.threads), c.bstage,
      c.elemAt(c.bstage, c.i32(int64_t{L.rows} * L.hidden), 1),
      [&](Val i) { return b.load(Type::vec(Type::bf16(), 8), c.elemAt(c.scratch, L.xn, i * 8, 2)); },
      [&](Val i) { return ((rows >> (i / runsRow)) & c.i32(1)) != c.i32(0); });
  c.ctaSync(/*drain=*/false);
}
}  // namespace

// One A8W4 up unit of the CTA's (docs/layer.md, "The A8W4 MoE"). The CTA's first unit stages its
// XN rows as MXFP8 in bstage; every waves / 2-th unit (from the first) runs itself and the CTA's
// next waves / 2 - 1 units at once, the others nothing. Unit q's wave 2 q + h (h: 0 gate, 1 up)
// chains a scaled MFMA a K step over all of hidden from +0: A the slot's XN rows (row l % 16 its
// column l % 16, clamped to the slot's count) read back from bstage, B the lane's w13 run and scale
// byte, the same loads as A16W4's. D (token row, weight column) goes to red[2 q + h] as
// [weight][token]; then SwiGLU-OAI -> MID and each unit's UPF.
void stageUpA8w4(KernelContext& c, Val task) {
  ir::Builder& b = c.b;
  const Layout& L = c.L;
  const MoeTiling& T = L.tiling;
  const auto& W = L.tw;
  const int H = L.hidden, IP = T.interPerRank, G = L.waves / 2;
  Val nSlots = c.slotCount();
  Val first = upFirstTask(c);
  b.if_(task == first, [&] { stageXnMxfp8ToLds(c); });
  Val xWords = c.elemAt(c.bstage, c.i32(int64_t{L.rows} * H), 1);
  MfmaTile t = a16w4Tile(c);  // its lane group / column and lane K run are the B operand's
  struct Unit {
    Val task, valid, u, j, cnt, work;
  };
  const auto unitOf = [&](Val q) {
    Unit n;
    n.task = task + q * L.blocks;
    n.valid = n.task < nSlots * T.upTiles;
    n.u = b.min(n.task / T.upTiles, nSlots - 1), n.j = n.task % T.upTiles;  // as stageUp: u clamped
    n.cnt = b.popcount(c.tabLd(W.slotMask, n.u));
    n.work = n.valid & (n.cnt > 0);
    return n;
  };
  b.if_(((task - first) / L.blocks) % G == 0, [&] {
    const Unit n = unitOf(c.wave / 2);
    b.if_(n.work, [&] {
      Val h = c.wave % 2;
      Val e = c.tabLd(W.slotE, n.u);
      Val xcol = b.max(b.min(t.bCol(), n.cnt - 1), c.i32(0));
      Val row = b.max(c.tabLd(W.slotRow, n.u * 16 + xcol), c.i32(0));  // A's row: XN row `row`
      Val wrow = h * IP + n.j * 16 + t.bCol();                            // B's column: a w13 row
      struct Step {
        Val w4, s;
      };
      const auto loadStep = [&](int st) {
        Val k0 = c.i32(st * T.kStep) + t.laneK0();
        Val off = c.shuffledOffset(wrow, k0 / 2, H / 2);
        Step in;
        in.w4 = b.load(Type::vec(Type::i32(), 4), c.expertByte(c.w13, e, int64_t{2} * IP * (H / 2), off));
        in.s = b.zext(b.load(Type::i8(), c.scaleByte(c.s13, e, wrow, k0 / 32, int64_t{2} * IP, H / 32)), Type::i32());
        return in;
      };
      ir::Var acc = b.var(b.splat(b.f32(0.0), 4), "acc_a8w4");
      for (int s0 = 0; s0 < T.upSteps; s0 += kUpA8w4StepsAhead) {
        std::vector<Step> group;
        for (int st = s0; st < std::min(s0 + kUpA8w4StepsAhead, T.upSteps); ++st) group.push_back(loadStep(st));
        for (size_t g = 0; g < group.size(); ++g) {
          const Mxfp8Operand a = mxfp8StagedA(c, c.bstage, xWords, row, H, s0 + static_cast<int>(g), 0);
          b.set(acc, b.mfmaScale(a.a, group[g].w4, b.get(acc), a.scale, group[g].s));
        }
      }
      // red[wave][weight row][token]: D's element i is token accRow(i), weight row accCol()
      t.storeAcc(b.get(acc), c.red, [&](int i) { return c.wave * 256 + t.accCol() * 16 + t.accRow(i); });
    });
    c.ctaSync(false);
    for (int p = 0; p < G * 256 / L.threads; ++p) {  // thread (q, r, cc): unit q's weight row r, token cc
      Val item = c.tid + p * L.threads;
      Val q = item / 256, rc = item % 256;
      const Unit n = unitOf(q);
      b.if_(n.work, [&] {
        Val gate = b.load(Type::f32(), b.ptrAdd(c.red, (q * 512 + rc) * c.i32(4)));
        Val up = b.load(Type::f32(), b.ptrAdd(c.red, (q * 512 + 256 + rc) * c.i32(4)));
        storeUpMid(c, n.u, n.j, n.cnt, rc / 16, rc % 16, gate, up);
      });
    }
    c.ctaSync(/*drain=*/true);
    for (int q = 0; q < G; ++q) {
      const Unit n = unitOf(c.i32(q));
      b.if_(n.valid & (c.tid == 0), [&] {
        c.publish(c.pairAt(c.scratch, L.upf, n.task), c.i32(1), c.tag, ir::MemOrder::Release, ir::MemScope::Agent);
      });
    }
  });
}

}  // namespace monogen::specs::minimax_m3
