#include "ir/Op.h"
#include "specs/minimax_m3/kernel/Sites.h"
#include "specs/minimax_m3/kernel/stages/Stages.h"

namespace monogen::specs::minimax_m3 {

using ir::MemOrder;
using ir::MemScope;
using ir::RmwOp;
using ir::Type;
using ir::Val;

// Every CTA once: waits for ROUTE's picks and weights (site table; relaxed: the pairs are the data) and builds the slot table in
// LDS: slot 0 the shared expert over the valid rows, then each picked expert's rows ascending;
// CTA 0 copies it to TABDUMP. The construction: docs/minimax-m3-kernel.md, "table". A pick
// that did not come, or came outside [-1, E) (site pick), is never an index: it drops its row
// (the row's bit leaves the valid mask: no slot 0 column, no combine), and the launch is INVALID.
constexpr int32_t kLostPick = -2;

void stageTable(KernelContext& c) {
  ir::Builder& b = c.b;
  const Layout& L = c.L;
  const MoeTiling& T = L.tiling;
  const auto& W = L.tw;
  const int S = L.rows, K = L.topk, E = L.experts, n = S * K;

  // an input, loaded before the waits: thread t < S's row slot (valid when >= 0)
  Val slot = b.load(Type::i64(), c.elemAt(c.slots, b.min(c.tid, c.i32(S - 1)), 8));
  // thread i < 2 S K waits for ROUTE's pair i (one wait for a row's picks and weights together;
  // checked for both: the picks' check load is the wave's anyway, and a lost weight stores 0, not a
  // stale launch's)
  b.if_(c.tid < 2 * n, [&] {
    Val t = c.tid / (2 * K), k = c.tid % (2 * K);
    Val code = c.errorCode(kSiteTable, t);
    AwaitedPair e = c.awaitChecked(c.pairAt(c.scratch, L.routeA, c.tid), code, kSiteTable, MemOrder::Relaxed);
    Val at = t * K + k;  // pick t K + k (k < K); its weight at k - K (k >= K)
    b.if_(k < c.i32(K), [&] {
      AwaitedPair pick = guardIndex(b, e, -1, E, c.i32(kLostPick));
      b.if_(e.ok & !pick.ok, [&] { c.fail(c.errorCode(kSitePick, t)); });  // it came, out of range
      c.tabSt(W.pickE, at, pick.value);
    }, [&] { c.tabSt(W.pickW, at - K, b.select(e.ok, e.value, c.i32(0))); });  // a weight that did not come: 0.0
  });
  b.if_(c.tid < E, [&] { c.tabSt(W.mask, c.tid, c.i32(0)); });
  b.for_(c.tid, c.i32(T.maxSlots * 16), c.i32(L.threads), [&](Val i) {
    c.tabSt(W.slotRow, i, c.i32(-1));
    c.tabSt(W.slotPick, i, c.i32(-1));
  });
  {
    Val vm = b.trunc(b.ballot((c.tid < S) & (slot >= b.i64(0))), Type::i32());
    b.if_(c.tid == 0, [&] { c.tabSt(W.misc, 1, vm); });
  }
  c.ctaSync(false);

  b.if_(c.tid < n, [&] {
    Val e = c.tabLd(W.pickE, c.tid);
    b.if_(e >= 0, [&] {
      b.atomicRmw(RmwOp::Or, c.tabAt(W.mask, e), c.i32(1) << (c.tid / K), MemOrder::Relaxed,
                  MemScope::Workgroup);
    });
    b.if_(e == kLostPick, [&] {  // the row leaves the valid mask
      b.atomicRmw(RmwOp::And, c.tabAt(W.misc, c.i32(1)), c.i32(-1) ^ (c.i32(1) << (c.tid / K)), MemOrder::Relaxed,
                  MemScope::Workgroup);
    });
  });
  c.ctaSync(false);

  // slots of the picked experts, ascending
  Val m = b.select(c.tid < E, c.tabLd(W.mask, b.min(c.tid, c.i32(E - 1))), c.i32(0));
  Val ball = b.ballot(m != 0);
  Val below = b.popcount(ball & ((b.i64(1) << b.zext(c.lane, Type::i64())) - b.i64(1)));
  b.if_(c.lane == 0, [&] {
    b.if_(c.wave < L.waves, [&] { c.tabSt(W.misc, 2 + c.wave, b.popcount(ball)); });
  });
  c.ctaSync(false);
  Val vmask = c.tabLd(W.misc, 1);
  Val wavesBelow = c.i32(0), all = c.i32(0);
  for (int w = 0; w < (E + 63) / 64; ++w) {
    Val cnt = c.tabLd(W.misc, 2 + w);
    wavesBelow = wavesBelow + b.select(w < c.wave, cnt, c.i32(0));
    all = all + cnt;
  }
  b.if_(c.tid < E, [&] {
    Val slot = 1 + wavesBelow + below;
    c.tabSt(W.eslot, c.tid, slot);
    b.if_(m != 0, [&] {
      c.tabSt(W.slotE, slot, c.tid);
      c.tabSt(W.slotMask, slot, m);
    });
  });
  b.if_(c.tid == 0, [&] {
    c.setSlotCount(1 + all);
    c.tabSt(W.slotE, 0, c.i32(E));  // the shared expert
    c.tabSt(W.slotMask, 0, vmask);
  });
  c.ctaSync(false);

  // the columns: each slot's rows ascending
  b.if_(c.tid < n, [&] {
    Val t = c.tid / K;
    Val e = c.tabLd(W.pickE, c.tid);
    b.if_(e >= 0, [&] {
      Val sl = c.tabLd(W.eslot, e);
      Val col = b.popcount(c.tabLd(W.slotMask, sl) & ((1 << t) - c.i32(1)));
      c.tabSt(W.slotRow, sl * 16 + col, t);
      c.tabSt(W.slotPick, sl * 16 + col, c.tid);
    });
  });
  b.if_((c.tid < S) & (((vmask >> b.min(c.tid, c.i32(31))) & c.i32(1)) != c.i32(0)), [&] {
    Val col = b.popcount(vmask & ((1 << c.tid) - c.i32(1)));
    c.tabSt(W.slotRow, col, c.tid);
    c.tabSt(W.slotPick, col, K * S + c.tid);
  });
  c.ctaSync(false);

  b.if_(c.block == 0, [&] {
    Val nSlots = c.slotCount();
    auto dump = [&](int64_t word, Val v) { b.store(c.elemAt(c.scratch, L.tabDump, word + c.tid * 0, 4), v); };
    auto dumpAt = [&](int64_t word, Val i, Val v) { b.store(c.elemAt(c.scratch, L.tabDump, word + i, 4), v); };
    b.if_(c.tid == 0, [&] { dump(0, nSlots); });
    b.if_(c.tid < nSlots, [&] {
      dumpAt(1, c.tid, c.tabLd(W.slotE, c.tid));
      dumpAt(1 + T.maxSlots, c.tid, b.popcount(c.tabLd(W.slotMask, c.tid)));
    });
    b.for_(c.tid, nSlots * 16, c.i32(L.threads), [&](Val i) {
      dumpAt(1 + 2 * T.maxSlots, i, c.tabLd(W.slotRow, i));
      dumpAt(1 + 2 * T.maxSlots + 16 * T.maxSlots, i, c.tabLd(W.slotPick, i));
    });
  });
}

extern const StageDef kTableStage = {
    .placement = [](const Layout& L) { return L.table; },
    .waits = [](const Layout& L) {
      return std::vector<ir::FlagUse>{{L.routeA.name, L.routeA.pairs * L.blocks}};
    },
    .publishes = [](const Layout&) { return std::vector<ir::FlagUse>{}; },
    .doc = [](const Layout&) -> std::string {
      return "every CTA: the picks -> the slot table in LDS (slot 0 the shared expert)";
    },
    .body = [](KernelContext& c) { stageTable(c); },
    .reference = "moeReference's slot table",
    .everyCta = true,
};

}  // namespace monogen::specs::minimax_m3
