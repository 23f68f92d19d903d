// attn_merge: one row a task, its own CTA (the serving stack's placement past S = 1): each local
// query head's 8 splits merged, w_i = l_i exp2((m_i - max m) log2 e), o = 0 + (w_0 / sum) o_0 +
// .., to the bf16 attention row o_proj reads (AttentionSplit.h, mergeSplits); a padded row's is 0.
#include "specs/minimax_m3/kernel/AttentionConstants.h"
#include "specs/minimax_m3/kernel/stages/AttentionStageDef.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>

namespace monogen::specs::minimax_m3 {

using ir::Type;
using ir::Val;
namespace a = attn_arg;

namespace {

/// Cells a thread loads ahead: 4 x 24 values in flight (16 steps at TP 1 would spill).
constexpr int kMergeBatch = 4;

/// One (query head, channel) cell's 8 splits: m, l and o.
struct MergeCell {
  Val cell;
  std::vector<Val> m, l, o;
};

/// Loads row t's cell `cell` (a cell past the row reads the row's last one).
MergeCell loadCell(AttentionContext& c, Val t, Val cell) {
  ir::Builder& b = c.b;
  const AttentionLaunchLayout& L = c.L;
  const int D = L.shape.headDim, G = L.shape.qGroup, cells = L.shape.qHeads * D;
  Val scratch = c.arg(a::kScratch);
  Val at = b.min(cell, c.i32(cells - 1));
  Val qh = at / c.i32(D), ch = at % c.i32(D);
  Val first = (t * c.i32(L.shape.kvHeads) + qh / c.i32(G)) * c.i32(kAttnSplits), j = qh % c.i32(G);
  auto split = [&](int i) { return (first + c.i32(i)) * c.i32(G) + j; };
  auto word = [&](int64_t off, int i) { return b.load(Type::f32(), b.ptrAdd(scratch, c.i32(off) + split(i) * c.i32(4))); };
  MergeCell x{cell, {}, {}, {}};
  for (int i = 0; i < kAttnSplits; ++i) x.m.push_back(word(L.splitMOffset, i));
  for (int i = 0; i < kAttnSplits; ++i) x.l.push_back(word(L.splitLOffset, i));
  for (int i = 0; i < kAttnSplits; ++i)
    x.o.push_back(b.load(Type::bf16(), b.ptrAdd(scratch, c.i32(L.splitOOffset) + (split(i) * c.i32(D) + ch) * c.i32(2))));
  return x;
}

/// mergeSplits: w_i = l_i exp2((m_i - max m) log2 e), o = 0 + (w_0 / sum) o_0 + .. in f32.
Val mergeCell(AttentionContext& c, const MergeCell& x) {
  ir::Builder& b = c.b;
  Val gm = x.m[0];
  for (int i = 1; i < kAttnSplits; ++i) gm = b.max(gm, x.m[i]);
  std::vector<Val> sl;
  Val gs;
  for (int i = 0; i < kAttnSplits; ++i) {
    sl.push_back(x.l[i] * b.exp2((x.m[i] - gm) * c.f32(kAttnLog2e)));
    gs = i == 0 ? sl[0] : gs + sl[i];
  }
  gs = b.select(gs > c.f32(0), gs, c.f32(1));
  Val av = c.f32(0);
  for (int i = 0; i < kAttnSplits; ++i) av = av + (sl[i] / gs) * b.bf16ToF32(x.o[i]);
  return av;
}

void stageAttnMerge(AttentionContext& c, Val t) {
  ir::Builder& b = c.b;
  const AttentionLaunchLayout& L = c.L;
  const int parts = L.shape.kvHeads * kAttnSplits, cells = L.shape.qHeads * L.shape.headDim;
  const int steps = static_cast<int>((cells + L.threads - 1) / L.threads);
  Val live = b.load(Type::i64(), b.ptrAdd(c.arg(a::kSlots), t * c.i32(8))) >= b.i64(0);
  b.if_(live, [&] {
    b.if_(c.tid < c.i32(parts), [&] {
      c.await(c.pairAt(L.srdyOffset, t * c.i32(parts) + c.tid), kSiteAttnMerge, t * c.i32(parts) + c.tid);
    });
  });
  c.ctaSync(false);
  auto cellOf = [&](int k) { return c.tid + c.i32(int64_t{k} * L.threads); };
  auto outAt = [&](Val cell) { return b.ptrAdd(c.arg(a::kAttn), (t * c.i32(cells) + cell) * c.i32(2)); };
  // `n` cells (cellAt(0 .. n-1)) merged: every load of the batch before any use.
  auto mergeBatch = [&](const std::function<Val(int)>& cellAt, int n) {
    std::vector<MergeCell> batch;
    for (int k = 0; k < n; ++k) batch.push_back(loadCell(c, t, cellAt(k)));
    for (const MergeCell& x : batch) {
      Val o = mergeCell(c, x);
      b.if_(x.cell < c.i32(cells), [&] { b.store(outAt(x.cell), b.f32ToBf16(o)); });
    }
  };
  // More than one whole batch (TP 1 and 2 at full dims): a loop over the whole ones, then the rest.
  const int whole = steps / kMergeBatch;
  b.if_(live, [&] {
    int k0 = 0;
    if (whole > 1) {
      k0 = whole * kMergeBatch;
      b.for_(c.i32(0), c.i32(k0), c.i32(kMergeBatch), [&](Val kb) {
        mergeBatch([&](int k) { return c.tid + (kb + c.i32(k)) * c.i32(L.threads); }, kMergeBatch);
      });
    }
    for (; k0 < steps; k0 += kMergeBatch)
      mergeBatch([&](int k) { return cellOf(k0 + k); }, std::min(steps - k0, kMergeBatch));
  });
  for (int k = 0; k < steps; ++k)  // a padded row's is 0
    b.if_((!live) & (cellOf(k) < c.i32(cells)), [&] { b.store(outAt(cellOf(k)), b.f32ToBf16(c.f32(0))); });
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
