// The MiniMax-M3 FFN launch's MoE stages (norm, router, route, table, up, down, final) on the
// Sim device against the native MoE reference (MoeReference), bit for bit, fed the kernel's own
// all-reduce outputs (SRES, SSQ), which test_spec_allreduce checks against their reference.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <set>

#include "codegen/Compiler.h"
#include "ir/Error.h"
#include "ir/Verifier.h"
#include "specs/minimax_m3/kernel/Layout.h"
#include "specs/minimax_m3/reference/MoeReference.h"
#include "specs/minimax_m3/testing/SimHarness.h"
#include "specs/minimax_m3/kernel/Spec.h"
#include "test_spec_util.h"

using namespace monogen;
using namespace monogen::specs::minimax_m3;
using runtime::HostTensor;
using runtime::TensorMap;

/// Runs (S, TP) and checks the all-reduce and every MoE output of every rank, bit for bit.
TensorMap checkMoe(const ModelConfig& cfg, int S, int TP, const TensorMap& in, uint64_t sched,
                   MoeExperts experts = MoeExperts::All) {
  return checkWholeLaunch(cfg, S, TP, in, sched, experts);
}

namespace {
/// The bit-exact matrix on the reduced config: S in {1, 3, 4, 5, 8, 9, 16} x the given TPs, two
/// scheduler seeds a cell (quanta 4 apart in schedSeed's cycle), fresh inputs for each.
void wholeLaunchMatrix(std::initializer_list<int> tps) {
  const ModelConfig cfg = ModelConfig::reduced();
  const auto t0 = std::chrono::steady_clock::now();
  int runs = 0;
  for (int S : {1, 3, 4, 5, 8, 9, 16})
    for (int TP : tps)
      for (uint64_t sched : {uint64_t(1) + (S + TP) % 8, uint64_t(1) + (S + TP + 4) % 8}) {
        checkMoe(cfg, S, TP, makeLaunchInputs(cfg, S, TP, 100 * S + TP + sched, edgeCases()), sched);
        ++runs;
      }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  WARN(fmt::format("{} reduced-config launches in {:.1f} s", runs, secs));
}
}  // namespace

// Two test cases so that CTest can run the halves side by side.
TEST_CASE("ffn sim: the whole launch equals the references bit for bit, TP 1 and 2 (reduced config)", "[spec][ffn]") {
  wholeLaunchMatrix({1, 2});
}

TEST_CASE("ffn sim: the whole launch equals the references bit for bit, TP 4 and 8 (reduced config)", "[spec][ffn]") {
  wholeLaunchMatrix({4, 8});
}

TEST_CASE("ffn sim: more scheduler seeds", "[spec][ffn][.slow]") {
  const ModelConfig cfg = ModelConfig::reduced();
  for (int S : {1, 3, 4, 5, 8, 9, 16})
    for (int TP : {1, 2, 4, 8})
      for (uint64_t sched = 1; sched <= 8; ++sched)
        checkMoe(cfg, S, TP, makeLaunchInputs(cfg, S, TP, 31 * S + TP + sched, edgeCases()), sched);
}

TEST_CASE("ffn sim: adversarial routing through the kernel", "[spec][ffn][routed]") {
  const ModelConfig cfg = ModelConfig::reduced();
  SECTION("every logit ties (zero router weights and bias): ties go to the lower expert") {
    LaunchInputOptions o = edgeCases();
    o.ties = true;
    const TensorMap in = makeLaunchInputs(cfg, 5, 2, 21, o);
    const TensorMap out = checkMoe(cfg, 5, 2, in, 2);
    const int32_t* p = out.at("picks.r0").as<int32_t>();
    for (int t = 0; t < 5; ++t)
      for (int k = 0; k < cfg.topk; ++k) CHECK(p[t * cfg.topk + k] == k);
  }
  SECTION("NaN logits (router weights) and NaN selection values (bias)") {
    LaunchInputOptions o = edgeCases();
    o.nanLogits = true;
    for (int TP : {1, 4}) checkMoe(cfg, 8, TP, makeLaunchInputs(cfg, 8, TP, 22, o), 5);
  }
  SECTION("every row on the same experts") {
    LaunchInputOptions o = edgeCases();
    o.sameExpert = true;
    const TensorMap out = checkMoe(cfg, 9, 2, makeLaunchInputs(cfg, 9, 2, 23, o), 6);
    CHECK(out.at("slot_count.r0").numel() == 1 + cfg.topk);
  }
  SECTION("every row on distinct experts") {
    // a seed whose reference picks are all distinct (S topk = 8 of the 16 experts)
    const int S = 2, TP = 2;
    bool found = false;
    for (uint64_t seed = 1; seed < 60 && !found; ++seed) {
      const TensorMap in = makeLaunchInputs(cfg, S, TP, seed, edgeCases());
      // the picks depend only on SRES / SSQ (the all-reduce reference) and the router
      TensorMap rin;
      const TensorMap ar = referenceOutputs(cfg, S, TP, in);
      rin["sres"] = ar.at("sres.r0");
      rin["ssq"] = ar.at("ssq.r0");
      for (const char* n : {"norm_w", "router_w", "bias", "slots"}) rin[n] = in.at(n);
      for (int r = 0; r < TP; ++r)
        for (const char* n : {"w13", "s13", "w2", "s2"}) rin[fmt::format("{}.r{}", n, r)] = in.at(fmt::format("{}.r{}", n, r));
      const TensorMap want = moeReference(cfg, S, TP, rin);
      const int32_t* p = want.at("picks").as<int32_t>();
      std::set<int> seen(p, p + S * cfg.topk);
      if (static_cast<int>(seen.size()) != S * cfg.topk) continue;
      found = true;
      const TensorMap out = checkMoe(cfg, S, TP, in, 7);
      CHECK(out.at("slot_count.r0").numel() == 1 + S * cfg.topk);
    }
    CHECK(found);
  }
  SECTION("padded rows: no picks, no slot columns, a zero partial") {
    LaunchInputOptions o = edgeCases();
    o.paddedAt = {0, 3, 4};
    const TensorMap out = checkMoe(cfg, 5, 4, makeLaunchInputs(cfg, 5, 4, 24, o), 3);
    CHECK(out.at("picks.r0").as<int32_t>()[0] == -1);
    o.paddedAt = {0, 1, 2};  // every row padded
    checkMoe(cfg, 3, 2, makeLaunchInputs(cfg, 3, 2, 25, o), 4);
  }
}

TEST_CASE("ffn sim: the experts knob sums one side only", "[spec][ffn][routed]") {
  const ModelConfig cfg = ModelConfig::reduced();
  for (MoeExperts e : {MoeExperts::Shared, MoeExperts::Routed})
    for (int TP : {1, 2}) checkMoe(cfg, 4, TP, makeLaunchInputs(cfg, 4, TP, 40 + TP, edgeCases()), 2, e);
}

namespace {
void compileVariant(const ModelConfig& cfg, int S, int TP) {
  INFO(fmt::format("S={} TP={}", S, TP));
  const ir::Plan plan = buildPlan(cfg, makeKey(cfg, S, TP));
  ir::verify(plan);
  const codegen::CodeObject co = codegen::compile(plan);  // checkLimits: no scratch, no spills
  CHECK(co.info.scratchBytes == 0);
  CHECK(co.info.ldsBytes <= plan.target().ldsBytes);
}
}  // namespace

TEST_CASE("ffn plan: every S x TP variant at the model's dims verifies, no offset into a 2 GiB tensor can wrap",
          "[spec][ffn]") {
  const ModelConfig cfg = ModelConfig::flash();
  for (int S = 1; S <= cfg.maxRows; ++S)
    for (int TP : {1, 2, 4, 8}) {
      INFO(fmt::format("S={} TP={}", S, TP));
      const ir::Plan plan = buildPlan(cfg, makeKey(cfg, S, TP));
      const auto problems = ir::verifyAll(plan);
      CHECK(problems.empty());
      if (!problems.empty()) WARN(problems.front());
      if (TP == 1) CHECK(plan.arg("w13").bytes() > (int64_t{1} << 31));  // the case the rule is for
    }
}

TEST_CASE("ffn codegen: a few variants compile with no scratch, within the limits", "[spec][ffn][codegen]") {
  const ModelConfig cfg = ModelConfig::flash();
  for (auto [S, TP] : {std::pair{1, 1}, std::pair{8, 4}, std::pair{16, 8}}) compileVariant(cfg, S, TP);
}

TEST_CASE("ffn codegen: every S x TP variant compiles with no scratch, within the limits", "[spec][ffn][codegen][.slow]") {
  const ModelConfig cfg = ModelConfig::flash();
  const auto t0 = std::chrono::steady_clock::now();
  for (int S = 1; S <= cfg.maxRows; ++S)
    for (int TP : {1, 2, 4, 8}) compileVariant(cfg, S, TP);
  WARN(fmt::format("64 variants compiled in {:.1f} s",
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()));
}

namespace {
/// firstMismatch(got, want) for got = want with the lowest bit of each listed element flipped.
std::optional<Mismatch> firstOfCorrupted(const TensorMap& want,
                                         std::initializer_list<std::pair<const char*, int64_t>> flips) {
  TensorMap got = want;
  for (const auto& [name, i] : flips) {
    HostTensor& t = got.at(name);
    REQUIRE(i < t.numel());
    t.data[static_cast<size_t>(i) * runtime::dtypeBytes(t.dtype)] ^= 1;
  }
  return firstMismatch(got, want);
}
}  // namespace

TEST_CASE("mismatch: the first mismatch is the earliest stage's, then the lowest rank's, then the lowest element",
          "[spec][ffn][mismatch]") {
  const ModelConfig cfg = ModelConfig::reduced();
  const int S = 3, TP = 2;
  const TensorMap want = launchReferenceOutputs(cfg, S, TP, makeLaunchInputs(cfg, S, TP, 5, edgeCases()));
  SECTION("an early stage's output before a later stage's, whatever the names") {
    auto m = firstOfCorrupted(want, {{"down.r0", 7}, {"xn.r1", 5}});  // alphabetically down.r0 comes first
    REQUIRE(m.has_value());
    CHECK(m->tensor == "xn.r1");
    CHECK(m->index == 5);
    // a wrong slot table is reported in the table, not in what it feeds
    m = firstOfCorrupted(want, {{"down.r0", 0}, {"mid.r0", 0}, {"out.r0", 0}, {"slot_row.r1", 2}});
    REQUIRE(m.has_value());
    CHECK(m->tensor == "slot_row.r1");
    m = firstOfCorrupted(want, {{"mid.r0", 0}, {"res_out.r1", 3}});  // reduce before up
    REQUIRE(m.has_value());
    CHECK(m->tensor == "res_out.r1");
  }
  SECTION("within a stage: ranks ascending, then the stage's own order, then elements ascending") {
    auto m = firstOfCorrupted(want, {{"picks.r1", 0}, {"weights.r0", 1}});
    REQUIRE(m.has_value());
    CHECK(m->tensor == "weights.r0");
    m = firstOfCorrupted(want, {{"weights.r0", 1}, {"picks.r0", 2}});
    REQUIRE(m.has_value());
    CHECK(m->tensor == "picks.r0");
    m = firstOfCorrupted(want, {{"out.r0", 9}, {"out.r0", 4}});
    REQUIRE(m.has_value());
    CHECK(m->tensor == "out.r0");
    CHECK(m->index == 4);
  }
  SECTION("mismatchCounts lists the tensors in the same order") {
    TensorMap got = want;
    for (const char* n : {"out.r1", "down.r0", "xn.r0", "sres.r1"}) got.at(n).data[0] ^= 1;
    std::vector<std::string> names;
    for (const auto& [name, n] : mismatchCounts(got, want)) names.push_back(name);
    CHECK(names == std::vector<std::string>{"sres.r1", "xn.r0", "down.r0", "out.r1"});  // reduce, norm, down, final
  }
}

TEST_CASE("mismatch: every output a launch reads back has its writer stage in the Plan", "[spec][ffn][mismatch]") {
  const ModelConfig cfg = ModelConfig::reduced();
  const int S = 1, TP = 2;
  const ir::Key key = makeKey(cfg, S, TP, FfnKnobs{.trace = true});  // the trace buffers too
  const ir::Plan plan = buildPlan(cfg, key);
  const SimRun run = runOnSim(cfg, key, makeLaunchInputs(cfg, S, TP, 3, edgeCases()), schedSeed(1));
  REQUIRE(run.valid);
  auto writerOf = [](const std::string& base) -> const OutputWriter* {
    for (const OutputWriter& w : kOutputWriters)
      if (base == w.output) return &w;
    return nullptr;
  };
  for (const auto& [name, t] : run.outputs) {
    INFO(name);
    const OutputWriter* w = writerOf(name.substr(0, name.rfind(".r")));
    REQUIRE(w != nullptr);
    if (w->stage) CHECK(plan.stageIndex(w->stage) >= 0);
  }
  for (const char* c : kCheckedMoe) {
    INFO(c);
    CHECK(writerOf(c) != nullptr);
  }
  // dataflowOrder knows every name: stage by stage, rank 0 before rank 1 within one
  const std::vector<std::string> order = dataflowOrder(run.outputs);
  REQUIRE(order.size() == run.outputs.size());
  CHECK(order.front() == "xscale.r0");  // the default variant: o_proj's quant and GEMM (push) come first
  CHECK(std::find(order.begin(), order.end(), "opart.r0") < std::find(order.begin(), order.end(), "xscale.r1"));
  CHECK(std::find(order.begin(), order.end(), "opart.r1") < std::find(order.begin(), order.end(), "res_out.r0"));
  CHECK(std::find(order.begin(), order.end(), "ssq_tag.r0") < std::find(order.begin(), order.end(), "res_out.r1"));
  CHECK(std::find(order.begin(), order.end(), "res_out.r1") < std::find(order.begin(), order.end(), "rstd.r0"));
  CHECK(std::find(order.begin(), order.end(), "out.r1") < std::find(order.begin(), order.end(), "epoch.r0"));
}
