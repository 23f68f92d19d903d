// The mark and finish stages of the MiniMax-M3 FFN launch: every CTA marks that it has its tag
// (first), CTA 0 moves the epoch on once every mark is in (last), and the step's last launch waits
// for every CTA's work and trades every rank's failure flag over the peers.
#include <fmt/format.h>

#include "ir/Op.h"
#include "specs/minimax_m3/kernel/Sites.h"
#include "specs/minimax_m3/kernel/stages/Stages.h"

namespace monogen::specs::minimax_m3 {

using ir::AddrSpace;
using ir::MemOrder;
using ir::MemScope;
using ir::Type;
using ir::Val;

namespace {

ir::KernelArg controlArg(const char* name, ir::Scalar elem, std::vector<int64_t> shape, bool pointer,
                         std::string doc) {
  ir::KernelArg a;
  a.name = name;
  a.isPointer = pointer;
  a.elem = elem;
  a.shape = std::move(shape);
  a.role = ir::ArgRole::Control;
  a.align = pointer ? 8 : 4;
  a.doc = std::move(doc);
  return a;
}

// mark (every CTA, the first stage): thread 0 publishes MARKS[block] := (tag, tag), released at
// agent scope after the prologue's read of the epoch, so the epoch moves on only once every CTA
// has its tag. The drop-mark knob (FfnKnobs::dropMark) leaves CTA dropMark's mark out: a fault
// the epoch must catch.
void stageMark(KernelContext& c, int dropMark) {
  ir::Builder& b = c.b;
  Val who = c.tid == 0;
  if (dropMark >= 0) who = who & (c.block != dropMark);
  b.if_(who, [&] {
    c.publish(c.pairAt(c.scratch, c.L.marks, c.block), c.tag, c.tag, MemOrder::Release, MemScope::Agent);
  });
}

// done (every CTA, after its work, the step's last launch only): once every thread's stores have
// drained (release at agent scope, then the CTA barrier), thread 0 publishes DONE[block] := (tag,
// tag), released at agent scope, so the epoch's error word holds every CTA's faults.
void stageDone(KernelContext& c, Val handshake) {
  ir::Builder& b = c.b;
  b.if_(handshake != 0, [&] {
    c.ctaSync(/*drain=*/true);
    b.if_(c.tid == 0, [&] {
      c.publish(c.pairAt(c.scratch, c.L.done, c.block), c.tag, c.tag, MemOrder::Release, MemScope::Agent);
    });
  });
}

// injected_fault (CTA 0 thread 0, the step's last launch): when inject[0] == rank + 1, spin on
// the realtime clock (sleeping between reads) until inject[1] ticks have passed, then fail with
// the inject site naming this rank.
void injectedFault(KernelContext& c, Val inject) {
  ir::Builder& b = c.b;
  Val target = b.load(Type::i32(), inject, MemOrder::Relaxed, MemScope::Agent);
  b.if_(target == c.rank + 1, [&] {
    Val ticks = b.sext(b.load(Type::i32(), b.ptrAdd(inject, int64_t{4}), MemOrder::Relaxed, MemScope::Agent),
                       Type::i64());
    Val t0 = b.realtime();
    b.while_([&] { return b.realtime() - t0 < ticks; }, [&] { b.sleep(8); });
    c.fail(c.errorCode(kSiteInject));
  });
}

// epoch (CTA 0): the injected fault first on the step's last launch; waits (bounded) for every
// CTA's mark (and on the last launch its DONE), then moves the epoch on (release, agent): to tag,
// or past a skipped tag if one is missing; on the last launch publishes this rank's error word to
// every rank's FAULTS (system).
void stageEpoch(KernelContext& c, Val epoch, Val handshake, Val inject) {
  ir::Builder& b = c.b;
  const Layout& L = c.L;
  Val last = handshake != 0;
  b.if_(last & (c.tid == 0), [&] { injectedFault(c, inject); });
  Val missing = b.intToPtr(c.i32(L.red.offset), AddrSpace::Lds);  // red word 0: a mark is missing
  b.if_(c.tid == 0, [&] { b.store(missing, c.i32(0)); });
  c.ctaSync(/*drain=*/false);
  b.for_(c.tid, c.i32(L.blocks), c.i32(L.threads), [&](Val i) {
    Val code = c.errorCode(kSiteEpoch, i);
    Val mark = c.await(c.pairAt(c.scratch, L.marks, i), code, kSiteEpoch);
    b.if_(mark != c.tag, [&] { b.store(missing, c.i32(1)); });
    b.if_(last, [&] {
      Val done = c.await(c.pairAt(c.scratch, L.done, i), code, kSiteEpoch);
      b.if_(done != c.tag, [&] { b.store(missing, c.i32(1)); });
    });
  });
  c.ctaSync(/*drain=*/false);
  b.if_(c.tid == 0, [&] {
    Val skip = (c.tag & kLaunchTagMask) + c.i32(1);
    b.store(epoch, b.select(b.load(Type::i32(), missing) == c.i32(0), c.tag, skip), MemOrder::Release,
            MemScope::Agent);
    b.if_(last, [&] {
      Val word = b.load(Type::i32(), c.err, MemOrder::Relaxed, MemScope::Agent);
      for (int p = 0; p < L.tp; ++p)
        c.publish(c.pairAt(c.peerSym[p], L.faults, c.rank), word, c.tag, MemOrder::Release, MemScope::System);
    });
  });
}

// handshake (CTA 0, the step's last launch): thread p < TP waits for rank p's failure flag in
// this rank's FAULTS[p] (acquire, system scope, bounded; past the bound: site handshake naming
// rank p). A flag that came with the tag and is not 0, from another rank, is folded into this
// rank's error word: site handshake, rank p, token the site of p's error word. So a fault
// anywhere in the step is in every rank's error word when this launch ends.
void stageHandshake(KernelContext& c, Val handshake) {
  ir::Builder& b = c.b;
  const Layout& L = c.L;
  b.if_((handshake != 0) & (c.tid < L.tp), [&] {
    Val src = c.tid;
    Val code = c.peerErrorCode(kSiteHandshake, src);
    Val pair = c.pairAt(c.sym, L.faults, src);
    Val word = c.await(pair, code, kSiteHandshake, MemOrder::Acquire, MemScope::System);
    Val came = b.load(Type::i32(), b.ptrAdd(pair, int64_t{4}), MemOrder::Relaxed, MemScope::System) == c.tag;
    b.if_(came & (word != 0) & (src != c.rank),
          [&] { c.fail(code | (word & 0xff) << 16); });
  });
}

// A stage every CTA runs once, publishing its own word of `area`.
ir::Stage everyCtaStage(const char* name, const std::string& area, int64_t blocks, const char* doc) {
  ir::Stage s;
  s.name = name;
  s.tasks = blocks;
  s.everyCta = true;
  s.publishes = {{area, blocks}};
  s.doc = doc;
  return s;
}

}  // namespace

std::vector<ir::KernelArg> finishArgs(const FfnVariant& v) {
  std::vector<ir::KernelArg> a = {
      controlArg(arg::kEpoch, ir::Scalar::I32, {1}, true,
                 "i32 [1]: the epoch: the last launch's tag (a launch's tag is launchTagAfter(epoch)); zero it once"),
      controlArg(arg::kHandshake, ir::Scalar::I32, {}, false,
                 "i32: nonzero on the step's last launch: trade every rank's failure flag over the peers"),
      controlArg(arg::kInject, ir::Scalar::I32, {2}, true,
                 "i32 [2]: fault injection: rank inject[0] - 1 (0: none) stalls inject[1] ticks at the "
                 "handshake, then fails"),
  };
  if (v.knobs.trace)
    a.push_back(controlArg(arg::kTrace, ir::Scalar::I64, {v.layout.blocks, 0, 2}, true,
                           "u64 [blocks][stages][2]: the realtime clock at each stage's start and end, "
                           "CTA by CTA (trace knob)"));
  return a;
}

void addMarkStage(KernelContext& c, ir::Plan& plan) {
  const Layout& L = c.L;
  plan.stages.insert(plan.stages.begin(),
                     everyCtaStage("mark", L.marks.name, L.blocks,
                                   "every CTA, first: MARKS[block] := the tag it read from the epoch (the "
                                   "drop-mark knob leaves one out)"));
  c.stage(0, [&] { stageMark(c, c.knobs.dropMark); });
}

void addFinishStages(KernelContext& c, ir::Plan& plan) {
  const Layout& L = c.L;
  const int64_t tp = L.tp;
  const ir::Stage done = everyCtaStage("done", L.done.name, L.blocks,
                                       "every CTA, after its work, the step's last launch only: DONE[block] := "
                                       "the tag once its stores drained");
  ir::Stage epoch;
  epoch.name = "epoch";
  epoch.tasks = 1;
  epoch.waits = {{L.marks.name, L.blocks}, {L.done.name, L.blocks}};
  epoch.publishes = {{L.faults.name, tp * tp}};
  epoch.doc = "CTA 0: every mark (and on the step's last launch every DONE) in -> epoch := tag, a missing one -> "
              "the error word (site epoch); on the step's last launch the injected fault first, then this rank's "
              "error word to every rank's FAULTS";
  ir::Stage hs;
  hs.name = "handshake";
  hs.tasks = 1;
  hs.waits = {{L.faults.name, tp * tp}};
  hs.doc = "CTA 0, the step's last launch: every rank's failure flag, folded into this rank's error word "
           "(site handshake, the failed rank)";
  const int first = static_cast<int>(plan.stages.size());
  plan.stages.push_back(done);
  plan.stages.push_back(epoch);
  plan.stages.push_back(hs);
  plan.facts.push_back({"finish", "mark (every CTA, first), done (every CTA, the step's last launch), epoch (CTA 0), "
                                  "handshake (CTA 0, the step's last launch)"});
  plan.facts.push_back({"error sites", "epoch 9 (token: the CTA), inject 10, handshake 11 (rank: the failed rank, "
                                       "token: its site)"});

  ir::Builder& b = c.b;
  auto argOf = [&](const char* name, Type t) { return b.arg(plan.argIndex(name), t, name); };
  const Placement cta0{"epoch", 1, 0};
  c.stage(first, [&] { stageDone(c, argOf(arg::kHandshake, Type::i32())); });
  c.stage(first + 1, [&] {
    c.forEachTask(cta0, [&](Val) {
      c.loadPeers();
      stageEpoch(c, argOf(arg::kEpoch, Type::ptr(AddrSpace::Global)), argOf(arg::kHandshake, Type::i32()),
                 argOf(arg::kInject, Type::ptr(AddrSpace::Global)));
    });
  });
  c.stage(first + 2, [&] {
    c.forEachTask(cta0, [&](Val) { stageHandshake(c, argOf(arg::kHandshake, Type::i32())); });
  });
  c.finishTrace(plan);
}

}  // namespace monogen::specs::minimax_m3
