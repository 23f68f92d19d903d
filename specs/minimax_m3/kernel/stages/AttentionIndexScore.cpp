#include "specs/minimax_m3/kernel/stages/AttentionIndexScore.h"

#include <climits>
#include <cmath>

#include "specs/common/MfmaTile.h"
#include "specs/minimax_m3/kernel/AttentionConstants.h"

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

}  // namespace

void scoreIndexBlocks(AttentionContext& c, Val t, Val h, Val lo, Val hi, Val nBlk, Val seq) {
  ir::Builder& b = c.b;
  const AttentionLaunchLayout& L = c.L;
  const AttentionShape& sh = L.shape;
  const ModelConfig& cfg = c.variant.cfg;
  const int ID = sh.indexDim, blk = sh.block;
  const bool atom = c.variant.knobs.mode == CacheMode::Atom;
  Val tables = b.ptrAdd(c.arg(atom ? a::kBlockTables : a::kIndexTables), t * c.scalarI32(a::kTableStride) * c.i32(4));
  // row 0 of A the index q (lanes 0, 16, 32, 48: channels 32 d + 8 group + e), B a 16-key page's
  // widened keys; lanes 0 .. 15 hold its dots (accumulator row 0)
  const MfmaTile T = MfmaTile::at(c.lane, ir::MfmaKind::F32_16x16x32_BF16, 1);
  const Type bf8 = Type::vec(Type::bf16(), 8);
  std::vector<Val> qA;
  for (int d = 0; d < ID / 32; ++d) {
    Val v = b.load(bf8, b.ptrAdd(c.arg(a::kIq), ((t * c.i32(sh.indexHeads) + h) * c.i32(ID) + c.i32(32 * d) +
                                                 T.group * c.i32(8)) * c.i32(2)));
    qA.push_back(b.select(T.aRow() == c.i32(0), v, b.splat(b.bf16(0), 8)));
  }
  const float scale = indexScoreScale(cfg.indexHeadDim);
  b.for_(lo + c.wave, hi, c.i32(L.waves), [&](Val blkId) {
    Val pinned = (blkId < c.i32(cfg.indexInit)) | (blkId >= nBlk - c.i32(cfg.indexLocal));
    ir::Var best = b.var(c.f32(-INFINITY), "best");
    b.if_(!pinned, [&] {
      Val base = b.sext(b.load(Type::i32(), b.ptrAdd(tables, blkId * c.i32(4))), Type::i64());
      // every page's key bytes in flight before the first MFMA
      std::vector<std::vector<Val>> pageBytes(blk / 16);
      for (int pg = 0; pg < blk / 16; ++pg) {
        Val at = (base * b.i64(blk) + b.sext(c.i32(16 * pg) + T.bCol(), Type::i64())) * b.i64(ID);
        for (int d = 0; d < ID / 32; ++d)
          pageBytes[pg].push_back(b.load(Type::i64(), b.ptrAdd(c.arg(a::kIndexCache),
                                                               at + b.sext(c.i32(32 * d) + T.group * c.i32(8), Type::i64()))));
      }
      for (int pg = 0; pg < blk / 16; ++pg) {
        Val key = c.i32(16 * pg) + T.bCol();
        Val acc = b.splat(c.f32(0), 4);
        for (int d = 0; d < ID / 32; ++d) {
          Val bytes = pageBytes[pg][d];
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
    b.if_(c.lane == c.i32(0), [&] { b.store(b.ptrAdd(c.red, (blkId - lo) * c.i32(4)), sortKey(b, score)); });
  });
}

Val indexRankOf(AttentionContext& c, Val count, const std::function<Val(Val)>& keyAt,
                const std::function<Val(Val)>& blockAt, Val kb, Val bb) {
  ir::Builder& b = c.b;
  ir::Var r = b.var(c.i32(0), "rank");
  b.for_(c.i32(0), count, c.i32(1), [&](Val o) {
    Val ko = keyAt(o), bo = blockAt(o);
    Val beats = (ko > kb) | ((ko == kb) & (bo > bb));
    b.set(r, b.get(r) + b.select(beats, c.i32(1), c.i32(0)));
  });
  return b.get(r);
}

}  // namespace monogen::specs::minimax_m3
