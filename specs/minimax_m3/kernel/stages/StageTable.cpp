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
  const int PH = (n + 63) / 64, H = (E + 63) / 64;  // wave 0's picks and experts a lane (1 or 2 each)

  // Before the waits (nothing here reads ROUTE): the input, the empty columns, the zero masks.
  // thread t < S's row slot (valid when >= 0)
  Val slot = b.load(Type::i64(), c.elemAt(c.slots, b.min(c.tid, c.i32(S - 1)), 8));
  b.for_(c.tid, c.i32(T.maxSlots * 16), c.i32(L.threads), [&](Val i) {
    c.tabSt(W.slotRow, i, c.i32(-1));
    c.tabSt(W.slotPick, i, c.i32(-1));
  });
  b.for_(c.tid, c.i32(E), c.i32(L.threads), [&](Val e) { c.tabSt(W.mask, e, c.i32(0)); });
  c.ctaSync(false);

  // the weights on the waves past wave 0: thread 64 + i < 64 + S K waits for weight i (checked:
  // a weight that did not come stores 0, not a stale launch's)
  b.if_((c.tid >= c.i32(64)) & (c.tid < c.i32(64 + n)), [&] {
    Val i = c.tid - c.i32(64), t = i / K;
    AwaitedPair w = c.awaitChecked(c.pairAt(c.scratch, L.routeA, t * (2 * K) + K + i % K),
                                   c.errorCode(kSiteTable, t), kSiteTable, MemOrder::Relaxed);
    c.tabSt(W.pickW, i, b.select(w.ok, w.value, c.i32(0)));
  });

  // Wave 0 builds the rest in its lanes (one wave: no barrier between the steps): lane l holds
  // picks l + 64 q (q < PH) and experts l + 64 h (h < H).
  b.if_(c.wave == 0, [&] {
    Val pick[2], p[2], has[2];
    for (int q = 0; q < PH; ++q) {
      p[q] = c.lane + 64 * q;
      has[q] = p[q] < c.i32(n);
      ir::Var v = b.var(c.i32(kLostPick), "pick");
      b.if_(has[q], [&] {
        Val t = p[q] / K;
        AwaitedPair e = c.awaitChecked(c.pairAt(c.scratch, L.routeA, t * (2 * K) + p[q] % K),
                                       c.errorCode(kSiteTable, t), kSiteTable, MemOrder::Relaxed);
        AwaitedPair pk = guardIndex(b, e, -1, E, c.i32(kLostPick));
        b.if_(e.ok & !pk.ok, [&] { c.fail(c.errorCode(kSitePick, t)); });  // it came, out of range
        c.tabSt(W.pickE, p[q], pk.value);
        b.set(v, pk.value);
      });
      pick[q] = b.get(v);
    }
    // the valid rows, then each pick's row bit into its expert's mask; a lost pick drops its row
    Val vm = b.trunc(b.ballot((c.lane < S) & (slot >= b.i64(0))), Type::i32());
    b.if_(c.lane == 0, [&] { c.tabSt(W.misc, 1, vm); });
    for (int q = 0; q < PH; ++q) {
      Val rowBit = c.i32(1) << (p[q] / K);
      b.if_(has[q] & (pick[q] >= 0), [&] {
        b.atomicRmw(RmwOp::Or, c.tabAt(W.mask, pick[q]), rowBit, MemOrder::Relaxed, MemScope::Workgroup);
      });
      b.if_(has[q] & (pick[q] == kLostPick), [&] {
        b.atomicRmw(RmwOp::And, c.tabAt(W.misc, c.i32(1)), c.i32(-1) ^ rowBit, MemOrder::Relaxed,
                    MemScope::Workgroup);
      });
    }
    // expert e's slot: 1 + the picked experts below it (the halves' ballots of mask != 0)
    Val m[2], sl[2], ball[2];
    Val below = b.zext(c.lane, Type::i64());
    below = (b.i64(1) << below) - b.i64(1);
    Val count = c.i32(0);
    for (int h = 0; h < H; ++h) {
      Val e = c.lane + 64 * h;
      m[h] = b.select(e < c.i32(E), c.tabLd(W.mask, b.min(e, c.i32(E - 1))), c.i32(0));
      ball[h] = b.ballot(m[h] != 0);
      sl[h] = 1 + count + b.popcount(ball[h] & below);
      count = count + b.popcount(ball[h]);
    }
    Val vmask = c.tabLd(W.misc, 1);
    for (int h = 0; h < H; ++h) {
      Val e = c.lane + 64 * h;
      b.if_(e < c.i32(E), [&] {
        c.tabSt(W.eslot, e, sl[h]);
        b.if_(m[h] != 0, [&] {
          c.tabSt(W.slotE, sl[h], e);
          c.tabSt(W.slotMask, sl[h], m[h]);
        });
      });
    }
    b.if_(c.lane == 0, [&] {
      c.setSlotCount(1 + count);
      c.tabSt(W.slotE, 0, c.i32(E));  // the shared expert
      c.tabSt(W.slotMask, 0, vmask);
    });
    // the columns: each slot's rows ascending (a pick's slot and mask from its expert's lane)
    for (int q = 0; q < PH; ++q) {
      Val src = pick[q] & c.i32(63), hi = pick[q] >= c.i32(64);
      Val ps = b.shuffle(sl[0], src), pm = b.shuffle(m[0], src);
      if (H == 2) {
        ps = b.select(hi, b.shuffle(sl[1], src), ps);
        pm = b.select(hi, b.shuffle(m[1], src), pm);
      }
      b.if_(has[q] & (pick[q] >= 0), [&] {
        Val t = p[q] / K;
        Val col = b.popcount(pm & ((c.i32(1) << t) - c.i32(1)));
        c.tabSt(W.slotRow, ps * 16 + col, t);
        c.tabSt(W.slotPick, ps * 16 + col, p[q]);
      });
    }
    b.if_((c.lane < S) & (((vmask >> b.min(c.lane, c.i32(31))) & c.i32(1)) != c.i32(0)), [&] {
      Val col = b.popcount(vmask & ((c.i32(1) << c.lane) - c.i32(1)));
      c.tabSt(W.slotRow, col, c.lane);
      c.tabSt(W.slotPick, col, K * S + c.lane);
    });
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
