// o_proj in the launch: the per-token FP8 quant against a float64 evaluation, the
// GEMM reference against a float64 sum, and (Sim) the launch's o_proj partial and outputs
// against the reference chain (quant -> GEMM -> the rest of the launch).
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "codegen/Compiler.h"
#include "ir/Numerics.h"
#include "ir/Verifier.h"
#include "specs/minimax_m3/testing/BytesModel.h"
#include "specs/minimax_m3/reference/OprojReference.h"
#include "specs/minimax_m3/kernel/WeightContract.h"
#include "test_spec_util.h"

using namespace monogen;
using namespace monogen::specs::minimax_m3;
using runtime::TensorMap;
namespace num = monogen::ir::num;

namespace {

uint16_t bf(float x) { return num::f32ToBf16(x); }

/// The e4m3fn code nearest to r (a double), ties to the even code, saturating at +-448; NaN 0x7f.
uint32_t nearestCode64(double r) {
  if (std::isnan(r)) return 0x7f;
  const uint32_t sign = std::signbit(r) ? 0x80 : 0;
  const double a = std::fabs(r);
  if (a >= 448.0) return sign | 0x7e;
  uint32_t best = 0;
  double err = a;
  for (uint32_t c = 1; c <= 0x7e; ++c) {
    const double e = std::fabs(static_cast<double>(num::fp8E4m3ToF32(c)) - a);
    if (e < err || (e == err && (c & 1) == 0)) best = c, err = e;
  }
  return sign | best;
}

}  // namespace

TEST_CASE("o_proj quant: AITER's per-token quant against float64, edge rows as written down", "[oproj]") {
  const int64_t K = 256;
  // amax = 448 2^j makes scale = 2^j exactly when 448 f32(1/448) rounds to 1 (checked), so the
  // scaled values are exact and the e4m3 rounding ties below are exact ties.
  REQUIRE(448.0f * kFp8InvMax == 1.0f);
  std::vector<std::vector<float>> rows;
  {  // ties at scale 2^-3: every midpoint between neighbouring codes, both signs; +-amax
    std::vector<float> r = {448.0f / 8, -448.0f / 8};
    for (uint32_t c = 0; c < 0x7e && r.size() + 2 <= static_cast<size_t>(K); ++c) {
      const float mid = (num::fp8E4m3ToF32(c) + num::fp8E4m3ToF32(c + 1)) / 2;
      r.push_back(mid / 8);
      r.push_back(-mid / 8);
    }
    rows.push_back(r);
  }
  rows.push_back({});                                          // all zeros
  rows.push_back({3.0f, -1.0f, INFINITY, 0.5f});               // an Inf
  rows.push_back({3.0f, NAN, -1.0f, 1e-40f});                  // a NaN and an f32 (bf16) subnormal
  rows.push_back({1e-39f, -2e-40f, 5e-41f});                   // only subnormals: amax subnormal
  {  // random magnitudes over 2^-20 .. 2^20 (the f64 check's bulk)
    std::vector<float> r;
    uint64_t st = 7;
    for (int64_t i = 0; i < K; ++i) {
      st = st * 6364136223846793005ull + 1442695040888963407ull;
      const int e = static_cast<int>((st >> 33) % 41) - 20;
      r.push_back(std::ldexp(1.0f + static_cast<float>((st >> 13) & 0xffff) / 65536.0f, e) * ((st >> 60) & 1 ? -1 : 1));
    }
    rows.push_back(r);
  }
  std::vector<uint16_t> x(rows.size() * K, 0);
  for (size_t m = 0; m < rows.size(); ++m)
    for (size_t i = 0; i < rows[m].size(); ++i) x[m * K + i] = bf(rows[m][i]);
  const QuantRows q = quantizeRows(x.data(), static_cast<int>(rows.size()), K);
  auto code = [&](size_t m, size_t i) { return static_cast<uint32_t>(q.q[m * K + i]); };

  // Row 0: scale exactly 2^-3, every tie resolved to the even code, +-amax to +-448.
  CHECK(q.xScale[0] == 0.125f);
  CHECK(code(0, 0) == 0x7e);
  CHECK(code(0, 1) == 0xfe);
  int ties = 0;
  for (size_t i = 2; i < rows[0].size(); ++i) {
    const double r = static_cast<double>(num::bf16ToF32(x[i])) / 0.125;
    CHECK(code(0, i) == nearestCode64(r));
    CHECK((code(0, i) & 1) == 0);  // a tie goes to the even code
    ++ties;
  }
  CHECK(ties > 200);
  // Row 1: all zeros -> scale 0, inv 0, every code +0.
  CHECK(q.xScale[1] == 0.0f);
  for (int64_t i = 0; i < K; ++i) CHECK(code(1, i) == 0);
  // Row 2: an Inf -> amax Inf, scale Inf, inv 0: finite elements +-0, the Inf element NaN (Inf x 0).
  CHECK(std::isinf(q.xScale[2]));
  CHECK(code(2, 0) == 0x00);
  CHECK(code(2, 1) == 0x80);
  CHECK(code(2, 2) == 0x7f);
  // Row 3: the NaN does not count in amax (3); it quantizes to NaN 0x7f; the subnormal to +0.
  CHECK(q.xScale[3] == 3.0f * kFp8InvMax);
  CHECK(code(3, 0) == 0x7e);
  CHECK(code(3, 1) == 0x7f);
  CHECK(code(3, 3) == 0x00);
  // Row 4: amax a bf16 subnormal: scale = amax / 448 is 0 or subnormal, so rcp gives +Inf (or a
  // huge value) and every nonzero element saturates to +-448 while the zero elements, 0 x Inf,
  // become NaN (0x7f). (AITER's quant does the same arithmetic; the attention output is never
  // this small in practice.)
  CHECK(code(4, 0) == 0x7e);
  CHECK(code(4, 1) == 0xfe);
  CHECK((code(4, 5) == 0x7f || code(4, 5) == 0x00));
  // Row 5: float64 check. r = x / (amax / 448) in double; the code is the f64-nearest code except
  // within f32 rounding of a tie (x inv rounds once, rcp once, the scale once: 3 f32 roundings).
  const double amax = [&] {
    double a = 0;
    for (int64_t i = 0; i < K; ++i) a = std::max(a, std::fabs(static_cast<double>(num::bf16ToF32(x[5 * K + i]))));
    return a;
  }();
  CHECK(static_cast<double>(q.xScale[5]) == Approx(amax / 448.0).epsilon(1e-7));
  int exact = 0, nearTie = 0;
  for (int64_t i = 0; i < K; ++i) {
    const double r = static_cast<double>(num::bf16ToF32(x[5 * K + i])) / (amax / 448.0);
    const uint32_t want = nearestCode64(r), got = code(5, i);
    if (got == want) {
      ++exact;
      continue;
    }
    // Otherwise r must lie within 4 f32 ulps (relative 2^-21) of the midpoint between got and want.
    const double mid = (static_cast<double>(num::fp8E4m3ToF32(got)) + num::fp8E4m3ToF32(want)) / 2;
    INFO(fmt::format("x {} r {} got 0x{:02x} want 0x{:02x}", num::bf16ToF32(x[5 * K + i]), r, got, want));
    CHECK(std::fabs(std::fabs(r) - std::fabs(mid)) <= std::ldexp(std::fabs(r), -21));
    ++nearTie;
  }
  WARN(fmt::format("float64 check: {} of {} codes the f64-nearest, {} within f32 rounding of a tie", exact, K, nearTie));
  CHECK(exact + nearTie == K);
}

TEST_CASE("o_proj GEMM reference: the fixed-order f32 sum is within f32 rounding of a float64 sum", "[oproj]") {
  const int S = 3, hidden = 32;
  const int64_t K = 256;
  std::vector<uint16_t> x(S * K);
  std::vector<uint8_t> wRow(hidden * K);
  std::vector<float> ws(hidden);
  uint64_t st = 11;
  auto next = [&] { return st = st * 6364136223846793005ull + 1442695040888963407ull, st >> 33; };
  for (auto& v : x) v = bf(static_cast<float>(static_cast<int64_t>(next() % 2001) - 1000) / 256.0f);
  for (auto& v : wRow) {
    v = static_cast<uint8_t>(next());
    if ((v & 0x7f) == 0x7f) v = 0x30;  // no NaN weights
  }
  for (auto& v : ws) v = static_cast<float>(next() % 1000 + 1) / 4096.0f;
  const std::vector<uint8_t> w = shuffle16x16(wRow.data(), hidden, K);
  const QuantRows q = quantizeRows(x.data(), S, K);
  const std::vector<uint16_t> out = oprojPartial(q, w.data(), ws.data(), S, K, hidden);
  for (int m = 0; m < S; ++m)
    for (int n = 0; n < hidden; ++n) {
      double acc = 0, mag = 0;
      for (int64_t k = 0; k < K; ++k) {
        const double p = static_cast<double>(num::fp8E4m3ToF32(wRow[n * K + k])) * num::fp8E4m3ToF32(q.q[m * K + k]);
        acc += p;
        mag += std::fabs(p);
      }
      const double want = acc * q.xScale[m] * ws[n];
      const double got = num::bf16ToF32(out[m * hidden + n]);
      // K f32 adds (relative 2^-24 of the running magnitude each), two f32 multiplies, one bf16 rounding.
      const double bound = (mag * K * 0x1p-24 * q.xScale[m] * ws[n]) + std::fabs(want) * (0x1p-8 + 0x1p-22);
      INFO(fmt::format("m {} n {}: got {} want {}", m, n, got, want));
      CHECK(std::fabs(got - want) <= bound);
    }
}

// ------------------------------------------------------------------ the launch on the Sim device

TEST_CASE("o_proj in the launch (input=attn), Sim: the partial and out / res_out equal the reference chain bit for "
          "bit, S in 1 3 8 9 16 x TP in 1 2 4 8",
          "[oproj][sim]") {
  const ModelConfig cfg = ModelConfig::reduced();
  FfnKnobs knobs;
  knobs.input = FfnInput::Attn;
  uint64_t sched = 0;
  for (int S : {1, 3, 8, 9, 16})
    for (int TP : {1, 2, 4, 8}) {
      LaunchInputOptions o;
      o.oproj = true;
      if (S >= 8) o.values = InputValues::EdgeCases;  // the residual's and the MoE's edge values (the parts are o_proj's)
      const TensorMap in = makeLaunchInputs(cfg, S, TP, 0x0b0a + 16 * S + TP, o);
      checkWholeLaunch(cfg, S, TP, in, schedSeed(sched++), knobs);
    }
}

// ------------------------------------------------------------------ knob, refusals, codegen

TEST_CASE("o_proj knob: input=attn is the default, input=part is in the key, both parse back, a bad value is refused",
          "[oproj]") {
  const ModelConfig cfg = ModelConfig::reduced();
  FfnKnobs k;
  CHECK(k.input == FfnInput::Attn);  // the default input: the attention rows, o_proj in the launch
  CHECK(k.canonical().empty());
  CHECK(LaunchInputOptions{}.oproj);  // the default inputs are the default variant's
  k.input = FfnInput::Part;
  CHECK(k.canonical() == "input=part");
  CHECK(FfnKnobs::parse("", "t").input == FfnInput::Attn);
  CHECK(FfnKnobs::parse("input=attn", "t").input == FfnInput::Attn);
  CHECK(FfnKnobs::parse("input=part", "t").input == FfnInput::Part);
  CHECK_THROWS_WITH(FfnKnobs::parse("input=rows", "t"),
                    Catch::Contains("knob input: 'rows' was given: expected \"attn\"") && Catch::Contains("or \"part\""));
  const ir::Key a = makeKey(cfg, 8, 2), p = makeKey(cfg, 8, 2, k);
  CHECK(a.variantName() != p.variantName());
  CHECK(a.knobs.empty());
  CHECK(p.knobs == "input=part");
  CHECK(p.specVersion == 3);  // v3: the default became attn, so a v2 cache entry of the same text is not it
  const ir::Plan plan = buildPlan(cfg, a);
  CHECK(plan.argIndex("attn") >= 0);
  CHECK(plan.argIndex("wo") >= 0);
  CHECK(plan.argIndex("wo_scale") >= 0);
  CHECK(plan.argIndex("part") < 0);
  CHECK(plan.arg("attn").shape == std::vector<int64_t>{8, 512});  // 16 heads x 64 / TP 2
  CHECK(plan.arg("wo").shape == std::vector<int64_t>{1536, 512});
  CHECK(buildPlan(cfg, p).argIndex("part") >= 0);
  // the config's heads / head_dim are in every key's config text
  CHECK(cfg.canonical().find("heads=16 head_dim=64") != std::string::npos);
}

TEST_CASE("o_proj refusals: a width TP does not divide or not a multiple of 128, a layer without the FP8 copy, "
          "a wrong shape",
          "[oproj]") {
  FfnKnobs k;
  k.input = FfnInput::Attn;
  ModelConfig cfg = ModelConfig::reduced();
  cfg.heads = 7;
  cfg.headDim = 73;  // 511: no TP above 1 divides it
  CHECK_THROWS_WITH(buildPlan(cfg, makeKey(cfg, 4, 2, k)), Catch::Contains("heads x head_dim = 7 x 73 = 511 does not "
                                                                           "divide by TP = 2"));
  CHECK_NOTHROW(buildPlan(cfg, makeKey(cfg, 4, 2, FfnKnobs{.input = FfnInput::Part})));  // the partial input does not read them
  cfg.heads = 3;
  cfg.headDim = 48;  // 144 a rank at TP 1
  CHECK_THROWS_WITH(buildPlan(cfg, makeKey(cfg, 4, 1, k)), Catch::Contains("144 is not a multiple of 128"));

  const ModelConfig red = ModelConfig::reduced();
  LaunchInputOptions o;
  o.oproj = true;
  o.expertWeights = false;
  TensorMap in = makeLaunchInputs(red, 2, 2, 3, o);
  {
    TensorMap missing = in;
    missing.erase("wo.r1");
    SimSession s(red, makeKey(red, 2, 2, k));
    CHECK_THROWS_WITH(s.launch(missing, {}, {}), Catch::Contains("missing tensor 'wo.r1'") &&
                                                     Catch::Contains("no rowwise-FP8 copy of o_proj"));
  }
  {
    TensorMap missing = in;
    missing.erase("wo_scale");
    SimSession s(red, makeKey(red, 2, 2, k));
    CHECK_THROWS_WITH(s.launch(missing, {}, {}), Catch::Contains("missing tensor 'wo_scale'"));
  }
  {
    TensorMap bad = in;
    bad["wo.r0"] = runtime::HostTensor::zeros(runtime::DType::U8, {1536, 256});
    SimSession s(red, makeKey(red, 2, 2, k));
    CHECK_THROWS_WITH(s.launch(bad, {}, {}), Catch::Contains("expected U8 [1536, 512], given U8 [1536, 256]"));
  }
  CHECK_THROWS_WITH(checkContract(red, 2, in, 0, ScaleLayout::E8m0Shuffle, FfnInput::Attn), Catch::Contains("missing tensor 'w13.r0'"));
}

TEST_CASE("o_proj codegen: input=attn variants compile to gfx950 code objects with no scratch and no spills",
          "[oproj][codegen]") {
  FfnKnobs k;
  k.input = FfnInput::Attn;
  for (const ModelConfig& cfg : {ModelConfig::reduced(), ModelConfig::flash()})
    for (auto [S, TP] : {std::pair{1, 1}, std::pair{8, 4}, std::pair{16, 8}, std::pair{9, 2}}) {
      INFO(fmt::format("hidden {} S={} TP={}", cfg.hidden, S, TP));
      const ir::Plan plan = buildPlan(cfg, makeKey(cfg, S, TP, k));
      ir::verify(plan);
      const codegen::CodeObject co = codegen::compile(plan);  // checkLimits: no scratch, no spills
      CHECK(co.info.scratchBytes == 0);
      CHECK(co.info.vgprSpills == 0);
      CHECK(co.info.sgprSpills == 0);
      CHECK(co.info.ldsBytes <= plan.target().ldsBytes);
      const std::string isa = codegen::isaText(plan);
      CHECK(isa.find("v_mfma_f32_16x16x32_fp8_fp8") != std::string::npos);
      CHECK(isa.find("v_cvt_pk_fp8_f32") != std::string::npos);
    }
}

TEST_CASE("o_proj bytes model: input=attn counts the attention rows, wo and wo_scale instead of the partial",
          "[oproj]") {
  const ModelConfig cfg = ModelConfig::flash();
  const MinimumBytes part = minimumBytes(cfg, 8, 4, 8, FfnInput::Part), attn = minimumBytes(cfg, 8, 4, 8);
  auto bytesOf = [](const MinimumBytes& m, const std::string& t) {
    for (const BytesItem& i : m.items)
      if (i.tensor == t) return i.bytes;
    return int64_t{-1};
  };
  CHECK(bytesOf(part, "part") == 8 * 6144 * 2);
  CHECK(bytesOf(attn, "part") == -1);
  CHECK(bytesOf(attn, "attn") == 8 * 2048 * 2);
  CHECK(bytesOf(attn, "wo") == int64_t{6144} * 2048);
  CHECK(bytesOf(attn, "wo_scale") == 6144 * 4);
  CHECK(attn.total() - part.total() == 8 * 2048 * 2 + int64_t{6144} * 2048 + 6144 * 4 - 8 * 6144 * 2);
}
