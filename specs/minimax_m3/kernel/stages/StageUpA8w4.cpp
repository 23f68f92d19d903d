#include <algorithm>
#include <vector>

#include "ir/Op.h"
#include "specs/minimax_m3/kernel/Mxfp8.h"
#include "specs/minimax_m3/kernel/stages/Stages.h"

namespace monogen::specs::minimax_m3 {

using ir::Type;
using ir::Val;

// A wave's up chain issues the w13 / s13 loads of this many K steps before it uses the first.
constexpr int kUpA8w4StepsAhead = 8;

// One A8W4 up unit (docs/layer.md, "The A8W4 MoE"): wave h (0 gate, 1 up) chains a scaled MFMA a
// K step over all of hidden from +0: A the slot's XN rows (row l % 16 its column l % 16, clamped
// to the slot's count) quantized to MXFP8 in the wave, B the lane's w13 run and scale byte, the
// same loads as A16W4's. Its D (token row, weight column) goes to red[h][0] as [weight][token];
// then SwiGLU-OAI -> MID, UPF.
void stageUpA8w4(KernelContext& c, Val task) {
  ir::Builder& b = c.b;
  const Layout& L = c.L;
  const MoeTiling& T = L.tiling;
  const auto& W = L.tw;
  const int H = L.hidden, IP = T.interPerRank;
  Val nSlots = c.slotCount();
  Val valid = task < nSlots * T.upTiles;
  Val u = b.min(task / T.upTiles, nSlots - 1), j = task % T.upTiles;  // as stageUp: u clamped
  Val cnt = b.popcount(c.tabLd(W.slotMask, u));
  MfmaTile t = a16w4Tile(c);  // its lane group / column and lane K run are the B operand's
  Val work = valid & (cnt > 0);
  b.if_(work & (c.wave < 2), [&] {
    Val h = c.wave;
    Val e = c.tabLd(W.slotE, u);
    Val xcol = b.max(b.min(t.bCol(), cnt - 1), c.i32(0));
    Val row = b.max(c.tabLd(W.slotRow, u * 16 + xcol), c.i32(0));  // A's row: XN row `row`
    Val wrow = h * IP + j * 16 + t.bCol();                            // B's column: a w13 row
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
    for (int first = 0; first < T.upSteps; first += kUpA8w4StepsAhead) {
      std::vector<Step> group;
      for (int st = first; st < std::min(first + kUpA8w4StepsAhead, T.upSteps); ++st) group.push_back(loadStep(st));
      for (size_t g = 0; g < group.size(); ++g) {
        const int st = first + static_cast<int>(g);
        // A: the lane's 32 K of its row, 64 (e / 16) + 16 group + e % 16 (ir/Mfma.h), 8 bf16 a load
        std::vector<Val> xs;
        for (int run = 0; run < 4; ++run) {
          Val k = c.i32(st * T.kStep + 64 * (run / 2) + 8 * (run % 2)) + t.group * 16;
          Val at = row * H + k;
          Val v = b.load(Type::vec(Type::bf16(), 8), L.xnInLds ? c.elemAt(c.bstage, at, 2) : c.elemAt(c.scratch, L.xn, at, 2));
          for (int i = 0; i < 8; ++i) xs.push_back(b.extract(v, i));
        }
        const Mxfp8Operand a = mxfp8QuantizeA(b, xs);
        b.set(acc, b.mfmaScale(a.a, group[g].w4, b.get(acc), a.scale, group[g].s));
      }
    }
    // red[h][0][weight row][token]: D's element i is token accRow(i), weight row accCol()
    t.storeAcc(b.get(acc), c.red, [&](int i) { return h * (L.waves * 256) + t.accCol() * 16 + t.accRow(i); });
  });
  c.ctaSync(false);
  b.if_(work & (c.tid < 256), [&] {
    Val r = c.tid / 16, cc = c.tid % 16;
    Val gate = b.load(Type::f32(), b.ptrAdd(c.red, c.tid * c.i32(4)));
    Val up = b.load(Type::f32(), b.ptrAdd(c.red, (c.i32(L.waves * 256) + c.tid) * c.i32(4)));
    storeUpMid(c, u, j, cnt, r, cc, gate, up);
  });
  publishUp(c, valid, task);
}

}  // namespace monogen::specs::minimax_m3
