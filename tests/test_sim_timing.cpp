// The Sim's gfx950 timing model (runtime/sim/timing, docs/timing.md) on microkernels: each figure
// is the one the parameter table implies, computed here from TimingCycles, not a number copied in.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <utility>

#include "ir/Error.h"
#include "runtime/sim/timing/TimingCost.h"
#include "runtime/sim/timing/TimingCycles.h"
#include "test_sim_util.h"
#include "tests/test_shell.h"

using namespace simtest;
using monogen::ir::AddrSpace;
using monogen::ir::MemOrder;
using monogen::ir::MemScope;
using monogen::ir::MfmaKind;
namespace gt = monogen::runtime::timing;

namespace {

constexpr double kExact = 1e-6;  // cycles: exact up to double rounding

runtime::SimStats runTimed(Kit& k, const std::vector<std::vector<uint64_t>>& args, const gt::TimingParams& p) {
  runtime::SimOptions o;
  o.timing = std::make_shared<gt::TimingParams>(p);
  return k.dev.run(k.plan, args, o);
}

/// Declares kernel argument i a Weight (the model streams it from HBM).
void weightArg(Kit& k, int i) {
  if (static_cast<int>(k.plan.args.size()) <= i) k.plan.args.resize(i + 1);
  k.plan.args[i].name = "w" + std::to_string(i);
  k.plan.args[i].role = ir::ArgRole::Weight;
}

/// The modeled cycles of a chain of `hops` dependent 8-byte loads through a ring of pointers (each
/// in its own L2 line), walked `walks` times; the buffer is a weight or an activation.
double chainCycles(int hops, int walks, bool weight, const gt::TimingParams& p) {
  Kit k(1, 64);
  auto& b = k.b;
  Val ring = k.gptr(0), out = k.gptr(1);
  if (weight) weightArg(k, 0);
  Val ptr = ring;
  for (int i = 0; i < hops * walks; ++i) ptr = b.intToPtr(b.load(Type::i64(), ptr), AddrSpace::Global);
  b.store(out, b.ptrToInt(ptr));
  const int lines = 16;
  const uint64_t g = k.alloc(256 * lines, "ring"), o = k.alloc(8, "out");
  std::vector<uint64_t> next(32 * lines, 0);
  for (int i = 0; i < lines; ++i) next[32 * i] = g + 256 * ((i + 1) % hops);
  k.write(g, next);
  return runTimed(k, {{g, o}}, p).timed.cycles;
}

/// `ctas` CTAs of 4 waves, each wave issuing `loads` independent 1 KiB loads (16 bytes a lane) of
/// a weight, then xor-ing them into one store.
double streamCycles(int ctas, int loads, const gt::TimingParams& p) {
  Kit k(ctas, 256);
  auto& b = k.b;
  Val w = k.gptr(0), out = k.gptr(1);
  weightArg(k, 0);
  Type v4 = Type::vec(Type::i32(), 4);
  Val base = b.ptrAdd(w, b.sext(b.tid() * 16 + b.block() * (256 * 16 * loads), Type::i64()));
  std::vector<Val> got;
  for (int i = 0; i < loads; ++i) got.push_back(b.load(v4, b.ptrAdd(base, int64_t{4096} * i)));
  Val acc = got[0];
  for (int i = 1; i < loads; ++i) acc = acc ^ got[i];
  b.store(b.ptrAdd(out, b.sext((b.block() * 256 + b.tid()) * 16, Type::i64())), acc);
  const uint64_t g = k.alloc(int64_t{4096} * loads * ctas, "w"), o = k.alloc(int64_t{4096} * ctas, "out");
  return runTimed(k, {{g, o}}, p).timed.cycles;
}

/// `n` 16x16x32 bf16 MFMAs (`scaled`: 16x16x128 MfmaScale, A E4M3 x B E2M1) on one wave, in turn on
/// `chains` accumulators: each chain dependent through its accumulator, the chains independent.
double mfmaCycles(int n, const gt::TimingParams& p, bool scaled = false, int chains = 1) {
  Kit k(1, 64);
  auto& b = k.b;
  Val in = k.gptr(0), out = k.gptr(1);
  Type v8 = Type::vec(Type::bf16(), 8), v4 = Type::vec(Type::f32(), 4), i4 = Type::vec(Type::i32(), 4);
  Val off = b.sext(b.lane() * 16, Type::i64());
  Val a = b.load(v8, b.ptrAdd(in, off)), bb = b.load(v8, b.ptrAdd(in, off));
  Val sa = b.concat(b.load(i4, b.ptrAdd(in, off)), b.load(i4, b.ptrAdd(in, off))), sb = b.load(i4, b.ptrAdd(in, off));
  Val scale = b.i32(127);
  std::vector<Val> acc(static_cast<size_t>(chains), b.load(v4, b.ptrAdd(in, off)));
  for (int i = 0; i < n; ++i) {
    Val& d = acc[static_cast<size_t>(i % chains)];
    d = scaled ? b.mfmaScale(sa, sb, d, scale, scale) : b.mfma(MfmaKind::F32_16x16x32_BF16, a, bb, d);
  }
  for (int i = 0; i < chains; ++i) b.store(b.ptrAdd(out, b.sext(b.lane() * 16 + 1024 * i, Type::i64())), acc[i]);
  const uint64_t g = k.zeroed(1024, "in"), o = k.alloc(int64_t{1024} * chains, "out");
  return runTimed(k, {{g, o}}, p).timed.cycles;
}

/// A chain of `n` dependent integer adds on one wave; `isa` (null: IR classes) as TimingParams::isa.
runtime::SimTimedResult addChain(int n, std::shared_ptr<const gt::IsaCounts> isa) {
  Kit k(1, 64);
  auto& b = k.b;
  Val out = k.gptr(0);
  Val l = b.lane(), x = l;
  for (int i = 0; i < n; ++i) x = x + l;
  b.store(b.ptrAdd(out, b.sext(l * 4, Type::i64())), x);
  gt::TimingParams p;
  p.isa = std::move(isa);
  return runTimed(k, {{k.alloc(256, "out")}}, p).timed;
}

/// Every op attributed `valu` VALU instructions.
std::shared_ptr<const gt::IsaCounts> everyOpValu(int valu) {
  auto c = std::make_shared<gt::IsaCounts>();
  c->byOp.assign(64, {});
  for (auto& op : c->byOp) op[gt::kIsaValu] = valu;
  return c;
}

/// `iters` iterations of a loop of dependent adds on one wave; `isa` as TimingParams::isa.
runtime::SimTimedResult addLoop(int iters, std::shared_ptr<const gt::IsaCounts> isa) {
  Kit k(1, 64);
  auto& b = k.b;
  Val out = k.gptr(0);
  Val l = b.lane();
  ir::Var x = b.var(l, "x");
  b.for_(b.i32(0), b.i32(iters), b.i32(1), [&](Val) { b.set(x, b.get(x) + l); });
  b.store(b.ptrAdd(out, b.sext(l * 4, Type::i64())), b.get(x));
  gt::TimingParams p;
  p.isa = std::move(isa);
  return runTimed(k, {{k.alloc(256, "out")}}, p).timed;
}

/// Every op attributed `inLoop` VALU instructions at loop depth 1 and `hoisted` at depth 0 (out of
/// any loop).
std::shared_ptr<const gt::IsaCounts> everyOpByDepth(int inLoop, int hoisted) {
  auto c = std::make_shared<gt::IsaCounts>();
  c->byOp.assign(64, {});
  c->byDepth.assign(64, std::vector<std::array<int32_t, gt::kIsaKinds>>(2));
  for (size_t op = 0; op < c->byOp.size(); ++op) {
    c->byOp[op][gt::kIsaValu] = inLoop + hoisted;
    c->byDepth[op][0][gt::kIsaValu] = hoisted;
    c->byDepth[op][1][gt::kIsaValu] = inLoop;
  }
  return c;
}

/// `rounds` of a flag ping-pong: CTA 0 publishes ping i and waits for pong i, CTA 1 waits for
/// ping i and publishes pong i. With `ranks` 2 the two CTAs are CTA 0 of rank 0 and of rank 1 (the
/// pairs live in the waiter's memory, published through the peer pointer), else CTAs 0 and 1 of one
/// rank (XCDs 0 and 1).
constexpr int kMaxRounds = 8;
double pingPongCycles(int rounds, int ranks, const gt::TimingParams& p) {
  const bool peers = ranks == 2;
  Kit k(peers ? 1 : 2, 1);  // one lane a CTA: one publish a pair
  auto& b = k.b;
  Val own = k.gptr(0), err = k.gptr(2);
  Val other = peers ? b.arg(1, Type::ptr(AddrSpace::Peer), "peer") : k.gptr(1);
  Val me = peers ? b.arg(3, Type::i32(), "rank") : b.block();
  const MemScope scope = peers ? MemScope::System : MemScope::Agent;
  // Every pair pointer first (as many for any `rounds`), so a round is its publish and its wait only.
  std::vector<Val> ping, pong, waitPing, waitPong;
  for (int i = 0; i < kMaxRounds; ++i) {
    ping.push_back(b.ptrAdd(other, 16 * i));     // the peer's (or CTA 1's) ping i
    waitPong.push_back(b.ptrAdd(own, 16 * i + 8));
    waitPing.push_back(b.ptrAdd(own, 16 * i));
    pong.push_back(b.ptrAdd(other, 16 * i + 8));
  }
  Val bound = b.i64(INT64_MAX);
  b.if_(me == 0, [&] {
    for (int i = 0; i < rounds; ++i) {
      b.publish(ping[i], b.i32(i), b.i32(i + 1), MemOrder::Release, scope);
      b.wait(waitPong[i], b.i32(i + 1), bound, err, b.i32(1), 1, MemOrder::Acquire, scope);
    }
  }, [&] {
    for (int i = 0; i < rounds; ++i) {
      b.wait(waitPing[i], b.i32(i + 1), bound, err, b.i32(1), 1, MemOrder::Acquire, scope);
      b.publish(pong[i], b.i32(i), b.i32(i + 1), MemOrder::Release, scope);
    }
  });
  if (peers) {
    std::vector<uint64_t> flags, errs;
    for (int r = 0; r < 2; ++r) {
      flags.push_back(k.zeroed(16 * kMaxRounds, "flags", r));
      errs.push_back(k.zeroed(8, "err", r));
    }
    return runTimed(k, {{flags[0], flags[1], errs[0], 0}, {flags[1], flags[0], errs[1], 1}}, p).timed.cycles;
  }
  // One rank: CTA 0's pongs and CTA 1's pings in one array, each CTA's "other" is the same array.
  const uint64_t f = k.zeroed(16 * kMaxRounds, "flags"), e = k.zeroed(8, "err");
  return runTimed(k, {{f, f, e}}, p).timed.cycles;
}

/// One lane: a weight load nothing reads, then a publish at agent scope in `order`; the modeled end.
double loadThenPublishCycles(MemOrder order, const gt::TimingParams& p) {
  Kit k(1, 1);
  auto& b = k.b;
  Val w = k.gptr(0), flag = k.gptr(1);
  weightArg(k, 0);
  b.load(Type::i64(), w);
  b.publish(flag, b.i32(0), b.i32(1), order, MemScope::Agent);
  const uint64_t g = k.zeroed(256, "w"), f = k.zeroed(16, "flag");
  return runTimed(k, {{g, f}}, p).timed.cycles;
}

/// The test's parameter table: the defaults, with a poll period of one cycle, so a waiter sees a
/// flag the cycle it is visible (no poll phase) and a round trip has a closed form.
gt::TimingParams phaseFree() {
  gt::TimingParams p;
  p.set("pollPeriod", 1, "test");
  return p;
}

}  // namespace

TEST_CASE("sim timing: every opcode has a cost class, and timing off leaves the op-count clock") {
  for (int c = 0; c < static_cast<int>(ir::OpCode::StageScope) + 1; ++c) (void)gt::costClassOf(static_cast<uint16_t>(c));
  Kit k(1, 64);
  Val out = k.gptr(0);
  k.b.store(out, k.b.i32(7));
  const uint64_t o = k.alloc(4, "out");
  auto st = k.run({{o}});
  CHECK_FALSE(st.timed.on);
  auto timed = runTimed(k, {{o}}, gt::TimingParams{});
  CHECK(timed.timed.on);
  CHECK(k.read<int32_t>(o, 1)[0] == 7);
}

TEST_CASE("sim timing: a chain of dependent loads costs a load latency a hop") {
  const gt::TimingParams p;
  const gt::TimingCycles c(p);
  const double line = gt::kLineBytes;
  const double occupancy = std::max({line / c.l1Bandwidth, line / c.l2Bandwidth, line / c.hbmPerXcd()});
  // weights: every hop from HBM
  const double hbmHop = (chainCycles(8, 1, true, p) - chainCycles(4, 1, true, p)) / 4;
  CHECK(hbmHop == Approx(c.hbmLatency + occupancy).margin(kExact));
  // an activation: the first walk misses L2 (from HBM / the MALL), the second hits it
  const double firstWalk = chainCycles(8, 1, false, p), twoWalks = chainCycles(8, 2, false, p);
  const double l2Occupancy = std::max(line / c.l1Bandwidth, line / c.l2Bandwidth);
  CHECK((twoWalks - firstWalk) / 8 == Approx(c.l2Latency + l2Occupancy).margin(kExact));
}

TEST_CASE("sim timing: a bandwidth-bound stream runs at eta x HBM bandwidth, split over the XCDs") {
  const gt::TimingParams p;
  const gt::TimingCycles c(p);
  // 64 CTAs: 8 an XCD, 4 waves each; 8 more 1 KiB loads a wave add 8 x 4 x 8 KiB an XCD
  const double extra = streamCycles(64, 16, p) - streamCycles(64, 8, p);
  CHECK(extra == Approx(8.0 * 4 * 8 * 1024 / c.hbmPerXcd()).margin(kExact));
  gt::TimingParams slow = p;
  slow.set("eta", 0.6, "test");
  const gt::TimingCycles cs(slow);
  CHECK(streamCycles(64, 16, slow) - streamCycles(64, 8, slow) ==
        Approx(8.0 * 4 * 8 * 1024 / cs.hbmPerXcd()).margin(kExact));
}

TEST_CASE("sim timing: a dependent MFMA chain costs the MFMA latency each") {
  const gt::TimingParams p;
  const gt::TimingCycles c(p);
  CHECK((mfmaCycles(16, p) - mfmaCycles(8, p)) / 8 == Approx(c.mfmaBf16Latency).margin(kExact));
}

TEST_CASE("sim timing: a block-scaled MFMA with an fp8 operand takes 8 passes of the XDL pipe") {
  const gt::TimingParams p;
  const gt::TimingCycles c(p);
  // A E4M3 (f8) x B E2M1: one dependent chain costs the latency each; two chains in turn the XDL
  // busy time each (the pipe is the bound: 2 x busy >= the latency)
  REQUIRE(2 * c.mfmaScaleF8Busy >= c.mfmaScaleF8Latency);
  CHECK((mfmaCycles(16, p, true) - mfmaCycles(8, p, true)) / 8 == Approx(c.mfmaScaleF8Latency).margin(kExact));
  CHECK((mfmaCycles(16, p, true, 2) - mfmaCycles(8, p, true, 2)) / 8 == Approx(c.mfmaScaleF8Busy).margin(kExact));
  CHECK(c.mfmaScaleF8Busy == Approx(2 * c.mfmaBf16Busy));  // 8 passes against the bf16 MFMA's 4
}

TEST_CASE("sim timing: with the compiled ISA an ALU op costs its attributed instructions") {
  const gt::TimingCycles c{gt::TimingParams{}};
  // IR classes: one VALU instruction an add, its latency a hop.
  CHECK(addChain(16, nullptr).cycles - addChain(8, nullptr).cycles == Approx(8 * c.valuLatency).margin(kExact));
  CHECK(addChain(8, nullptr).isaInstructions == -1);
  // Three VALU instructions an add: issued back to back, the result ready after the last.
  const auto three = everyOpValu(3);
  const runtime::SimTimedResult a16 = addChain(16, three), a8 = addChain(8, three);
  CHECK(a16.cycles - a8.cycles == Approx(8 * (2 * c.issueInterval + c.valuLatency)).margin(kExact));
  CHECK(a16.isaInstructions - a8.isaInstructions == 8 * 3);
  // Folded away (no instruction): the chain costs nothing.
  const auto none = everyOpValu(0);
  CHECK(addChain(16, none).cycles - addChain(8, none).cycles == Approx(0).margin(kExact));
}

TEST_CASE("sim timing: an instruction hoisted out of a loop issues once, not each iteration") {
  // 1 VALU instruction an op in the loop: each iteration costs the same with 3 more hoisted an op
  // (they issue once a wave), and the ops outside the loop charge both parts every execution.
  const auto inLoop = everyOpByDepth(1, 0), hoisted = everyOpByDepth(1, 3);
  const runtime::SimTimedResult a16 = addLoop(16, inLoop), a8 = addLoop(8, inLoop);
  const runtime::SimTimedResult h16 = addLoop(16, hoisted), h8 = addLoop(8, hoisted);
  CHECK(h16.isaInstructions - h8.isaInstructions == a16.isaInstructions - a8.isaInstructions);
  CHECK(h16.cycles - h8.cycles == Approx(a16.cycles - a8.cycles).margin(kExact));
  CHECK(h16.isaInstructions - a16.isaInstructions == h8.isaInstructions - a8.isaInstructions);
  CHECK(h8.isaInstructions > a8.isaInstructions);
  // Without the split every instruction issues each execution: 4 an op an iteration.
  auto flat = std::make_shared<gt::IsaCounts>(*hoisted);
  flat->byDepth.clear();
  CHECK(addLoop(16, flat).isaInstructions - addLoop(8, flat).isaInstructions ==
        4 * (a16.isaInstructions - a8.isaInstructions));
}

TEST_CASE("sim timing: a flag ping-pong between CTAs on two XCDs") {
  const gt::TimingParams p = phaseFree();
  const gt::TimingCycles c(p);
  // a round trip: twice (visible on the other XCD, one poll, the acquire)
  const double rt = (pingPongCycles(8, 1, p) - pingPongCycles(4, 1, p)) / 4;
  CHECK(rt == Approx(2 * (c.visibleOtherXcd + c.pollPeriod + c.acquireAgent)).margin(kExact));
  // with the default poll period the waiter wakes at its next poll: at most one period later
  const gt::TimingParams d;
  const gt::TimingCycles cd(d);
  const double rtd = (pingPongCycles(8, 1, d) - pingPongCycles(4, 1, d)) / 4;
  CHECK(rtd >= 2 * (cd.visibleOtherXcd + cd.pollPeriod + cd.acquireAgent) - kExact);
  CHECK(rtd <= 2 * (cd.visibleOtherXcd + 2 * cd.pollPeriod + cd.acquireAgent) + kExact);
}

TEST_CASE("sim timing: a flag ping-pong between two ranks over xGMI") {
  const gt::TimingParams p = phaseFree();
  const gt::TimingCycles c(p);
  const double rt = (pingPongCycles(8, 2, p) - pingPongCycles(4, 2, p)) / 4;
  CHECK(rt == Approx(2 * (c.visiblePeer + c.pollPeriod + c.acquireSystem)).margin(kExact));
}

TEST_CASE("sim timing: a release waits for the wave's loads in flight, as vmcnt(0) does") {
  // The load's value is never read: only the release's drain can wait for it.
  const gt::TimingParams p;
  gt::TimingParams slow = p;
  slow.hbmLatency *= 2;
  const gt::TimingCycles c(p), cs(slow);
  const double rel = loadThenPublishCycles(MemOrder::Release, p), relSlow = loadThenPublishCycles(MemOrder::Release, slow);
  CHECK(relSlow - rel == Approx(cs.hbmLatency - c.hbmLatency).margin(kExact));
  CHECK(rel >= c.hbmLatency + c.storeLatency);  // the load back, then the flag's store
  // a relaxed publish does not drain: the load's latency does not reach the end
  CHECK(loadThenPublishCycles(MemOrder::Relaxed, slow) == Approx(loadThenPublishCycles(MemOrder::Relaxed, p)).margin(kExact));
}

TEST_CASE("sim timing: realtime reads the modeled clock, and sleep advances it") {
  const gt::TimingParams p;
  const gt::TimingCycles c(p);
  Kit k(1, 64);
  auto& b = k.b;
  Val out = k.gptr(0);
  Val t0 = b.realtime();
  b.sleep(100);
  Val t1 = b.realtime();
  b.store(out, t1 - t0);
  const uint64_t o = k.alloc(8, "out");
  runTimed(k, {{o}}, p);
  // between the two reads: the sleep's issue slot, its 100 units and the realtime op's
  const double cycles = c.issueInterval + 100 * c.sleepUnit;
  const auto got = k.read<int64_t>(o, 1)[0];
  CHECK(std::abs(static_cast<double>(got) - cycles * c.ticksPerCycle()) <= 1.0);
}

TEST_CASE("sim timing: parameters override from JSON, a fittable one only inside its bracket") {
  const std::string path = std::string(MONOGEN_BINARY_DIR) + "/test_sim_timing_params.json";
  {
    std::ofstream f(path);
    f << R"({"eta": 0.7, "hbmLatency": 1000})";
  }
  gt::TimingParams p;
  p.load(path);
  CHECK(p.eta == 0.7);
  CHECK(p.hbmLatency == 1000);
  CHECK_THROWS_WITH(p.set("eta", 0.5, "test"), Catch::Contains("bracket"));
  CHECK_THROWS_WITH(p.set("nope", 1, "test"), Catch::Contains("no timing parameter 'nope'"));
  {
    std::ofstream f(path);
    f << R"({"eta": "fast"})";
  }
  CHECK_THROWS_WITH(p.load(path), Catch::Contains("not a number"));
  std::remove(path.c_str());
  int fittable = 0;
  for (const auto& row : p.rows()) fittable += row.fittable();
  CHECK(fittable <= 3);
}

namespace {

const std::string kMonogen = std::string(MONOGEN_BINARY_DIR) + "/tools/monogen";

}  // namespace

TEST_CASE("sim timing: monogen sim --timed prints the modeled time and critical path, verdict unchanged", "[cli]") {
  const auto [code, out] = shell(kMonogen + " sim --rows 2 --tp 2 --config reduced --timed");
  INFO(out);
  CHECK(code == 0);
  CHECK(out.find("modeled launch time: ") != std::string::npos);
  CHECK(out.find("modeled critical path: ends in stage '") != std::string::npos);
  CHECK(out.find("verdict: bit-exact under 1 seed") != std::string::npos);
  const auto [code2, out2] = shell(kMonogen + " sim --rows 2 --tp 2 --config reduced --timing-params /dev/null");
  CHECK(code2 != 0);
  CHECK(out2.find("needs --timed") != std::string::npos);
}

TEST_CASE("sim timing: monogen bench --timed prints and writes the modeled cells", "[cli]") {
  const std::string json = std::string(MONOGEN_BINARY_DIR) + "/test_sim_timing_bench.json";
  std::remove(json.c_str());
  const auto [code, out] = shell(kMonogen + " bench --rows 2 --tp 2 --experts 4 --timed --json " + json);
  INFO(out);
  CHECK(code == 0);
  CHECK(out.find("modeled us") != std::string::npos);
  std::ifstream f(json);
  REQUIRE(f.good());
  const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  for (const char* key : {"\"rows\": 2", "\"tp\": 2", "\"experts\": 4", "\"input\": \"attn\"", "\"modeled_us\"",
                          "\"floor_us\"", "\"seed_us\": null"})
    CHECK(text.find(key) != std::string::npos);
  std::remove(json.c_str());
}
