// attn_gemv: the fused w_qkv GEMV, one 16-row tile of w_qkv a task, every row S as the B columns.
// Wave w runs the FP8 MfmaTile (16x16x32, chain 2: a 64-K step) over its 64-K chunks w hidden/512
// .., the o_proj push's operands (shuffled E4M3 A rows, E4M3 B runs); the waves' accumulators sum
// in wave order through LDS; out = bf16((tot x_scale) s_qkv) -> QKV, then QRDY (qkvRow).
#include "ir/Op.h"
#include "specs/common/MfmaTile.h"
#include "specs/minimax_m3/kernel/stages/AttentionStageDef.h"

#include <fmt/format.h>

#include <functional>

namespace monogen::specs::minimax_m3 {

using ir::Type;
using ir::Val;
namespace a = attn_arg;

namespace {

/// shuffledOffset16x16 (WeightContract.h) in the IR: byte (row, k) of an AITER (16,16)-shuffled
/// E4M3 matrix of kBytes a row, for k a multiple of 8 (an 8-byte run).
Val shuffledRun(AttentionContext& c, Val row, Val k, int64_t kBytes) {
  return (row / c.i32(16)) * c.i32(16 * kBytes) + (k / c.i32(32)) * c.i32(512) + ((k / c.i32(16)) % c.i32(2)) * c.i32(256) +
         (row % c.i32(16)) * c.i32(16) + k % c.i32(16);
}

/// `awaitX` is called between the task's weight loads and its X8 loads (the XRDY wait, first task).
void stageAttnGemv(AttentionContext& c, Val tile, const std::function<void()>& awaitX) {
  ir::Builder& b = c.b;
  const AttentionLaunchLayout& L = c.L;
  const int H = L.hidden, chunks = H / 64 / L.waves;
  const MfmaTile T = MfmaTile::at(c.lane, ir::MfmaKind::F32_16x16x32_FP8, 2);
  Val scratch = c.arg(a::kScratch), w = c.arg(a::kWQkv);
  Val row = b.named(tile * c.i32(16) + T.aRow(), "row");
  Val token = b.named(b.min(T.bCol(), c.i32(L.rows - 1)), "token");
  Val kc0 = c.wave * c.i32(chunks);
  // every chunk's A runs (the lane's 16-byte run: both MFMAs' K, k0 + 8 d contiguous in the
  // shuffle and in X8), then the epilogue's s_qkv and slot, all before the flag wait
  std::vector<Val> av;
  for (int i = 0; i < chunks; ++i) {
    Val k0 = (kc0 + c.i32(i)) * c.i32(64) + T.laneK0();
    Val run = b.load(Type::vec(Type::i64(), T.chain), b.ptrAdd(w, shuffledRun(c, row, k0, H)));
    for (int d = 0; d < T.chain; ++d) av.push_back(b.extract(run, d));
  }
  // epilogue thread (r, t) = (tid / S, tid % S), r clamped into the tile for the idle threads
  Val r = b.min(c.tid / c.i32(L.rows), c.i32(15)), t = c.tid % c.i32(L.rows);
  Val grow = tile * c.i32(16) + r;
  Val ws = b.load(Type::f32(), b.ptrAdd(c.arg(a::kSQkv), grow * c.i32(4)));
  Val live = b.load(Type::i64(), b.ptrAdd(c.arg(a::kSlots), t * c.i32(8))) >= b.i64(0);
  awaitX();
  std::vector<Val> bv;
  for (int i = 0; i < chunks; ++i) {
    Val k0 = (kc0 + c.i32(i)) * c.i32(64) + T.laneK0();
    Val run = b.load(Type::vec(Type::i64(), T.chain), b.ptrAdd(scratch, c.i32(L.x8Offset) + token * c.i32(H) + k0));
    for (int d = 0; d < T.chain; ++d) bv.push_back(b.extract(run, d));
  }
  Val xScale = b.load(Type::f32(), b.ptrAdd(scratch, c.i32(L.xScaleOffset) + t * c.i32(4)));
  // the chain over the wave's chunks in order, from 0
  Val acc = b.splat(c.f32(0), 4);
  for (int i = 0; i < chunks; ++i) {
    std::vector<Val> ai(av.begin() + i * T.chain, av.begin() + (i + 1) * T.chain);
    std::vector<Val> bi(bv.begin() + i * T.chain, bv.begin() + (i + 1) * T.chain);
    acc = T.step(acc, ai, bi);
  }
  // [wave][row in the tile][token]
  T.storeAcc(acc, c.red, [&](int i) { return (c.wave * c.i32(16) + T.accRow(i)) * c.i32(16) + T.accCol(); });
  c.ctaSync(false);
  b.if_(c.tid < c.i32(16 * L.rows), [&] {
    std::vector<Val> part;  // the 8 waves' loads in flight, then summed in wave order
    for (int wv = 0; wv < L.waves; ++wv)
      part.push_back(b.load(Type::f32(), b.ptrAdd(c.red, ((c.i32(wv * 16) + r) * c.i32(16) + t) * c.i32(4))));
    Val tot = c.f32(0);
    for (int wv = 0; wv < L.waves; ++wv) tot = tot + part[wv];
    Val out = b.f32ToBf16(b.select(live, (tot * xScale) * ws, c.f32(0)));
    b.store(b.ptrAdd(scratch, c.i32(L.qkvOffset) + (t * c.i32(L.qkvRows) + grow) * c.i32(2)), out);
  });
  c.ctaSync(true);  // the tile's rows before QRDY; red is rewritten by the CTA's next task
  b.if_(c.tid == c.i32(0), [&] { c.publish(c.pairAt(L.qrdyOffset, tile)); });
}

}  // namespace

extern const AttentionStageDef kAttnGemvStage = {
    [](const AttentionLaunchLayout& L) { return L.gemv; },
    [](const AttentionLaunchLayout& L) { return std::vector<ir::FlagUse>{{"XRDY", L.rows}}; },
    [](const AttentionLaunchLayout& L) { return std::vector<ir::FlagUse>{{"QRDY", L.qkvTiles}}; },
    [](const AttentionLaunchLayout& L) {
      return fmt::format("16 w_qkv rows a task x every row: 8 waves x {} FP8 MFMA steps of 64 K, the waves summed in "
                         "order -> QKV, QRDY",
                         L.hidden / 64 / L.waves);
    },
    [](AttentionContext& c) {
      // XRDY of every row, once a CTA: in its first task (t < blocks), after the weights' loads
      c.forEachTask(c.L.gemv, [&](Val t) {
        stageAttnGemv(c, t, [&] {
          c.b.if_(t < c.i32(c.L.blocks), [&] { c.awaitAllOnce(c.L.gemv, c.L.xrdyOffset, c.L.rows, kSiteAttnGemv); });
        });
      });
    },
    "qkvRow (AttentionPre.h)",
};

}  // namespace monogen::specs::minimax_m3
