// attn_merge: one row a task, its own CTA (the serving stack's placement past S = 1): each local
// query head's 8 splits merged, w_i = l_i exp2((m_i - max m) log2 e), o = 0 + (w_0 / sum) o_0 +
// .., to the bf16 attention row o_proj reads (AttentionSplit.h, mergeSplits); a padded row's is 0.
#include "specs/minimax_m3/kernel/AttentionConstants.h"
#include "specs/minimax_m3/kernel/stages/AttentionStageDef.h"

#include <fmt/format.h>

namespace monogen::specs::minimax_m3 {

using ir::Type;
using ir::Val;
namespace a = attn_arg;

namespace {

void stageAttnMerge(AttentionContext& c, Val t) {
  ir::Builder& b = c.b;
  const AttentionLaunchLayout& L = c.L;
  const AttentionShape& sh = L.shape;
  const int D = sh.headDim, G = sh.qGroup, parts = sh.kvHeads * kAttnSplits;
  Val live = b.load(Type::i64(), b.ptrAdd(c.arg(a::kSlots), t * c.i32(8))) >= b.i64(0);
  b.if_(live, [&] {
    b.if_(c.tid < c.i32(parts), [&] {
      c.await(c.pairAt(L.srdyOffset, t * c.i32(parts) + c.tid), kSiteAttnMerge, t * c.i32(parts) + c.tid);
    });
  });
  c.ctaSync(false);
  Val scratch = c.arg(a::kScratch), attn = c.arg(a::kAttn);
  const int cells = sh.qHeads * D;
  for (int k = 0; int64_t{k} * L.threads < cells; ++k) {
    Val cell = c.tid + c.i32(int64_t{k} * L.threads);
    Val out = b.ptrAdd(attn, (t * c.i32(cells) + cell) * c.i32(2));
    b.if_(live & (cell < c.i32(cells)), [&] {
      Val qh = cell / c.i32(D), ch = cell % c.i32(D);
      Val first = (t * c.i32(sh.kvHeads) + qh / c.i32(G)) * c.i32(kAttnSplits), j = qh % c.i32(G);
      auto at = [&](int64_t off, int i) { return b.ptrAdd(scratch, c.i32(off) + ((first + c.i32(i)) * c.i32(G) + j) * c.i32(4)); };
      std::vector<Val> m, sl;
      for (int i = 0; i < kAttnSplits; ++i) m.push_back(b.load(Type::f32(), at(L.splitMOffset, i)));
      Val gm = m[0];
      for (int i = 1; i < kAttnSplits; ++i) gm = b.max(gm, m[i]);
      Val gs;
      for (int i = 0; i < kAttnSplits; ++i) {
        sl.push_back(b.load(Type::f32(), at(L.splitLOffset, i)) * b.exp2((m[i] - gm) * c.f32(kAttnLog2e)));
        gs = i == 0 ? sl[0] : gs + sl[i];
      }
      gs = b.select(gs > c.f32(0), gs, c.f32(1));
      Val av = c.f32(0);
      for (int i = 0; i < kAttnSplits; ++i) {
        Val o = b.load(Type::bf16(), b.ptrAdd(scratch, c.i32(L.splitOOffset) +
                                                           (((first + c.i32(i)) * c.i32(G) + j) * c.i32(D) + ch) * c.i32(2)));
        av = av + (sl[i] / gs) * b.bf16ToF32(o);
      }
      b.store(out, b.f32ToBf16(av));
    });
    b.if_(!live & (cell < c.i32(cells)), [&] { b.store(out, b.f32ToBf16(c.f32(0))); });
  }
  if (L.ardyOffset >= 0) {  // the layer launch: the row is written, for o_proj (padded rows too)
    c.ctaSync(true);
    b.if_(c.tid == c.i32(0), [&] { c.publish(c.pairAt(L.ardyOffset, t)); });
  }
}

}  // namespace

extern const AttentionStageDef kAttnMergeStage = {
    [](const AttentionLaunchLayout& L) { return L.merge; },
    [](const AttentionLaunchLayout& L) { return std::vector<ir::FlagUse>{{"SRDY", L.splitTasks}}; },
    [](const AttentionLaunchLayout& L) {
      return L.ardyOffset >= 0 ? std::vector<ir::FlagUse>{{"ARDY", L.rows}} : std::vector<ir::FlagUse>{};
    },
    [](const AttentionLaunchLayout& L) {
      return fmt::format("row task: {} query heads x {} channels, 8 splits each merged -> the bf16 attention row",
                         L.shape.qHeads, L.shape.headDim);
    },
    [](AttentionContext& c) { c.forEachTask(c.L.merge, [&](Val t) { stageAttnMerge(c, t); }); },
    "mergeSplits (AttentionSplit.h)",
};

}  // namespace monogen::specs::minimax_m3
