// The whole launch's seeded inputs (specs/minimax_m3/testing/MoeInputs), the minimum-bytes model
// (BytesModel) and the launch's safetensors (SaveLaunch), checked through the MoE reference.
#include <catch2/catch.hpp>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "ir/Error.h"
#include "runtime/Tensor.h"
#include "specs/minimax_m3/testing/BytesModel.h"
#include "specs/minimax_m3/kernel/ModelConfig.h"
#include "specs/minimax_m3/testing/MoeInputs.h"
#include "specs/minimax_m3/reference/MoeReference.h"
#include "specs/minimax_m3/testing/SaveLaunch.h"
#include "specs/minimax_m3/testing/SimHarness.h"
#include "specs/minimax_m3/kernel/Spec.h"
#include "specs/minimax_m3/kernel/WeightContract.h"

using namespace monogen;
using namespace monogen::specs::minimax_m3;
using runtime::DType;
using runtime::HostTensor;
using runtime::TensorMap;

namespace {

const ModelConfig& reduced() {
  static const ModelConfig c = ModelConfig::reduced();
  return c;
}

std::set<int> rowSet(const HostTensor& picks, int t, int K) {
  std::set<int> s;
  for (int k = 0; k < K; ++k) s.insert(picks.as<int32_t>()[t * K + k]);
  return s;
}

/// moeReference on the inputs, checked against moeRouting (bit for bit) before it is returned.
TensorMap referenceChecked(const ModelConfig& cfg, int S, int TP, const TensorMap& in) {
  TensorMap ref = moeReference(cfg, S, TP, in);
  const TensorMap r = moeRouting(cfg, S, TP, in);
  for (const char* n : {"logits", "picks", "weights"}) {
    INFO("moeRouting's " << n << " against moeReference's");
    REQUIRE(r.at(n).shape == ref.at(n).shape);
    CHECK(r.at(n).data == ref.at(n).data);
  }
  return ref;
}

float valOf(const TensorMap& in, const TensorMap& ref, int t, int e, int E) {
  return moeSigmoid(ref.at("logits").as<float>()[t * E + e]) + in.at("bias").as<float>()[e];
}

}  // namespace

TEST_CASE("launch inputs: distinctExperts = N picks exactly N distinct experts (moeReference)", "[spec][inputs]") {
  const ModelConfig& cfg = reduced();
  const int K = cfg.topk;
  struct Case {
    int S, TP, N;
  };
  const Case cases[] = {{1, 1, 4}, {2, 2, 5},  {2, 1, 8},  {3, 4, 9},  {4, 8, 16},
                        {8, 2, 8}, {8, 4, 12}, {16, 1, 4}, {16, 2, 16}, {5, 1, 7}};
  for (const Case& c : cases) {
    for (uint64_t seed : {1u, 7u}) {
      INFO("S=" << c.S << " TP=" << c.TP << " N=" << c.N << " seed=" << seed);
      LaunchInputOptions o;
      o.distinctExperts = c.N;
      const TensorMap in = makeLaunchInputs(cfg, c.S, c.TP, seed, o);
      // the whole reference for the first seed; its routing alone (bit-identical: checked in
      // referenceChecked) for the second
      const TensorMap ref = seed == 1 ? referenceChecked(cfg, c.S, c.TP, in) : moeRouting(cfg, c.S, c.TP, in);
      const std::vector<int> got = distinctPicked(ref.at("picks"));
      CHECK(static_cast<int>(got.size()) == c.N);
      CHECK(got == steeredExperts(cfg, c.S, c.TP, seed, o));
      // every row picks topk distinct experts (no degenerate repeat)
      for (int t = 0; t < c.S; ++t) CHECK(static_cast<int>(rowSet(ref.at("picks"), t, K).size()) == K);
    }
  }
}

TEST_CASE("launch inputs: natural routing is unsteered and the inputs are deterministic", "[spec][inputs]") {
  const ModelConfig& cfg = reduced();
  const TensorMap a = makeLaunchInputs(cfg, 8, 2, 3);
  const TensorMap b = makeLaunchInputs(cfg, 8, 2, 3);
  const TensorMap c = makeLaunchInputs(cfg, 8, 2, 4);
  REQUIRE(a.size() == b.size());
  for (const auto& [name, t] : a) {
    INFO(name);
    CHECK(b.at(name).data == t.data);
  }
  CHECK(a.at("router_w").data != c.at("router_w").data);
  CHECK(a.at("w13.r1").data != c.at("w13.r1").data);
  CHECK(steeredExperts(cfg, 8, 2, 3, {}).empty());
  // without the expert weights: the same routing inputs, no w13 / s13 / w2 / s2
  LaunchInputOptions noW;
  noW.expertWeights = false;
  const TensorMap r = makeLaunchInputs(cfg, 8, 2, 3, noW);
  CHECK(r.size() == a.size() - 8);
  CHECK(r.count("w13.r0") == 0);
  for (const auto& [name, t] : r) {
    INFO(name);
    CHECK(a.at(name).data == t.data);
  }
  const TensorMap ref = referenceChecked(cfg, 8, 2, a);
  const int n = static_cast<int>(distinctPicked(ref.at("picks")).size());
  CHECK(n >= cfg.topk);
  CHECK(n <= 8 * cfg.topk);
  // the output is finite and not all zero: the weights' scales are sane
  bool nonzero = false;
  for (int64_t i = 0; i < ref.at("out").numel(); ++i) {
    const uint16_t v = ref.at("out").as<uint16_t>()[i];
    REQUIRE((v & 0x7f80) != 0x7f80);
    nonzero |= (v & 0x7fff) != 0;
  }
  CHECK(nonzero);
  // every name the reference and the Sim harness read is there, with the contract's shapes
  for (const char* n : {"part.r0", "part.r1", "res_in", "slots", "sres", "ssq", "norm_w", "router_w", "bias"})
    CHECK(a.count(n) == 1);
  for (int r = 0; r < 2; ++r) CHECK_NOTHROW(checkContract(cfg, 2, rankContract(a, r), ScaleLayout::E8m0Shuffle));
}

TEST_CASE("launch inputs: every TP splits the same logical experts", "[spec][inputs]") {
  const ModelConfig& cfg = reduced();
  const TensorMap one = makeLaunchInputs(cfg, 1, 1, 5);
  const TensorMap two = makeLaunchInputs(cfg, 1, 2, 5);
  const int64_t IP2 = cfg.interPerRank(2), I = cfg.intermediate;
  for (int e : {0, 9, cfg.experts}) {
    const ExpertMatrix full13 = expertMatrix(one.at("w13.r0"), one.at("s13.r0"), e);
    const ExpertMatrix full2 = expertMatrix(one.at("w2.r0"), one.at("s2.r0"), e);
    for (int r = 0; r < 2; ++r) {
      INFO("expert " << e << " rank " << r);
      const ExpertMatrix m13 = expertMatrix(two.at(rankName("w13", r)), two.at(rankName("s13", r)), e);
      const ExpertMatrix m2 = expertMatrix(two.at(rankName("w2", r)), two.at(rankName("s2", r)), e);
      bool same = true;
      for (int64_t i = 0; i < 2 * IP2; i += 7) {
        const int64_t src = i < IP2 ? r * IP2 + i : I + r * IP2 + (i - IP2);
        for (int64_t k = 0; k < cfg.hidden; k += 5) same &= m13.value(i, k) == full13.value(src, k) ||
                                                            (std::isnan(m13.value(i, k)) && std::isnan(full13.value(src, k)));
      }
      for (int64_t h = 0; h < cfg.hidden; h += 11)
        for (int64_t k = 0; k < IP2; k += 3) same &= m2.value(h, k) == full2.value(h, r * IP2 + k);
      CHECK(same);
    }
  }
}

TEST_CASE("launch inputs: padded rows have slot -1 and pick nothing", "[spec][inputs]") {
  const ModelConfig& cfg = reduced();
  const int K = cfg.topk;
  for (int N : {0, 4, 8}) {
    INFO("N=" << N);
    LaunchInputOptions o;
    o.paddedRows = 3;
    o.distinctExperts = N;
    const TensorMap in = makeLaunchInputs(cfg, 5, 2, 11, o);
    const HostTensor& slots = in.at("slots");
    REQUIRE(slots.dtype == DType::I64);
    REQUIRE(slots.shape == std::vector<int64_t>{5});
    for (int t = 0; t < 5; ++t) CHECK(slots.as<int64_t>()[t] == (t < 2 ? t : -1));
    const TensorMap ref = referenceChecked(cfg, 5, 2, in);
    for (int t = 0; t < 5; ++t)
      for (int k = 0; k < K; ++k) CHECK((ref.at("picks").as<int32_t>()[t * K + k] < 0) == (t >= 2));
    if (N) CHECK(static_cast<int>(distinctPicked(ref.at("picks")).size()) == N);
  }
  LaunchInputOptions o;
  o.paddedRows = 3;
  o.distinctExperts = 9;  // 2 valid rows x 4 = 8 < 9
  CHECK_THROWS_AS(makeLaunchInputs(cfg, 5, 2, 11, o), InputError);
}

TEST_CASE("launch inputs: options that cannot be met are refused", "[spec][inputs]") {
  const ModelConfig& cfg = reduced();
  auto make = [&](int S, LaunchInputOptions o) { return makeLaunchInputs(cfg, S, 1, 1, o); };
  LaunchInputOptions o;
  o.distinctExperts = 3;  // < top-k
  CHECK_THROWS_AS(make(4, o), InputError);
  o.distinctExperts = 9;  // > S x top-k at S = 2
  CHECK_THROWS_AS(make(2, o), InputError);
  o.distinctExperts = 17;  // > E
  CHECK_THROWS_AS(make(16, o), InputError);
  o = {};
  o.sameExpert = o.distinctPerToken = true;
  CHECK_THROWS_AS(make(2, o), InputError);
  o = {};
  o.distinctPerToken = true;  // 5 x 4 = 20 > 16 experts
  CHECK_THROWS_AS(make(5, o), InputError);
  o = {};
  o.ties = true;
  o.distinctExperts = 8;
  CHECK_THROWS_AS(make(4, o), InputError);
  o = {};
  o.paddedRows = 3;
  CHECK_THROWS_AS(make(2, o), InputError);
}

TEST_CASE("launch inputs: EdgeCases values (the Sim tests' inputs)", "[spec][inputs]") {
  const ModelConfig& cfg = reduced();
  LaunchInputOptions o;
  o.values = InputValues::EdgeCases;
  const TensorMap in = makeLaunchInputs(cfg, 5, 2, 7, o);
  // the all-reduce half is makeInputs's; sres / ssq are derived from it, as for Natural values;
  // the same seed gives the same weights
  const TensorMap ar = makeInputs(cfg, 5, 2, 7, FfnInput::Attn);  // o_proj's inputs and partials too (oproj)
  for (const auto& [name, t] : ar) CHECK(in.at(name).data == t.data);
  CHECK(ar.count("attn.r1") == 1);
  o.oproj = false;  // the input=part variant's: makeInputs's edge-case partials themselves
  const TensorMap part = makeLaunchInputs(cfg, 5, 2, 7, o);
  for (const auto& [name, t] : makeInputs(cfg, 5, 2, 7)) CHECK(part.at(name).data == t.data);
  CHECK(part.count("attn.r1") == 0);
  o.oproj = true;
  for (const char* n : {"sres", "ssq", "slots", "norm_w", "router_w", "bias", "w13.r1", "s2.r0"})
    CHECK(in.count(n) == 1);
  CHECK(makeLaunchInputs(cfg, 5, 2, 7, o).at("w13.r1").data == in.at("w13.r1").data);
  CHECK(o.describe() == "edge-cases");
  // padded rows anywhere, and the last ones
  o.paddedAt = {0, 3};
  o.paddedRows = 1;
  CHECK(o.describe() == "edge-cases padded=1 padded-at=0,3");
  const TensorMap p = makeLaunchInputs(cfg, 5, 2, 7, o);
  const int64_t want[] = {-1, 1, 2, -1, -1};
  for (int t = 0; t < 5; ++t) CHECK(p.at("slots").as<int64_t>()[t] == want[t]);
  // ties: every logit ties, so the picks are experts 0 .. topk-1 in every valid row
  LaunchInputOptions tied;
  tied.values = InputValues::EdgeCases;
  tied.ties = true;
  const TensorMap ref = referenceChecked(cfg, 3, 2, makeLaunchInputs(cfg, 3, 2, 7, tied));
  for (int t = 0; t < 3; ++t)
    for (int k = 0; k < cfg.topk; ++k) CHECK(ref.at("picks").as<int32_t>()[t * cfg.topk + k] == k);
  // refused: steering EdgeCases values, a padded row out of range, paddedAt with steering
  LaunchInputOptions bad = o;
  bad.distinctExperts = 8;
  CHECK_THROWS_AS(makeLaunchInputs(cfg, 5, 2, 7, bad), InputError);
  bad = o;
  bad.paddedAt = {5};
  CHECK_THROWS_AS(makeLaunchInputs(cfg, 5, 2, 7, bad), InputError);
  LaunchInputOptions steered;
  steered.distinctExperts = 8;
  steered.paddedAt = {1};
  CHECK_THROWS_AS(makeLaunchInputs(cfg, 5, 2, 7, steered), InputError);
}

TEST_CASE("launch inputs: sameExpert and distinctPerToken", "[spec][inputs]") {
  const ModelConfig& cfg = reduced();
  const int K = cfg.topk;
  {
    LaunchInputOptions o;
    o.sameExpert = true;
    const TensorMap in = makeLaunchInputs(cfg, 6, 2, 2, o);
    const TensorMap ref = referenceChecked(cfg, 6, 2, in);
    CHECK(static_cast<int>(distinctPicked(ref.at("picks")).size()) == K);
    for (int t = 1; t < 6; ++t) CHECK(rowSet(ref.at("picks"), t, K) == rowSet(ref.at("picks"), 0, K));
  }
  {
    LaunchInputOptions o;
    o.distinctPerToken = true;
    o.paddedRows = 1;
    const TensorMap in = makeLaunchInputs(cfg, 5, 4, 2, o);  // 4 valid rows x 4 = 16 experts
    const TensorMap ref = referenceChecked(cfg, 5, 4, in);
    CHECK(static_cast<int>(distinctPicked(ref.at("picks")).size()) == 4 * K);
    for (int a = 0; a < 4; ++a)
      for (int b = a + 1; b < 4; ++b) {
        const std::set<int> x = rowSet(ref.at("picks"), a, K), y = rowSet(ref.at("picks"), b, K);
        std::vector<int> both;
        std::set_intersection(x.begin(), x.end(), y.begin(), y.end(), std::back_inserter(both));
        CHECK(both.empty());
      }
  }
}

TEST_CASE("launch inputs: ties really tie in sigmoid + bias, and the tie rule decides a pick", "[spec][inputs]") {
  const ModelConfig& cfg = reduced();
  const int E = cfg.experts, K = cfg.topk, S = 8;
  LaunchInputOptions o;
  o.ties = true;
  int decided = 0;
  for (uint64_t seed : {1u, 2u, 3u}) {
    const TensorMap in = makeLaunchInputs(cfg, S, 2, seed, o);
    const TensorMap ref = referenceChecked(cfg, S, 2, in);
    const int32_t* picks = ref.at("picks").as<int32_t>();
    for (int t = 0; t < S; ++t) {
      INFO("seed " << seed << " row " << t);
      // every row has exact ties among different experts
      int tiedPairs = 0;
      for (int a = 0; a < E; ++a)
        for (int b = a + 1; b < E; ++b) tiedPairs += valOf(in, ref, t, a, E) == valOf(in, ref, t, b, E);
      CHECK(tiedPairs > 0);
      // a picked expert never has an unpicked lower expert of the same value (ties go low)...
      const std::set<int> mine = rowSet(ref.at("picks"), t, K);
      for (int e : mine)
        for (int l = 0; l < e; ++l)
          if (!mine.count(l)) CHECK(valOf(in, ref, t, l, E) != valOf(in, ref, t, e, E));
      // ... and the last pick ties with an expert left out: the tie rule decided membership
      const int last = picks[t * K + K - 1];
      for (int e = last + 1; e < E; ++e)
        if (!mine.count(e) && valOf(in, ref, t, e, E) == valOf(in, ref, t, last, E)) {
          ++decided;
          break;
        }
    }
  }
  CHECK(decided >= 6);
  // without the option no row ties at all (so the check above can fail)
  const TensorMap in = makeLaunchInputs(cfg, S, 2, 1);
  const TensorMap ref = referenceChecked(cfg, S, 2, in);
  int ties = 0;
  for (int t = 0; t < S; ++t)
    for (int a = 0; a < E; ++a)
      for (int b = a + 1; b < E; ++b) ties += valOf(in, ref, t, a, E) == valOf(in, ref, t, b, E);
  CHECK(ties == 0);
}

TEST_CASE("launch inputs: nanLogits makes some experts' logits NaN in every row", "[spec][inputs]") {
  const ModelConfig& cfg = reduced();
  const int E = cfg.experts, S = 4;
  for (int N : {0, 8}) {
    INFO("N=" << N);
    LaunchInputOptions o;
    o.nanLogits = true;
    o.distinctExperts = N;
    const TensorMap in = makeLaunchInputs(cfg, S, 2, 9, o);
    const TensorMap ref = referenceChecked(cfg, S, 2, in);
    std::set<int> nanExperts;
    for (int e = 0; e < E; ++e) {
      int rows = 0;
      for (int t = 0; t < S; ++t) rows += std::isnan(ref.at("logits").as<float>()[t * E + e]);
      CHECK((rows == 0 || rows == S));  // an expert's logit is NaN in every row or in none
      if (rows == S) nanExperts.insert(e);
    }
    CHECK(static_cast<int>(nanExperts.size()) == E / 8);
    for (int e : distinctPicked(ref.at("picks"))) CHECK(nanExperts.count(e) == 0);
    if (N) CHECK(static_cast<int>(distinctPicked(ref.at("picks")).size()) == N);
  }
  // without the option every logit is a number
  const TensorMap in = makeLaunchInputs(cfg, S, 2, 9);
  const TensorMap ref = referenceChecked(cfg, S, 2, in);
  for (int64_t i = 0; i < ref.at("logits").numel(); ++i) REQUIRE(!std::isnan(ref.at("logits").as<float>()[i]));
}

TEST_CASE("bytes model: a hand-computed case", "[spec][bytes]") {
  // reduced: hidden 1536, 16 experts, I 768; S = 2, TP = 2 (I / TP = 384), 5 distinct experts; the
  // o_proj partial as the input (test_spec_oproj has the attn rows' case)
  const ModelConfig& cfg = reduced();
  const MinimumBytes m = minimumBytes(cfg, 2, 2, 5, FfnInput::Part);
  auto item = [&](const std::string& n) {
    for (const BytesItem& i : m.items)
      if (i.tensor == n) return i.bytes;
    FAIL("no item " << n);
    return int64_t{-1};
  };
  // one expert on one rank: w13 768 rows x 768 bytes, s13 768 x 48, w2 1536 x 192, s2 1536 x 12
  CHECK(m.perExpert == 589824 + 36864 + 294912 + 18432);
  CHECK(item("w13") == 6 * 589824);  // the shared expert + 5
  CHECK(item("s13") == 6 * 36864);
  CHECK(item("w2") == 6 * 294912);
  CHECK(item("s2") == 6 * 18432);
  CHECK(item("router_w") == 16 * 1536 * 4);
  CHECK(item("bias") == 64);
  CHECK(item("norm_w") == 3072);
  CHECK(item("slots") == 16);
  CHECK(item("part") == 6144);
  CHECK(item("res_in") == 6144);
  CHECK(item("peer part pairs") == 12288);  // 1 peer x 2 rows x 768 pairs x 8 bytes
  CHECK(item("peer final pairs") == 12288);
  CHECK(m.total() == 5778512);
  CHECK(m.totalOf({"push", "reduce"}) == 6144 + 6144 + 12288);
  // TP 1: no peers; the picks overload counts distinct experts, ignoring -1 and repeats
  HostTensor picks = HostTensor::zeros(DType::I32, {2, 4});
  const int32_t p[8] = {3, 5, 7, 9, 5, 3, -1, 11};
  std::copy(p, p + 8, picks.as<int32_t>());
  const MinimumBytes one = minimumBytes(cfg, 2, 1, picks, FfnInput::Part);
  CHECK(one.routedExperts == 5);
  CHECK(one.perExpert == 1536 * (768 + 48 + 384 + 24));
  int64_t peers = 0;
  for (const BytesItem& i : one.items)
    if (i.tensor.rfind("peer", 0) == 0) peers += i.bytes;
  CHECK(peers == 0);
  CHECK_THROWS_AS(minimumBytes(cfg, 2, 2, 9), InputError);
}

TEST_CASE("bytes model: the Sim device reads at least the minimum of the kernel's stages", "[spec][bytes]") {
  const ModelConfig& cfg = reduced();
  const int S = 2, TP = 2;
  LaunchInputOptions o;
  o.distinctExperts = 5;
  const TensorMap in = makeLaunchInputs(cfg, S, TP, 1, o);
  const ir::Key key = makeKey(cfg, S, TP);
  SimSession session(cfg, key);
  std::vector<std::string> have;
  for (const auto& st : session.plan().stages) have.push_back(st.name);
  const SimRun run = session.launch(in, {});
  const MinimumBytes m = minimumBytes(cfg, S, TP, 5);
  INFO("stages: " << have.size() << ", sim bytes " << run.stats.globalBytesLoaded);
  REQUIRE(m.totalOf(have) > 0);
  CHECK(run.stats.globalBytesLoaded / TP >= m.totalOf(have));
}

TEST_CASE("save launch: a launch's inputs and outputs round-trip through safetensors", "[spec][inputs]") {
  const ModelConfig& cfg = reduced();
  LaunchInputOptions o;
  o.distinctExperts = 6;
  o.paddedRows = 1;
  const TensorMap in = makeLaunchInputs(cfg, 3, 2, 21, o);
  const TensorMap outputs = moeRouting(cfg, 3, 2, in);
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("monogen_test_save_launch_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  saveLaunch(dir, cfg, 3, 2, in, outputs, {}, {{"seed", "21"}, {"inputs", o.describe()}});
  const SavedLaunch back = loadLaunch(dir);
  CHECK(back.reference.empty());
  CHECK(back.metadata.at("seed") == "21");
  CHECK(back.metadata.at("inputs") == "experts=6 padded=1");
  CHECK(back.metadata.at("config") == cfg.canonical());
  CHECK(back.metadata.at("rows") == "3");
  CHECK(back.metadata.at("tp") == "2");
  auto same = [](const TensorMap& a, const TensorMap& b) {
    if (a.size() != b.size()) return false;
    for (const auto& [n, t] : a) {
      auto it = b.find(n);
      if (it == b.end() || it->second.dtype != t.dtype || it->second.shape != t.shape || it->second.data != t.data)
        return false;
    }
    return true;
  };
  CHECK(same(back.inputs, in));
  CHECK(same(back.outputs, outputs));
  // what was read back still is a launch: the contract holds and the routing is the same
  CHECK_NOTHROW(checkContract(cfg, 2, rankContract(back.inputs, 1), ScaleLayout::E8m0Shuffle));
  CHECK(moeRouting(cfg, 3, 2, back.inputs).at("picks").data == outputs.at("picks").data);
  // with a reference it is written and read back too
  saveLaunch(dir, cfg, 3, 2, in, outputs, outputs);
  CHECK(same(loadLaunch(dir).reference, outputs));
  std::filesystem::remove_all(dir);
}
