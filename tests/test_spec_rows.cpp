// Row independence: a NaN or Inf in one row's inputs never changes another row's out / res_out,
// and the corrupted launch still equals the reference; 2 ceil(log2 S) launches, one a bit of the
// row index, cover every pair of rows (docs/verification.md).
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cstring>
#include <limits>

#include "specs/minimax_m3/reference/MoeReference.h"
#include "specs/minimax_m3/testing/SimHarness.h"
#include "test_spec_util.h"

using namespace monogen;
using namespace monogen::specs::minimax_m3;
using runtime::HostTensor;
using runtime::TensorMap;

namespace {

constexpr uint16_t kBf16Nan = 0x7fc0, kBf16Inf = 0x7f80, kBf16NegInf = 0xff80;

/// Row t's corruption in launch `run`: kind (t + run) % 5 at column (7919 (t + 1) (run + 1)) % H
/// (of the row's attention row instead when o_proj is in the launch: `in` holds attn.rR; the
/// partials are then rederived, so the reference follows the quant: an Inf makes the row's
/// scale Inf and inv 0, a NaN element NaN codes, and either the row's whole partial NaN).
void corruptRow(const ModelConfig& cfg, int TP, TensorMap& in, int t, int run) {
  const bool oproj = in.count(rankName("attn", 0)) != 0;
  const int64_t H = cfg.hidden, W = oproj ? in.at(rankName("attn", 0)).shape[1] : H;
  const int64_t col = (int64_t{7919} * (t + 1) * (run + 1)) % H;
  const int kind = (t + run) % 5;
  const int rank = (t + 3 * run) % TP;
  const char* x = oproj ? "attn" : "part";  // the launch's input
  auto put = [&](const std::string& name, int64_t width, uint16_t bits) {
    in.at(name).as<uint16_t>()[t * width + col % width] = bits;
  };
  switch (kind) {
    case 0: put(rankName(x, rank), W, kBf16Nan); break;
    case 1: put(rankName(x, rank), W, kBf16Inf); break;
    case 2: put(rankName(x, rank), W, kBf16NegInf); break;
    case 3: put("res_in", H, kBf16Nan); break;
    default: put("res_in", H, kBf16Inf); break;
  }
  if (oproj && kind < 3) rederiveOprojPartials(cfg, static_cast<int>(in.at("res_in").shape[0]), TP, in);
}

/// The first row of `rows` whose out / res_out bits differ between a and b, on any rank.
std::optional<std::string> rowsDiffer(const ModelConfig& cfg, int TP, const TensorMap& a, const TensorMap& b,
                                      const std::vector<int>& rows) {
  const int64_t rowBytes = int64_t{cfg.hidden} * 2;
  for (int r = 0; r < TP; ++r)
    for (const char* n : {"out", "res_out"}) {
      const std::string name = rankName(n, r);
      const HostTensor &x = a.at(name), &y = b.at(name);
      for (int u : rows)
        if (std::memcmp(x.data.data() + u * rowBytes, y.data.data() + u * rowBytes, rowBytes) != 0)
          return fmt::format("{} row {}", name, u);
    }
  return std::nullopt;
}

/// Scheduler seed `sched`, with every CTA's LDS poisoned by its own pattern (the Sim's default,
/// seeded here apart from the scheduler): a read of LDS no op of the launch wrote shows.
runtime::SimOptions dirtyLds(uint64_t sched) {
  runtime::SimOptions o = schedSeed(sched);
  o.poisonSeed = 0x0dd5eed0 + sched;
  return o;
}

/// The bit-partition launches for (S, TP) on inputs `clean` (one clean launch, then two a bit).
void checkRowIndependence(const ModelConfig& cfg, int S, int TP, const TensorMap& clean, uint64_t sched) {
  const TensorMap base = checkWholeLaunch(cfg, S, TP, clean, dirtyLds(sched));
  int run = 0;
  for (int bit = 0; bit == 0 || (1 << bit) < S; ++bit)
    for (int side = 0; side < 2; ++side, ++run) {
      std::vector<int> bad, good;
      for (int t = 0; t < S; ++t) (((t >> bit) & 1) == side ? bad : good).push_back(t);
      if (bad.empty()) continue;
      TensorMap in = clean;
      for (int t : bad) corruptRow(cfg, TP, in, t, run);
      INFO(fmt::format("S={} TP={}: rows with bit {} = {} corrupted (launch {})", S, TP, bit, side, run));
      const TensorMap got = checkWholeLaunch(cfg, S, TP, in, dirtyLds(sched + run));
      const auto diff = rowsDiffer(cfg, TP, base, got, good);
      INFO("a clean row changed: " << diff.value_or("none"));
      CHECK_FALSE(diff.has_value());
    }
}

/// S in 1 8 9 16 at TP; oproj false: the input=part variant (the corruption in the partials).
void rowIndependenceMatrix(int TP, bool negInfBias, bool oproj = true) {
  const ModelConfig cfg = ModelConfig::reduced();
  for (int S : {1, 8, 9, 16}) {
    LaunchInputOptions io = edgeCases();
    io.oproj = oproj;
    TensorMap in = makeLaunchInputs(cfg, S, TP, 700 + 17 * S + TP, io);
    if (negInfBias)  // every selection value -inf: no row has a usable score
      for (int64_t e = 0; e < cfg.experts; ++e) in.at("bias").as<float>()[e] = -std::numeric_limits<float>::infinity();
    checkRowIndependence(cfg, S, TP, in, 1 + (S + TP) % 8);
  }
}

}  // namespace

TEST_CASE("rows: a NaN or Inf in one row's inputs leaves every other row bit-identical, TP 1", "[spec][rows]") {
  rowIndependenceMatrix(1, false);
  rowIndependenceMatrix(1, true, false);  // the -inf biases are the routing's case: the cheaper input=part
}

TEST_CASE("rows: a NaN or Inf in one row's inputs leaves every other row bit-identical, TP 4", "[spec][rows]") {
  rowIndependenceMatrix(4, false);
  rowIndependenceMatrix(4, true, false);
}

TEST_CASE("rows: a NaN or Inf in one row's inputs leaves every other row bit-identical, TP 8", "[spec][rows]") {
  rowIndependenceMatrix(8, false);
}

TEST_CASE("rows: every selection value -inf, TP 8, input=part (the partials corrupted)", "[spec][rows]") {
  rowIndependenceMatrix(8, true, false);
}

TEST_CASE("rows: degenerate routing reads nothing the launch did not write (race detector, uninitialized reads)",
          "[spec][rows]") {
  // What the Robust fix was about: rows with fewer than top-k usable scores (all -inf biases, NaN
  // logits, a NaN row), ties, every row on one expert, padded rows, every row padded. With
  // SimOptions::races every read of LDS, scratch or an output must be of bytes this launch wrote.
  // (A route that repeats a pick makes the combine read a CONTRIB row nothing wrote: this test
  // fails then, naming that read.)
  const ModelConfig cfg = ModelConfig::reduced();
  for (auto [S, TP] : {std::pair{3, 2}, std::pair{9, 4}}) {
    for (int kind = 0; kind < 7; ++kind) {
      LaunchInputOptions io = edgeCases();
      io.ties = kind == 1;
      io.nanLogits = kind == 2;
      io.sameExpert = kind == 3;
      io.paddedRows = kind == 4 ? 1 : kind == 5 ? S : 0;
      TensorMap in = makeLaunchInputs(cfg, S, TP, 900 + 10 * S + kind, io);
      if (kind == 0 || kind == 6)  // every selection value -inf: no row has a usable score
        for (int64_t e = 0; e < cfg.experts; ++e) in.at("bias").as<float>()[e] = -std::numeric_limits<float>::infinity();
      if (kind == 6) corruptRow(cfg, TP, in, 0, 0);  // and row 0's partial NaN
      INFO(fmt::format("S={} TP={} kind {} ({}{})", S, TP, kind, io.describe(), kind == 0 || kind == 6 ? ", all -inf biases" : ""));
      runtime::SimOptions o = dirtyLds(1 + kind);
      o.races = true;
      checkWholeLaunch(cfg, S, TP, in, o);
    }
  }
}
