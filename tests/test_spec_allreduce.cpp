// The MiniMax-M3 FFN launch's first two stages (push, reduce) on the Sim device against the
// native reference, bit for bit; the layout; the wait bound and the error word.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "ir/Error.h"
#include "ir/Numerics.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "specs/minimax_m3/kernel/Layout.h"
#include "specs/minimax_m3/reference/Reference.h"
#include "specs/minimax_m3/testing/SimHarness.h"
#include "specs/minimax_m3/kernel/Sites.h"
#include "specs/minimax_m3/kernel/Spec.h"
#include "test_spec_util.h"

using namespace monogen;
using namespace monogen::specs::minimax_m3;
using runtime::HostTensor;
using runtime::TensorMap;

namespace {


/// Runs (S, TP) under a scheduler seed and checks every rank's outputs and tags.
void checkRun(const ModelConfig& cfg, int S, int TP, uint64_t inputSeed, uint64_t sched) {
  INFO(fmt::format("S={} TP={} input seed {} scheduler seed {} quantum {}", S, TP, inputSeed, sched,
                   schedSeed(sched).maxQuantum));
  const TensorMap in = makeInputs(cfg, S, TP, inputSeed);
  const LaunchParams params;
  const SimRun run = runOnSim(cfg, partKey(cfg, S, TP), in, schedSeed(sched), params);
  const auto mm = firstMismatch(run.outputs, referenceOutputs(cfg, S, TP, in));
  INFO((mm ? describe(*mm) : std::string("no mismatch")));
  CHECK_FALSE(mm.has_value());
  for (int r = 0; r < TP; ++r) {
    const HostTensor& tags = run.outputs.at(fmt::format("ssq_tag.r{}", r));
    const int32_t* t = tags.as<int32_t>();
    CHECK(std::all_of(t, t + tags.numel(), [&](int32_t x) { return x == params.tag; }));
  }
  CHECK(run.stats.waitTimeouts == 0);
}

bool throwsInputError(const std::function<void()>& f, const std::string& needle) {
  try {
    f();
  } catch (const InputError& e) {
    INFO(e.what());
    CHECK(std::string(e.what()).find(needle) != std::string::npos);
    return true;
  }
  return false;
}

}  // namespace

TEST_CASE("allreduce layout: every S and TP builds, verifies, and its regions and pools fit", "[spec][layout]") {
  for (const ModelConfig& cfg : {ModelConfig::reduced(), ModelConfig::flash()}) {
    for (int S = 1; S <= 16; ++S)
      for (int TP : {1, 2, 4, 8})
        for (FfnInput input : {FfnInput::Attn, FfnInput::Part}) {
        INFO(fmt::format("hidden {} S={} TP={} input={}", cfg.hidden, S, TP, ffnInputName(input)));
        const Layout L = Layout::make(cfg, S, TP, input);
        REQUIRE(L.push.tasks == cfg.hidden / 32);
        REQUIRE(L.reduce.tasks == cfg.hidden / 32);
        for (const Placement& p : L.placements()) {
          CHECK(p.base >= 0);
          CHECK(p.base < cfg.blocks);
          CHECK(p.ctaOf(p.tasks - 1, cfg.blocks) < cfg.blocks);
        }
        const auto areas = L.areas();
        for (size_t i = 0; i < areas.size(); ++i) {
          const Area& a = areas[i];
          CHECK(a.offset % kRegionAlign == 0);
          CHECK(a.bytes > 0);
          CHECK(a.offset + a.bytes <= (a.buffer == "sym" ? L.symBytes : L.scratchBytes));
          if (a.pairs) CHECK(a.bytes == a.pairs * kPairBytes);
          for (size_t j = 0; j < i; ++j)
            if (areas[j].buffer == a.buffer)
              CHECK((a.offset >= areas[j].offset + areas[j].bytes || areas[j].offset >= a.offset + a.bytes));
        }
        CHECK(L.attn.pairs == 2 * int64_t{TP} * S * cfg.hidden / 2);  // two parity halves
        CHECK(L.attn.parity);
        CHECK(L.ssq.pairs == int64_t{S} * (cfg.hidden / 32));
        CHECK(L.sres.bytes == int64_t{S} * cfg.hidden * 4);
        for (const Pool& p : L.pools()) CHECK(p.offset + p.bytes <= L.ldsBytes);
        CHECK(L.red.bytes >= int64_t{L.redSlots} * (cfg.threads / 64) * 4);

        const ir::Plan plan = buildPlan(cfg, makeKey(cfg, S, TP, FfnKnobs{.input = input}));
        CHECK(plan.ldsBytes <= plan.target().ldsBytes);
        CHECK(plan.grid.blocks == cfg.blocks);
        CHECK(plan.grid.threads == cfg.threads);
        CHECK(plan.flag("ATTN").peer);
        CHECK_FALSE(plan.flag("SSQ").peer);
        CHECK(plan.arg("scratch").bytes() == L.scratchBytes);
        CHECK(plan.arg("sym").bytes() == L.symBytes);
        const auto problems = ir::verifyAll(plan);
        INFO((problems.empty() ? std::string() : problems.front()));
        CHECK(problems.empty());
      }
  }
}

TEST_CASE("allreduce layout: a plan prints and an empty key config is filled in", "[spec][layout]") {
  const ModelConfig cfg = ModelConfig::reduced();
  ir::Key key = makeKey(cfg, 3, 2);
  key.config.clear();
  const ir::Plan plan = buildPlan(cfg, key);
  CHECK(plan.key.config == cfg.canonical());
  const std::string text = ir::printPlan(plan);
  CHECK(text.find("ATTN") != std::string::npos);
  CHECK(text.find("reduce") != std::string::npos);
  CHECK(ir::printKernel(plan).find("wait") != std::string::npos);
}

TEST_CASE("allreduce layout: bad S, TP and key are rejected with the allowed values", "[spec][layout]") {
  const ModelConfig cfg = ModelConfig::reduced();
  CHECK(throwsInputError([&] { Layout::make(cfg, 0, 4, FfnInput::Attn); }, "expected 1..16"));
  CHECK(throwsInputError([&] { Layout::make(cfg, 17, 4, FfnInput::Attn); }, "expected 1..16"));
  CHECK(throwsInputError([&] { Layout::make(cfg, 8, 3, FfnInput::Attn); }, "expected one of 1, 2, 4, 8"));
  CHECK(throwsInputError([&] { buildPlan(cfg, makeKey(cfg, 0, 4)); }, "expected 1..16"));
  CHECK(throwsInputError([&] { buildPlan(cfg, makeKey(cfg, 17, 1)); }, "expected 1..16"));
  CHECK(throwsInputError([&] { buildPlan(cfg, makeKey(cfg, 8, 3)); }, "expected one of 1, 2, 4, 8"));
  CHECK(throwsInputError([&] { buildPlan(ModelConfig::flash(), makeKey(cfg, 8, 4)); }, "is not the model config"));
  ir::Key wrongSpec = makeKey(cfg, 8, 4);
  wrongSpec.spec = "other.ffn";
  CHECK(throwsInputError([&] { buildPlan(cfg, wrongSpec); }, "this builder makes 'minimax_m3.ffn'"));
  CHECK(throwsInputError([&] { makeInputs(cfg, 8, 3, 1); }, "expected one of 1, 2, 4, 8"));
}

TEST_CASE("allreduce reference: the butterfly's order and the pair squares", "[spec][reference]") {
  // s[0] = 2^24, s[1] = s[9] = 1, the rest 0. Masks 8, 4, 2, 1: a1 = s1 + s9 = 2 first, so
  // d = 2^24 + 2 (exact). Ascending masks would add s0 + s1 = 2^24 + 1 first, a tie that rounds
  // to 2^24 (even), then 2^24 + 1 again: 2^24.
  float s[16] = {};
  s[0] = 16777216.0f;
  s[1] = s[9] = 1.0f;
  CHECK(butterfly16(s) == 16777218.0f);
  // Ascending masks (1, 2, 4, 8) would give a different value: the order is the kernel's.
  float asc = 0;
  {
    float a[8], b[4], c[2];
    for (int i = 0; i < 8; ++i) a[i] = s[2 * i] + s[2 * i + 1];
    for (int i = 0; i < 4; ++i) b[i] = a[2 * i] + a[2 * i + 1];
    for (int i = 0; i < 2; ++i) c[i] = b[2 * i] + b[2 * i + 1];
    asc = c[0] + c[1];
  }
  CHECK(asc != butterfly16(s));
  CHECK(pairSquares(3.0f, -4.0f) == 25.0f);
  CHECK(std::signbit(pairSquares(-0.0f, -0.0f)) == false);
}

TEST_CASE("allreduce sim: push + reduce equal the reference bit for bit (reduced config)", "[spec][sim]") {
  const ModelConfig cfg = ModelConfig::reduced();
  const auto t0 = std::chrono::steady_clock::now();
  int runs = 0;
  for (int S : {1, 3, 8, 9, 16})
    for (int TP : {1, 2, 4, 8})
      for (uint64_t sched : {uint64_t(1) + (S + TP) % 8, uint64_t(1) + (S + TP + 4) % 8}) {  // two of the 8 quanta
        checkRun(cfg, S, TP, /*inputSeed=*/1000 * S + 10 * TP + sched, sched);
        ++runs;
      }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  WARN(fmt::format("{} reduced-config launches in {:.1f} s", runs, secs));
}

TEST_CASE("allreduce sim: flags are never reset, a new tag makes a new launch", "[spec][sim]") {
  const ModelConfig cfg = ModelConfig::reduced();
  const int S = 3, TP = 4;
  SimSession session(cfg, partKey(cfg, S, TP));
  const TensorMap a = makeInputs(cfg, S, TP, 11), b = makeInputs(cfg, S, TP, 12);
  LaunchParams p1, p2;
  p1.tag = 101;
  p2.tag = 102;
  const SimRun first = session.launch(a, schedSeed(3), p1);
  REQUIRE_FALSE(firstMismatch(first.outputs, referenceOutputs(cfg, S, TP, a)).has_value());
  const SimRun second = session.launch(b, schedSeed(4), p2);
  const auto mm = firstMismatch(second.outputs, referenceOutputs(cfg, S, TP, b));
  INFO((mm ? describe(*mm) : std::string()));
  CHECK_FALSE(mm.has_value());
  CHECK(second.outputs.at("ssq_tag.r2").as<int32_t>()[0] == 102);
}

TEST_CASE("allreduce reference: a wrong order is caught by the comparison", "[spec][sim]") {
  const ModelConfig cfg = ModelConfig::reduced();
  const int S = 3, TP = 4;
  const TensorMap in = makeInputs(cfg, S, TP, 5);
  const SimRun run = runOnSim(cfg, partKey(cfg, S, TP), in, schedSeed(2));
  const TensorMap want = referenceOutputs(cfg, S, TP, in);
  REQUIRE_FALSE(firstMismatch(run.outputs, want).has_value());
  const int H = cfg.hidden, tasks = H / 32;

  std::vector<const uint16_t*> parts;
  for (int r = 0; r < TP; ++r) parts.push_back(in.at(fmt::format("part.r{}", r)).as<uint16_t>());
  const uint16_t* res = in.at("res_in").as<uint16_t>();

  SECTION("ranks summed in reverse order") {
    std::vector<const uint16_t*> rev(parts.rbegin(), parts.rend());
    const AllReduceResult bad = referenceAllReduce(S, H, rev, res);
    TensorMap w = want;
    std::memcpy(w.at("res_out.r0").data.data(), bad.resOut.data(), bad.resOut.size() * 2);
    const auto mm = firstMismatch(run.outputs, w);
    REQUIRE(mm.has_value());
    CHECK(mm->tensor == "res_out.r0");
  }
  SECTION("the residual added before the all-reduce's bf16 rounding") {
    TensorMap w = want;
    uint16_t* out = w.at("res_out.r1").as<uint16_t>();
    for (int64_t i = 0; i < int64_t{S} * H; ++i) {
      float acc = ir::num::bf16ToF32(parts[0][i]);
      for (int r = 1; r < TP; ++r) acc = acc + ir::num::bf16ToF32(parts[r][i]);
      out[i] = ir::num::f32ToBf16(acc + ir::num::bf16ToF32(res[i]));
    }
    const auto mm = firstMismatch(run.outputs, w);
    REQUIRE(mm.has_value());
    CHECK(mm->tensor == "res_out.r1");
  }
  SECTION("the butterfly with ascending masks (1, 2, 4, 8)") {
    TensorMap w = want;
    const float* sres = want.at("sres.r2").as<float>();
    float* ssq = w.at("ssq.r2").as<float>();
    for (int t = 0; t < S; ++t)
      for (int task = 0; task < tasks; ++task) {
        float s[16];
        for (int j = 0; j < 16; ++j) {
          const int64_t col = int64_t{t} * H + 2 * (task * 16 + j);
          s[j] = pairSquares(sres[col], sres[col + 1]);
        }
        for (int m = 1; m <= 8; m *= 2)
          for (int j = 0; j < 16; ++j)
            if ((j & m) == 0) {
              const float x = s[j] + s[j | m];
              s[j] = x;
              s[j | m] = x;
            }
        ssq[int64_t{t} * tasks + task] = s[0];
      }
    const auto mm = firstMismatch(run.outputs, w);
    REQUIRE(mm.has_value());
    CHECK(mm->tensor == "ssq.r2");
  }
  SECTION("one flipped bit") {
    TensorMap w = want;
    w.at("sres.r3").as<uint32_t>()[123] ^= 1;
    const auto mm = firstMismatch(run.outputs, w);
    REQUIRE(mm.has_value());
    CHECK(mm->tensor == "sres.r3");
    CHECK(mm->index == 123);
  }
}

TEST_CASE("allreduce sim: a push that never lands sets the error word within the wait bound", "[spec][sim]") {
  const ModelConfig cfg = ModelConfig::reduced();
  const int S = 3, TP = 4;
  const TensorMap in = makeInputs(cfg, S, TP, 9);
  const TensorMap want = referenceOutputs(cfg, S, TP, in);
  const SimRun ok = runOnSim(cfg, partKey(cfg, S, TP), in, schedSeed(1));
  REQUIRE_FALSE(firstMismatch(ok.outputs, want).has_value());

  LaunchParams p;
  p.waitTicks = 20'000;
  p.lostFrom = 2;  // rank 2's pushes to rank 0 go to a buffer nobody reads
  p.lostTo = 0;
  const SimRun run = runOnSim(cfg, partKey(cfg, S, TP), in, schedSeed(5), p);
  const int32_t* err0 = run.outputs.at("err.r0").as<int32_t>();
  INFO(fmt::format("err.r0 = {:#x}, count {}; launch took {} ticks ({} without the fault)", err0[0], err0[1],
                   run.stats.ticks, ok.stats.ticks));
  CHECK(errorSite(err0[0]) == kSiteReduce);
  CHECK(errorRank(err0[0]) == 2);
  CHECK(errorToken(err0[0]) < S);
  // every waiting thread of rank 0 timed out once on rank 2's pair: S x hidden / 2 of them; the
  // MoE stages behind it may time out too (they count on)
  CHECK(err0[1] >= S * cfg.hidden / 2);
  CHECK(run.stats.waitTimeouts >= S * cfg.hidden / 2);
  // a CTA runs ceil(tasks / blocks) reduce tasks, each of which waits out the bound at most once;
  // then each later stage that waits (norm .. final, epoch) waits out at most one bound a task
  const int64_t tasksPerCta = (cfg.hidden / 32 + cfg.blocks - 1) / cfg.blocks;
  const int64_t laterStages = 8;
  CHECK(run.stats.ticks >= p.waitTicks);
  CHECK(run.stats.ticks <= (2 * tasksPerCta + laterStages) * p.waitTicks + 4 * ok.stats.ticks);
  // the other ranks' all-reduce is untouched; their error words, if set, name rank 0 (whose
  // late FFN partial they waited for), never rank 2
  for (int r = 1; r < TP; ++r) {
    for (const char* t : {"res_out", "sres", "ssq"}) {
      const std::string name = fmt::format("{}.r{}", t, r);
      INFO(name);
      CHECK(run.outputs.at(name).data == want.at(name).data);
    }
    const int32_t code = run.outputs.at(fmt::format("err.r{}", r)).as<int32_t>()[0];
    INFO(fmt::format("err.r{} = {:#x}", r, code));
    if (code != 0) {
      CHECK(errorSite(code) == kSiteFinal);
      CHECK(errorRank(code) == 0);
    }
  }
}

TEST_CASE("allreduce sim: a rank on a stale tag is named in the others' error words", "[spec][sim]") {
  const ModelConfig cfg = ModelConfig::reduced();
  const int S = 2, TP = 2;
  const TensorMap in = makeInputs(cfg, S, TP, 21);
  LaunchParams p;
  p.tag = 7;
  p.waitTicks = 10'000;
  p.rankTag[1] = 6;  // rank 1 still runs the previous launch's tag
  const SimRun run = runOnSim(cfg, partKey(cfg, S, TP), in, schedSeed(2), p);
  const int32_t* err0 = run.outputs.at("err.r0").as<int32_t>();
  const int32_t* err1 = run.outputs.at("err.r1").as<int32_t>();
  INFO(fmt::format("err.r0 = {:#x} ({}), err.r1 = {:#x} ({})", err0[0], err0[1], err1[0], err1[1]));
  CHECK(errorSite(err0[0]) == kSiteReduce);
  CHECK(errorRank(err0[0]) == 1);  // rank 0 waited on rank 1's pairs
  CHECK(errorToken(err0[0]) < S);
  CHECK(errorSite(err1[0]) == kSiteReduce);
  CHECK(errorRank(err1[0]) == 0);  // rank 1 waited (on its own tag) for rank 0's pairs
  // each rank's reduce waits time out on every pair of the other rank; later stages add theirs
  CHECK(err0[1] >= S * cfg.hidden / 2);
  CHECK(err1[1] >= S * cfg.hidden / 2);
}

TEST_CASE("allreduce sim: each stage reads its bytes once", "[spec][sim]") {
  const ModelConfig cfg = ModelConfig::reduced();
  for (int TP : {1, 4}) {
    const int S = 9;
    const TensorMap in = makeInputs(cfg, S, TP, 3);
    const SimRun run = runOnSim(cfg, partKey(cfg, S, TP), in, schedSeed(6));
    const auto& by = run.stats.bytesLoadedByStage;
    INFO(fmt::format("TP={}: push {} bytes, reduce {} bytes", TP, by.count("push") ? by.at("push") : -1,
                     by.count("reduce") ? by.at("reduce") : -1));
    const int64_t pairsPerRank = int64_t{S} * cfg.hidden / 2;
    // push: every pair of the partial once (4 bytes), and each wave's read of the peers table (TP
    // addresses, a uniform load: one request a wave); reduce: TP waited pairs (8 bytes each) and
    // the residual's pair (4 bytes) for every pair; on every rank
    const int64_t peerTable = int64_t{cfg.blocks} * (cfg.threads / 64) * TP * 8;
    CHECK(by.at("push") == TP * (pairsPerRank * 4 + peerTable));
    CHECK(by.at("reduce") == TP * pairsPerRank * (8 * TP + 4));
  }
}

TEST_CASE("allreduce inputs: seeded, stable, and holding the awkward values", "[spec][inputs]") {
  const ModelConfig cfg = ModelConfig::reduced();
  const int S = 4, TP = 2;
  const TensorMap a = makeInputs(cfg, S, TP, 42);
  CHECK(a.size() == static_cast<size_t>(TP + 1));
  CHECK(a.at("part.r1").shape == std::vector<int64_t>{S, cfg.hidden});
  // the same seed gives the same bytes; another seed does not
  CHECK(makeInputs(cfg, S, TP, 42).at("part.r1").data == a.at("part.r1").data);
  CHECK(makeInputs(cfg, S, TP, 43).at("part.r1").data != a.at("part.r1").data);
  // a fixed stream: FNV-1a over every input's bytes
  uint64_t h = 0xcbf29ce484222325ull;
  for (const auto& [name, t] : a)
    for (uint8_t byte : t.data) h = (h ^ byte) * 0x100000001b3ull;
  CHECK(h == 0x8ccb6542227d8a7aull);

  const uint16_t* p0 = a.at("part.r0").as<uint16_t>();
  const uint16_t* p1 = a.at("part.r1").as<uint16_t>();
  const uint16_t* res = a.at("res_in").as<uint16_t>();
  int negZero = 0, reduceTies = 0, residualTies = 0, large = 0, subnormal = 0, nonFinite = 0;
  for (int64_t i = 0; i < int64_t{S} * cfg.hidden; ++i) {
    const float acc = ir::num::bf16ToF32(p0[i]) + ir::num::bf16ToF32(p1[i]);
    const float reduced = ir::num::roundBf16(acc);
    const float v = reduced + ir::num::bf16ToF32(res[i]);
    negZero += res[i] == 0x8000 && p0[i] == 0x8000;
    reduceTies += (ir::num::f32ToBits(acc) & 0xffff) == 0x8000;
    residualTies += (ir::num::f32ToBits(v) & 0xffff) == 0x8000;
    for (const uint16_t* p : {p0, p1, res}) {
      const uint32_t e = (p[i] >> 7) & 0xff;
      large += e >= 127 + 30;
      subnormal += e == 0 && (p[i] & 0x7f) != 0;
      nonFinite += e == 0xff;
    }
  }
  INFO(fmt::format("-0: {}, all-reduce ties: {}, residual ties: {}, large: {}, subnormal: {}", negZero, reduceTies,
                   residualTies, large, subnormal));
  CHECK(negZero > 0);
  CHECK(reduceTies > 0);
  CHECK(residualTies > 0);
  CHECK(large > 0);
  CHECK(subnormal > 0);
  CHECK(nonFinite == 0);
}
