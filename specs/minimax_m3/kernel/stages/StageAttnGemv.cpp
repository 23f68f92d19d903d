// attn_gemv: the fused w_qkv GEMV, one 16-row tile of w_qkv a task, every row S as the B columns.
// Wave w runs the FP8 MfmaTile (16x16x32, chain 2: a 64-K step) over its 64-K chunks w hidden/512
// .., the o_proj push's operands (shuffled E4M3 A rows, E4M3 B runs); the waves' accumulators sum
// in wave order through LDS; out = bf16((tot x_scale) s_qkv) -> QKV, then QRDY (qkvRow).
#include "ir/Op.h"
#include "specs/common/MfmaTile.h"
#include "specs/minimax_m3/kernel/stages/AttentionStageDef.h"

#include <fmt/format.h>

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

void stageAttnGemv(AttentionContext& c, Val tile) {
  ir::Builder& b = c.b;
  const AttentionLaunchLayout& L = c.L;
  const int H = L.hidden, chunks = H / 64 / L.waves;
  const MfmaTile T = MfmaTile::at(c.lane, ir::MfmaKind::F32_16x16x32_FP8, 2);
  Val scratch = c.arg(a::kScratch), w = c.arg(a::kWQkv);
  Val row = b.named(tile * c.i32(16) + T.aRow(), "row");
  Val token = b.named(b.min(T.bCol(), c.i32(L.rows - 1)), "token");
  ir::Var acc = b.var(b.splat(c.f32(0), 4), "acc");
  Val kc0 = c.wave * c.i32(chunks);
  b.for_(kc0, kc0 + c.i32(chunks), c.i32(1), [&](Val kc) {
    Val k0 = kc * c.i32(64) + T.laneK0();
    std::vector<Val> av, bv;
    for (int d = 0; d < T.chain; ++d) {
      Val k = k0 + c.i32(T.kOffset(d));
      av.push_back(b.load(Type::i64(), b.ptrAdd(w, shuffledRun(c, row, k, H))));
      bv.push_back(b.load(Type::i64(), b.ptrAdd(scratch, c.i32(L.x8Offset) + token * c.i32(H) + k)));
    }
    b.set(acc, T.step(b.get(acc), av, bv));
  });
  // [wave][row in the tile][token]
  T.storeAcc(b.get(acc), c.red, [&](int i) { return (c.wave * c.i32(16) + T.accRow(i)) * c.i32(16) + T.accCol(); });
  c.ctaSync(false);
  b.if_(c.tid < c.i32(16 * L.rows), [&] {
    Val r = c.tid / c.i32(L.rows), t = c.tid % c.i32(L.rows);
    Val tot = c.f32(0);
    for (int wv = 0; wv < L.waves; ++wv)
      tot = tot + b.load(Type::f32(), b.ptrAdd(c.red, ((c.i32(wv * 16) + r) * c.i32(16) + t) * c.i32(4)));
    Val xScale = b.load(Type::f32(), b.ptrAdd(scratch, c.i32(L.xScaleOffset) + t * c.i32(4)));
    Val grow = tile * c.i32(16) + r;
    Val ws = b.load(Type::f32(), b.ptrAdd(c.arg(a::kSQkv), grow * c.i32(4)));
    Val live = b.load(Type::i64(), b.ptrAdd(c.arg(a::kSlots), t * c.i32(8))) >= b.i64(0);
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
      // XRDY of every row, once a CTA
      c.awaitAllOnce(c.L.gemv, c.L.xrdyOffset, c.L.rows, kSiteAttnGemv);
      c.forEachTask(c.L.gemv, [&](Val t) { stageAttnGemv(c, t); });
    },
    "qkvRow (AttentionPre.h)",
};

}  // namespace monogen::specs::minimax_m3
