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
// preferred), a NaN sc is 0 (weight 0). val and sc go to red. Wave 0 (two experts a lane, as the
// seeds) then takes the top-k in k rounds: best = max over the untaken experts' val (a butterfly;
// taken ones count as -inf, so when every val is -inf the lowest expert is taken again, as the
// seeds do), the winner the lowest expert whose val == best; w_k = sc[winner], total = 0 + w_0 +
// w_1 + ... (pick order). scale = f32(routed scale) / max(total, 1e-20), weight_k = w_k * scale.
// Lane k publishes ROUTE[t][k] = the pick (-1 when row t is padded: slots[t] < 0) and
// ROUTE[t][topk + k] = the weight's bits (release, agent scope).
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

  // wave 0 picks: lane l holds experts l and l + 64 (an absent expert is -inf, weight 0, and
  // loses every tie: its index is above every present one)
  b.if_(c.wave == c.i32(0), [&] {
    const double negInf = -static_cast<double>(kInf);
    Val val[2], sc[2], idx[2];
    ir::Var taken[2];
    for (int i = 0; i < 2; ++i) {
      idx[i] = c.lane + c.i32(64 * i);
      Val present = idx[i] < c.i32(E);
      Val at = b.select(present, idx[i], c.i32(0));
      val[i] = b.select(present, b.load(Type::f32(), redAt(at)), b.f32(negInf));
      sc[i] = b.select(present, b.load(Type::f32(), redAt(c.i32(E) + at)), b.f32(0.0));
      taken[i] = b.var(b.i1(false), "taken");
    }
    ir::Var total = b.var(b.f32(0.0), "total");
    ir::Var myId = b.var(c.i32(0), "my_id");
    ir::Var myW = b.var(b.f32(0.0), "my_w");
    for (int k = 0; k < K; ++k) {  // pick k: the best untaken, the lowest expert on a tie
      Val v0 = b.select(b.get(taken[0]), b.f32(negInf), val[0]);
      Val v1 = b.select(b.get(taken[1]), b.f32(negInf), val[1]);
      Val pick1 = v1 > v0;
      Val v = b.select(pick1, v1, v0);
      Val idx01 = b.select(pick1, idx[1], idx[0]);
      Val best = b.butterfly(v, {32, 16, 8, 4, 2, 1}, ir::OpCode::Max);
      Val win = b.butterfly(b.select(v == best, idx01, c.i32(1 << 20)), {32, 16, 8, 4, 2, 1}, ir::OpCode::Min);
      Val mine0 = win == idx[0], mine1 = win == idx[1];
      Val w = b.butterfly(b.select(mine0, sc[0], b.select(mine1, sc[1], b.f32(0.0))), {32, 16, 8, 4, 2, 1},
                          ir::OpCode::Max);
      b.set(taken[0], b.get(taken[0]) | mine0);
      b.set(taken[1], b.get(taken[1]) | mine1);
      b.set(total, b.get(total) + w);
      Val here = c.lane == c.i32(k);
      b.set(myId, b.select(here, win, b.get(myId)));
      b.set(myW, b.select(here, w, b.get(myW)));
    }
    Val scale = b.f32(static_cast<double>(static_cast<float>(c.cfg.routedScale))) /
                b.max(b.get(total), b.f32(static_cast<double>(1e-20f)));
    b.if_(c.lane < c.i32(K), [&] {
      Val valid = b.load(Type::i64(), c.elemAt(c.slots, t, 8)) >= b.i64(0);
      Val at = t * c.i32(2 * K) + c.lane;
      b.publish(c.pairAt(c.scratch, L.routeA, at), b.select(valid, b.get(myId), c.i32(-1)), c.tag,
                MemOrder::Release, MemScope::Agent);
      b.publish(c.pairAt(c.scratch, L.routeA, at + c.i32(K)), b.bitcast(b.get(myW) * scale, Type::i32()), c.tag,
                MemOrder::Release, MemScope::Agent);
    });
  });
  c.ctaSync(/*drain=*/false);  // red is free for the next task
}

}  // namespace monogen::specs::minimax_m3
