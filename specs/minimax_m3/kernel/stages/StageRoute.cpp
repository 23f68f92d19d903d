#include <algorithm>
#include <bit>
#include <climits>
#include <functional>
#include <limits>
#include <vector>

#include "ir/Op.h"
#include "specs/minimax_m3/kernel/Sites.h"
#include "specs/minimax_m3/kernel/stages/Stages.h"

namespace monogen::specs::minimax_m3 {

using ir::MemOrder;
using ir::MemScope;
using ir::Type;
using ir::Val;

// Row t = task: sums LOGIT's router parts in order, sigmoid + bias, a top-k of k distinct experts
// (lowest expert on ties; NaN never preferred), and publishes ROUTE[t] picks and weights (relaxed,
// agent: the pairs are the data, as LOGIT's). f32 order, NaN rules: docs/minimax-m3-kernel.md, "route".
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

  // the parts: thread i < E parts waits for pair i of the row (flat, one wait a thread). Where they
  // fit one wave (E parts <= 64), wave 0 sums them from its lanes by shuffles, expert e on lane e;
  // else through red (two barriers), thread e < E summing them and wave 0 reading val and sc back.
  // Either way logit = 0 + q_0 + .., each quarter 0 + its parts in order.
  const int P = T.routerParts;
  const bool inWave = E * P <= 64;
  auto awaitPart = [&](Val i) {
    Val code = c.errorCode(kSiteRoute, t);
    return b.bitcast(c.await(c.pairAt(c.scratch, L.logit, t * (E * P) + i), code, kSiteRoute, MemOrder::Relaxed),
                     Type::f32());
  };
  auto scoreOf = [&](const std::function<Val(int)>& partAt, Val bias, Val& val, Val& sc) {
    Val logit = b.f32(0.0);
    for (int q = 0; q < T.routeQuarters; ++q) {
      Val sum = b.f32(0.0);
      for (int p = 0; p < T.routePartsPerQuarter; ++p) sum = sum + partAt(q * T.routePartsPerQuarter + p);
      logit = logit + sum;
    }
    sc = b.f32(1.0) / (b.f32(1.0) + b.exp2((-logit) * b.f32(static_cast<double>(kLog2e))));
    val = sc + bias;
    val = b.select(b.isNan(val), b.f32(-static_cast<double>(kInf)), val);
    sc = b.select(b.isNan(sc), b.f32(0.0), sc);
  };
  if (!inWave) {
    b.for_(c.tid, c.i32(E * P), c.i32(L.threads),
           [&](Val i) { b.store(redAt((2 * E + 2 * K) + i), awaitPart(i)); });
    c.ctaSync(/*drain=*/false);
    b.if_(c.tid < E, [&] {
      Val base = (2 * E + 2 * K) + c.tid * P, val, sc;
      scoreOf([&](int p) { return b.load(Type::f32(), redAt(base + p)); }, bias, val, sc);
      b.store(redAt(c.tid), val);
      b.store(redAt(E + c.tid), sc);
    });
    c.ctaSync(/*drain=*/false);
  }

  // wave 0 picks: lane l holds experts l and l + 64 (half h: expert l + 64 h, h < H). A pick is
  // one i32 max butterfly over the value's f32 order as a signed key (-0 counts as +0; INT32_MIN
  // for an absent or taken expert, below every present one, -inf included) over the lanes the
  // experts span; the lowest expert holding the best key (a tie's winner) is the lowest set lane of
  // the halves' ballots, and its weight comes from its lane by one shuffle
  const int H = (E + 63) / 64, span = std::min(64, static_cast<int>(std::bit_ceil(static_cast<unsigned>(E))));
  std::vector<int> spanMasks;  // span / 2 .. 1
  for (int m = span / 2; m >= 1; m /= 2) spanMasks.push_back(m);
  auto maxOverSpan = [&](Val v) { return b.butterfly(v, spanMasks, ir::OpCode::Max); };
  b.if_(c.wave == 0, [&] {
    Val waveVal, waveSc;  // inWave: lane e's val and sc (E <= 16: one half)
    if (inWave) {
      ir::Var part = b.var(b.f32(0.0), "logit_part");
      b.if_(c.lane < E * P, [&] { b.set(part, awaitPart(c.lane)); });
      Val w = b.get(part), base = b.min(c.lane, c.i32(E - 1)) * c.i32(P);
      scoreOf([&](int p) { return b.shuffle(w, base + c.i32(p)); }, bias, waveVal, waveSc);
    }
    Val sc[2], idx[2], key[2], present[2];
    ir::Var taken[2];
    for (int i = 0; i < H; ++i) {
      idx[i] = c.lane + 64 * i;
      present[i] = idx[i] < E;
      Val at = b.select(present[i], idx[i], c.i32(0));
      Val v = (inWave ? waveVal : b.load(Type::f32(), redAt(at))) + b.f32(0.0);  // -0 -> +0: a tie as the f32 compare sees it
      sc[i] = b.select(present[i], inWave ? waveSc : b.load(Type::f32(), redAt(E + at)), b.f32(0.0));
      Val bits = b.bitcast(v, Type::i32());
      Val order = b.select(bits < c.i32(0), bits ^ c.i32(INT32_MAX), bits);  // f32 order as a signed i32
      key[i] = b.select(present[i], order, c.i32(INT32_MIN));
      taken[i] = b.var(b.i1(false), "taken");
    }
    ir::Var total = b.var(b.f32(0.0), "total");
    ir::Var myId = b.var(c.i32(0), "my_id");
    ir::Var myW = b.var(b.f32(0.0), "my_w");
    const int32_t negInfKey = INT32_MIN | 0x007FFFFF;  // -inf's key, above an absent expert's
    auto lowestLane = [&](Val ball) {  // the lowest set bit's index (ball != 0)
      return b.popcount((ball - b.i64(1)) & (ball ^ b.i64(-1)));
    };
    for (int k = 0; k < K; ++k) {  // pick k: the best untaken, the lowest untaken expert on a tie
      Val kk[2];
      for (int i = 0; i < H; ++i) kk[i] = b.select(b.get(taken[i]), c.i32(INT32_MIN), key[i]);
      Val best = maxOverSpan(H == 2 ? b.max(kk[0], kk[1]) : kk[0]);
      Val ball0 = b.ballot(present[0] & (kk[0] == best));
      Val win = lowestLane(ball0);
      if (H == 2)  // experts 64 .. only when none below holds the best
        win = b.select(ball0 != b.i64(0), win, c.i32(64) + lowestLane(b.ballot(present[1] & (kk[1] == best))));
      Val w = b.shuffle(H == 2 ? b.select(win >= c.i32(64), sc[1], sc[0]) : sc[0], win & c.i32(63));
      w = b.select(best > c.i32(negInfKey), w, b.f32(0.0));  // an unusable score weighs 0
      for (int i = 0; i < H; ++i) b.set(taken[i], b.get(taken[i]) | (win == idx[i]));
      b.set(total, b.get(total) + w);
      Val here = c.lane == k;
      b.set(myId, b.select(here, win, b.get(myId)));
      b.set(myW, b.select(here, w, b.get(myW)));
    }
    Val scale = b.f32(static_cast<double>(static_cast<float>(c.cfg.routedScale))) /
                b.max(b.get(total), b.f32(static_cast<double>(1e-20f)));
    b.if_(c.lane < K, [&] {
      Val at = t * (2 * K) + c.lane;
      // relaxed: the pairs are the data (the table reads nothing else of route's)
      c.publish(c.pairAt(c.scratch, L.routeA, at), b.select(valid, b.get(myId), c.i32(-1)), c.tag,
                MemOrder::Relaxed, MemScope::Agent);
      c.publish(c.pairAt(c.scratch, L.routeA, at + K), b.bitcast(b.get(myW) * scale, Type::i32()), c.tag,
                MemOrder::Relaxed, MemScope::Agent);
    });
  });
  if (!inWave) c.ctaSync(/*drain=*/false);  // red is free for the next task
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
