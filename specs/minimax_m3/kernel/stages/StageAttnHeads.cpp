// attn_heads: a wave a head unit of one row: the q heads (Gemma norm + partial NeoX RoPE ->
// bf16 q), the K heads (the same with g_k, appended as E4M3 to the K cache), the V heads (no
// norm, appended to the V cache: row 0's units, every row), the index q heads (g_iq -> iq), the
// index key (g_ik) and, with indexer CP, the other index heads' q (g_iq -> IQCP). The head's D
// channels sit 4 a lane on lanes 0 .. D/4 - 1 (AttentionPre.h, headNormRope; AttentionReference).
#include "specs/minimax_m3/kernel/stages/AttentionStageDef.h"

#include <fmt/format.h>

#include <climits>
#include <functional>

namespace monogen::specs::minimax_m3 {

using ir::Type;
using ir::Val;
namespace a = attn_arg;

namespace {

Val absF(ir::Builder& b, Val x) { return b.unary(ir::OpCode::Abs, x); }
Val negF(ir::Builder& b, Val x) {
  return b.bitcast(b.bitcast(x, Type::i32()) ^ b.i32(INT32_MIN), Type::f32());
}

/// One row's view for its head units.
struct RowView {
  Val t, live, slot, cs;  // cs: the position's bf16 cos / sin row
  Val qkv;                // the row's bf16 GEMV outputs
  Val cosv, sinv;         // the lane's 4 cos and sin of cs (heads tasks; the V loop leaves them unset)
};

/// The lane's 4 channels 4 lane .. of the head at GEMV row `row0`: bf16 -> f32 (lanes past D/4
/// read the head's last 4 channels; callers mask them).
std::vector<Val> loadHead(AttentionContext& c, const RowView& r, Val row0, int D) {
  ir::Builder& b = c.b;
  Val lc = b.select(c.lane < c.i32(D / 4), c.lane, c.i32(D / 4 - 1));
  Val v = b.load(Type::vec(Type::bf16(), 4), b.ptrAdd(r.qkv, (row0 + lc * c.i32(4)) * c.i32(2)));
  std::vector<Val> e;
  for (int j = 0; j < 4; ++j) e.push_back(b.bf16ToF32(b.extract(v, j)));
  return e;
}

/// The head's Gemma RMSNorm and partial NeoX RoPE, f32 unrounded: ss a lane ((0 + e0²) + e1²) +
/// .., the 32-lane butterfly, rstd = rsq(ss / D + eps), n = (e rstd)(1 + g); channel d < rotary/2
/// fma(n_d, cos, -(n_{d+r/2} sin)), r/2 <= d < rotary fma(n_d, cos, n_{d-r/2} sin), past: n_d.
std::vector<Val> normRope(AttentionContext& c, const RowView& r, const std::vector<Val>& e, Val g, int D) {
  ir::Builder& b = c.b;
  const int rotary = c.L.shape.rotaryDim, half = rotary / 2;
  const float eps = static_cast<float>(c.variant.cfg.rmsEps);
  Val ss = c.f32(0);
  for (int j = 0; j < 4; ++j) ss = ss + e[j] * e[j];
  ss = b.butterfly(b.select(c.lane < c.i32(D / 4), ss, c.f32(0)), {16, 8, 4, 2, 1});
  Val rr = b.rsq(ss / c.f32(D) + c.f32(eps));
  std::vector<Val> n;
  for (int j = 0; j < 4; ++j) n.push_back((e[j] * rr) * (b.bf16ToF32(b.extract(g, j)) + c.f32(1)));
  // the partner channel d +- rotary/2 sits rotary/8 lanes away, same element
  const int dl = half / 4;
  Val first = c.lane < c.i32(dl), inRot = c.lane < c.i32(rotary / 4);
  Val up = b.select(c.lane + c.i32(dl) < c.i32(64), c.lane + c.i32(dl), c.lane);
  Val down = b.select(c.lane >= c.i32(dl), c.lane - c.i32(dl), c.lane);
  Val cosv = r.cosv, sinv = r.sinv;
  std::vector<Val> out;
  for (int j = 0; j < 4; ++j) {
    Val pu = b.shuffle(n[j], up), pd = b.shuffle(n[j], down);
    Val ps = b.select(first, pu, pd) * b.bf16ToF32(b.extract(sinv, j));
    Val roped = b.fma(n[j], b.bf16ToF32(b.extract(cosv, j)), b.select(first, negF(b, ps), ps));
    out.push_back(b.select(inRot, roped, n[j]));
  }
  return out;
}

/// A per-token scale (atom): the head's amax over the live lanes, amax > 0 ? amax / 448 : 1.
Val tokenScale(AttentionContext& c, const std::vector<Val>& v, int D) {
  ir::Builder& b = c.b;
  Val m = c.f32(0);
  for (const Val& x : v) m = b.max(m, absF(b, x));
  m = b.butterfly(b.select(c.lane < c.i32(D / 4), m, c.f32(0)), {16, 8, 4, 2, 1}, ir::OpCode::Max);
  return b.select(m > c.f32(0), m / c.f32(448), c.f32(1));
}

/// The 4 codes as one little-endian i32 (channel 4 lane first).
Val packCodes(ir::Builder& b, const std::vector<Val>& codes) {
  Val w = codes[0];
  for (int j = 1; j < 4; ++j) w = w | (codes[j] << b.i32(8 * j));
  return w;
}

/// The K or V page-16 of local KV head h for the row's slot, and the token in it (i64, i32).
std::pair<Val, Val> pageOf(AttentionContext& c, Val slot, Val h) {
  ir::Builder& b = c.b;
  const int ppb = c.L.shape.block / kPage16;
  if (c.variant.knobs.mode == CacheMode::Atom) {
    Val m = slot / b.i64(c.L.shape.block), i = slot % b.i64(c.L.shape.block);
    Val page = (m * b.i64(c.L.shape.kvHeads) + b.sext(h, Type::i64())) * b.i64(ppb) + i / b.i64(kPage16);
    return {page, b.trunc(i % b.i64(kPage16), Type::i32())};
  }
  Val page = slot / b.i64(kPage16) + b.sext(h * c.i32(ppb), Type::i64());
  return {page, b.trunc(slot % b.i64(kPage16), Type::i32())};
}

RowView rowView(AttentionContext& c, Val t) {
  ir::Builder& b = c.b;
  RowView r;
  r.t = t;
  r.slot = b.load(Type::i64(), b.ptrAdd(c.arg(a::kSlots), t * c.i32(8)));
  r.live = r.slot >= b.i64(0);
  Val pos = b.select(r.live, b.load(Type::i64(), b.ptrAdd(c.arg(a::kPositions), t * c.i32(8))), b.i64(0));
  r.cs = b.ptrAdd(c.arg(a::kCosSin), pos * b.i64(2 * c.L.shape.rotaryDim));
  r.qkv = b.ptrAdd(c.arg(a::kScratch), c.i32(c.L.qkvOffset) + t * c.i32(2 * c.L.qkvRows));
  return r;
}

/// rowView and the lane's cos / sin: channels (4 lane) % (rotary / 2) .. of cos, the same of sin.
RowView ropeRowView(AttentionContext& c, Val t) {
  ir::Builder& b = c.b;
  RowView r = rowView(c, t);
  const int half = c.L.shape.rotaryDim / 2;
  Val col = (c.lane * c.i32(4)) % c.i32(half);
  r.cosv = b.load(Type::vec(Type::bf16(), 4), b.ptrAdd(r.cs, col * c.i32(2)));
  r.sinv = b.load(Type::vec(Type::bf16(), 4), b.ptrAdd(r.cs, (col + c.i32(half)) * c.i32(2)));
  return r;
}

/// `awaitQ` is called between the task's input loads (slot, position, cos / sin, the unit's norm
/// weights, index slot) and its GEMV rows' loads (the QRDY wait, first task).
void stageAttnHeads(AttentionContext& c, Val task, const std::function<void()>& awaitQ) {
  ir::Builder& b = c.b;
  const AttentionLaunchLayout& L = c.L;
  const AttentionShape& sh = L.shape;
  const int D = sh.headDim, ID = sh.indexDim;
  const bool atom = c.variant.knobs.mode == CacheMode::Atom;
  const RowView r = ropeRowView(c, task / c.i32(L.headTasks));
  Val unit = b.named((task % c.i32(L.headTasks)) * c.i32(L.waves) + c.wave, "unit");
  Val lanes = c.lane < c.i32(D / 4);
  const int64_t pageBytes = int64_t{kPage16} * D;
  Val d0 = c.lane * c.i32(4);
  // the wave's unit's norm weights (q, K: g_q, g_k over D; index q, key: g_iq, g_ik over ID; V
  // none: g_k, unused), channels 4 lane .. (clamped as loadHead's), and the index slot
  Val kBase = c.i32(sh.qHeads), vBase = c.i32(sh.qHeads + sh.kvHeads);
  Val iqBase = c.i32(sh.qHeads + 2 * sh.kvHeads);
  Val indexUnit = unit >= iqBase;
  Val gPtr = b.select(unit < kBase, c.arg(a::kGQ), c.arg(a::kGK));
  Val gDim = c.i32(D / 4);
  if (!c.variant.knobs.fullLayer) {
    gPtr = b.select(indexUnit, b.select(unit < iqBase + c.i32(sh.indexHeads), c.arg(a::kGIq), c.arg(a::kGIk)), gPtr);
    if (sh.cpHeads > 0)  // the other index heads' q units, past the index key's
      gPtr = b.select(unit > iqBase + c.i32(sh.indexHeads), c.arg(a::kGIq), gPtr);
    gDim = b.select(indexUnit, c.i32(ID / 4), gDim);
  }
  Val gLc = b.select(c.lane < gDim, c.lane, gDim - c.i32(1));
  Val gv = b.load(Type::vec(Type::bf16(), 4), b.ptrAdd(gPtr, gLc * c.i32(8)));
  Val islot = atom || c.variant.knobs.fullLayer ? r.slot
                                                 : b.load(Type::i64(), b.ptrAdd(c.arg(a::kIndexSlots), r.t * c.i32(8)));
  // vllm's scalar K and V scales
  Val kScalar = atom ? Val{} : b.load(Type::f32(), c.arg(a::kKScale));
  Val vScalar = atom ? Val{} : b.load(Type::f32(), c.arg(a::kVScale));
  awaitQ();

  // q: bf16(out) -> q [S, qHeads, D] (0 for a padded row)
  b.if_(unit < c.i32(sh.qHeads), [&] {
    auto out = normRope(c, r, loadHead(c, r, c.i32(sh.qOff) + unit * c.i32(D), D), gv, D);
    Val q = c.arg(a::kQ);
    b.if_(lanes, [&] {
      for (int j = 0; j < 4; ++j)
        b.store(b.ptrAdd(q, ((r.t * c.i32(sh.qHeads) + unit) * c.i32(D) + d0 + c.i32(j)) * c.i32(2)),
                b.f32ToBf16(b.select(r.live, out[j], c.f32(0))));
    });
  });
  // K: E4M3(bf16(out) / kScale) at (page, token, channel) of the K view
  b.if_((unit >= kBase) & (unit < vBase), [&] {
    Val h = unit - kBase;
    auto out = normRope(c, r, loadHead(c, r, c.i32(sh.kOff) + h * c.i32(D), D), gv, D);
    auto [page, tok] = pageOf(c, r.slot, h);
    Val kScales = c.arg(a::kKScale);
    Val ks = atom ? tokenScale(c, out, D) : kScalar;
    std::vector<Val> codes;
    for (int j = 0; j < 4; ++j) codes.push_back(e4m3Writer(b, b.roundBf16(out[j]) / ks));
    Val word = packCodes(b, codes);
    Val kCache = c.arg(a::kKCache);
    b.if_(r.live & lanes, [&] {
      Val off = page * b.i64(pageBytes) +
                b.sext((d0 / c.i32(16)) * c.i32(256) + tok * c.i32(16) + d0 % c.i32(16), Type::i64());
      b.store(b.ptrAdd(kCache, off), word);
      if (atom)
        b.if_(c.lane == c.i32(0), [&] {
          b.store(b.ptrAdd(kScales, (page * b.i64(kPage16) + b.sext(tok, Type::i64())) * b.i64(4)), ks);
        });
    });
  });
  // V: E4M3(v / vScale), channel-major in the V view, no norm, no RoPE. Tokens of a page share
  // its 4-byte words, so row 0's unit of head h appends every row's V, rows in order.
  b.if_((unit >= vBase) & (unit < c.i32(sh.qHeads + 2 * sh.kvHeads)) & (r.t == c.i32(0)), [&] {
    Val h = unit - vBase;
    Val vScales = c.arg(a::kVScale);
    Val vView = atom ? c.arg(a::kVCache)
                     : b.ptrAdd(c.arg(a::kKCache), int64_t{sh.kvHeads} * (sh.block / kPage16) * pageBytes);
    b.for_(c.i32(0), c.i32(L.rows), c.i32(1), [&](Val t) {
      const RowView rv = rowView(c, t);
      auto v = loadHead(c, rv, c.i32(sh.vOff) + h * c.i32(D), D);
      auto [page, tok] = pageOf(c, rv.slot, h);
      Val vs = atom ? tokenScale(c, v, D) : vScalar;
      b.if_(rv.live & lanes, [&] {
        for (int j = 0; j < 4; ++j) {
          Val off = page * b.i64(pageBytes) + b.sext((d0 + c.i32(j)) * c.i32(kPage16) + tok, Type::i64());
          b.store(b.ptrAdd(vView, off), b.trunc(e4m3Writer(b, v[j] / vs), Type::i8()));
        }
        if (atom)
          b.if_(c.lane == c.i32(0), [&] {
            b.store(b.ptrAdd(vScales, (page * b.i64(kPage16) + b.sext(tok, Type::i64())) * b.i64(4)), vs);
          });
      });
    });
  });
  if (c.variant.knobs.fullLayer) return;
  // an index q head g of `heads` at w_qkv row rowOff + g ID: bf16(out) (atom), or bf16 through
  // E4M3 at unit scale and back (vllm) -> dst [row][heads][ID]
  auto indexQ = [&](Val g, int64_t rowOff, const std::function<Val()>& dstOf, int heads) {
    auto out = normRope(c, r, loadHead(c, r, c.i32(rowOff) + g * c.i32(ID), ID), gv, ID);
    Val dst = dstOf();
    b.if_(c.lane < c.i32(ID / 4), [&] {
      for (int j = 0; j < 4; ++j) {
        Val v = b.roundBf16(out[j]);
        if (!atom) v = b.fp8ToF32(e4m3Writer(b, v));
        b.store(b.ptrAdd(dst, ((r.t * c.i32(heads) + g) * c.i32(ID) + d0 + c.i32(j)) * c.i32(2)),
                b.f32ToBf16(b.select(r.live, v, c.f32(0))));
      }
    });
  };
  b.if_((unit >= iqBase) & (unit < iqBase + c.i32(sh.indexHeads)), [&] {
    Val g = unit - iqBase;
    indexQ(g, sh.iqOff, [&] { return c.arg(a::kIq); }, sh.indexHeads);
  });
  // indexer CP: the other index heads' q (units past the index key) -> IQCP
  if (sh.cpHeads > 0) {
    Val cpBase = iqBase + c.i32(sh.indexHeads + 1);
    b.if_((unit >= cpBase) & (unit < cpBase + c.i32(sh.cpHeads)), [&] {
      indexQ(unit - cpBase, sh.cpOff, [&] { return b.ptrAdd(c.arg(a::kScratch), c.i32(L.iqCpOffset)); }, sh.cpHeads);
    });
  }
  // the index key: E4M3(bf16(out)) at index slot x indexDim + channel
  b.if_(unit == c.i32(sh.qHeads + 2 * sh.kvHeads + sh.indexHeads), [&] {
    auto out = normRope(c, r, loadHead(c, r, c.i32(sh.ikOff), ID), gv, ID);
    std::vector<Val> codes;
    for (int j = 0; j < 4; ++j) codes.push_back(e4m3Writer(b, b.roundBf16(out[j])));
    Val word = packCodes(b, codes);
    Val cache = c.arg(a::kIndexCache);
    b.if_(r.live & (c.lane < c.i32(ID / 4)), [&] {
      b.store(b.ptrAdd(cache, islot * b.i64(ID) + b.sext(d0, Type::i64())), word);
    });
  });
}

/// Heads task `task` is done: its CTA's stores drained, thread 0 counts it in heads_count for its row (row
/// 0's V tasks, which append every row's V, for every row too); a row's last task resets the
/// count to 0 and publishes HRDY (the acq_rel adds chain every counted task's stores to it).
void countHeadsTask(AttentionContext& c, Val task) {
  ir::Builder& b = c.b;
  const AttentionLaunchLayout& L = c.L;
  c.ctaSync(true);
  Val row = task / c.i32(L.headTasks), j = task % c.i32(L.headTasks);
  auto arrive = [&](Val r, Val need) {
    Val cnt = b.ptrAdd(c.arg(a::kHeadsCount), r * c.i32(4));
    Val old = b.atomicRmw(ir::RmwOp::Add, cnt, c.i32(1), ir::MemOrder::AcqRel, ir::MemScope::Agent);
    b.if_(old == need - c.i32(1), [&] {
      b.store(cnt, c.i32(0), ir::MemOrder::Relaxed, ir::MemScope::Agent);
      c.publish(c.pairAt(L.hrdyOffset, r));
    });
  };
  b.if_(c.tid == c.i32(0), [&] {
    arrive(row, c.i32(L.headTasks) + b.select(row > c.i32(0), c.i32(L.vTasks), c.i32(0)));
    b.if_((row == c.i32(0)) & (j >= c.i32(L.vTask0)) & (j < c.i32(L.vTask0 + L.vTasks)), [&] {
      b.for_(c.i32(1), c.i32(L.rows), c.i32(1), [&](Val r) { arrive(r, c.i32(L.headTasks + L.vTasks)); });
    });
  });
}

}  // namespace

extern const AttentionStageDef kAttnHeadsStage = {
    [](const AttentionLaunchLayout& L) { return L.heads; },
    [](const AttentionLaunchLayout& L) { return std::vector<ir::FlagUse>{{"QRDY", L.qkvTiles}}; },
    [](const AttentionLaunchLayout& L) { return std::vector<ir::FlagUse>{{"HRDY", L.rows}}; },
    [](const AttentionLaunchLayout& L) {
      return fmt::format("{} tasks a row, a wave a head unit ({} q, {} K, {} V{}{}): norm + partial RoPE -> q; "
                         "E4M3 appends -> the caches; a row's last task -> HRDY",
                         L.headTasks, L.shape.qHeads, L.shape.kvHeads, L.shape.kvHeads,
                         L.headUnits > L.shape.qHeads + 2 * L.shape.kvHeads ? fmt::format(", {} index q, the index key", L.shape.indexHeads) : "",
                         L.shape.cpHeads > 0 ? fmt::format(", {} other index q (CP)", L.shape.cpHeads) : "");
    },
    [](AttentionContext& c) {
      // every QRDY tile, once a CTA: in its first task (t < blocks), after the task's input loads
      c.forEachTask(c.L.heads, [&](Val t) {
        stageAttnHeads(c, t, [&] {
          c.b.if_(t < c.i32(c.L.blocks), [&] { c.awaitAllOnce(c.L.heads, c.L.qrdyOffset, c.L.qkvTiles, kSiteAttnHeads); });
        });
        countHeadsTask(c, t);
      });
    },
    "headNormRope, the inserts of attentionReference (AttentionPre.h, AttentionReference.h)",
};

}  // namespace monogen::specs::minimax_m3
