#include "ir/Op.h"
#include "specs/minimax_m3/kernel/stages/Stages.h"

namespace monogen::specs::minimax_m3 {

using ir::MemOrder;
using ir::MemScope;
using ir::Type;
using ir::Val;

void pushPair(KernelContext& c, Val t, Val pair, Val word) {
  const Layout& L = c.L;
  Val at = (c.rank * L.rows + t) * c.i32(L.hidden / 2) + pair;  // L.attnPair(rank, t, pair)
  for (int p = 0; p < L.tp; ++p) {
    const auto push = [&] {
      c.publish(c.pairAt(c.peerSym[p], L.attn, at), word, c.tag, MemOrder::Relaxed, MemScope::System);
    };
    if (L.attnReduceScatter) c.b.if_(t % c.i32(L.tp) == c.i32(p), push);  // the row's owner alone
    else push();
  }
}

// Pairs 16 task .. (columns 32 task ..) of this rank's o_proj partial, for every row: thread
// tid < 16 S reads row tid / 16's bf16 pair 16 task + tid % 16 (two columns as one i32 word) and
// publishes it, with the launch's tag, to pair [my rank][row][pair] of every rank's ATTN in rank
// order (relaxed at system scope: each pair carries its own tag, so no ordering is needed).
void stagePush(KernelContext& c, Val task) {
  ir::Builder& b = c.b;
  const Layout& L = c.L;
  b.if_(c.tid < L.rows * kTaskPairs, [&] {
    Val t = b.named(c.tid / kTaskPairs, "t");
    Val pair = b.named(task * kTaskPairs + c.tid % kTaskPairs, "pair");
    Val word = b.load(Type::i32(), c.elemAt(c.part, t * (L.hidden / 2) + pair, 4));
    pushPair(c, t, pair, word);
  });
}

extern const StageDef kPushStage = {
    .placement = [](const Layout& L) { return L.push; },
    .waits = [](const Layout&) { return std::vector<ir::FlagUse>{}; },
    .publishes =
        [](const Layout& L) {
          return std::vector<ir::FlagUse>{
              {L.attn.name, L.attnReduceScatter ? L.attn.publishedPairs : allToAllPairs(L)}};
        },
    .doc = [](const Layout& L) -> std::string {
      return L.oproj ? "o_proj: every row's per-token FP8 quant, then the rowwise-FP8 GEMM of the task's 32 columns "
                       "(v_mfma_f32_16x16x32_fp8_fp8; OPART), as bf16 pairs to every rank's ATTN"
                     : "this rank's o_proj partial as bf16 pairs (32 columns a task, every row) to every rank's ATTN";
    },
    .body = [](KernelContext& c) {
      c.loadPeers();
      if (c.L.oproj) {
        oprojTokenScales(c);
        c.forEachTask(c.L.push, [&](Val t) { stageOprojPush(c, t); });
      } else {
        c.forEachTask(c.L.push, [&](Val t) { stagePush(c, t); });
      }
    },
    .reference = "oprojPartial (OprojReference.h); the pairs are the partial's bits",
};

}  // namespace monogen::specs::minimax_m3
