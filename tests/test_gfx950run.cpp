// The gfx950-run device (runtime/Gfx950RunDevice.h): the generated code objects on AMD's CPU
// simulator of gfx950, whole launches of the reduced config against the reference (under the
// executor's numerics profile, RefNumerics::Gfx950Run) bit for bit, and against the Sim device.
// The tests that need the tool skip cleanly (a WARN, and the test passes) when it is absent:
// $MONOGEN_GFX950_RUN, else <source dir>/../shared/tools/gfx950-run.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <unistd.h>
#include <string>

#include "codegen/Compiler.h"
#include "ir/Builder.h"
#include "ir/Error.h"
#include "ir/Mfma.h"
#include "ir/Numerics.h"
#include "runtime/Launch.h"
#include "runtime/sim/SimRng.h"
#include "runtime/Gfx950RunDevice.h"
#include "specs/minimax_m3/testing/MoeInputs.h"
#include "specs/minimax_m3/reference/MoeReference.h"
#include "specs/minimax_m3/testing/SimHarness.h"
#include "specs/minimax_m3/kernel/Spec.h"
#include "test_shell.h"
#include "test_spec_util.h"

using namespace monogen;
using namespace monogen::specs::minimax_m3;
using runtime::Gfx950RunDevice;
using runtime::TensorMap;

namespace {

bool haveTool() {
  if (Gfx950RunDevice::toolAvailable()) return true;
  WARN("gfx950-run not found at '" << Gfx950RunDevice::defaultToolPath()
                                   << "' (set MONOGEN_GFX950_RUN): the executor test is skipped");
  return false;
}

/// Every output of (S, TP) on the executor against the reference under the executor's profile,
/// and the all-reduce and routing outputs against the Sim device (they use no exp2 / division).
void checkOnExecutor(int S, int TP, uint64_t seed) {
  const ModelConfig cfg = ModelConfig::reduced();
  const FfnVariant v = FfnVariant::make(cfg, makeKey(cfg, S, TP));  // the default variant: o_proj in the launch
  const ir::Key& key = v.key;
  const bool oproj = v.knobs.input == FfnInput::Attn;
  LaunchInputOptions io;
  io.numerics = RefNumerics::Gfx950Run;  // the o_proj partial is derived under them
  const TensorMap in = makeLaunchInputs(cfg, S, TP, seed, io);
  Gfx950RunDevice dev;
  const auto t0 = std::chrono::steady_clock::now();
  const SimRun run = runOnDevice(dev, v, in);
  const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  WARN(fmt::format("gfx950-run {}: {:.1f} s (compile + files + tool), tool {:.1f} s, simulation {:.1f} s, {} "
                   "wave-instructions",
                   key.variantName(), sec, dev.lastRun().totalSeconds, dev.lastRun().seconds,
                   dev.lastRun().waveInstructions));
  INFO(key.variantName() << " seed " << seed << (run.valid ? "" : ": " + run.error));
  REQUIRE(run.valid);
  const TensorMap want = launchReferenceOutputs(v, in, RefNumerics::Gfx950Run);
  // every output of every rank (with o_proj: xscale and opart too)
  REQUIRE(want.size() == (4 + std::size(kCheckedMoe) + (oproj ? 2 : 0)) * static_cast<size_t>(TP));
  const auto m = firstMismatch(run.outputs, want);
  INFO((m ? describe(*m) : std::string("no mismatch")));
  CHECK_FALSE(m.has_value());

  const SimRun sim = runOnSim(v, in, schedSeed(seed));
  TensorMap same;
  for (int r = 0; r < TP; ++r)
    for (const char* n : {"res_out", "sres", "ssq", "ssq_tag", "err", "epoch", "xn", "rstd", "picks", "xscale"}) {
      const std::string name = fmt::format("{}.r{}", n, r);
      if (oproj || std::string(n) != "xscale") same[name] = sim.outputs.at(name);
    }
  const auto ms = firstMismatch(run.outputs, same);
  INFO((ms ? "vs the Sim device: " + describe(*ms) : std::string("Sim device: no mismatch")));
  CHECK_FALSE(ms.has_value());
}

}  // namespace

TEST_CASE("gfx950-run device: allocations at chosen addresses with guard gaps, host copies", "[gfx950run]") {
  Gfx950RunDevice dev;
  CHECK(dev.runsCodeObjects());  // the generate-and-launch path compiles for it
  const uint64_t a = dev.alloc(0, 100, "a"), b = dev.alloc(1, 5000, "b"), c = dev.alloc(0, 8, "c", 8192);
  for (uint64_t p : {a, b, c}) {
    CHECK(p >= 0x1'0000'0000ull);
    CHECK(p < 0x7000'0000'0000ull);
    CHECK(p % 256 == 0);
  }
  CHECK(c % 8192 == 0);
  CHECK(b >= a + 4096 + 4096);  // a's page, then a free page
  CHECK(c >= b + 8192 + 4096);
  const uint32_t v = 0x12345678;
  dev.upload(1, b + 4996, &v, 4);
  uint32_t w = 0;
  dev.download(1, &w, b + 4996, 4);
  CHECK(w == v);
  CHECK_THROWS_AS(dev.upload(0, a + 254, &v, 4), RuntimeError);  // past a's 256 bytes
  CHECK_THROWS_AS(dev.download(0, &w, a + 4096, 4), RuntimeError);
}

TEST_CASE("gfx950-run device: a missing tool is a clear RuntimeError", "[gfx950run]") {
  const ModelConfig cfg = ModelConfig::reduced();
  const ir::Key key = makeKey(cfg, 1, 1);
  runtime::Gfx950RunOptions o;
  o.tool = "/nonexistent/gfx950-run";
  Gfx950RunDevice dev(o);
  SimSession s(cfg, key, dev, runtime::CodeObjectBytes{0x7f});  // never compiled: the tool is checked first
  const TensorMap in = makeLaunchInputs(cfg, 1, 1, 1, {});
  try {
    s.launch(in, {});
    FAIL("no error");
  } catch (const RuntimeError& e) {
    const std::string msg = e.what();
    INFO(msg);
    CHECK(msg.find("/nonexistent/gfx950-run") != std::string::npos);
    CHECK(msg.find("does not exist") != std::string::npos);
    CHECK(msg.find("MONOGEN_GFX950_RUN") != std::string::npos);
  }
  // The env var names the default tool.
  const char* old = std::getenv("MONOGEN_GFX950_RUN");
  const std::string saved = old ? old : "";
  ::setenv("MONOGEN_GFX950_RUN", "/nonexistent/other", 1);
  CHECK(Gfx950RunDevice::defaultToolPath() == "/nonexistent/other");
  CHECK_FALSE(Gfx950RunDevice::toolAvailable());
  if (old) ::setenv("MONOGEN_GFX950_RUN", saved.c_str(), 1);
  else ::unsetenv("MONOGEN_GFX950_RUN");
}

TEST_CASE("gfx950-run device: whole launches bit-exact, S=1 TP=1", "[gfx950run]") {
  if (haveTool()) checkOnExecutor(1, 1, 11);
}
TEST_CASE("gfx950-run device: whole launches bit-exact, S=8 TP=4", "[gfx950run]") {
  if (haveTool()) checkOnExecutor(8, 4, 12);
}
TEST_CASE("gfx950-run device: whole launches bit-exact, S=16 TP=2", "[gfx950run]") {
  if (haveTool()) checkOnExecutor(16, 2, 13);
}

TEST_CASE("gfx950-run device: a second launch in the same session (flags kept, a new tag) is bit-exact too",
          "[gfx950run]") {
  if (!haveTool()) return;
  const ModelConfig cfg = ModelConfig::reduced();
  const int S = 2, TP = 2;
  const FfnVariant v = FfnVariant::make(cfg, makeKey(cfg, S, TP));
  Gfx950RunDevice dev;
  SimSession s(v, dev);
  for (int i = 0; i < 2; ++i) {
    const TensorMap in = makeLaunchInputs(cfg, S, TP, 20 + i, {});
    LaunchParams p;
    p.tag = 0x2a5eed01 + i;  // the other parity half on the second launch
    const SimRun run = s.launch(in, {}, p);
    INFO("launch " << i << (run.valid ? "" : ": " + run.error));
    REQUIRE(run.valid);
    const auto m = firstMismatch(run.outputs, launchReferenceOutputs(v, in, RefNumerics::Gfx950Run));
    INFO((m ? describe(*m) : std::string("no mismatch")));
    CHECK_FALSE(m.has_value());
    for (int r = 0; r < TP; ++r) CHECK(run.outputs.at(fmt::format("epoch.r{}", r)).as<int32_t>()[0] == p.tag);  // advanced to this launch
  }
}

TEST_CASE("gfx950-run device: a launch whose peer never publishes is a hang with its live waves", "[gfx950run]") {
  if (!haveTool()) return;
  const ModelConfig cfg = ModelConfig::reduced();
  const ir::Key key = makeKey(cfg, 1, 2);
  runtime::Gfx950RunOptions o;
  o.timeoutSeconds = 4;
  Gfx950RunDevice dev(o);
  SimSession s(cfg, key, dev);
  LaunchParams p;
  p.lostFrom = 0;  // rank 0's pushes to rank 1 never land ...
  p.lostTo = 1;
  p.waitTicks = int64_t{1} << 60;  // ... and rank 1's waits never run out
  const TensorMap in = makeLaunchInputs(cfg, 1, 2, 3, {});
  try {
    s.launch(in, {}, p);
    FAIL("no error");
  } catch (const RuntimeError& e) {
    const std::string msg = e.what();
    INFO(msg);
    CHECK(msg.find("hang") != std::string::npos);
    CHECK(msg.find("live wave") != std::string::npos);
    CHECK(msg.find("workgroup.wave") != std::string::npos);
    CHECK(msg.find(" at pc 0x") != std::string::npos);
  }
  CHECK(dev.lastRun().status == "hang");
}

namespace {

/// One small kernel on the executor: out[k N + i] = op_k(in[i]) for op_0 = exp2, op_1 = 1 / x,
/// op_2 = the kernels' sigmoid 1 / (1 + exp2((-x) * f32(log2 e))). Returns out.
std::vector<float> probe(const std::vector<float>& x) {
  using namespace monogen::ir;
  const int n = static_cast<int>(x.size());
  REQUIRE(n % 512 == 0);
  Plan p;
  p.key.spec = "test.gfx950run.probe";
  p.key.target = gfx950();
  p.grid = {n / 512, 512};
  p.args = {{"in", true, Scalar::F32, {n}, ArgRole::Input, 16, ""},
            {"out", true, Scalar::F32, {3 * n}, ArgRole::Output, 16, ""}};
  Builder b(p.kernel);
  Val in = b.arg(0, Type::ptr(AddrSpace::Global), "in");
  Val out = b.arg(1, Type::ptr(AddrSpace::Global), "out");
  Val i = b.block() * b.i32(512) + b.tid();
  Val v = b.load(Type::f32(), b.ptrAdd(in, i * b.i32(4)));
  b.store(b.ptrAdd(out, i * b.i32(4)), b.exp2(v));
  b.store(b.ptrAdd(out, (i + b.i32(n)) * b.i32(4)), b.f32(1.0) / v);
  const float kLog2e = 1.44269504088896340736f;
  b.store(b.ptrAdd(out, (i + b.i32(2 * n)) * b.i32(4)),
          b.f32(1.0) / (b.f32(1.0) + b.exp2((-v) * b.f32(static_cast<double>(kLog2e)))));
  const codegen::CodeObject co = codegen::compile(p);
  Gfx950RunDevice dev;
  const uint64_t ia = dev.alloc(0, 4 * n, "in"), oa = dev.alloc(0, 12 * n, "out");
  dev.upload(0, ia, x.data(), 4 * n);
  dev.launch(p, co.bytes, {{{"in", runtime::LaunchArg::tensor(ia, runtime::DType::F32, {n})},
                            {"out", runtime::LaunchArg::tensor(oa, runtime::DType::F32, {3 * n})}}});
  std::vector<float> o(3 * static_cast<size_t>(n));
  dev.download(0, o.data(), oa, 12 * n);
  return o;
}

}  // namespace

TEST_CASE("gfx950-run device: the executor's exp2, division and sigmoid are the declared profile", "[gfx950run]") {
  if (!haveTool()) return;
  std::vector<float> x;
  for (int k = 0; k < 4096; ++k) x.push_back(std::ldexp(1.0f + k / 4096.0f, k % 13 - 6) * (k % 2 ? -1.0f : 1.0f));
  for (int k = 0; k < 512; ++k) x.push_back(std::ldexp(1.0f + k / 512.0f, 126 + k % 2));  // 1 / x just below FLT_MIN
  for (int k = 0; k < 512; ++k) x.push_back(-60.0f - k * 0.125f);                          // sigmoid of large negatives
  const int n = static_cast<int>(x.size());
  const std::vector<float> o = probe(x);
  int badExp = 0, badExpIr = 0, badDiv = 0, badSig = 0, badSigIr = 0;
  for (int i = 0; i < n; ++i) {
    auto bits = [](float f) { return ir::num::f32ToBits(f); };
    if (bits(o[i]) != bits(::exp2f(x[i])) && ++badExp <= 5)
      UNSCOPED_INFO(fmt::format("exp2({}) = {:#x}, exp2f {:#x}", x[i], bits(o[i]), bits(::exp2f(x[i]))));
    badExpIr += bits(o[i]) != bits(ir::num::exp2(x[i]));
    const float q = moeDiv(1.0f, x[i], RefNumerics::Gfx950Run);
    if (bits(o[n + i]) != bits(q) && ++badDiv <= 5)
      UNSCOPED_INFO(fmt::format("1 / {} = {:#x}, profile {:#x}", x[i], bits(o[n + i]), bits(q)));
    const float sg = moeSigmoid(x[i], RefNumerics::Gfx950Run), sgIr = moeSigmoid(x[i]);
    if (bits(o[2 * n + i]) != bits(sg) && ++badSig <= 5)
      UNSCOPED_INFO(fmt::format("sigmoid({}) = {:#x}, profile {:#x}", x[i], bits(o[2 * n + i]), bits(sg)));
    badSigIr += bits(o[2 * n + i]) != bits(sgIr);
  }
  WARN(fmt::format("executor vs the IR's models: {} of {} exp2 and {} sigmoids differ", badExpIr, n, badSigIr));
  CHECK(badExp == 0);
  CHECK(badDiv == 0);
  CHECK(badSig == 0);
}

TEST_CASE("gfx950-run device: v_mfma_f32_16x16x4_f32 is an fma chain (the profile), not the declared MFMA model", "[gfx950run][mfma]") {
  if (!haveTool()) return;
  using namespace monogen::ir;
  const int T = 64;  // waves, one MFMA each
  Plan p;
  p.key.spec = "test.gfx950run.mfma";
  p.key.target = gfx950();
  p.grid = {T, 64};
  p.args = {{"a", true, Scalar::F32, {T * 64}, ArgRole::Input, 16, ""},
            {"b", true, Scalar::F32, {T * 64}, ArgRole::Input, 16, ""},
            {"c", true, Scalar::F32, {T * 256}, ArgRole::Input, 16, ""},
            {"out", true, Scalar::F32, {T * 256}, ArgRole::Output, 16, ""}};
  Builder bl(p.kernel);
  Val pa = bl.arg(0, Type::ptr(AddrSpace::Global), "a"), pb = bl.arg(1, Type::ptr(AddrSpace::Global), "b");
  Val pc = bl.arg(2, Type::ptr(AddrSpace::Global), "c"), po = bl.arg(3, Type::ptr(AddrSpace::Global), "out");
  Val i = bl.block() * bl.i32(64) + bl.tid();
  Val a = bl.load(Type::f32(), bl.ptrAdd(pa, i * bl.i32(4)));
  Val b = bl.load(Type::f32(), bl.ptrAdd(pb, i * bl.i32(4)));
  Val c = bl.load(Type::vec(Type::f32(), 4), bl.ptrAdd(pc, i * bl.i32(16)));
  bl.store(bl.ptrAdd(po, i * bl.i32(16)), bl.mfma(MfmaKind::F32_16x16x4_F32, a, b, c));
  const codegen::CodeObject co = codegen::compile(p);
  std::vector<float> A(T * 64), B(T * 64), C(T * 256);
  uint64_t st = 7;
  auto rnd = [&] { return runtime::simSplitMix64(st); };
  auto val = [&] {
    const uint64_t r = rnd();
    return std::ldexp(1.0f + static_cast<float>(r % 8388608) / 8388608.0f, static_cast<int>((r >> 30) % 24) - 12) *
           ((r >> 63) ? -1.0f : 1.0f);
  };
  for (auto& v : A) v = val();
  for (auto& v : B) v = val();
  for (auto& v : C) v = val();
  Gfx950RunDevice dev;
  const uint64_t aa = dev.alloc(0, 4 * T * 64, "a"), ba = dev.alloc(0, 4 * T * 64, "b"), ca = dev.alloc(0, 4 * T * 256, "c"),
                 oa = dev.alloc(0, 4 * T * 256, "out");
  dev.upload(0, aa, A.data(), 4 * T * 64);
  dev.upload(0, ba, B.data(), 4 * T * 64);
  dev.upload(0, ca, C.data(), 4 * T * 256);
  using runtime::DType;
  using runtime::LaunchArg;
  dev.launch(p, co.bytes, {{{"a", LaunchArg::tensor(aa, DType::F32, {T * 64})},
                            {"b", LaunchArg::tensor(ba, DType::F32, {T * 64})},
                            {"c", LaunchArg::tensor(ca, DType::F32, {T * 256})},
                            {"out", LaunchArg::tensor(oa, DType::F32, {T * 256})}}});
  std::vector<float> O(T * 256);
  dev.download(0, O.data(), oa, 4 * T * 256);
  int badModel = 0, badFma = 0, badDouble = 0, badFmaDesc = 0;
  for (int t = 0; t < T; ++t) {
    std::vector<float> acc(C.begin() + t * 256, C.begin() + t * 256 + 256);
    mfma::run(MfmaKind::F32_16x16x4_F32, A.data() + t * 64, B.data() + t * 64, acc.data());
    for (int l = 0; l < 64; ++l)
      for (int e = 0; e < 4; ++e) {
        const int row = mfma::dRow(l, e), col = mfma::dCol(l, e);
        const float got = O[t * 256 + l * 4 + e];
        auto Aat = [&](int r, int k) { return A[t * 64 + 16 * k + r]; };  // lane 16 k + r holds A[r][k]
        auto Bat = [&](int k, int cc) { return B[t * 64 + 16 * k + cc]; };
        float f = C[t * 256 + l * 4 + e], fd = f;
        double d = f;
        for (int k = 0; k < 4; ++k) {
          f = std::fma(Aat(row, k), Bat(k, col), f);
          d += double(Aat(row, k)) * double(Bat(k, col));
        }
        for (int k = 3; k >= 0; --k) fd = std::fma(Aat(row, k), Bat(k, col), fd);
        badModel += ir::num::f32ToBits(got) != ir::num::f32ToBits(acc[l * 4 + e]);
        badFma += ir::num::f32ToBits(got) != ir::num::f32ToBits(f);
        badFmaDesc += ir::num::f32ToBits(got) != ir::num::f32ToBits(fd);
        badDouble += ir::num::f32ToBits(got) != ir::num::f32ToBits(static_cast<float>(d));
      }
  }
  WARN(fmt::format("v_mfma_f32_16x16x4_f32 on the executor, {} results: {} differ from the declared model, {} from "
                   "an fma chain (k ascending), {} (k descending), {} from a double sum",
                   T * 256, badModel, badFma, badFmaDesc, badDouble));
  CHECK(badFma == 0);  // RefNumerics::Gfx950Run's exception 3
}

TEST_CASE("monogen check: one seeded launch per device, exit 0 only when bit-exact", "[gfx950run][cli]") {
  const std::string bin = std::string(MONOGEN_BINARY_DIR) + "/tools/monogen";
  const std::string args = " check --config reduced --rows 1 --tp 1 --seed 5 --no-cache";
  int code = -1;
  std::string out = runShell(bin + args + " --device sim", code);
  INFO(out);
  CHECK(code == 0);
  CHECK(out.find("on the sim device") != std::string::npos);
  CHECK(out.find("verdict: bit-exact") != std::string::npos);
  out = runShell("MONOGEN_GFX950_RUN=/nonexistent/gfx950-run " + bin + args + " --device gfx950-run", code);
  INFO(out);
  CHECK(code == 2);
  CHECK(out.find("'/nonexistent/gfx950-run' does not exist") != std::string::npos);
  if (!haveTool()) return;
  out = runShell(bin + args + " --device gfx950-run", code);
  INFO(out);
  CHECK(code == 0);
  CHECK(out.find("on the gfx950-run device") != std::string::npos);
  CHECK(out.find("verdict: bit-exact") != std::string::npos);
}

namespace {

/// fp4x8 -> bf16x8 on the executor for every e8m0 scale byte e (0 .. 255) and 16 words, word r
/// holding code (p + r) % 16 at nibble p, so every code sits in every position at every scale:
/// lane 16 e + r. out_native[lane] is fp4x8ToBf16x8 with the scale E8m0ToF32(byte), which the
/// lowering maps to v_cvt_scalef32_pk_bf16_fp4; out_arith[lane] the same with the scale's f32
/// bits loaded from memory (not an E8m0ToF32 result), which takes the arithmetic lowering.
/// The scale bytes carry junk above bit 7 (E8m0ToF32 reads the low 8 bits).
struct Fp4Probe {
  std::vector<uint32_t> words, scaleBytes;
  std::vector<uint16_t> native, arith;
  std::string isa;
};

Fp4Probe probeFp4x8() {
  using namespace monogen::ir;
  const int n = 256 * 16;
  Fp4Probe r;
  for (int i = 0; i < n; ++i) {
    const uint32_t e = static_cast<uint32_t>(i / 16), rot = static_cast<uint32_t>(i % 16);
    uint32_t w = 0;
    for (uint32_t p = 0; p < 8; ++p) w |= ((p + rot) % 16) << (4 * p);
    r.words.push_back(w);
    r.scaleBytes.push_back(e | (0xa5u + rot) << 8);
  }
  Plan p;
  p.key.spec = "test.gfx950run.fp4x8";
  p.key.target = gfx950();
  p.grid = {n / 512, 512};
  p.args = {{"words", true, Scalar::I32, {n}, ArgRole::Input, 16, ""},
            {"scale_bytes", true, Scalar::I32, {n}, ArgRole::Input, 16, ""},
            {"scale_bits", true, Scalar::I32, {n}, ArgRole::Input, 16, ""},
            {"out_native", true, Scalar::BF16, {8 * n}, ArgRole::Output, 16, ""},
            {"out_arith", true, Scalar::BF16, {8 * n}, ArgRole::Output, 16, ""}};
  Builder b(p.kernel);
  Val pw = b.arg(0, Type::ptr(AddrSpace::Global), "words"), ps = b.arg(1, Type::ptr(AddrSpace::Global), "scale_bytes");
  Val pf = b.arg(2, Type::ptr(AddrSpace::Global), "scale_bits"), pn = b.arg(3, Type::ptr(AddrSpace::Global), "out_native");
  Val pa = b.arg(4, Type::ptr(AddrSpace::Global), "out_arith");
  Val i = b.block() * b.i32(512) + b.tid();
  Val w = b.load(Type::i32(), b.ptrAdd(pw, i * b.i32(4)));
  Val s = b.e8m0ToF32(b.load(Type::i32(), b.ptrAdd(ps, i * b.i32(4))));
  Val f = b.bitcast(b.load(Type::i32(), b.ptrAdd(pf, i * b.i32(4))), Type::f32());
  b.store(b.ptrAdd(pn, i * b.i32(16)), b.fp4x8ToBf16x8(w, s));
  b.store(b.ptrAdd(pa, i * b.i32(16)), b.fp4x8ToBf16x8(w, f));
  r.isa = codegen::isaText(p);
  const codegen::CodeObject co = codegen::compile(p);
  std::vector<uint32_t> bits;
  for (uint32_t sb : r.scaleBytes) bits.push_back(num::f32ToBits(num::e8m0ToF32(sb)));
  Gfx950RunDevice dev;
  const uint64_t wa = dev.alloc(0, 4 * n, "words"), sa = dev.alloc(0, 4 * n, "scale_bytes"),
                 fa = dev.alloc(0, 4 * n, "scale_bits"), na = dev.alloc(0, 16 * n, "out_native"),
                 aa = dev.alloc(0, 16 * n, "out_arith");
  dev.upload(0, wa, r.words.data(), 4 * n);
  dev.upload(0, sa, r.scaleBytes.data(), 4 * n);
  dev.upload(0, fa, bits.data(), 4 * n);
  using runtime::DType;
  using runtime::LaunchArg;
  dev.launch(p, co.bytes, {{{"words", LaunchArg::tensor(wa, DType::I32, {n})},
                            {"scale_bytes", LaunchArg::tensor(sa, DType::I32, {n})},
                            {"scale_bits", LaunchArg::tensor(fa, DType::I32, {n})},
                            {"out_native", LaunchArg::tensor(na, DType::BF16, {8 * n})},
                            {"out_arith", LaunchArg::tensor(aa, DType::BF16, {8 * n})}}});
  r.native.resize(8 * static_cast<size_t>(n));
  r.arith.resize(8 * static_cast<size_t>(n));
  dev.download(0, r.native.data(), na, 16 * n);
  dev.download(0, r.arith.data(), aa, 16 * n);
  return r;
}

}  // namespace

TEST_CASE("gfx950-run device: fp4x8 -> bf16x8 with an e8m0 scale (v_cvt_scalef32_pk_bf16_fp4) is the model for "
          "every code x every scale byte",
          "[gfx950run][numerics]") {
  if (!haveTool()) return;
  const Fp4Probe r = probeFp4x8();
  // One native conversion a byte of the word on the e8m0 side, none on the arithmetic side.
  size_t cvts = 0;
  for (size_t at = r.isa.find("v_cvt_scalef32_pk_bf16_fp4"); at != std::string::npos;
       at = r.isa.find("v_cvt_scalef32_pk_bf16_fp4", at + 1))
    ++cvts;
  CHECK(cvts == 4);
  int badNative = 0, badArith = 0;
  for (size_t lane = 0; lane < r.words.size(); ++lane)
    for (int e = 0; e < 8; ++e) {
      const uint16_t want = ir::num::fp4x8ElemToBf16(r.words[lane], e, ir::num::e8m0ToF32(r.scaleBytes[lane]));
      const uint16_t got = r.native[8 * lane + e], alt = r.arith[8 * lane + e];
      if (got != want && ++badNative <= 10)
        UNSCOPED_INFO(fmt::format("native: code {:#x} (element {}) x e8m0 {}: {:#06x}, model {:#06x}",
                                  (r.words[lane] >> (4 * e)) & 0xf, e, r.scaleBytes[lane] & 0xff, got, want));
      if (alt != want && ++badArith <= 10)
        UNSCOPED_INFO(fmt::format("arithmetic: code {:#x} (element {}) x e8m0 {}: {:#06x}, model {:#06x}",
                                  (r.words[lane] >> (4 * e)) & 0xf, e, r.scaleBytes[lane] & 0xff, alt, want));
    }
  CHECK(badNative == 0);
  CHECK(badArith == 0);
}

TEST_CASE("gfx950-run device: a tool that dies without result.json is a RuntimeError with its exit code and stderr",
          "[gfx950run]") {
  const std::string script = (std::filesystem::temp_directory_path() / ("monogen-fake-gfx950-run-" +
                                                                        std::to_string(::getpid()))).string();
  {
    std::ofstream f(script);
    f << "#!/bin/sh\n[ \"$1\" = --version ] && echo 'gfx950-run 1.0 (a fake: dies on a launch)' && exit 0\n"
         "echo 'fake tool: out of memory' >&2\nexit 3\n";
  }
  std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  const ModelConfig cfg = ModelConfig::reduced();
  const ir::Key key = makeKey(cfg, 1, 1);
  runtime::Gfx950RunOptions o;
  o.tool = script;
  Gfx950RunDevice dev(o);
  SimSession s(cfg, key, dev, runtime::CodeObjectBytes{0x7f});
  try {
    s.launch(makeLaunchInputs(cfg, 1, 1, 1, {}), {});
    FAIL("no error");
  } catch (const RuntimeError& e) {
    const std::string msg = e.what();
    INFO(msg);
    CHECK(msg.find("exit code 3") != std::string::npos);
    CHECK(msg.find("no result.json") != std::string::npos);
    CHECK(msg.find("fake tool: out of memory") != std::string::npos);
  }
  std::filesystem::remove(script);
}

TEST_CASE("monogen check: a MONOGEN_GFX950_RUN that is not gfx950-run fails its handshake in seconds and is named",
          "[gfx950run][cli]") {
  const std::string bin = std::string(MONOGEN_BINARY_DIR) + "/tools/monogen";
  const std::string args = " check --config reduced --rows 1 --tp 1 --device gfx950-run --timeout 600";
  const std::filesystem::path sleeper =
      std::filesystem::temp_directory_path() / ("monogen-sleeping-tool-" + std::to_string(::getpid()));
  {
    std::ofstream f(sleeper);
    f << "#!/bin/sh\nsleep 600\n";
  }
  std::filesystem::permissions(sleeper, std::filesystem::perms::owner_all);
  struct Case {
    std::string tool, did;
  };
  for (const Case& c : {Case{"/bin/cat", "exited with code 0 and printed 'cat (GNU coreutils)"},
                        Case{sleeper.string(), "did not exit within 5 s"}}) {
    const auto t0 = std::chrono::steady_clock::now();
    int code = -1;
    const std::string out = runShell("MONOGEN_GFX950_RUN=" + c.tool + " " + bin + args, code);
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    INFO(out);
    CHECK(code == 2);
    CHECK(sec < 30);  // the handshake's 5 s and a compile, never the 600 s --timeout
    CHECK(out.find("'" + c.tool + "' is not the gfx950-run simulator: `" + c.tool + " --version` " + c.did) !=
          std::string::npos);
    CHECK(out.find("expected exit 0 and a first line 'gfx950-run <version>'") != std::string::npos);
  }
  std::filesystem::remove(sleeper);
}
