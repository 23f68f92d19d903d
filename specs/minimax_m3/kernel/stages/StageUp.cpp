#include <fmt/format.h>

#include "ir/Error.h"
#include "ir/Op.h"
#include "specs/common/TaskLoop.h"
#include "specs/minimax_m3/kernel/Sites.h"
#include "specs/minimax_m3/kernel/stages/Stages.h"
#include "specs/minimax_m3/kernel/WeightContract.h"

namespace monogen::specs::minimax_m3 {

using ir::MemOrder;
using ir::MemScope;
using ir::MfmaKind;
using ir::Type;
using ir::Val;

// One A16W4 step of `t` (4 chained v_mfma_f32_16x16x32_bf16): the lane's
// run of the step (32 K, laneK0() ..) is one 16-byte fp4x2 load of the shuffled tile (`w4`: dword
// d = the run's K 8 d .., low nibble first) and one e8m0 scale byte; MFMA d's A is bf16(fp4 x
// 2^(s-127)) of its dword, its B `x[d]` (8 bf16 at the run's K 8 d ..).
Val a16w4Step(const MfmaTile& t, Val acc, Val w4, Val scaleByte, const std::vector<Val>& x) {
  ir::Builder& b = *acc.b;
  Val scale = b.e8m0ToF32(scaleByte);
  return t.step(acc, [&](int d) { return b.fp4x8ToBf16x8(b.extract(w4, d), scale); },
                [&](int d) { return x[static_cast<size_t>(d)]; });
}

// The A16W4 steps' tile: kStep / 32 = 4 chained bf16 MFMAs a step, a lane group's run of K the
// e8m0 block (kGroup = 32).
MfmaTile a16w4Tile(KernelContext& c) {
  const MoeTiling& T = c.L.tiling;
  const MfmaKind kind = MfmaKind::F32_16x16x32_BF16;
  const int chain = T.kStep / ir::mfma::shapeOf(kind).k;
  if (MfmaTile::of(kind, chain).laneRunK() != T.kGroup)
    throw IrError("a16w4Tile", fmt::format("a lane's run of a {}-K step is not the e8m0 block ({} K)", T.kStep, T.kGroup));
  return c.mfmaTile(kind, chain);
}

Val upFirstTask(KernelContext& c) {
  if (c.L.up.base == 0) return c.block;  // the FFN launch: the CTA's own id
  return specs::stageFirstTask(c.b, c.block, c.L.up.base, c.L.blocks);
}

// XN to LDS (when L.xnInLds: S <= 8): the CTA ORs the slot masks of its up tasks
// (first, first + blocks, .. below the table's slots x upTiles), i.e. the rows its units' B
// columns read, and copies only those rows of XN to the bstage pool, 16 bytes a thread a pass,
// after awaitX; then the CTA's barrier. Up reads its B operands there. (A slot of no rows, the
// shared one when every row is padded, reads nothing: stageUp skips its GEMV.)
void stageXnToLds(KernelContext& c, Val first) {
  ir::Builder& b = c.b;
  const Layout& L = c.L;
  const MoeTiling& T = L.tiling;
  Val tasks = c.slotCount() * c.i32(T.upTiles);
  ir::Var need = b.var(c.i32(0), "xn_rows");
  b.for_(first, tasks, c.i32(L.blocks),
         [&](Val t) { b.set(need, b.get(need) | c.tabLd(L.tw.slotMask, t / T.upTiles)); });
  Val rows = b.get(need);
  b.for_(c.tid, c.i32(int64_t{L.rows} * L.hidden / 8), c.i32(L.threads), [&](Val i) {
    b.if_(((rows >> (i / (L.hidden / 8))) & c.i32(1)) != c.i32(0), [&] {
      Val v = b.load(Type::vec(Type::bf16(), 8), c.elemAt(c.scratch, L.xn, i * 8, 2));
      b.store(c.elemAt(c.bstage, i * 8, 2), v);
    });
  });
  c.ctaSync(/*drain=*/false);
}

// The next unit's weights: a wave's fp4x2 tile rows (i32x4) and e8m0 scale (i32) of
// each of its K steps, gate then up (index 2 step + h), held in variables across the unit before.
UpWeights makeUpWeights(KernelContext& c) {
  ir::Builder& b = c.b;
  UpWeights w;
  for (int i = 0; i < 2 * c.L.tiling.upWaveSteps; ++i) {
    w.w4.push_back(b.var(b.splat(c.i32(0), 4), "next_w4"));
    w.scale.push_back(b.var(c.i32(127), "next_scale"));
  }
  return w;
}

// Loads task's weights (nothing for a task past the table's units: it computes nothing). Each
// address is shuffledOffset / scaleByte of (row R + aRow, K step st, lane group) split into the
// lane's part (aRow, laneK0: the same every unit) and the unit's and step's uniform part (R = the
// gate or up tile's first row, a multiple of 16; st), since aRow < 16 and a step is 4 e8m0 blocks.
void loadUpWeights(KernelContext& c, Val task, UpWeights& w) {
  ir::Builder& b = c.b;
  const Layout& L = c.L;
  const MoeTiling& T = L.tiling;
  const int H = L.hidden, IP = T.interPerRank;
  const int64_t kBlocks = H / 32, pn = heldScaleColumns(kBlocks, c.knobs.scales);
  const bool shuffled = c.knobs.scales == ScaleLayout::E8m0Shuffle;
  if (T.kStep != 128 || IP % 16 != 0)
    throw IrError("loadUpWeights", fmt::format("the split addresses need 128-K steps and I / TP % 16 == 0 (K step "
                                               "{}, I / TP {})", T.kStep, IP));
  Val valid = task < c.slotCount() * c.i32(T.upTiles);
  b.if_(valid, [&] {
    Val u = task / T.upTiles, j = task % T.upTiles;
    Val e = b.ctaUniform(c.tabLd(L.tw.slotE, u));  // task is the CTA's, so is its slot's expert
    MfmaTile t = a16w4Tile(c);
    // the lane's parts: K run laneK0 = 32 g (a 16-byte chunk 256 g of the shuffled row tile), row aRow
    Val wLane = t.laneK0() * 8 + t.aRow() * 16;
    Val sLane = shuffled ? t.laneK0() * 2 + t.aRow() * 4 : t.aRow() * c.i32(kBlocks) + t.laneK0() / 32;
    for (int i = 0; i < T.upWaveSteps; ++i) {
      Val st = c.wave * T.upWaveSteps + c.i32(i);
      b.if_(st < T.upSteps, [&] {
        for (int h = 0; h < 2; ++h) {
          Val r0 = j * 16 + h * IP;  // gate rows, then up rows
          Val wOff = r0 * (H / 2) + st * 1024;
          Val w4At = c.expertByte(c.w13, e, int64_t{2} * IP * (H / 2), wOff + wLane);
          b.set(w.w4[2 * i + h], b.load(Type::vec(Type::i32(), 4), w4At));
          Val sOff = shuffled ? (r0 / 32) * c.i32(pn / 8 * 256) + (r0 / 16) % 2 + (st / 2) * 256 + (st % 2) * 2
                              : r0 * c.i32(kBlocks) + st * 4;
          Val sAt = c.expertByte(c.s13, e, int64_t{2} * IP * pn, sOff + sLane);
          b.set(w.scale[2 * i + h], b.zext(b.load(Type::i8(), sAt), Type::i32()));  // scaleIndex
        }
      });
    }
  });
}

void storeUpMid(KernelContext& c, Val u, Val j, Val cnt, Val r, Val cc, Val gate, Val up) {
  ir::Builder& b = c.b;
  b.if_(cc < cnt, [&] {
    const float limit = static_cast<float>(c.cfg.swigluLimit), alpha = static_cast<float>(c.cfg.swigluAlpha);
    const float kLog2e = 1.44269504088896340736f;
    Val gl = b.min(gate, b.f32(limit));
    Val ul = b.max(b.min(up, b.f32(limit)), b.f32(-static_cast<double>(limit)));
    Val z = b.f32(static_cast<double>(alpha)) * gl;
    Val sig = b.f32(1.0) / (b.f32(1.0) + b.exp2((-z) * b.f32(static_cast<double>(kLog2e))));
    Val v = (gl * sig) * (ul + b.f32(1.0));
    Val at = (u * 16 + cc) * c.i32(c.L.tiling.interPerRank) + j * 16 + r;
    b.store(c.elemAt(c.scratch, c.L.mid, at, 2), b.f32ToBf16(v));
  });
}

void publishUp(KernelContext& c, Val valid, Val task) {
  c.ctaSync(/*drain=*/true);
  c.b.if_(valid & (c.tid == 0), [&] {
    c.publish(c.pairAt(c.scratch, c.L.upf, task), c.i32(1), c.tag, MemOrder::Release, MemScope::Agent);
  });
}

// One up unit: slot task / upTiles, tile pair task % upTiles. It issues the CTA's next unit's
// weight loads, then gate and up rows x XN in a16w4Dot's order -> bf16(SwiGLU-OAI) -> MID, UPF.
// Order of sums: docs/minimax-m3-kernel.md, "up".
void stageUp(KernelContext& c, Val task, UpWeights& cur, UpWeights& next) {
  ir::Builder& b = c.b;
  const Layout& L = c.L;
  const MoeTiling& T = L.tiling;
  const auto& W = L.tw;
  const int H = L.hidden;
  Val nSlots = c.slotCount();
  Val valid = task < nSlots * T.upTiles;
  // A task past the table's units still reads its slot's mask (cnt, used only where valid): u is
  // clamped to the last slot the table wrote, nSlots - 1, not to maxSlots - 1, whose slotMask
  // word no op of the launch writes when fewer slots are used (the Sim's uninitialized-read check
  // found that read of LDS the launch never wrote; the value was dead, the read was not).
  Val u = b.min(task / T.upTiles, nSlots - 1), j = task % T.upTiles;
  Val cnt = b.popcount(c.tabLd(W.slotMask, u));
  MfmaTile t = a16w4Tile(c);

  loadUpWeights(c, task + L.blocks, next);  // in flight while this unit computes
  // A slot of no rows (the shared one when every row is padded) computes nothing and stores no MID
  // column, but still publishes its UPF. (Its GEMV read XN row 0, which the CTA had not copied to
  // bstage, and summed red's partials of it: the uninitialized-read check found both with every
  // row padded. Nothing of it was stored; the reads were real.)
  Val work = valid & (cnt > 0);
  b.if_(work, [&] {
    Val xcol = b.max(b.min(t.bCol(), cnt - 1), c.i32(0));
    Val row = b.max(c.tabLd(W.slotRow, u * 16 + xcol), c.i32(0));
    ir::Var accG = b.var(b.splat(b.f32(0.0), 4), "acc_gate");
    ir::Var accU = b.var(b.splat(b.f32(0.0), 4), "acc_up");
    for (int i = 0; i < T.upWaveSteps; ++i) {
      Val st = c.wave * T.upWaveSteps + c.i32(i);
      b.if_(st < T.upSteps, [&] {
        Val k0 = st * T.kStep + t.laneK0();  // the lane's run of B: XN row `row`, K k0 ..
        std::vector<Val> x = t.load(Type::vec(Type::bf16(), 8), [&](int k) {
          Val at = row * H + k0 + c.i32(k);
          return L.xnInLds ? c.elemAt(c.bstage, at, 2) : c.elemAt(c.scratch, L.xn, at, 2);
        });
        for (int h = 0; h < 2; ++h) {
          ir::Var acc = h == 0 ? accG : accU;
          b.set(acc, a16w4Step(t, b.get(acc), b.get(cur.w4[2 * i + h]), b.get(cur.scale[2 * i + h]), x));
        }
      });
    }
    for (int h = 0; h < 2; ++h) {  // red[h][wave][row][col], the wave's 16 x 16 tile row-major
      t.storeAcc(b.get(h == 0 ? accG : accU), c.red, [&](int i) {
        return h * L.waves * 256 + c.wave * 256 + t.accRow(i) * c.i32(16) + t.accCol();
      });
    }
  });
  c.ctaSync(false);
  b.if_(work & (c.tid < 256), [&] {
    Val r = c.tid / 16, cc = c.tid % 16;
    Val gate = b.f32(0.0), up = b.f32(0.0);
    for (int w = 0; w < L.waves; ++w) {
      gate = gate + b.load(Type::f32(), b.ptrAdd(c.red, (w * 256 + c.tid) * c.i32(4)));
      up = up + b.load(Type::f32(), b.ptrAdd(c.red, ((L.waves + w) * 256 + c.tid) * c.i32(4)));
    }
    storeUpMid(c, u, j, cnt, r, cc, gate, up);
  });
  publishUp(c, valid, task);
  for (size_t i = 0; i < cur.w4.size(); ++i) {
    b.set(cur.w4[i], b.get(next.w4[i]));
    b.set(cur.scale[i], b.get(next.scale[i]));
  }
}

extern const StageDef kUpStage = {
    .placement = [](const Layout& L) { return L.up; },
    .waits = [](const Layout& L) { return std::vector<ir::FlagUse>{{L.xrdy.name, L.rows}}; },
    .publishes = [](const Layout& L) { return std::vector<ir::FlagUse>{{L.upf.name, L.upf.pairs}}; },
    .doc = [](const Layout& L) -> std::string {
      if (L.moe == MoeQuant::A8w4)
        return "16 gate + 16 up rows of a slot's expert a task, A8W4: MXFP8 XN x MXFP4 on one wave's scaled-MFMA "
               "chain each, SwiGLU-OAI -> MID (bf16), UPF; the task count is the table's slots x upTiles";
      return "16 gate + 16 up rows of a slot's expert a task, A16W4 MFMA, SwiGLU-OAI -> MID (bf16), "
             "UPF; the task count is the table's slots x upTiles (bounded here)";
    },
    .body = [](KernelContext& c) {
      if (c.L.moe == MoeQuant::A8w4) {  // no weights a unit ahead: each wave loads its chain's in groups
        Val first = upFirstTask(c);
        c.awaitX(kSiteUp);
        if (c.L.xnInLds) stageXnToLds(c, first);
        c.forEachTask(c.L.up, [&](Val t) { stageUpA8w4(c, t); });
        return;
      }
      UpWeights cur = makeUpWeights(c), next = makeUpWeights(c);
      Val first = upFirstTask(c);
      loadUpWeights(c, first, cur);  // the CTA's first unit, right after the table
      c.awaitX(kSiteUp);
      if (c.L.xnInLds) stageXnToLds(c, first);
      c.forEachTask(c.L.up, [&](Val t) { stageUp(c, t, cur, next); });
    },
    .reference = "a16w4Dot, swigluOai",
    .runtimeTasks = true,
};

}  // namespace monogen::specs::minimax_m3
