// o_proj inside the launch (input=attn), on the push CTAs: AITER's per-token FP8 quant of the
// attention rows, then the rowwise-FP8 GEMM of a task's 32 output channels to OPART and, as pairs,
// every rank's ATTN; numerics OprojReference.h's (waves, order, LDS: docs/minimax-m3-kernel.md).
#include <algorithm>
#include <functional>
#include <vector>

#include "ir/Op.h"
#include "specs/minimax_m3/kernel/OprojShape.h"
#include "specs/minimax_m3/kernel/stages/Stages.h"

namespace monogen::specs::minimax_m3 {

using ir::AddrSpace;
using ir::MfmaKind;
using ir::Type;
using ir::Val;

namespace {

// A wave issues the row and weight loads of this many K steps before it uses the first of them:
// one memory round trip a group, not a step.
constexpr int kOprojStepsAhead = 8;

constexpr int kSumsBytes = kOprojKParts * kTaskColumns * 16 * 4;  // f32 [parts][32 channels][16 tokens]
constexpr int kScaleAt = kSumsBytes, kInvAt = kSumsBytes + 16 * 4;
static_assert(kInvAt + 16 * 4 <= 2 * 8 * 256 * 4, "o_proj's LDS fits the red pool (Layout)");

/// f32 element `index` of the red pool at byte `at`.
Val redF32(KernelContext& c, int at, Val index) { return c.b.ptrAdd(c.red, (at / 4 + index) * c.i32(4)); }

/// bf16 x8 run of row t at K k0 of the attention rows: `attn`, or the one row in LDS at `rowLds`.
Val attnRun(KernelContext& c, Val t, Val k0, Val rowLds = {}) {
  if (rowLds.b) return c.b.load(Type::vec(Type::bf16(), 8), c.b.ptrAdd(rowLds, k0 * c.i32(2)));
  return c.b.load(Type::vec(Type::bf16(), 8), c.elemAt(c.attn, t * c.L.attnWidth + k0, 2));
}

}  // namespace

int oprojLdsBytes() { return kInvAt + 16 * 4; }
int oprojSumsBytes() { return kSumsBytes; }

void oprojTokenScales(KernelContext& c, Val rowLds) {
  ir::Builder& b = c.b;
  const Layout& L = c.L;
  const int K = L.attnWidth, runs = K / 8;
  const Placement& p = L.push;
  // the CTAs that run push tasks, (block - base) mod blocks < tasks (block < tasks from CTA 0)
  Val hasTasks = p.base == 0 ? c.block < p.tasks
                             : specs::stageFirstTask(b, c.block, p.base, L.blocks) < c.i32(p.tasks);
  b.if_(hasTasks, [&] {
    for (int r = 0; r * L.waves < L.rows; ++r) {
      Val t = b.named(c.wave + r * L.waves, "t");
      b.if_(t < L.rows, [&] {
        // Every run of the row loads before the first max; a lane past the row's runs reads its
        // last run again (max is idempotent), so no lane branches.
        std::vector<Val> xs;
        for (int j = 0; j * 64 < runs; ++j) {
          Val run = c.lane + j * 64;
          if ((j + 1) * 64 > runs) run = b.min(run, c.i32(runs - 1));
          xs.push_back(attnRun(c, t, run * 8, rowLds));
        }
        Val m = b.f32(0.0);
        for (Val x : xs)
          for (int e = 0; e < 8; ++e) {
            Val v = b.bf16ToF32(b.extract(x, e));
            m = b.max(m, b.bitcast(b.bitcast(v, Type::i32()) & c.i32(0x7fffffff), Type::f32()));  // |x|
          }
        Val a = b.named(b.butterfly(m, {32, 16, 8, 4, 2, 1}, ir::OpCode::Max), "amax");
        b.if_(c.lane == 0, [&] {
          Val scale = a * b.f32(static_cast<double>(kFp8InvMax));
          Val inv = b.select(a == b.f32(0.0), b.f32(0.0), b.rcp(scale));
          b.store(redF32(c, kScaleAt, t), scale);
          b.store(redF32(c, kInvAt, t), inv);
          // for checks, from push task 0's CTA
          b.if_(c.block == p.base, [&] { b.store(c.elemAt(c.scratch, L.xscale, t, 4), scale); });
        });
      });
    }
    c.ctaSync(false);
  });
}

namespace {

// The task's accumulators -> red [part][channel in the task][token] from byte `at` of red.
void oprojStoreSums(KernelContext& c, const MfmaTile& T, Val acc, Val nt, Val part, int at) {
  Val base = at == 0 ? c.red : c.b.ptrAdd(c.red, c.i32(at));
  T.storeAcc(acc, base, [&](int i) {
    return (part * kTaskColumns + nt * 16 + T.accRow(i)) * c.i32(16) + T.accCol();
  });
}

// A thread a (row, pair) sums the task's K parts (stored from byte `at`) in order, scales by the
// token's and w_o's (`woScale(h, channel)`) and pushes.
void oprojSumsPush(KernelContext& c, Val task, int at, const std::function<Val(int, Val)>& woScale) {
  ir::Builder& b = c.b;
  const Layout& L = c.L;
  b.if_(c.tid < L.rows * kTaskPairs, [&] {
    Val t = b.named(c.tid / kTaskPairs, "t");
    Val q = c.tid % kTaskPairs;
    Val pair = b.named(task * kTaskPairs + q, "pair");
    Val scale = b.load(Type::f32(), redF32(c, kScaleAt, t));
    Val word = b.splat(b.bf16(0.0), 2);
    for (int h = 0; h < 2; ++h) {
      Val ch = q * 2 + c.i32(h);  // channel in the task
      Val sum;
      for (int p = 0; p < kOprojKParts; ++p) {
        Val v = b.load(Type::f32(), redF32(c, at, (p * kTaskColumns + ch) * c.i32(16) + t));
        sum = p == 0 ? v : sum + v;
      }
      word = b.insert(word, b.f32ToBf16((sum * scale) * woScale(h, ch)), h);
    }
    Val bits = b.bitcast(word, Type::i32());
    b.store(c.elemAt(c.scratch, L.opart, t * (L.hidden / 2) + pair, 4), bits);
    pushPair(c, t, pair, bits);
  });
}

// One task's epilogue: its sums to red, a sync, the sums pushed, a sync.
void oprojEpilogue(KernelContext& c, const MfmaTile& T, Val task, Val acc, Val nt, Val part,
                   const std::function<Val(int, Val)>& woScale) {
  oprojStoreSums(c, T, acc, nt, part, 0);
  c.ctaSync(false);
  oprojSumsPush(c, task, 0, woScale);
  c.ctaSync(false);
}

}  // namespace

std::vector<Val> oprojWeights(KernelContext& c, Val task) {
  ir::Builder& b = c.b;
  const int K = c.L.attnWidth, partSteps = K / 32 / kOprojKParts;
  const MfmaTile T = MfmaTile::at(c.lane, MfmaKind::F32_16x16x32_FP8, 1);
  Val chan0 = (task * kTaskColumns + (c.wave % 2) * 16), kBase = (c.wave / 2) * (partSteps * 32) + T.laneK0();
  Val wBase = b.named(c.shuffledOffset(chan0 + T.aRow(), kBase, K) + kBase % 16, "wbase_early");
  std::vector<Val> w;
  for (int st = 0; st < partSteps; ++st) w.push_back(b.load(Type::i64(), b.ptrAdd(c.wo, wBase + st * 512)));
  return w;
}

void stageOprojPush(KernelContext& c, Val task, const std::vector<Val>* weights) {
  ir::Builder& b = c.b;
  const Layout& L = c.L;
  const int K = L.attnWidth, partSteps = K / 32 / kOprojKParts;
  const MfmaTile T = MfmaTile::at(c.lane, MfmaKind::F32_16x16x32_FP8, 1);
  Val nt = b.named(c.wave % 2, "nt"), part = b.named(c.wave / 2, "kpart");
  Val chan0 = b.named(task * kTaskColumns + nt * 16, "chan0");  // the tile's first channel
  Val token = b.named(b.min(T.bCol(), c.i32(L.rows - 1)), "token");
  Val inv = b.load(Type::f32(), redF32(c, kInvAt, token));
  ir::Var acc = b.var(b.splat(b.f32(0.0), 4), "acc");
  // The part's K steps, unrolled. Step st reads K kBase + 32 st of the row and the weight 512 bytes
  // (one 32-byte K tile of 16 rows) past step 0's: laneK0 < 32, so K / 32 grows by st.
  Val kBase = b.named(part * (partSteps * 32) + T.laneK0(), "kbase");
  Val wBase = weights ? Val{} : b.named(c.shuffledOffset(chan0 + T.aRow(), kBase, K) + kBase % 16, "wbase");
  struct Step {
    Val x, a;
  };
  const auto loadStep = [&](int st) {
    if (weights) return Step{attnRun(c, token, kBase + st * 32), weights->at(static_cast<size_t>(st))};
    return Step{attnRun(c, token, kBase + st * 32), b.load(Type::i64(), b.ptrAdd(c.wo, wBase + st * 512))};
  };
  for (int first = 0; first < partSteps; first += kOprojStepsAhead) {
    std::vector<Step> group;
    for (int st = first; st < std::min(first + kOprojStepsAhead, partSteps); ++st) group.push_back(loadStep(st));
    for (const Step& in : group)
      b.set(acc, T.step(b.get(acc), std::vector<Val>{in.a}, std::vector<Val>{c.fp8x8(in.x, inv)}));
  }
  oprojEpilogue(c, T, task, b.get(acc), nt, part, [&](int, Val ch) {
    return b.load(Type::f32(), c.elemAt(c.woScale, task * kTaskColumns + ch, 4));
  });
}

OprojEarly oprojEarly(KernelContext& c, Val task) {
  ir::Builder& b = c.b;
  OprojEarly e{oprojWeights(c, task), {}};
  Val q = c.tid % kTaskPairs;
  for (int h = 0; h < 2; ++h)
    e.ws.push_back(b.load(Type::f32(), c.elemAt(c.woScale, task * kTaskColumns + q * 2 + c.i32(h), 4)));
  return e;
}

void oprojPushTasks(KernelContext& c, const std::vector<Val>& tasks, const std::vector<OprojEarly>& early,
                    Val rowLds, int secondSumsAt) {
  ir::Builder& b = c.b;
  const Layout& L = c.L;
  const int K = L.attnWidth, partSteps = K / 32 / kOprojKParts;
  const MfmaTile T = MfmaTile::at(c.lane, MfmaKind::F32_16x16x32_FP8, 1);
  Val nt = b.named(c.wave % 2, "nt"), part = b.named(c.wave / 2, "kpart");
  Val token = b.named(b.min(T.bCol(), c.i32(L.rows - 1)), "token");
  Val kBase = b.named(part * (partSteps * 32) + T.laneK0(), "kbase");
  const int ahead = std::min(kOprojStepsAhead, partSteps);
  std::vector<Val> x0;  // the first group's runs, issued with the token scales' loads
  for (int st = 0; st < ahead; ++st) x0.push_back(attnRun(c, token, kBase + st * 32, rowLds));
  oprojTokenScales(c, rowLds);
  Val inv = b.load(Type::f32(), redF32(c, kInvAt, token));
  std::vector<ir::Var> acc;
  for (size_t i = 0; i < tasks.size(); ++i) acc.push_back(b.var(b.splat(b.f32(0.0), 4), "acc"));
  for (int first = 0; first < partSteps; first += kOprojStepsAhead) {
    std::vector<Val> xs = x0;
    if (first > 0) {
      xs.clear();
      for (int st = first; st < std::min(first + kOprojStepsAhead, partSteps); ++st)
        xs.push_back(attnRun(c, token, kBase + st * 32, rowLds));
    }
    for (size_t j = 0; j < xs.size(); ++j) {
      Val a8 = c.fp8x8(xs[j], inv);
      for (size_t i = 0; i < tasks.size(); ++i)
        b.set(acc[i], T.step(b.get(acc[i]), std::vector<Val>{early[i].w.at(first + j)}, std::vector<Val>{a8}));
    }
  }
  const auto ws = [&](size_t i) {
    return [&, i](int h, Val) { return early[i].ws[static_cast<size_t>(h)]; };
  };
  if (tasks.size() == 2 && secondSumsAt >= 0) {  // both tasks' sums, then one sync
    oprojStoreSums(c, T, b.get(acc[0]), nt, part, 0);
    oprojStoreSums(c, T, b.get(acc[1]), nt, part, secondSumsAt);
    c.ctaSync(false);
    oprojSumsPush(c, tasks[0], 0, ws(0));
    b.if_(tasks[1] < c.i32(L.push.tasks), [&] { oprojSumsPush(c, tasks[1], secondSumsAt, ws(1)); });
    c.ctaSync(false);
    return;
  }
  for (size_t i = 0; i < tasks.size(); ++i) {
    const auto epilogue = [&] { oprojEpilogue(c, T, tasks[i], b.get(acc[i]), nt, part, ws(i)); };
    if (i == 0) epilogue();
    else b.if_(tasks[i] < c.i32(L.push.tasks), epilogue);
  }
}

}  // namespace monogen::specs::minimax_m3
