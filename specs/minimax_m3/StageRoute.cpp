#include <limits>

#include "ir/Op.h"
#include "specs/minimax_m3/Sites.h"
#include "specs/minimax_m3/Stages.h"

namespace monogen::specs::minimax_m3 {

using ir::MemOrder;
using ir::MemScope;
using ir::Type;
using ir::Val;

// Row t = task, the seeds' stage_route. Thread e < E waits for LOGIT[t][e][p] of every router
// part (acquire, agent scope; site route) and sums them in 4 quarters in order: logit = 0 + q_0 +
// .. + q_3, q = 0 + p_{q P/4} + ... Then sc = sigmoid(logit) = 1 / (1 + exp2((-logit) *
// f32(log2 e))) (IR Exp2 and Div), val = sc + bias[e] (selection only); a NaN val is -inf (never
// preferred), a NaN sc is 0 (weight 0). val and sc go to red. Thread 0 then takes the top-k in k
// rounds: best = max over the experts' val (maxNum), the winner the lowest expert whose val ==
// best, whose val becomes -inf (taken); w_k = sc[winner], total = 0 + w_0 + w_1 + ... (pick
// order). scale = f32(routed scale) / max(total, 1e-20), weight_k = w_k * scale. It publishes
// ROUTE[t][k] = the pick (-1 when row t is padded: slots[t] < 0) and ROUTE[t][topk + k] = the
// weight's bits (release, agent scope).
void stageRoute(KernelContext& c, Val t) {
  ir::Builder& b = c.b;
  const Layout& L = c.L;
  const MoeTiling& T = L.tiling;
  const int E = L.experts, K = L.topk;
  const float kLog2e = 1.44269504088896340736f;
  const float kInf = std::numeric_limits<float>::infinity();
  auto redAt = [&](Val i) { return b.ptrAdd(c.red, i * c.i32(4)); };

  // the parts: thread i < E parts waits for pair i of the row (flat, one wait a thread) -> red
  const int P = T.routerParts;
  b.for_(c.tid, c.i32(E * P), c.i32(L.threads), [&](Val i) {
    Val code = c.i32(errorCode(kSiteRoute, 0, 0)) | c.rank << c.i32(8) | t << c.i32(16);
    Val w = b.wait(c.pairAt(c.scratch, L.logit, t * c.i32(E * P) + i), c.tag, c.waitTicks, c.err, code, kSiteRoute,
                   MemOrder::Acquire, MemScope::Agent);
    b.store(redAt(c.i32(2 * E + 2 * K) + i), b.bitcast(w, Type::f32()));
  });
  c.ctaSync(/*drain=*/false);
  b.if_(c.tid < c.i32(E), [&] {
    Val base = c.i32(2 * E + 2 * K) + c.tid * c.i32(P);
    Val logit = b.f32(0.0);
    for (int q = 0; q < T.routeQuarters; ++q) {
      Val sum = b.f32(0.0);
      for (int p = 0; p < T.routePartsPerQuarter; ++p)
        sum = sum + b.load(Type::f32(), redAt(base + c.i32(q * T.routePartsPerQuarter + p)));
      logit = logit + sum;
    }
    Val sc = b.f32(1.0) / (b.f32(1.0) + b.exp2((-logit) * b.f32(static_cast<double>(kLog2e))));
    Val val = sc + b.load(Type::f32(), c.elemAt(c.bias, c.tid, 4));
    val = b.select(b.isNan(val), b.f32(-static_cast<double>(kInf)), val);
    sc = b.select(b.isNan(sc), b.f32(0.0), sc);
    b.store(redAt(c.tid), val);
    b.store(redAt(c.i32(E) + c.tid), sc);
  });
  c.ctaSync(/*drain=*/false);

  b.if_(c.tid == c.i32(0), [&] {
    Val slot = b.load(Type::i64(), c.elemAt(c.slots, t, 8));
    Val valid = slot >= b.i64(0);
    ir::Var total = b.var(b.f32(0.0), "total");
    b.for_(c.i32(0), c.i32(K), c.i32(1), [&](Val k) {
      ir::Var best = b.var(b.f32(-static_cast<double>(kInf)), "best");
      b.for_(c.i32(0), c.i32(E), c.i32(1), [&](Val e) { b.set(best, b.max(b.get(best), b.load(Type::f32(), redAt(e)))); });
      ir::Var win = b.var(c.i32(0), "win");
      b.for_(c.i32(0), c.i32(E), c.i32(1), [&](Val i) {
        Val e = c.i32(E - 1) - i;  // descending: the lowest expert on best wins
        b.set(win, b.select(b.load(Type::f32(), redAt(e)) == b.get(best), e, b.get(win)));
      });
      Val wk = b.get(win);
      b.store(redAt(wk), b.f32(-static_cast<double>(kInf)));
      Val sk = b.load(Type::f32(), redAt(c.i32(E) + wk));
      b.set(total, b.get(total) + sk);
      b.store(redAt(c.i32(2 * E) + k), b.bitcast(wk, Type::f32()));
      b.store(redAt(c.i32(2 * E + K) + k), sk);
    });
    Val scale = b.f32(static_cast<double>(static_cast<float>(c.cfg.routedScale))) /
                b.max(b.get(total), b.f32(static_cast<double>(1e-20f)));
    b.for_(c.i32(0), c.i32(K), c.i32(1), [&](Val k) {
      Val at = t * c.i32(2 * K) + k;
      Val pk = b.bitcast(b.load(Type::f32(), redAt(c.i32(2 * E) + k)), Type::i32());
      Val wk = b.load(Type::f32(), redAt(c.i32(2 * E + K) + k));
      b.publish(c.pairAt(c.scratch, L.routeA, at), b.select(valid, pk, c.i32(-1)), c.tag, MemOrder::Release,
                MemScope::Agent);
      b.publish(c.pairAt(c.scratch, L.routeA, at + c.i32(K)), b.bitcast(wk * scale, Type::i32()), c.tag,
                MemOrder::Release, MemScope::Agent);
    });
  });
  c.ctaSync(/*drain=*/false);  // red is free for the next task
}

}  // namespace monogen::specs::minimax_m3
