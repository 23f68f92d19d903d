#include <vector>

#include "ir/Op.h"
#include "specs/minimax_m3/kernel/Sites.h"
#include "specs/minimax_m3/kernel/stages/Stages.h"

namespace monogen::specs::minimax_m3 {

using ir::MemOrder;
using ir::MemScope;
using ir::Type;
using ir::Val;

Val rstdOf(KernelContext& c, Val total) {
  ir::Builder& b = c.b;
  Val var = total / b.f32(static_cast<float>(c.L.hidden));
  return b.f32(1.0) / b.sqrt(var + b.f32(static_cast<double>(static_cast<float>(c.cfg.rmsEps))));
}

// Row t = task, Gemma RMSNorm: sums the row's SSQ parts (site norm) in wave order, publishes rstd
// to RSTD[t] (release, agent: a checked output; the router sums SSQ itself), writes
// xn = bf16((x rstd)(1 + w)) to XN, publishes XRDY[t] (release, agent). Order: docs/minimax-m3-kernel.md.
void stageNorm(KernelContext& c, Val t) {
  ir::Builder& b = c.b;
  const Layout& L = c.L;
  const int parts = static_cast<int>(L.reduce.tasks);
  ir::Var part = b.var(b.f32(0.0), "ssq_part");
  b.if_(c.tid < parts, [&] {
    Val code = c.errorCode(kSiteNorm, t);
    Val w = c.await(c.pairAt(c.scratch, L.ssq, t * parts + c.tid), code, kSiteNorm);
    b.set(part, b.bitcast(w, Type::f32()));
  });
  Val rstd = b.named(rstdOf(c, c.blockSum(b.get(part))), "rstd");
  b.if_(c.tid == 0, [&] {  // a checked output (the router computes its own)
    c.publish(c.pairAt(c.scratch, L.rstd, t), b.bitcast(rstd, Type::i32()), c.tag, MemOrder::Release,
              MemScope::Agent);
  });

  // the thread's pairs tid + threads i: every SRES and weight load issued before the first use
  const int pairs = L.hidden / 2, steps = (pairs + L.threads - 1) / L.threads;
  std::vector<Val> x(steps), w(steps);
  for (int i = 0; i < steps; ++i) {
    Val pair = b.min(c.tid + i * L.threads, c.i32(pairs - 1));  // a lane past the row loads its last pair
    x[i] = b.load(Type::vec(Type::f32(), 2), c.elemAt(c.scratch, L.sres, t * pairs + pair, 8));
    w[i] = b.load(Type::i32(), c.elemAt(c.normW, pair, 4));
  }
  for (int i = 0; i < steps; ++i) {
    Val pair = c.tid + i * L.threads;
    auto body = [&] {
      Val o[2];
      for (int h = 0; h < 2; ++h) {
        Val wf = b.bf16BitsToF32(b.lshr(w[i], c.i32(16 * h)));
        o[h] = b.f32ToBf16((b.extract(x[i], h) * rstd) * (b.f32(1.0) + wf));
      }
      b.store(c.elemAt(c.scratch, L.xn, t * pairs + pair, 4), b.insert(b.splat(o[0], 2), o[1], 1));
    };
    if ((i + 1) * L.threads <= pairs) body();
    else b.if_(pair < c.i32(pairs), body);
  }

  c.ctaSync(/*drain=*/true);
  b.if_(c.tid == 0, [&] {
    c.publish(c.pairAt(c.scratch, L.xrdy, t), c.i32(1), c.tag, MemOrder::Release, MemScope::Agent);
  });
}

extern const StageDef kNormStage = {
    .placement = [](const Layout& L) { return L.norm; },
    .waits = [](const Layout& L) { return std::vector<ir::FlagUse>{{L.ssq.name, ssqPairs(L)}}; },
    .publishes = [](const Layout& L) {
      return std::vector<ir::FlagUse>{{L.rstd.name, L.rows}, {L.xrdy.name, L.rows}};
    },
    .doc = [](const Layout&) -> std::string {
      return "Gemma RMSNorm: SSQ parts block-summed -> RSTD (published first); bf16((x rstd)(1 + w)) -> XN; XRDY";
    },
    .body = [](KernelContext& c) { c.forEachTask(c.L.norm, [&](Val t) { stageNorm(c, t); }); },
    .reference = "moeReference's norm (blockSum over SSQ, then rstd and XN)",
};

}  // namespace monogen::specs::minimax_m3
