// The attention launch's bytes floor (specs/minimax_m3/testing/AttentionBytesModel.h) against
// counts made by hand from the config, and `monogen bench --launch attention` holding the Sim's
// bytes against it.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "runtime/sim/timing/TimingParams.h"
#include "specs/minimax_m3/kernel/ModelConfig.h"
#include "specs/minimax_m3/reference/AttentionReference.h"
#include "specs/minimax_m3/testing/AttentionBytesModel.h"
#include "specs/minimax_m3/testing/AttentionInputs.h"
#include "test_shell.h"

using namespace monogen;
using namespace monogen::specs::minimax_m3;

namespace {

/// Rank `rank`'s minimum by tensor for S rows at `context` keys cached.
std::map<std::string, int64_t> itemsOf(int S, int TP, CacheMode mode, bool full, int context, bool share,
                                       int rank = 0) {
  const ModelConfig cfg = ModelConfig::reduced();
  AttentionInputOptions o;
  o.mode = mode;
  o.fullLayer = full;
  o.context = context;
  o.shareSequence = share;
  const AttentionLaunch in = makeAttentionLaunch(cfg, S, TP, 3, o);
  std::map<std::string, int64_t> m;
  for (const BytesItem& i : attentionMinimumBytes(cfg, in, attentionReference(cfg, in), rank).items) m[i.tensor] = i.bytes;
  return m;
}

}  // namespace

TEST_CASE("attention bytes floor: the keys cached before the launch once a rank", "[attention_bytes]") {
  const ModelConfig cfg = ModelConfig::reduced();  // 4 KV heads of 64 channels, index keys of 64
  const int D = cfg.headDim, ID = cfg.indexHeadDim;
  SECTION("a full layer reads every cached key of its 4 KV heads at TP 1, and atom its scales") {
    const auto m = itemsOf(1, 1, CacheMode::Atom, true, 300, false);
    CHECK(m.at("k_cache") == 300 * 4 * D);
    CHECK(m.at("v_cache") == 300 * 4 * D);
    CHECK(m.at("k_scale + v_scale") == 300 * 4 * 8);
    CHECK(m.count("index_cache") == 0);
    CHECK(m.at("w_qkv") == int64_t{16 * D + 2 * 4 * D} * cfg.hidden);  // q | k | v rows, no index rows
  }
  SECTION("17 blocks: the 16 unpinned blocks' index keys, the selection's keys but the appended one") {
    const auto m = itemsOf(1, 4, CacheMode::Vllm, false, 2048, false);
    CHECK(m.at("index_cache") == 16 * 128 * ID);
    CHECK(m.at("k_cache") == (15 * 128 + 1 - 1) * D);  // 15 full blocks and the tail's one key
    CHECK(m.at("k_scale + v_scale") == 8);
  }
  SECTION("8 rows sharing a sequence read its keys once") {
    const auto one = itemsOf(1, 4, CacheMode::Vllm, false, 2048, false);
    const auto eight = itemsOf(8, 4, CacheMode::Vllm, false, 2048, true);
    CHECK(eight.at("index_cache") == one.at("index_cache"));  // rows at 2049 .. 2056 keys: 17 blocks each
    CHECK(eight.at("x") == 8 * one.at("x"));
    CHECK(eight.at("k_cache") <= 16 * 128 * D);  // at most the 16 blocks the heads' selections can hold
  }
}

TEST_CASE("monogen bench --launch attention: the Sim's bytes at or above the floor, bit-exact", "[attention_bytes]") {
  const std::string monogen = std::string(MONOGEN_BINARY_DIR) + "/tools/monogen";
  int code = -1;
  const std::string out = runShell(monogen + " bench --launch attention --rows 2 --tp 4 --context 2048 --cache atom", code);
  INFO(out);
  CHECK(code == 0);
  const size_t at = out.find("  2   4 ");  // after the progress text on stderr
  REQUIRE(at != std::string::npos);
  double sim = 0, min = 0, ratio = 0;
  REQUIRE(std::sscanf(out.c_str() + at, " 2 4 %lf %lf %lf", &sim, &min, &ratio) == 3);
  CHECK(min > 0);
  CHECK(sim >= min);
  CHECK(ratio < 2.0);  // the launch reads each byte about once (1.1 .. 1.3 measured)
  CHECK(out.find("; bit-exact") != std::string::npos);
  runShell(monogen + " bench --launch attention --experts 4", code);
  CHECK(code == 2);
  runShell(monogen + " bench --context 5", code);
  CHECK(code == 2);
}

TEST_CASE("monogen bench --launch attention --timed: modeled cells over the floor, the same each run",
          "[attention_bytes]") {
  const std::string monogen = std::string(MONOGEN_BINARY_DIR) + "/tools/monogen";
  const std::string json = std::string(MONOGEN_BINARY_DIR) + "/test_attention_bytes_timed.json";
  const std::string cmd = monogen + " bench --launch attention --rows 2 --tp 4 --context 129 --timed --json " + json;
  std::vector<nlohmann::json> runs;
  for (int i = 0; i < 2; ++i) {
    std::remove(json.c_str());
    int code = -1;
    const std::string out = runShell(cmd, code);
    INFO(out);
    REQUIRE(code == 0);
    CHECK(out.find("modeled us") != std::string::npos);
    std::ifstream f(json);
    REQUIRE(f.good());
    runs.push_back(nlohmann::json::parse(f));
  }
  std::remove(json.c_str());
  REQUIRE(runs[0].size() == 1);
  const nlohmann::json& cell = runs[0][0];
  CHECK(cell["launch"] == "attention");
  CHECK(cell["rows"] == 2);
  CHECK(cell["tp"] == 4);
  CHECK(cell["context"] == 129);
  CHECK(cell["verdict"] == "bit-exact");
  // the floor: the rank-averaged minimum (bench's seed 1) at the model's HBM bandwidth
  const ModelConfig cfg = ModelConfig::reduced();
  AttentionInputOptions io;
  io.context = 129;
  const AttentionLaunch in = makeAttentionLaunch(cfg, 2, 4, 1, io);
  const AttentionResult ref = attentionReference(cfg, in);
  int64_t total = 0;
  for (int r = 0; r < 4; ++r) total += attentionMinimumBytes(cfg, in, ref, r).total();
  const double floorUs = static_cast<double>(total / 4) / (runtime::timing::TimingParams{}.hbmBandwidth * 1e12) * 1e6;
  CHECK(cell["floor_us"].get<double>() == Approx(floorUs).epsilon(1e-12));
  CHECK(cell["modeled_us"].get<double>() > floorUs);
  CHECK(runs[1][0]["modeled_us"] == cell["modeled_us"]);  // deterministic for a seed
  int code = -1;
  runShell(monogen + " bench --launch attention --rows 2 --tp 4 --json " + json, code);
  CHECK(code == 2);  // --json needs --timed
}
