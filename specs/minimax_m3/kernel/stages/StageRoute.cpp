#include <limits>

#include "ir/Op.h"
#include "specs/minimax_m3/kernel/Sites.h"
#include "specs/minimax_m3/kernel/stages/Stages.h"

namespace monogen::specs::minimax_m3 {

using ir::MemOrder;
using ir::MemScope;
using ir::Type;
using ir::Val;

// Row t = task: sums LOGIT's router parts in order, sigmoid + bias, a top-k of k distinct experts
// (lowest expert on ties; NaN never preferred), and publishes ROUTE[t] picks and weights (release,
// agent). The f32 order and the NaN rules: docs/minimax-m3-kernel.md, "route".
void stageRoute(KernelContext& c, Val t) {
  ir::Builder& b = c.b;
  const Layout& L = c.L;
  const MoeTiling& T = L.tiling;
  const int E = L.experts, K = L.topk;
  const float kLog2e = 1.44269504088896340736f;
  const float kInf = std::numeric_limits<float>::infinity();
  auto redAt = [&](Val i) { return b.ptrAdd(c.red, i * 4); };

  // the inputs first: thread e < E's bias, a wave-0 lane's row validity (the publish's)
  Val bias = b.load(Type::f32(), c.elemAt(c.bias, b.min(c.tid, c.i32(E - 1)), 4));
  Val valid = b.load(Type::i64(), c.elemAt(c.slots, t, 8)) >= b.i64(0);

  // the parts: thread i < E parts waits for pair i of the row (flat, one wait a thread) -> red
  const int P = T.routerParts;
  b.for_(c.tid, c.i32(E * P), c.i32(L.threads), [&](Val i) {
    Val code = c.errorCode(kSiteRoute, t);
    Val w = c.await(c.pairAt(c.scratch, L.logit, t * (E * P) + i), code, kSiteRoute);
    b.store(redAt((2 * E + 2 * K) + i), b.bitcast(w, Type::f32()));
  });
  c.ctaSync(/*drain=*/false);
  b.if_(c.tid < E, [&] {
    Val base = (2 * E + 2 * K) + c.tid * P;
    Val logit = b.f32(0.0);
    for (int q = 0; q < T.routeQuarters; ++q) {
      Val sum = b.f32(0.0);
      for (int p = 0; p < T.routePartsPerQuarter; ++p)
        sum = sum + b.load(Type::f32(), redAt(base + (q * T.routePartsPerQuarter + p)));
      logit = logit + sum;
    }
    Val sc = b.f32(1.0) / (b.f32(1.0) + b.exp2((-logit) * b.f32(static_cast<double>(kLog2e))));
    Val val = sc + bias;
    val = b.select(b.isNan(val), b.f32(-static_cast<double>(kInf)), val);
    sc = b.select(b.isNan(sc), b.f32(0.0), sc);
    b.store(redAt(c.tid), val);
    b.store(redAt(E + c.tid), sc);
  });
  c.ctaSync(/*drain=*/false);

  // wave 0 picks: lane l holds experts l and l + 64. A pick is one max butterfly over an i64 key,
  // the value's order bits above 255 - expert (the lowest expert wins a tie; -0 counts as +0),
  // 0 for an absent or taken expert (below every present one, -inf included); the winner's
  // weight comes from its lane by one shuffle
  b.if_(c.wave == 0, [&] {
    Val sc[2], idx[2], key[2];
    ir::Var taken[2];
    for (int i = 0; i < 2; ++i) {
      idx[i] = c.lane + 64 * i;
      Val present = idx[i] < E;
      Val at = b.select(present, idx[i], c.i32(0));
      Val v = b.load(Type::f32(), redAt(at)) + b.f32(0.0);  // -0 -> +0: a tie as the f32 compare sees it
      sc[i] = b.select(present, b.load(Type::f32(), redAt(E + at)), b.f32(0.0));
      Val bits = b.bitcast(v, Type::i32());
      Val order = b.select(bits < c.i32(0), bits ^ c.i32(-1), bits | c.i32(INT32_MIN));  // f32 order as u32
      Val k = (b.zext(order, Type::i64()) << b.i64(8)) | b.zext(c.i32(255) - idx[i], Type::i64());
      key[i] = b.select(present, k, b.i64(0));
      taken[i] = b.var(b.i1(false), "taken");
    }
    ir::Var total = b.var(b.f32(0.0), "total");
    ir::Var myId = b.var(c.i32(0), "my_id");
    ir::Var myW = b.var(b.f32(0.0), "my_w");
    const int64_t negInfKey = int64_t{0x007FFFFF} << 8 | 255;  // -inf's order bits, above any expert's
    for (int k = 0; k < K; ++k) {  // pick k: the best untaken, the lowest untaken expert on a tie
      Val k0 = b.select(b.get(taken[0]), b.i64(0), key[0]);
      Val k1 = b.select(b.get(taken[1]), b.i64(0), key[1]);
      Val best = b.butterfly(b.max(k0, k1), {32, 16, 8, 4, 2, 1}, ir::OpCode::Max);
      Val win = c.i32(255) - b.trunc(best & b.i64(255), Type::i32());
      Val mine0 = win == idx[0], mine1 = win == idx[1];
      Val w = b.shuffle(b.select(win >= c.i32(64), sc[1], sc[0]), win & c.i32(63));
      w = b.select(best > b.i64(negInfKey), w, b.f32(0.0));  // an unusable score weighs 0
      b.set(taken[0], b.get(taken[0]) | mine0);
      b.set(taken[1], b.get(taken[1]) | mine1);
      b.set(total, b.get(total) + w);
      Val here = c.lane == k;
      b.set(myId, b.select(here, win, b.get(myId)));
      b.set(myW, b.select(here, w, b.get(myW)));
    }
    Val scale = b.f32(static_cast<double>(static_cast<float>(c.cfg.routedScale))) /
                b.max(b.get(total), b.f32(static_cast<double>(1e-20f)));
    b.if_(c.lane < K, [&] {
      Val at = t * (2 * K) + c.lane;
      c.publish(c.pairAt(c.scratch, L.routeA, at), b.select(valid, b.get(myId), c.i32(-1)), c.tag,
                MemOrder::Release, MemScope::Agent);
      c.publish(c.pairAt(c.scratch, L.routeA, at + K), b.bitcast(b.get(myW) * scale, Type::i32()), c.tag,
                MemOrder::Release, MemScope::Agent);
    });
  });
  c.ctaSync(/*drain=*/false);  // red is free for the next task
}

extern const StageDef kRouteStage = {
    .placement = [](const Layout& L) { return L.route; },
    .waits = [](const Layout& L) { return std::vector<ir::FlagUse>{{L.logit.name, L.logit.pairs}}; },
    .publishes = [](const Layout& L) { return std::vector<ir::FlagUse>{{L.routeA.name, L.routeA.pairs}}; },
    .doc = [](const Layout&) -> std::string {
      return "the parts summed in quarters, sigmoid, + bias for selection, top-k, renormalized x routed scale";
    },
    .body = [](KernelContext& c) { c.forEachTask(c.L.route, [&](Val t) { stageRoute(c, t); }); },
    .reference = "routerLogit, routeToken",
};

}  // namespace monogen::specs::minimax_m3
