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

/// Blocks whose page a wave has in flight at once (their table entries, then their key bytes).
constexpr int kIndexBlocksAhead = 8;
/// Entries whose LDS loads the ranking has in flight at once.
constexpr int kIndexRankAhead = 2;

/// indexSortKey in the IR: -0 -> 0; the float's order-preserving int; NaN -> INT32_MIN.
Val sortKey(ir::Builder& b, Val score) {
  Val bits = b.bitcast(score, Type::i32());
  bits = b.select(bits == b.i32(INT32_MIN), b.i32(0), bits);
  Val key = b.select(bits < b.i32(0), bits ^ b.i32(0x7fffffff), bits);
  return b.select((bits & b.i32(0x7fffffff)) > b.i32(0x7f800000), b.i32(INT32_MIN), key);
}

/// Row t's table row: the index table (vllm) or the main one (atom).

Val tableRow(AttentionContext& c, Val t) {
  const bool atom = c.variant.knobs.mode == CacheMode::Atom;
  return c.b.ptrAdd(c.arg(atom ? a::kBlockTables : a::kIndexTables), t * c.scalarI32(a::kTableStride) * c.i32(4));
}

}  // namespace

Val indexTableEntries(AttentionContext& c, Val t, Val first, Val step, Val count) {
  ir::Builder& b = c.b;
  ir::Var e = b.var(c.i32(0), "entry");
  b.if_(count > c.i32(0), [&] {
    Val j = b.min(c.lane, count - c.i32(1));
    b.set(e, b.load(Type::i32(), b.ptrAdd(tableRow(c, t), (first + step * j) * c.i32(4))));
  });
  return b.get(e);
}

void scoreIndexPages(AttentionContext& c, Val t, Val h, Val first, Val step, Val count, Val nBlk, Val seq,
                     Val laneEntries, Val qHead) {
  ir::Builder& b = c.b;
  const AttentionShape& sh = c.L.shape;
  const ModelConfig& cfg = c.variant.cfg;
  const int ID = sh.indexDim, blk = sh.block;
  Val tables = tableRow(c, t);
  b.if_(count > c.i32(0), [&] {
    // row 0 of A the index q (lanes 0, 16, 32, 48: channels 32 d + 8 group + e), B the page's 16
    // widened keys; lanes 0 .. 15 hold its dots (accumulator row 0)
    const MfmaTile T = MfmaTile::at(c.lane, ir::MfmaKind::F32_16x16x32_BF16, 1);
    const Type bf8 = Type::vec(Type::bf16(), 8);
    std::vector<Val> qA;
    for (int d = 0; d < ID / 32; ++d) {
      Val v = qHead.b ? b.load(bf8, b.ptrAdd(qHead, (c.i32(32 * d) + T.group * c.i32(8)) * c.i32(2)))
                      : b.load(bf8, b.ptrAdd(c.arg(a::kIq), ((t * c.i32(sh.indexHeads) + h) * c.i32(ID) +
                                                             c.i32(32 * d) + T.group * c.i32(8)) * c.i32(2)));
      qA.push_back(b.select(T.aRow() == c.i32(0), v, b.splat(b.bf16(0), 8)));
    }
    Val key = c.wave * c.i32(kPage16) + T.bCol();  // the lane's key in a block: page `wave`
    b.for_(c.i32(0), count, c.i32(kIndexBlocksAhead), [&](Val i0) {
      // kIndexBlocksAhead blocks' table entries, then their page's key bytes, in flight before the
      // first MFMA (past count: the last block again, not scored)
      std::vector<Val> ids, entries;
      for (int j = 0; j < kIndexBlocksAhead; ++j) {
        Val i = b.min(i0 + c.i32(j), count - c.i32(1));
        ids.push_back(first + step * i);
        // the first 64 blocks' entries on the lanes (laneEntries), the rest loaded
        ir::Var e = b.var(b.shuffle(laneEntries, b.min(i, c.i32(63))), "entry");
        b.if_(i >= c.i32(64), [&] { b.set(e, b.load(Type::i32(), b.ptrAdd(tables, ids[j] * c.i32(4)))); });
        entries.push_back(b.get(e));
      }
      std::vector<std::vector<Val>> bytes(kIndexBlocksAhead);
      for (int j = 0; j < kIndexBlocksAhead; ++j) {
        Val at = (b.sext(entries[j], Type::i64()) * b.i64(blk) + b.sext(key, Type::i64())) * b.i64(ID);
        for (int d = 0; d < ID / 32; ++d)
          bytes[j].push_back(b.load(Type::i64(), b.ptrAdd(c.arg(a::kIndexCache),
                                                          at + b.sext(c.i32(32 * d) + T.group * c.i32(8), Type::i64()))));
      }
      for (int j = 0; j < kIndexBlocksAhead; ++j) {
        Val i = i0 + c.i32(j), blkId = ids[j];
        Val pinned = (blkId < c.i32(cfg.indexInit)) | (blkId >= nBlk - c.i32(cfg.indexLocal));
        b.if_(i < count, [&] {
          ir::Var dot = b.var(c.f32(-INFINITY), "dot");
          b.if_(!pinned, [&] {
            Val acc = b.splat(c.f32(0), 4);
            for (int d = 0; d < ID / 32; ++d) {
              Val kv = b.splat(b.bf16(0), 8);
              for (int e = 0; e < 8; ++e)
                kv = b.insert(kv, b.f32ToBf16(b.fp8ToF32(b.trunc(b.lshr(bytes[j][d], b.i64(8 * e)), Type::i32()) &
                                                         c.i32(0xff))),
                              e);
              acc = b.mfma(T.kind, qA[d], kv, acc);
            }
            b.set(dot, b.select(blkId * c.i32(blk) + key < seq, b.extract(acc, 0), c.f32(-INFINITY)));
          });
          // lanes 0 .. 15 hold the page's keys; a 16-lane max leaves theirs on lane 0
          Val m = b.butterfly(b.get(dot), {8, 4, 2, 1}, ir::OpCode::Max);
          b.if_(c.lane == c.i32(0), [&] {
            b.store(b.ptrAdd(c.red, (c.wave * c.i32(kIndexTaskBlocks) + i) * c.i32(4)), m);
          });
        });
      }
    });
  });
}

void indexBlockKeys(AttentionContext& c, Val first, Val step, Val count, Val nBlk) {
  ir::Builder& b = c.b;
  const ModelConfig& cfg = c.variant.cfg;
  const float scale = indexScoreScale(cfg.indexHeadDim);
  b.for_(c.tid, count, c.i32(c.L.threads), [&](Val i) {
    Val blkId = first + step * i;
    Val m = c.f32(-INFINITY);
    for (int w = 0; w < c.L.waves; ++w)
      m = b.max(m, b.load(Type::f32(), b.ptrAdd(c.red, (c.i32(w * kIndexTaskBlocks) + i) * c.i32(4))));
    Val pinned = (blkId < c.i32(cfg.indexInit)) | (blkId >= nBlk - c.i32(cfg.indexLocal));
    Val score = b.select(pinned, c.f32(0), m * c.f32(scale));
    score = b.select(blkId < c.i32(cfg.indexInit), c.f32(1e30), score);
    score = b.select(blkId >= nBlk - c.i32(cfg.indexLocal), c.f32(1e29), score);
    b.store(b.ptrAdd(c.red, i * c.i32(4)), sortKey(b, score));
  });
}

std::vector<Val> indexRanksOf(AttentionContext& c, Val count, const std::function<Val(Val)>& keyAt,
                              const std::function<Val(Val)>& blockAt, const std::vector<std::pair<Val, Val>>& of) {
  ir::Builder& b = c.b;
  std::vector<ir::Var> r;
  for (size_t k = 0; k < of.size(); ++k) r.push_back(b.var(c.i32(0), "rank"));
  b.for_(c.i32(0), count, c.i32(kIndexRankAhead), [&](Val o0) {
    // past count: the last entry again, not counted
    std::vector<Val> ko, bo;
    for (int u = 0; u < kIndexRankAhead; ++u) {
      Val o = b.min(o0 + c.i32(u), count - c.i32(1));
      ko.push_back(keyAt(o));
      bo.push_back(blockAt(o));
    }
    for (int u = 0; u < kIndexRankAhead; ++u) {
      Val in = o0 + c.i32(u) < count;
      for (size_t k = 0; k < of.size(); ++k) {
        auto [kb, bb] = of[k];
        Val beats = in & ((ko[u] > kb) | ((ko[u] == kb) & (bo[u] > bb)));
        b.set(r[k], b.get(r[k]) + b.select(beats, c.i32(1), c.i32(0)));
      }
    }
  });
  std::vector<Val> out;
  for (ir::Var& v : r) out.push_back(b.get(v));
  return out;
}

}  // namespace monogen::specs::minimax_m3
