// The IR layer: builder type checks, the printer's stable text, and every verifier rule.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <iterator>
#include <set>
#include <string>

#include "ir/Builder.h"
#include "ir/Error.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"

using namespace monogen;
using namespace monogen::ir;

namespace {

// A small valid Plan: stage "a" publishes flag F (one pair a task), stage "b" waits on it.
Plan twoStagePlan() {
  Plan p;
  p.key.params = {{"S", 1}, {"TP", 1}};
  p.key.target = gfx950();
  p.grid = {8, 512};
  p.args = {
      {"scratch", true, Scalar::I8, {4096}, ArgRole::Scratch, 256, "scratch"},
      {"err", true, Scalar::I32, {2}, ArgRole::Control, 8, "error word"},
      {"tag", false, Scalar::I32, {}, ArgRole::Control, 4, "launch tag"},
  };
  p.regions = {{"flags", "scratch", 0, 1024, ""}, {"data", "scratch", 1024, 1024, ""}};
  p.flags = {{"F", "flags", 8, false, ""}};
  p.pools = {{"red", 0, 256, "", ""}};
  p.ldsBytes = 256;
  p.stages = {{"a", 8, false, false, 0, {}, {{"F", 8}}, ""}, {"b", 8, false, false, 0, {{"F", 8}}, {}, ""}};
  p.kernel.name = "k";
  Builder b(p.kernel);
  Val scratch = b.arg(0, Type::ptr(AddrSpace::Global), "scratch");
  Val err = b.arg(1, Type::ptr(AddrSpace::Global), "err");
  Val tag = b.arg(2, Type::i32(), "tag");
  Val blk = b.block();
  Val tid = b.tid();
  b.stage(0, [&] {
    b.if_(tid == 0, [&] { b.publish(b.ptrAdd(scratch, b.sext(blk * 8, Type::i64())), blk, tag); });
  });
  b.stage(1, [&] {
    b.barrier();
    b.if_(tid == 0, [&] {
      Val v = b.wait(b.ptrAdd(scratch, b.sext(blk * 8, Type::i64())), tag, b.i64(1000), err, b.i32(7), 1);
      b.store(b.ptrAdd(scratch, b.sext(blk * 4 + 1024, Type::i64())), v);
    });
  });
  return p;
}

bool anyContains(const std::vector<std::string>& ps, const std::string& s) {
  for (auto& p : ps)
    if (p.find(s) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("builder rejects ill-typed ops with the op's name", "[ir]") {
  Function f;
  f.name = "k";
  Builder b(f);
  Val i = b.i32(1);
  Val x = b.f32(1.0);
  CHECK_THROWS_WITH(i + x, Catch::Contains("op add") && Catch::Contains("i32 and f32"));
  CHECK_THROWS_WITH(b.load(Type::vec(Type::i32(), 5), b.intToPtr(b.i64(0), AddrSpace::Global)),
                    Catch::Contains("op load"));
  CHECK_THROWS_WITH(b.mfma(MfmaKind::F32_16x16x32_BF16, x, x, x), Catch::Contains("op mfma"));
  CHECK_THROWS_WITH(b.select(i, i, i), Catch::Contains("condition must be i1"));
  CHECK_THROWS_WITH(b.f32x2ToFp8x2(x, i), Catch::Contains("op f32x2_to_fp8x2") && Catch::Contains("f32 and i32"));
  CHECK_NOTHROW(b.select(i < 2, i, i));
}

TEST_CASE("ir/Ops.def: one named record per opcode, and the builder holds ops to it", "[ir]") {
  STATIC_REQUIRE(kNumOpCodes == static_cast<int>(OpCode::StageScope) + 1);
  STATIC_REQUIRE(std::size(kOpInfo) == static_cast<size_t>(kNumOpCodes));
  std::set<std::string> names;
  for (int c = 0; c < kNumOpCodes; ++c) {
    const OpCode op = static_cast<OpCode>(c);
    INFO("opcode " << c << " " << opName(op));
    CHECK(opName(op)[0] != '\0');
    CHECK(names.insert(opName(op)).second);
    CHECK(opInfo(op).doc[0] != '\0');
    CHECK(opOperands(op) >= 0);
    CHECK((opRegions(op) > 0) == (opClass(op) == OpClass::Control));
  }
  CHECK(std::string(opName(OpCode::StageScope)) == "stage");
  CHECK(std::string(opName(OpCode::Fp4x8ToBF16x8)) == "fp4x8_to_bf16x8");
  CHECK((isBlocking(OpCode::Wait) && touchesMemory(OpCode::Wait) && !isBlocking(OpCode::Load)));
  CHECK((touchesMemory(OpCode::Publish) && !touchesMemory(OpCode::Fence) && isBlocking(OpCode::Barrier)));

  // unary() names its op: every op whose record does not take one operand is refused by its count.
  Function f;
  f.name = "k";
  Builder b(f);
  const Val x = b.f32(1.0);
  int refused = 0;
  for (int c = 0; c < kNumOpCodes; ++c) {
    const OpCode op = static_cast<OpCode>(c);
    if (opOperands(op) == 1) continue;
    INFO("opcode " << opName(op));
    CHECK_THROWS_WITH(b.unary(op, x), Catch::Contains(fmt::format("op {}:", opName(op))) &&
                                          Catch::Contains(fmt::format("expected {} operands, got 1", opOperands(op))));
    ++refused;
  }
  CHECK(refused > 30);
  // An op the record says has no result is refused as a value; a math op still builds.
  CHECK_THROWS_WITH(b.unary(OpCode::VarStore, x), Catch::Contains("op var_store") && Catch::Contains("has no result"));
  CHECK(b.unary(OpCode::Sqrt, x).type() == Type::f32());
  CHECK(b.bf16ToF32(b.splat(b.bf16(1.0), 4)).type() == Type::vec(Type::f32(), 4));
  CHECK(b.cmp(CmpPred::Olt, b.splat(x, 2), b.splat(x, 2)).type() == Type::vec(Type::i1(), 2));
}

TEST_CASE("verifier: an op's operand count is its record's", "[ir]") {
  Plan p = twoStagePlan();
  {
    Builder b(p.kernel);
    Val s = b.arg(0, Type::ptr(AddrSpace::Global), "scratch");
    b.store(s, b.tid() + 1);
  }
  CHECK(verifyAll(p).empty());
  for (Op& op : p.kernel.body.ops)
    if (op.code == OpCode::Add) op.operands.pop_back();
  CHECK(anyContains(verifyAll(p), "op #"));
  CHECK(anyContains(verifyAll(p), "add: expected 2 operands, 0 regions and a result; got 1, 0 and a result"));
}

TEST_CASE("printer output is stable and shows structure", "[ir]") {
  Plan p1 = twoStagePlan();
  Plan p2 = twoStagePlan();
  const std::string k = printKernel(p1);
  CHECK(k == printKernel(p2));
  CHECK(printPlan(p1) == printPlan(p2));
  CHECK(k.find("stage 0 \"a\" {") != std::string::npos);
  CHECK(k.find("publish [release, agent]") != std::string::npos);
  CHECK(k.find("wait site 1 [acquire, agent]") != std::string::npos);
  CHECK(k.find("barrier") != std::string::npos);
  const std::string plan = printPlan(p1);
  CHECK(plan.find("grid: 8 x 512") != std::string::npos);
  CHECK(plan.find("1 b ") != std::string::npos);
}

TEST_CASE("key: ordered parameters print as the canonical text and the variant name", "[ir]") {
  Key k;
  k.spec = "minimax_m3.ffn";
  k.params = {{"S", 8}, {"TP", 4}};
  k.knobs = "experts=shared trace=1";
  k.target = gfx950();
  k.config = "hidden=6144";
  CHECK(k.canonical() ==
        "minimax_m3.ffn v1 S=8 TP=4 knobs=[experts=shared trace=1] target=gfx950:sramecc+:xnack- wave64 cus=256 "
        "lds=163840 threads=512 clock=100000000 config=hidden=6144");
  CHECK(k.variantName() == "minimax_m3.ffn-S8-TP4-experts=shared-trace=1");
  CHECK(k.intParam("TP") == 4);
  k.setParam("S", 3);     // in place: the order stays
  k.setParam("mode", "x");  // a text parameter goes after the others
  CHECK(k.variantName() == "minimax_m3.ffn-S3-TP4-modex-experts=shared-trace=1");
  CHECK(k.canonical().rfind("minimax_m3.ffn v1 S=3 TP=4 mode=x knobs=[", 0) == 0);
}

TEST_CASE("key: a missing or text parameter is an error naming the key and the parameter", "[ir]") {
  Key k;
  k.spec = "minimax_m3.ffn";
  k.params = {{"S", 8}, {"mode", "x"}};
  k.target = gfx950();
  CHECK_THROWS_AS(k.intParam("TP"), IrError);
  CHECK_THROWS_WITH(k.intParam("TP"), Catch::Contains("minimax_m3.ffn-S8-modex") &&
                                          Catch::Contains("no parameter 'TP'") && Catch::Contains("it has: S, mode"));
  CHECK_THROWS_WITH(k.intParam("mode"), Catch::Contains("parameter 'mode'") && Catch::Contains("expected an integer"));
  CHECK_THROWS_WITH(Key{}.param("S"), Catch::Contains("no parameter 'S'") && Catch::Contains("it has: none"));
}

TEST_CASE("verifier: a plan needs a target and at least one rank", "[ir]") {
  Plan p = twoStagePlan();
  p.key.target = Target{};
  CHECK(anyContains(verifyAll(p), "the key needs one (ir::gfx950(), ir::targetNamed)"));
  p = twoStagePlan();
  p.ranks = 0;
  CHECK(anyContains(verifyAll(p), "a launch spans 0 ranks"));
}

TEST_CASE("a valid plan verifies", "[ir]") { CHECK(verifyAll(twoStagePlan()).empty()); }

TEST_CASE("verifier: a waited flag needs exactly one publisher covering it once", "[ir]") {
  Plan p = twoStagePlan();
  p.stages[0].publishes.clear();
  CHECK(anyContains(verifyAll(p), "is waited on but no stage publishes it"));

  p = twoStagePlan();
  p.stages[1].publishes = {{"F", 8}};
  CHECK(anyContains(verifyAll(p), "publishing stages"));

  p = twoStagePlan();
  p.stages[0].publishes = {{"F", 4}};
  CHECK(anyContains(verifyAll(p), "publishes 4 pairs a launch; the array holds 8"));

  p = twoStagePlan();
  p.flags[0].peer = true;
  p.ranks = 2;
  CHECK(anyContains(verifyAll(p), "(8 a rank x 2 ranks)"));
}

TEST_CASE("verifier: a parity-halved flag array is published one half a launch", "[ir]") {
  // F's region holds 16 pairs as two halves of 8; a launch publishes half (tag & 1): 8 pairs.
  Plan p = twoStagePlan();
  p.flags[0].pairs = 16;
  p.flags[0].parityHalves = true;
  CHECK(verifyAll(p).empty());
  CHECK(p.flags[0].launchPairs() == 8);
  CHECK(printPlan(p).find("2 parity halves") != std::string::npos);

  // publishing both halves in one launch breaks the one-publisher-per-pair-per-launch rule
  p.stages[0].publishes = {{"F", 16}};
  CHECK(anyContains(verifyAll(p), "publishes 16 pairs a launch; the array holds 8 in the launch's parity half"));

  // a peer array: one half a rank, every rank
  p = twoStagePlan();
  p.flags[0].pairs = 16;
  p.flags[0].parityHalves = true;
  p.flags[0].peer = true;
  p.ranks = 2;
  p.stages[0].publishes = {{"F", 16}};
  p.stages[1].waits = {{"F", 16}};
  CHECK(verifyAll(p).empty());
  p.stages[0].publishes = {{"F", 32}};
  CHECK(anyContains(verifyAll(p), "(8 a rank x 2 ranks) in the launch's parity half"));

  // halves need an even count
  p = twoStagePlan();
  p.flags[0].pairs = 15;
  p.flags[0].parityHalves = true;
  CHECK(anyContains(verifyAll(p), "cannot be two parity halves"));
}

TEST_CASE("verifier: a wait on a later stage's flag is a cycle", "[ir]") {
  Plan p = twoStagePlan();
  std::swap(p.stages[0].publishes, p.stages[1].publishes);
  std::swap(p.stages[0].waits, p.stages[1].waits);
  auto problems = verifyAll(p);
  CHECK(anyContains(problems, "wait cycle"));
  CHECK(anyContains(problems, "'a' -(program order)-> 'b'"));
}

TEST_CASE("verifier: pools must fit and only declared aliases overlap", "[ir]") {
  Plan p = twoStagePlan();
  p.pools.push_back({"x", 128, 256, "", ""});
  auto problems = verifyAll(p);
  CHECK(anyContains(problems, "pool 'x'"));
  CHECK(anyContains(problems, "does not fit"));
  CHECK(anyContains(problems, "overlaps pool 'red' without declaring the alias"));

  p = twoStagePlan();
  p.ldsBytes = 200 * 1024;
  p.pools[0].bytes = 200 * 1024;
  CHECK(anyContains(verifyAll(p), "204800 bytes of LDS, the target has 163840"));

  p = twoStagePlan();
  p.pools.push_back({"mid", 0, 128, "red", ""});
  CHECK(verifyAll(p).empty());
}

TEST_CASE("verifier: regions fit and do not overlap", "[ir]") {
  Plan p = twoStagePlan();
  p.regions[1].offset = 512;
  CHECK(anyContains(verifyAll(p), "overlaps region 'flags'"));
  p = twoStagePlan();
  p.regions[1].bytes = 8192;
  CHECK(anyContains(verifyAll(p), "does not fit buffer 'scratch'"));
}

TEST_CASE("verifier: every task is placed", "[ir]") {
  Plan p = twoStagePlan();
  p.stages[1].base = 9;
  CHECK(anyContains(verifyAll(p), "base 9 is not a CTA"));
  p = twoStagePlan();
  p.stages.push_back({"c", 4, false, false, 0, {}, {}, ""});
  CHECK(anyContains(verifyAll(p), "stage 'c': its body is in the kernel 0 times"));
}

TEST_CASE("verifier: barriers only in CTA-uniform control flow", "[ir]") {
  Plan p = twoStagePlan();
  {
    Builder b(p.kernel);
    Val tid = b.tid();
    b.if_(tid < 64, [&] { b.barrier(); });
  }
  auto problems = verifyAll(p);
  CHECK(anyContains(problems, "barrier in control flow that is not uniform"));

  // A loop over this CTA's tasks is uniform: bounds from the block id and constants.
  p = twoStagePlan();
  {
    Builder b(p.kernel);
    Val blk = b.block();
    b.for_(blk, b.i32(64), b.i32(8), [&](Val) { b.barrier(); });
    // A variable assigned from a thread id makes a later loop non-uniform.
    Var n = b.var(b.i32(0), "n");
    b.set(n, b.tid());
    b.for_(b.i32(0), b.get(n), b.i32(1), [&](Val) { b.barrier(); });
  }
  problems = verifyAll(p);
  REQUIRE(problems.size() == 1);
  CHECK(anyContains(problems, "op #"));
}

TEST_CASE("verifier: a loop holding barriers may end on a count read from LDS only as cta_uniform", "[ir]") {
  for (bool claimed : {false, true}) {
    Plan p = twoStagePlan();
    {
      Builder b(p.kernel);
      Val n = b.load(Type::i32(), b.intToPtr(b.i32(0), AddrSpace::Lds));  // every lane reads one word
      b.for_(b.i32(0), claimed ? b.ctaUniform(n) : n, b.i32(1), [&](Val) { b.barrier(); });
      CHECK_THROWS_WITH(b.ctaUniform(b.splat(n, 2)), Catch::Contains("expected a 1..8-byte scalar"));
      CHECK_THROWS_WITH(b.ctaUniform(n < 3), Catch::Contains("expected a 1..8-byte scalar"));
    }
    INFO("claimed " << claimed);
    CHECK(anyContains(verifyAll(p), "barrier in control flow that is not uniform") == !claimed);
  }
}

TEST_CASE("verifier: operands must be defined where used", "[ir]") {
  Plan p = twoStagePlan();
  {
    Builder b(p.kernel);
    Val inner;
    b.if_(b.tid() < 3, [&] { inner = b.i32(5); });
    b.store(b.intToPtr(b.i64(0), AddrSpace::Global), inner + 1);
  }
  CHECK(anyContains(verifyAll(p), "is used where it is not defined"));
}

TEST_CASE("verifier: an MFMA's operand types are its kind's", "[ir]") {
  Plan p = twoStagePlan();
  {
    Builder b(p.kernel);
    Val a = b.constInt(Type::i64(), 0x3838383838383838ll);  // eight e4m3fn 1.0s
    b.mfma(MfmaKind::F32_16x16x32_FP8, a, a, b.splat(b.f32(0.0), 4));
    CHECK_THROWS_WITH(b.mfma(MfmaKind::F32_16x16x32_FP8, b.splat(b.bf16(1.0), 8), a, b.splat(b.f32(0.0), 4)),
                      Catch::Contains("f32_16x16x32_fp8_fp8 takes (i64, i64, <4 x f32>)"));
  }
  CHECK(verifyAll(p).empty());
  // The same op with the kind changed after the builder checked it: the verifier finds it.
  for (Op& op : p.kernel.body.ops)
    if (op.code == OpCode::Mfma) op.attrs.mfma = MfmaKind::F32_16x16x32_BF16;
  CHECK(anyContains(verifyAll(p), "expected f32_16x16x32_bf16 (a <8 x bf16>, b <8 x bf16>, acc <4 x f32>)"));
}

TEST_CASE("verifier: a block-scaled MFMA takes E4M3 words, E2M1 words, the accumulator and two scale words", "[ir]") {
  Plan p = twoStagePlan();
  {
    Builder b(p.kernel);
    Val a = b.splat(b.i32(0x38383838), 8), bm = b.splat(b.i32(0x22222222), 4), acc = b.splat(b.f32(0.0), 4);
    b.mfmaScale(a, bm, acc, b.i32(127), b.i32(127));
    CHECK_THROWS_WITH(b.mfmaScale(bm, bm, acc, b.i32(127), b.i32(127)),
                      Catch::Contains("op mfma_scale") && Catch::Contains("got (<4 x i32>, <4 x i32>"));
    CHECK_THROWS_WITH(b.mfmaScale(a, bm, acc, b.i32(127), b.f32(1.0)), Catch::Contains("op mfma_scale"));
    CHECK_THROWS_WITH(b.mfmaScale(a, bm, b.splat(b.f32(0.0), 2), b.i32(127), b.i32(127)),
                      Catch::Contains("op mfma_scale"));
  }
  CHECK(verifyAll(p).empty());
  // A and B swapped after the builder checked them: the verifier finds it.
  for (Op& op : p.kernel.body.ops)
    if (op.code == OpCode::MfmaScale) std::swap(op.operands[0], op.operands[1]);
  CHECK(anyContains(verifyAll(p), "expected (a <8 x i32>, b <4 x i32>, acc <4 x f32>, scale a i32, scale b i32)"));
}

namespace {
// twoStagePlan plus a 3 GiB weight argument "w" (3 x 2^30 bytes, 3 experts of 1 GiB) and a body
// `body(b, w, e)` in stage "a", where e is an expert index loaded from the scratch buffer.
template <class F>
Plan bigTensorPlan(F body) {
  Plan p = twoStagePlan();
  p.args.push_back({"w", true, Scalar::I8, {int64_t{3} << 30}, ArgRole::Weight, 16, "3 GiB of weights"});
  Builder b(p.kernel);
  Val scratch = b.arg(0, Type::ptr(AddrSpace::Global), "scratch");
  Val w = b.arg(3, Type::ptr(AddrSpace::Global), "w");
  Val e = b.load(Type::i32(), b.ptrAdd(scratch, int64_t{1024}));
  body(b, w, e);
  return p;
}
}  // namespace

TEST_CASE("verifier: an offset into a tensor of 2 GiB or more must not wrap", "[ir]") {
  SECTION("an expert index scaled in i32 is refused, naming the ptr_add and the mul") {
    Plan p = bigTensorPlan([](Builder& b, Val w, Val e) {
      b.store(b.ptrAdd(w, e * b.i32(1 << 30) + b.tid() * 16), b.i32(0));
    });
    const auto problems = verifyAll(p);
    REQUIRE(problems.size() == 1);
    CHECK(anyContains(problems, "ptr_add: its byte offset into 'w' (3221225472 bytes, 2 GiB or more) can wrap"));
    CHECK(anyContains(problems, "mul gives [-2305843009213693952, 2305843008139952128], beyond i32"));
    CHECK(anyContains(problems, "op #"));
  }
  SECTION("the wrap is followed through variables, loops and later ptr_adds") {
    Plan p = bigTensorPlan([](Builder& b, Val w, Val e) {
      Var off = b.var(b.i32(0), "off");
      b.for_(b.i32(0), b.i32(4), b.i32(1), [&](Val i) { b.set(off, b.get(off) + i * b.i32(1 << 29)); });
      b.store(b.ptrAdd(b.ptrAdd(w, b.i64(64)), b.get(off)), e);
    });
    CHECK(anyContains(verifyAll(p), "can wrap"));
  }
  SECTION("the same index sign-extended to i64 first is accepted") {
    Plan p = bigTensorPlan([](Builder& b, Val w, Val e) {
      Val expert = b.ptrAdd(w, b.sext(e, Type::i64()) * b.i64(1 << 30));
      b.store(b.ptrAdd(expert, b.tid() * 16 + b.lane() * 4), b.i32(0));
    });
    CHECK(verifyAll(p).empty());
  }
  SECTION("bounded i32 arithmetic is accepted: thread ids, loop bounds, remainders, shifts") {
    Plan p = bigTensorPlan([](Builder& b, Val w, Val e) {
      b.for_(b.wave(), b.i32(1 << 20), b.i32(8), [&](Val i) {
        Val off = (i * b.i32(1024) + (e % b.i32(64)) * 16 + (b.tid() >> b.i32(2))) / b.i32(2);
        b.store(b.ptrAdd(w, off), b.i32(0));
      });
    });
    CHECK(verifyAll(p).empty());
  }
  SECTION("into a tensor under 2 GiB a wrapping i32 offset is left to the bounds checks") {
    Plan p = twoStagePlan();
    Builder b(p.kernel);
    Val scratch = b.arg(0, Type::ptr(AddrSpace::Global), "scratch");
    Val e = b.load(Type::i32(), b.ptrAdd(scratch, int64_t{1024}));
    b.store(b.ptrAdd(scratch, e * b.i32(1 << 30)), b.i32(0));
    CHECK(verifyAll(p).empty());
  }
}
