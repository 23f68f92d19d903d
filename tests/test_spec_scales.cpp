// The e8m0 scale layouts of the weight contract (WeightContract.h, the `scales` knob): AITER's
// e8m0_shuffle as an independent view/permute, the per-expert slab the kernel reads, both
// layouts bit-exact on the Sim, the declared-layout refusal, and that the layouts really differ
// (row-major bytes read as shuffled ones give a mismatch).
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <array>
#include <chrono>

#include "ir/Error.h"
#include "specs/minimax_m3/testing/MoeInputs.h"
#include "specs/minimax_m3/testing/SimHarness.h"
#include "specs/minimax_m3/kernel/Spec.h"
#include "specs/minimax_m3/kernel/WeightContract.h"
#include "test_spec_util.h"

using namespace monogen;
using namespace monogen::specs::minimax_m3;
using runtime::DType;
using runtime::HostTensor;
using runtime::TensorMap;

namespace {

/// AITER's e8m0_shuffle (aiter/utility/fp4_utils.py) as the tensor ops it is: zero-pad [m, n] to
/// [pm, pn] (pm % 256 == 0, pn % 8 == 0), view it as [pm/32, 2, 16, pn/8, 2, 4] (row-major
/// strides), permute (0, 3, 5, 2, 4, 1), make it contiguous. Written as a generic strided
/// permute, not through e8m0ShuffledOffset, so the two are independent.
std::vector<uint8_t> aiterE8m0Shuffle(const std::vector<uint8_t>& x, int64_t m, int64_t n) {
  const int64_t pm = (m + 255) / 256 * 256, pn = (n + 7) / 8 * 8;
  std::vector<uint8_t> padded(static_cast<size_t>(pm * pn), 0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) padded[i * pn + j] = x[i * n + j];
  const std::array<int64_t, 6> dims{pm / 32, 2, 16, pn / 8, 2, 4};
  std::array<int64_t, 6> strides{};
  strides[5] = 1;
  for (int d = 4; d >= 0; --d) strides[d] = strides[d + 1] * dims[d + 1];
  const std::array<int, 6> perm{0, 3, 5, 2, 4, 1};
  std::vector<uint8_t> out;
  out.reserve(padded.size());
  std::array<int64_t, 6> idx{};  // over the permuted dims, last fastest
  for (;;) {
    int64_t src = 0;
    for (int d = 0; d < 6; ++d) src += idx[d] * strides[perm[d]];
    out.push_back(padded[src]);
    int d = 5;
    while (d >= 0 && ++idx[d] == dims[perm[d]]) idx[d--] = 0;
    if (d < 0) break;
  }
  return out;
}

std::vector<uint8_t> randomBytes(int64_t n, uint64_t seed) {
  std::vector<uint8_t> v(static_cast<size_t>(n));
  uint64_t s = seed;
  for (auto& b : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    b = static_cast<uint8_t>(1 + (s >> 56) % 255);  // never 0: a misplaced byte cannot hide as padding
  }
  return v;
}

std::string messageOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("e8m0Shuffle is AITER's view and permute, and e8m0Unshuffle undoes it", "[spec][scales]") {
  // (m, n): the reduced config's s13 / s2 matrices flattened at TP 1, 2, 4, 8 (row and column
  // padding), one tile, and ragged ones
  for (auto [m, n] : std::vector<std::pair<int64_t, int64_t>>{
           {17 * 1536, 48}, {17 * 1536, 24}, {17 * 768, 48}, {17 * 1536, 12}, {17 * 384, 48},
           {17 * 1536, 6}, {17 * 192, 48}, {17 * 1536, 3}, {256, 8}, {32, 1}, {96, 12}, {300, 13}}) {
    CAPTURE(m, n);
    const std::vector<uint8_t> x = randomBytes(m * n, static_cast<uint64_t>(m * 131 + n));
    int64_t pm = 0, pn = 0;
    const std::vector<uint8_t> ours = e8m0Shuffle(x.data(), m, n, &pm, &pn);
    CHECK(pm == (m + 255) / 256 * 256);
    CHECK(pn == (n + 7) / 8 * 8);
    CHECK(ours == aiterE8m0Shuffle(x, m, n));
    CHECK(e8m0Unshuffle(ours.data(), m, n) == x);
  }
}

TEST_CASE("scaleIndex: an expert's slab of the flattened shuffle, held without the zero row tail", "[spec][scales]") {
  const ModelConfig cfg = ModelConfig::reduced();
  for (int tp : {1, 2, 4, 8}) {
    const int64_t e1 = cfg.expertsWithShared(), ip = cfg.interPerRank(tp);
    for (auto [rows, kb] : {std::pair<int64_t, int64_t>{2 * ip, cfg.hidden / 32}, {cfg.hidden, ip / 32}}) {
      CAPTURE(tp, rows, kb);
      HostTensor logical = HostTensor::zeros(DType::U8, {e1, rows, kb});
      logical.data = randomBytes(e1 * rows * kb, static_cast<uint64_t>(tp * 7 + kb));
      int64_t pm = 0, pn = 0;
      const std::vector<uint8_t> flat = e8m0Shuffle(logical.data.data(), e1 * rows, kb, &pm, &pn);
      const HostTensor held = holdScales(logical, ScaleLayout::E8m0Shuffle);
      CHECK(held.layout == "e8m0_shuffle");
      CHECK(held.shape == std::vector<int64_t>{e1, rows, heldScaleColumns(kb, ScaleLayout::E8m0Shuffle)});
      CHECK(pn == held.shape[2]);
      // what the contract drops is zeros only; what it holds is the flattened shuffle's head
      REQUIRE(static_cast<int64_t>(held.data.size()) == e1 * rows * pn);
      CHECK(std::equal(held.data.begin(), held.data.end(), flat.begin()));
      CHECK(std::all_of(flat.begin() + e1 * rows * pn, flat.end(), [](uint8_t b) { return b == 0; }));
      // every logical scale sits at its expert's base + scaleIndex, in both layouts
      const HostTensor rm = holdScales(logical, ScaleLayout::RowMajor);
      CHECK(rm.layout == "rowmajor");
      CHECK(rm.data == logical.data);
      int64_t bad = 0;
      for (int64_t e = 0; e < e1; ++e)
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t b = 0; b < kb; ++b) {
            const uint8_t v = logical.data[(e * rows + r) * kb + b];
            bad += held.data[e * rows * pn + scaleIndex(ScaleLayout::E8m0Shuffle, r, b, kb)] != v;
            bad += rm.data[e * rows * kb + scaleIndex(ScaleLayout::RowMajor, r, b, kb)] != v;
          }
      CHECK(bad == 0);
    }
  }
}

namespace {
void scalesMatrix(ScaleLayout scales) {
  const ModelConfig cfg = ModelConfig::reduced();
  const auto t0 = std::chrono::steady_clock::now();
  int runs = 0;
  for (int S : {1, 8})
    for (int TP : {1, 2, 8}) {
      LaunchInputOptions io = edgeCases();
      io.scales = scales;
      const uint64_t sched = 1 + (S + TP) % 8;
      checkWholeLaunch(cfg, S, TP, makeLaunchInputs(cfg, S, TP, 300 * S + TP, io), schedSeed(sched),
                       MoeExperts::All, scales);
      ++runs;
    }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  WARN(fmt::format("{}: {} reduced-config launches in {:.1f} s", scaleLayoutName(scales), runs, secs));
}
}  // namespace

TEST_CASE("scales=e8m0_shuffle (the default): bit-exact on the Sim, S 1 and 8 x TP 1, 2, 8 (reduced config)",
          "[spec][scales]") {
  scalesMatrix(ScaleLayout::E8m0Shuffle);
}

TEST_CASE("scales=rowmajor: bit-exact on the Sim, S 1 and 8 x TP 1, 2, 8 (reduced config)", "[spec][scales]") {
  scalesMatrix(ScaleLayout::RowMajor);
}

TEST_CASE("the scales knob is in the key, the variant name and the argument shapes", "[spec][scales]") {
  const ModelConfig cfg = ModelConfig::reduced();
  FfnKnobs rm;
  rm.scales = ScaleLayout::RowMajor;
  const ir::Key def = makeKey(cfg, 8, 8), row = makeKey(cfg, 8, 8, rm);
  CHECK(def.knobs.empty());  // e8m0_shuffle is the default
  CHECK(row.knobs == "scales=rowmajor");
  CHECK(row.variantName() == "minimax_m3.ffn-S8-TP8-scales=rowmajor");
  CHECK(def.canonical() != row.canonical());
  CHECK(knobsOf(row).scales == ScaleLayout::RowMajor);
  CHECK(knobsOf(def).scales == ScaleLayout::E8m0Shuffle);
  // s2 at TP 8: I/TP/32 = 3 K blocks, held padded to 8 when shuffled
  CHECK(buildPlan(cfg, def).arg("s2").shape == std::vector<int64_t>{17, 1536, 8});
  CHECK(buildPlan(cfg, row).arg("s2").shape == std::vector<int64_t>{17, 1536, 3});
  CHECK(buildPlan(cfg, def).arg("s13").shape == std::vector<int64_t>{17, 192, 48});
  CHECK_THROWS_WITH(FfnKnobs::parse("scales=shuffled", "k"), Catch::Contains("e8m0_shuffle or rowmajor"));
}

TEST_CASE("a scale tensor declared in the other layout, or in none, is refused naming it and both layouts",
          "[spec][scales]") {
  const ModelConfig cfg = ModelConfig::reduced();
  const int S = 1, TP = 1;  // the same shapes in both layouts: only the declaration tells them apart
  LaunchInputOptions io;
  io.scales = ScaleLayout::RowMajor;
  const TensorMap rowMajor = makeLaunchInputs(cfg, S, TP, 5, io);
  REQUIRE(rowMajor.at("s13.r0").shape == std::vector<int64_t>{17, 1536, 48});
  REQUIRE(rowMajor.at("s2.r0").shape == std::vector<int64_t>{17, 1536, 24});
  const ir::Key shuffledKey = makeKey(cfg, S, TP);
  std::string msg = messageOf([&] { runOnSim(cfg, shuffledKey, rowMajor, schedSeed(1)); });
  CAPTURE(msg);
  CHECK_THAT(msg, Catch::Contains("s13.r0") && Catch::Contains("'e8m0_shuffle'") && Catch::Contains("'rowmajor'"));
  TensorMap undeclared = rowMajor;
  undeclared.at("s2.r0").layout.clear();
  FfnKnobs rm;
  rm.scales = ScaleLayout::RowMajor;
  msg = messageOf([&] { runOnSim(cfg, makeKey(cfg, S, TP, rm), undeclared, schedSeed(1)); });
  CHECK_THAT(msg, Catch::Contains("s2.r0") && Catch::Contains("undeclared") && Catch::Contains("'rowmajor'"));
  // the contract check itself, on a rank's map
  msg = messageOf([&] { checkContract(cfg, TP, rowMajor, 0, ScaleLayout::E8m0Shuffle); });
  CHECK_THAT(msg, Catch::Contains("weight contract: s13") && Catch::Contains("'e8m0_shuffle'") &&
                      Catch::Contains("'rowmajor'"));
  CHECK_NOTHROW(checkContract(cfg, TP, rowMajor, 0, ScaleLayout::RowMajor));
  // the references refuse undeclared scales too (they read the declared layout)
  undeclared.at("s13.r0").layout.clear();
  CHECK_THAT(messageOf([&] { launchReferenceOutputs(cfg, S, TP, undeclared); }), Catch::Contains("undeclared"));
}

TEST_CASE("row-major scales read as e8m0_shuffle'd ones (a lying declaration) give a mismatch", "[spec][scales]") {
  const ModelConfig cfg = ModelConfig::reduced();
  const int S = 8, TP = 1;
  LaunchInputOptions io = edgeCases();
  io.scales = ScaleLayout::RowMajor;
  const TensorMap truth = makeLaunchInputs(cfg, S, TP, 11, io);
  TensorMap lie = truth;
  for (const char* n : {"s13.r0", "s2.r0"}) lie.at(n).layout = scaleLayoutName(ScaleLayout::E8m0Shuffle);
  const SimRun run = runOnSim(cfg, makeKey(cfg, S, TP), lie, schedSeed(2));  // the shuffled variant
  REQUIRE(run.valid);
  // the launch's results against what the row-major bytes mean
  TensorMap want;
  for (const auto& [name, t] : moeReferenceOutputs(cfg, S, TP, truth, run.outputs))
    if (name == "mid.r0" || name == "out.r0") want[name] = t;
  REQUIRE(want.size() == 2);
  const auto mm = firstMismatch(run.outputs, want);
  REQUIRE(mm.has_value());
  INFO(describe(*mm));
  CHECK(mm->tensor == "mid.r0");  // up's first output already differs
  // and read as declared by the right variant, the same bytes are bit-exact
  checkWholeLaunch(cfg, S, TP, truth, schedSeed(2), MoeExperts::All, ScaleLayout::RowMajor);
}
