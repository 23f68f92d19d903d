#include <vector>

#include "ir/Op.h"
#include "specs/minimax_m3/kernel/Sites.h"
#include "specs/minimax_m3/kernel/stages/Stages.h"

namespace monogen::specs::minimax_m3 {

using ir::MemOrder;
using ir::MemScope;
using ir::Type;
using ir::Val;

// Where a wave's waits at once save at least 3 polls of TP and a wave holds one row (TP >= 4,
// S <= waves); else (S 16: two rows a wave, the gather twice; TP 2: one poll saved) the rank
// waits one after another measured no faster (docs/timing.md).
static bool finalWavesAtOnce(const Layout& L) { return L.tp >= 4 && L.rows <= L.waves; }

// Pairs 16 task .. (columns 32 task ..), every row: the TP ranks' combined partials in FFN
// (relaxed, system scope: the pairs are the data; site final), each column's ranks summed in rank
// order in f32 (acc = p_0, then acc + p_r), rounded once to bf16 -> out. At once: row t on wave
// t % waves, lane l waits for pair l % 16 of ranks l / 16 + 4 q, lanes l < 16 gather by shuffles.
void stageFinal(KernelContext& c, Val task) {
  ir::Builder& b = c.b;
  const Layout& L = c.L;
  if (!finalWavesAtOnce(L)) {
    // thread tid < 16 S: row tid / 16, its ranks' pairs one after another in rank order
    b.if_(c.tid < L.rows * kTaskPairs, [&] {
      Val t = c.tid / kTaskPairs;
      Val pair = task * kTaskPairs + c.tid % kTaskPairs;
      const std::vector<Val> word = awaitRankPairs(c, L.ffn, t, pair, kSiteFinal, MemOrder::Relaxed);
      Val o[2];
      for (int h = 0; h < 2; ++h) o[h] = b.f32ToBf16(sumRanksF32(b, word, c.i32(16 * h)));
      b.store(c.elemAt(c.out, t * (L.hidden / 2) + pair, 4), b.insert(b.splat(o[0], 2), o[1], 1));
    });
    return;
  }
  constexpr int kGroups = 64 / kTaskPairs;  // rank groups a wave
  const int rounds = (L.tp + kGroups - 1) / kGroups;
  Val j = c.lane % kTaskPairs, g = c.lane / kTaskPairs;
  Val t = c.wave, pair = task * kTaskPairs + j;  // S <= waves: a wave's one row
  std::vector<Val> got;  // [q]: the lane's word of rank g + 4 q
  for (int q = 0; q < rounds; ++q) {
    Val src = g + q * kGroups;
    ir::Var w = b.var(c.i32(0), "ffn_word");
    b.if_((t < c.i32(L.rows)) & (src < c.i32(L.tp)),
          [&] { b.set(w, awaitRankPair(c, L.ffn, src, t, pair, kSiteFinal, MemOrder::Relaxed)); });
    got.push_back(b.get(w));
  }
  b.if_(t < c.i32(L.rows), [&] {
    std::vector<Val> word;
    for (int src = 0; src < L.tp; ++src)
      word.push_back(b.shuffle(got[src / kGroups], j + c.i32(kTaskPairs * (src % kGroups))));
    b.if_(c.lane < c.i32(kTaskPairs), [&] {
      Val o[2];
      for (int h = 0; h < 2; ++h) o[h] = b.f32ToBf16(sumRanksF32(b, word, c.i32(16 * h)));
      b.store(c.elemAt(c.out, t * (L.hidden / 2) + pair, 4), b.insert(b.splat(o[0], 2), o[1], 1));
    });
  });
}

extern const StageDef kFinalStage = {
    .placement = [](const Layout& L) { return L.final; },
    .waits =
        [](const Layout& L) {
          return std::vector<ir::FlagUse>{{L.ffn.name, L.ffnReduceScatter ? L.ffn.publishedPairs : allToAllPairs(L)}};
        },
    .publishes =
        [](const Layout& L) {
          if (L.ffnReduceScatter) return std::vector<ir::FlagUse>{{L.ffnAg.name, gatherPairs(L)}};
          return std::vector<ir::FlagUse>{};
        },
    .doc = [](const Layout&) -> std::string { return "the ranks' combined partials in rank order, f32 -> bf16 -> out"; },
    .body =
        [](KernelContext& c) {
          if (!c.L.ffnReduceScatter) return c.forEachTask(c.L.final, [&](Val t) { stageFinal(c, t); });
          c.loadPeers();
          c.forEachTask(c.L.final, [&](Val t) { reduceToOwner(c, t, c.L.ffn, c.L.ffnAg, kSiteFinal); });
        },
    .reference = "moeReference's final sum (rank order)",
};

}  // namespace monogen::specs::minimax_m3

namespace monogen::specs::minimax_m3 {

// Pairs 16 task .., every row: waits for row t's all-reduced pair in FFN_AG (site final_ag; the
// owner's own too) -> out.
extern const StageDef kFinalAgStage = {
    .placement = [](const Layout& L) { return Placement{"final_ag", L.final.tasks, L.final.base}; },
    .waits = [](const Layout& L) { return std::vector<ir::FlagUse>{{L.ffnAg.name, gatherPairs(L)}}; },
    .publishes = [](const Layout&) { return std::vector<ir::FlagUse>{}; },
    .doc = [](const Layout&) -> std::string { return "the owner's all-reduced pairs (FFN_AG) -> out"; },
    .body =
        [](KernelContext& c) {
          ir::Builder& b = c.b;
          const Layout& L = c.L;
          c.forEachTask(L.final, [&](Val task) {
            b.if_(c.tid < L.rows * kTaskPairs, [&] {
              Val t = c.tid / kTaskPairs;
              Val row = t * (L.hidden / 2) + task * kTaskPairs + c.tid % kTaskPairs;
              Val code = c.i32(errorCode(kSiteFinalAg, 0, 0)) | (t % c.i32(L.tp)) << c.i32(8) | t << c.i32(16);
              Val w = c.await(c.pairAt(c.sym, L.ffnAg, row), code, kSiteFinalAg, MemOrder::Relaxed, MemScope::System);
              b.store(c.elemAt(c.out, row, 4), b.bitcast(w, Type::vec(Type::bf16(), 2)));
            });
          });
        },
    .reference = "moeReference's final sum (rank order)",
};

}  // namespace monogen::specs::minimax_m3
