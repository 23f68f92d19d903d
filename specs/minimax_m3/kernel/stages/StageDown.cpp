#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <vector>

#include "ir/Op.h"
#include "specs/common/TaskLoop.h"
#include "specs/minimax_m3/kernel/Sites.h"
#include "specs/minimax_m3/kernel/stages/Stages.h"

namespace monogen::specs::minimax_m3 {

using ir::MemOrder;
using ir::MemScope;
using ir::MfmaKind;
using ir::Type;
using ir::Val;

// awaitUp waits (site down) for UPF of every slot's tile pairs; stageDown runs a slot a wave's GEMV
// of w2 over I/TP to CONTRIB, then combines shared + weighted routed terms in top-k order to bf16
// pairs pushed to every rank's FFN (relaxed, system), or, reduce-scattered, to the row's owner
// rank t % TP's alone. Order: docs/minimax-m3-kernel.md, "down".
void awaitUp(KernelContext& c) {
  ir::Builder& b = c.b;
  const Layout& L = c.L;
  const MoeTiling& T = L.tiling;
  Val n = c.slotCount() * c.i32(T.upTiles);
  b.for_(c.tid, n, c.i32(L.threads), [&](Val i) {
    Val code = c.errorCode(kSiteDown);
    c.await(c.pairAt(c.scratch, L.upf, i), code, kSiteDown);
  });
  c.ctaSync(false);
}

// A slot's GEMV issues the w2 / s2 loads of this many K steps before it uses the first of them:
// one HBM round trip a group, not a step. Every full-dims variant fits its VGPRs with no spill.
constexpr int kDownStepsAhead = 8;
// The MID copy's passes (16 bytes a lane) whose loads a wave issues at once: 16 VGPRs.
constexpr int kMidCopyBatch = 4;

namespace {
// One K step's w2 dwords and s2 byte (kc the lane's K run). live is null on a whole step; on the
// partial last step, lanes whose run lies past I/TP (live false) read K 0 and add +0.
struct DownStep {
  Val live, kc, w4, s;
};

// Step st's lane run (live, kc) of the lane's K; no loads.
DownStep downStepLanes(KernelContext& c, const MfmaTile& t, int st) {
  const int IP = c.L.tiling.interPerRank;
  DownStep in;
  Val k0 = c.i32(int64_t{st} * c.L.tiling.kStep) + t.laneK0();
  const bool whole = (st + 1) * c.L.tiling.kStep <= IP;
  in.live = whole ? Val{} : k0 < IP;
  in.kc = whole ? k0 : c.b.select(in.live, k0, c.i32(0));
  return in;
}

// Step st of expert e's w2 rows wrow (the lane's A row): its lane run and its loads.
DownStep loadDownStep(KernelContext& c, const MfmaTile& t, Val e, Val wrow, int st) {
  ir::Builder& b = c.b;
  const int H = c.L.hidden, IP = c.L.tiling.interPerRank;
  DownStep in = downStepLanes(c, t, st);
  Val off = c.shuffledOffset(wrow, in.kc / 2, IP / 2);
  in.w4 = b.load(Type::vec(Type::i32(), 4), c.expertByte(c.w2, e, int64_t{H} * (IP / 2), off));
  in.s = b.zext(b.load(Type::i8(), c.scaleByte(c.s2, e, wrow, in.kc / 32, H, IP / 32)), Type::i32());
  return in;
}

int heldDownSteps(const MoeTiling& T) { return std::min(kDownStepsAhead, T.downSteps); }

// A CTA runs two of its down tasks at once when it has more than one and their CONTRIB rows fit
// (the second task's in red, free once up is done): the two tasks' GEMVs spread over the waves.
int downTasksAtOnce(const Layout& L) {
  return L.down.tasks > L.blocks && L.red.bytes >= L.contrib.bytes ? 2 : 1;
}

// GEMV g of the group from `task` (tasks task, task + blocks): task j = g / nSlots's slot g %
// nSlots (j < 2). Returns {its task, its slot, j}.
std::array<Val, 3> downGemvOf(KernelContext& c, Val task, Val g, Val nSlots) {
  ir::Builder& b = c.b;
  Val j = b.select(g < nSlots, c.i32(0), c.i32(1));
  return {task + j * c.L.blocks, g - j * nSlots, j};
}

Val downFirstTask(KernelContext& c) {
  if (c.L.down.base == 0) return c.block;  // the FFN launch: the CTA's own id
  return specs::stageFirstTask(c.b, c.block, c.L.down.base, c.L.blocks);
}
}  // namespace

DownWeights makeDownWeights(KernelContext& c) {
  ir::Builder& b = c.b;
  DownWeights w;
  for (int i = 0; i < heldDownSteps(c.L.tiling); ++i) {
    w.w4.push_back(b.var(b.splat(c.i32(0), 4), "down_w4"));
    w.scale.push_back(b.var(c.i32(127), "down_scale"));
  }
  return w;
}

// Issues the held steps' loads of slot u's GEMV of `task` into w (nothing for a task past down's
// or a slot past the table's: that GEMV does not run).
void loadDownWeights(KernelContext& c, Val task, Val u, DownWeights& w) {
  ir::Builder& b = c.b;
  MfmaTile t = a16w4Tile(c);
  b.if_((task < c.i32(c.L.down.tasks)) & (u < c.slotCount()), [&] {
    Val e = c.tabLd(c.L.tw.slotE, u);
    Val wrow = task * 16 + t.aRow();
    for (int st = 0; st < heldDownSteps(c.L.tiling); ++st) {
      DownStep in = loadDownStep(c, t, e, wrow, st);
      b.set(w.w4[static_cast<size_t>(st)], in.w4);
      b.set(w.scale[static_cast<size_t>(st)], in.s);
    }
  });
}

void stageDown(KernelContext& c, Val group, DownWeights& cur, DownWeights& next) {
  ir::Builder& b = c.b;
  const Layout& L = c.L;
  const MoeTiling& T = L.tiling;
  const auto& W = L.tw;
  const int IP = T.interPerRank;
  const int held = heldDownSteps(T);
  const int atOnce = downTasksAtOnce(L);
  Val nSlots = c.slotCount();
  MfmaTile t = a16w4Tile(c);
  Val nTasks = atOnce == 2 ? b.select(group + L.blocks < c.i32(L.down.tasks), c.i32(2), c.i32(1)) : c.i32(1);
  Val nGemv = nSlots * nTasks;

  b.for_(c.wave, nGemv, c.i32(L.waves), [&](Val g) {
    auto [task, u, j] = downGemvOf(c, group, g, nSlots);
    Val contrib = b.select(j == c.i32(0), c.contrib, c.red);  // the task's CONTRIB rows
    Val e = c.tabLd(W.slotE, u);
    Val cnt = b.popcount(c.tabLd(W.slotMask, u));
    // The wave copies only the slot's cnt MID columns (contiguous: MID[u][0 .. cnt)) to its
    // bstage region, 16 bytes a lane a pass, and reads B there; LDS keeps a wave's order. The
    // passes go kMidCopyBatch at a time, their loads issued before their stores (one round trip
    // a batch, not a pass).
    Val midAt = c.wave * (L.midWaveBytes / 2);  // bf16 index of the region in bstage
    if (L.midInLds)
      b.if_(cnt > 0, [&] {
        Val region = b.ptrAdd(c.bstage, c.wave * L.midWaveBytes);
        Val n = cnt * (IP / 8);
        const int batch = std::min<int>(kMidCopyBatch, (L.rows * (IP / 8) + 63) / 64);  // at most the passes
        b.for_(c.lane, n, c.i32(64 * batch), [&](Val i0) {
          std::vector<Val> v(static_cast<size_t>(batch));
          for (int k = 0; k < batch; ++k) {
            Val i = i0 + c.i32(64 * k);
            // a pass past the columns reads MID[u][0] (written) and stores nothing (pass 0: i0 < n)
            Val at = u * (16 * IP) + (k == 0 ? i : b.select(i < n, i, c.i32(0))) * 8;
            v[static_cast<size_t>(k)] = b.load(Type::vec(Type::bf16(), 8), c.elemAt(c.scratch, L.mid, at, 2));
          }
          for (int k = 0; k < batch; ++k) {
            Val i = i0 + c.i32(64 * k);
            const auto store = [&] { b.store(c.elemAt(region, i * 8, 2), v[static_cast<size_t>(k)]); };
            if (k == 0) store();
            else b.if_(i < n, store);
          }
        });
      });
    // The wave's next GEMV (this group's, else its first of the CTA's next group) loads its held
    // steps while this one computes: after this GEMV's scratch loads (vmcnt counts in order),
    // i.e. after the MID copy, or after the GEMV when B is read from scratch.
    Val more = g + L.waves < nGemv;
    const auto loadNext = [&] {
      auto [nt, nu, nj] = downGemvOf(c, b.select(more, group, group + atOnce * L.blocks),
                                     b.select(more, g + L.waves, c.wave), nSlots);
      loadDownWeights(c, nt, nu, next);
    };
    if (L.midInLds) loadNext();
    // A slot of no rows (the shared one when every row is padded) has no CONTRIB row to write and
    // up stored no MID column of it: skip it. (Its GEMV read MID column 0, never written, from
    // bstage or scratch: the uninitialized-read check found it with every row padded.)
    b.if_(cnt > 0, [&] {
      Val xcol = b.max(b.min(t.bCol(), cnt - 1), c.i32(0));
      Val pick = c.tabLd(W.slotPick, u * 16 + xcol);
      ir::Var accV = b.var(b.splat(b.f32(0.0), 4), "acc");
      Val wrow = task * 16 + t.aRow();
      // The held steps' weights came in during the wave's GEMV before (the first before awaitUp);
      // a later group loads before its first use.
      const auto loadGroup = [&](int first) {
        std::vector<DownStep> group;
        for (int st = first; st < std::min(first + kDownStepsAhead, T.downSteps); ++st) {
          if (st < held) {
            DownStep in = downStepLanes(c, t, st);
            in.w4 = b.get(cur.w4[static_cast<size_t>(st)]);
            in.s = b.get(cur.scale[static_cast<size_t>(st)]);
            group.push_back(in);
          } else {
            group.push_back(loadDownStep(c, t, e, wrow, st));
          }
        }
        return group;
      };
      for (int first = 0; first < T.downSteps; first += kDownStepsAhead) {
        std::vector<DownStep> group = loadGroup(first);
        for (const DownStep& in : group) {
          // B: MID column xcol of the slot, K kc .. (+0 past I/TP)
          const auto at = [&](int k) {
            return L.midInLds ? c.elemAt(c.bstage, midAt + xcol * IP + in.kc + c.i32(k), 2)
                              : c.elemAt(c.scratch, L.mid, (u * 16 + xcol) * c.i32(IP) + in.kc + c.i32(k), 2);
          };
          const auto bf16x8 = Type::vec(Type::bf16(), 8);
          std::vector<Val> x = in.live.v ? t.load(bf16x8, at, in.live) : t.load(bf16x8, at);
          Val w4 = in.live.v ? b.select(in.live, in.w4, b.splat(c.i32(0), 4)) : in.w4;  // code 0: +0
          Val s = in.live.v ? b.select(in.live, in.s, c.i32(127)) : in.s;
          b.set(accV, a16w4Step(t, b.get(accV), w4, s, x));
        }
      }
      Val acc = b.get(accV);
      b.if_(t.accCol() < cnt, [&] {  // CONTRIB[pick][row]
        t.storeAcc(acc, contrib, [&](int i) { return pick * 16 + t.accRow(i); });
      });
    });
    if (!L.midInLds) loadNext();
    for (int i = 0; i < held; ++i) {
      b.set(cur.w4[static_cast<size_t>(i)], b.get(next.w4[static_cast<size_t>(i)]));
      b.set(cur.scale[static_cast<size_t>(i)], b.get(next.scale[static_cast<size_t>(i)]));
    }
  });
  combineDown(c, group, nTasks);
}

void combineDown(KernelContext& c, Val group, Val nTasks) {
  ir::Builder& b = c.b;
  const Layout& L = c.L;
  const auto& W = L.tw;
  const int H = L.hidden, S = L.rows, K = L.topk;
  c.ctaSync(false);
  // Thread S 8 j + 8 t + r2 combines the group's task j (CONTRIB, then red).
  b.if_(c.tid < nTasks * (S * 8), [&] {
    Val j = b.select(c.tid < S * 8, c.i32(0), c.i32(1));
    Val task = group + j * L.blocks, me = c.tid - j * (S * 8);
    Val base = b.select(j == c.i32(0), c.contrib, c.red);
    Val t = me / 8, r2 = me % 8;
    Val vmask = c.tabLd(W.misc, 1);
    Val valid = ((vmask >> t) & c.i32(1)) != c.i32(0);
    auto contribAt = [&](Val p, Val r) { return b.load(Type::f32(), b.ptrAdd(base, (p * 16 + r) * c.i32(4))); };
    // A padded row's CONTRIB rows are never written (it is in no slot's columns, the shared
    // one's either), so only a valid row reads them; a padded row's partial is 0. (Reading them
    // and selecting 0 after, as this did, read LDS no op of the launch wrote: the Sim's
    // uninitialized-read check found it with padded rows. The value was dead; the read was not.)
    ir::Var tots[2] = {b.var(b.f32(0.0), "tot0"), b.var(b.f32(0.0), "tot1")};
    b.if_(valid, [&] {
      for (int h = 0; h < 2; ++h) {
        Val r = r2 * 2 + c.i32(h);
        Val tot = b.f32(0.0);
        if (c.knobs.experts != MoeExperts::Routed) tot = b.roundBf16(contribAt(K * S + t, r));
        if (c.knobs.experts != MoeExperts::Shared)
          for (int k = 0; k < K; ++k) {
            Val w = b.bitcast(c.tabLd(W.pickW, t * K + c.i32(k)), Type::f32());
            Val v = contribAt(t * K + c.i32(k), r);
            tot = b.roundBf16(tot + b.roundBf16(w * v));
          }
        b.set(tots[h], tot);
      }
    });
    Val o[2];
    for (int h = 0; h < 2; ++h) o[h] = b.f32ToBf16(b.get(tots[h]));
    Val word = b.bitcast(b.insert(b.splat(o[0], 2), o[1], 1), Type::i32());
    Val at = (c.rank * S + t) * c.i32(H / 2) + task * 8 + r2;
    for (int p = 0; p < L.tp; ++p) {
      const auto push = [&] {
        c.publish(c.pairAt(c.peerSym[p], L.ffn, at), word, c.tag, MemOrder::Relaxed, MemScope::System);
      };
      if (L.ffnReduceScatter) b.if_(t % c.i32(L.tp) == c.i32(p), push);  // the row's owner alone
      else push();
    }
  });
  c.ctaSync(false);  // CONTRIB (and red) is free for the next group
}

extern const StageDef kDownStage = {
    .placement = [](const Layout& L) { return L.down; },
    .waits = [](const Layout& L) { return std::vector<ir::FlagUse>{{L.upf.name, L.upf.pairs}}; },
    .publishes =
        [](const Layout& L) {
          return std::vector<ir::FlagUse>{
              {L.ffn.name, L.ffnReduceScatter ? L.ffn.publishedPairs : allToAllPairs(L)}};
        },
    .doc = [](const Layout& L) -> std::string {
      return fmt::format("16 hidden rows a task: every slot's {} GEMV of MID -> CONTRIB (LDS), the combine -> every "
                         "rank's FFN",
                         L.moe == MoeQuant::A8w4 ? "A8W4 (MXFP8 MID x MXFP4, scaled MFMA)" : "A16W4");
    },
    .body = [](KernelContext& c) {
      c.loadPeers();
      if (c.L.moe == MoeQuant::A8w4) {
        stageDownA8w4(c);
      } else {
        // The wave's first GEMV's held steps load before the wait: the table is in LDS already.
        // The task loop runs a group of downTasksAtOnce tasks a pass (tasks t, t + blocks).
        ir::Builder& b = c.b;
        const Layout& L = c.L;
        DownWeights cur = makeDownWeights(c), next = makeDownWeights(c);
        Val first = downFirstTask(c);
        auto [task, u, j] = downGemvOf(c, first, c.wave, c.slotCount());
        loadDownWeights(c, task, u, cur);
        awaitUp(c);
        b.for_(first, c.i32(L.down.tasks), c.i32(downTasksAtOnce(L) * L.blocks),
               [&](Val g) { stageDown(c, g, cur, next); });
      }
    },
    .reference = "a16w4Dot, moeReference's combine",
};

}  // namespace monogen::specs::minimax_m3
