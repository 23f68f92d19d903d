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

/// Cells a thread loads ahead: 4 x 8 o values in flight.
constexpr int kMergeBatch = 4;

/// One (query head, channel) cell: its head and its 8 splits' o.
struct MergeCell {
  Val cell, qh;
  std::vector<Val> o;
};

/// Split 0's index in SPLIT_M / SPLIT_L of row t's local query head qh (split i: + i x qGroup).
Val splitWord0(AttentionContext& c, Val t, Val qh) {
  const int G = c.L.shape.qGroup;
  return ((t * c.i32(c.L.shape.kvHeads) + qh / c.i32(G)) * c.i32(kAttnSplits)) * c.i32(G) + qh % c.i32(G);
}

/// The local query head of a row's cell `cell` (a cell past the row: the row's last one's).
Val cellHead(AttentionContext& c, Val cell) {
  const int D = c.L.shape.headDim;
  return c.b.min(cell, c.i32(c.L.shape.qHeads * D - 1)) / c.i32(D);
}

/// Loads row t's cell `cell`'s 8 o (a cell past the row reads the row's last one).
MergeCell loadCell(AttentionContext& c, Val t, Val cell) {
  ir::Builder& b = c.b;
  const AttentionLaunchLayout& L = c.L;
  const int D = L.shape.headDim, G = L.shape.qGroup, cells = L.shape.qHeads * D;
  Val qh = cellHead(c, cell), ch = b.min(cell, c.i32(cells - 1)) % c.i32(D);
  Val o0 = b.ptrAdd(c.arg(a::kScratch), c.i32(L.splitOOffset) + (splitWord0(c, t, qh) * c.i32(D) + ch) * c.i32(2));
  MergeCell x{cell, qh, {}};
  for (int i = 0; i < kAttnSplits; ++i) x.o.push_back(b.load(Type::bf16(), b.ptrAdd(o0, c.i32(2 * i * G * D))));
  return x;
}

}  // namespace

void mergeAttentionRow(AttentionContext& c, Val t, Val lds, const std::function<void(Val, Val)>& out) {
  ir::Builder& b = c.b;
  const AttentionLaunchLayout& L = c.L;
  const int parts = L.shape.kvHeads * kAttnSplits, cells = L.shape.qHeads * L.shape.headDim;
  const int G = L.shape.qGroup, pairs = L.shape.qHeads * kAttnSplits;
  const int steps = static_cast<int>((cells + L.threads - 1) / L.threads);
  Val live = b.load(Type::i64(), b.ptrAdd(c.arg(a::kSlots), t * c.i32(8))) >= b.i64(0);
  b.if_(live, [&] {
    b.if_(c.tid < c.i32(parts), [&] {
      c.await(c.pairAt(L.srdyOffset, t * c.i32(parts) + c.tid), kSiteAttnMerge, t * c.i32(parts) + c.tid);
    });
  });
  c.ctaSync(false);
  auto cellOf = [&](int k) { return c.tid + c.i32(int64_t{k} * L.threads); };
  // the weights, once a (query head, split): thread p = 8 head + i (a pass of `threads` pairs
  // at a time): gm = max m, sl_i = l_i exp2((m_i - gm) log2 e) -> LDS; gs = the head's sl
  // summed from split 0 (1 if not > 0); w_i = sl_i / gs -> LDS [head][split]
  Val ldsSl = lds, ldsW = b.ptrAdd(lds, c.i32(4 * pairs));
  auto eachPair = [&](const std::function<void(Val)>& body) {
    for (int p0 = 0; p0 < pairs; p0 += L.threads) {
      Val p = c.tid + c.i32(p0);
      b.if_(p < c.i32(pairs), [&] { body(p); });
    }
  };
  const int first = std::min(steps, kMergeBatch);
  // the first batch's o in flight meanwhile, a live row's only (a padded row's were never written)
  std::vector<MergeCell> batch0;
  std::vector<std::vector<ir::Var>> o0(first);
  for (int k = 0; k < first; ++k)
    for (int i = 0; i < kAttnSplits; ++i) o0[k].push_back(b.var(b.bf16(0), "merge_o"));
  b.if_(live, [&] {
    for (int k = 0; k < first; ++k) {
      const MergeCell x = loadCell(c, t, cellOf(k));
      for (int i = 0; i < kAttnSplits; ++i) b.set(o0[k][i], x.o[i]);
    }
  });
  for (int k = 0; k < first; ++k) {
    MergeCell x{cellOf(k), cellHead(c, cellOf(k)), {}};
    for (int i = 0; i < kAttnSplits; ++i) x.o.push_back(b.get(o0[k][i]));
    batch0.push_back(x);
  }
  b.if_(live, [&] {
    eachPair([&](Val p) {
      Val w0 = splitWord0(c, t, p / c.i32(kAttnSplits)), i = p % c.i32(kAttnSplits);
      Val m0 = b.ptrAdd(c.arg(a::kScratch), c.i32(L.splitMOffset) + w0 * c.i32(4));
      std::vector<Val> m;
      for (int k = 0; k < kAttnSplits; ++k) m.push_back(b.load(Type::f32(), b.ptrAdd(m0, c.i32(4 * k * G))));
      Val l = b.load(Type::f32(), b.ptrAdd(c.arg(a::kScratch), c.i32(L.splitLOffset) + (w0 + i * c.i32(G)) * c.i32(4)));
      Val mi = b.load(Type::f32(), b.ptrAdd(m0, i * c.i32(4 * G)));
      Val gm = m[0];
      for (int k = 1; k < kAttnSplits; ++k) gm = b.max(gm, m[k]);
      b.store(b.ptrAdd(ldsSl, p * c.i32(4)), l * b.exp2((mi - gm) * c.f32(kAttnLog2e)));
    });
  });
  c.ctaSync(false);
  b.if_(live, [&] {
    eachPair([&](Val p) {
      Val h0 = b.ptrAdd(ldsSl, (p / c.i32(kAttnSplits)) * c.i32(4 * kAttnSplits));
      std::vector<Val> sl;
      for (int k = 0; k < kAttnSplits; ++k) sl.push_back(b.load(Type::f32(), b.ptrAdd(h0, c.i32(4 * k))));
      Val own = b.load(Type::f32(), b.ptrAdd(ldsSl, p * c.i32(4)));
      Val gs = sl[0];
      for (int k = 1; k < kAttnSplits; ++k) gs = gs + sl[k];
      gs = b.select(gs > c.f32(0), gs, c.f32(1));
      b.store(b.ptrAdd(ldsW, p * c.i32(4)), own / gs);
    });
  });
  c.ctaSync(false);
  // o = 0 + w_0 o_0 + .. + w_7 o_7 in f32, a batch's cells' chains interleaved
  auto mergeBatch = [&](const std::vector<MergeCell>& xs) {
    const size_t n = xs.size();
    std::vector<std::vector<Val>> w(n);
    for (size_t k = 0; k < n; ++k) {
      Val h0 = b.ptrAdd(ldsW, xs[k].qh * c.i32(4 * kAttnSplits));
      for (int i = 0; i < kAttnSplits; ++i) w[k].push_back(b.load(Type::f32(), b.ptrAdd(h0, c.i32(4 * i))));
    }
    std::vector<Val> av(n, c.f32(0));
    for (int i = 0; i < kAttnSplits; ++i)
      for (size_t k = 0; k < n; ++k) av[k] = av[k] + w[k][i] * b.bf16ToF32(xs[k].o[i]);
    for (size_t k = 0; k < n; ++k)
      b.if_(xs[k].cell < c.i32(cells), [&] { out(xs[k].cell, b.f32ToBf16(av[k])); });
  };
  auto loadBatch = [&](const std::function<Val(int)>& cellAt, int n) {
    std::vector<MergeCell> xs;
    for (int k = 0; k < n; ++k) xs.push_back(loadCell(c, t, cellAt(k)));
    return xs;
  };
  // the first batch (loaded above), then a loop over the whole batches past it (TP 1 and 2 at
  // full dims), then the rest
  b.if_(live, [&] {
    mergeBatch(batch0);
    const int whole = (steps - first) / kMergeBatch;
    int k0 = first;
    if (whole > 1) {
      b.for_(c.i32(k0), c.i32(k0 + whole * kMergeBatch), c.i32(kMergeBatch), [&](Val kb) {
        mergeBatch(loadBatch([&](int k) { return c.tid + (kb + c.i32(k)) * c.i32(L.threads); }, kMergeBatch));
      });
      k0 += whole * kMergeBatch;
    }
    for (; k0 < steps; k0 += kMergeBatch)
      mergeBatch(loadBatch([&](int k) { return cellOf(k0 + k); }, std::min(steps - k0, kMergeBatch)));
  });
  for (int k = 0; k < steps; ++k)  // a padded row's is 0
    b.if_((!live) & (cellOf(k) < c.i32(cells)), [&] { out(cellOf(k), b.f32ToBf16(c.f32(0))); });
}

namespace {

void stageAttnMerge(AttentionContext& c, Val t) {
  const int cells = c.L.shape.qHeads * c.L.shape.headDim;
  mergeAttentionRow(c, t, c.red, [&](Val cell, Val v) {
    c.b.store(c.b.ptrAdd(c.arg(a::kAttn), (t * c.i32(cells) + cell) * c.i32(2)), v);
  });
  // the row's stores before ARDY (the layer launch, for o_proj; padded rows too); either way the
  // weights in LDS are read before the CTA's next task
  c.ctaSync(c.L.ardyOffset >= 0);
  if (c.L.ardyOffset >= 0) c.b.if_(c.tid == c.i32(0), [&] { c.publish(c.pairAt(c.L.ardyOffset, t)); });
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
