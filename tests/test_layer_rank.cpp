// The one-launch decoder layer through the per-rank runtime, one process a rank on the Sim
// (specs/minimax_m3/testing/LayerRankHarness.h): each rank binds its layer arguments, launches
// and is bit-exact against the layer reference, replays of one bound argument set included;
// `monogen check --launch layer --per-rank` prints it (the reduce-scattered all-reduces too), and
// refuses the device and numerics it does not run on.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "runtime/RankProcesses.h"
#include "specs/minimax_m3/testing/LayerRankHarness.h"
#include "tests/test_rank_util.h"
#include "tests/test_shell.h"

using namespace monogen;
using namespace monogen::specs::minimax_m3;
using nlohmann::json;

namespace {

const std::string kMonogen = std::string(MONOGEN_BINARY_DIR) + "/tools/monogen";

using ranktest::Outcome;

/// Runs `job` on TP processes; `onReport` may kill a rank.
Outcome runLayerRanks(int tp, const LayerRankJob& job, const ranktest::OnReport& onReport = {}) {
  const ModelConfig cfg = ModelConfig::reduced();
  const LayerRankData data = makeLayerRankData(cfg, job, tp);  // once, before the fork
  return ranktest::runRankProcesses(
      tp, [&](runtime::RankChannel& ch) { return runSimLayerRank(cfg, job, data, ch); }, 300, onReport);
}

}  // namespace

TEST_CASE("layer rank runtime: a full layer S 4 TP 4 on one sequence, one process a rank, bit-exact", "[layer_rank]") {
  LayerRankJob job;
  job.rows = 4;
  job.seed = 7;
  job.waitTicks = 2'000'000'000;  // 20 s of idle: never reached by a healthy launch here
  job.knobs.fullLayer = true;
  job.inputs.fullLayer = true;
  job.inputs.shareSequence = true;
  const auto t0 = std::chrono::steady_clock::now();
  const Outcome o = runLayerRanks(4, job);
  for (int r = 0; r < 4; ++r) {
    INFO("rank " << r << " " << o.errors[r]);
    CHECK(o.status[r] == 0);
    REQUIRE(o.done[r].size() == 1);
    CHECK(o.done[r][0]["verdict"] == "bit-exact");
    CHECK(o.done[r][0]["tag"] == 1);
  }
  WARN(fmt::format("4 processes, full layer S 4 TP 4: {:.2f} s",
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()));
}

TEST_CASE("check --launch layer --per-rank: sparse S 3 TP 2, 2 replays of one bound set, bit-exact",
          "[layer_rank][cli]") {
  int code = 0;
  const std::string out = runShell(kMonogen + " check --launch layer --per-rank --config reduced --rows 3 --tp 2 "
                                              "--launches 2 --seed 3 --wait-seconds 20",
                                   code);
  INFO(out);
  CHECK(code == 0);
  CHECK_THAT(out, Catch::Contains("minimax_m3.layer-S3-TP2 on the sim device, one process a rank (per-rank runtime): "
                                  "2 processes"));
  for (int r = 0; r < 2; ++r)
    for (int k = 0; k < 2; ++k)  // the device epoch moves the tag on: nothing in the arguments changed
      CHECK_THAT(out, Catch::Matches(fmt::format("(.|\n)*rank {} launch {} tag {}:[^\n]*bit-exact(.|\n)*", r, k, k + 1)));
  CHECK_THAT(out, Catch::EndsWith("verdict: bit-exact\n"));
}

TEST_CASE("check --launch layer --per-rank: the reduce-scattered all-reduces, S 2 TP 2 ag_rs_from 2, bit-exact",
          "[layer_rank][cli]") {
  int code = 0;
  const std::string out = runShell(kMonogen + " check --launch layer --per-rank --config reduced --rows 2 --tp 2 "
                                              "--ag-rs-from 2 --wait-seconds 20",
                                   code);
  INFO(out);
  CHECK(code == 0);
  CHECK_THAT(out, Catch::Contains("minimax_m3.layer-S2-TP2-ag_rs_from=2 on the sim device"));
  CHECK_THAT(out, Catch::EndsWith("verdict: bit-exact\n"));
}

TEST_CASE("layer rank runtime: a peer killed mid-launch under reduce-scatter is named with the flags it owed",
          "[layer_rank]") {
  // S 2 TP 2 from ag_rs_from 2: row t's partials go to rank t % 2 alone, its all-reduced row back
  // from there, so rank 0 waits on rank 1 for ATTN and FFN (row 0) and A_AG and FFN_AG (row 1)
  const int tp = 2, victim = 1;
  LayerRankJob job;
  job.rows = 2;
  job.seed = 5;
  job.waitTicks = 100'000'000;  // 1 s of idle
  job.placement.agRsFrom = 2;
  bool killed = false;
  const Outcome o = runLayerRanks(tp, job, [&](runtime::RankProcesses& p, int r, const json& j) {
    if (!killed && r == victim && j["event"] == "start") {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // inside the launch
      p.kill(victim);
      killed = true;
    }
  });
  REQUIRE(killed);
  INFO(o.errors[0]);
  REQUIRE(o.done[0].size() == 1);
  const std::string v = o.done[0][0]["verdict"];
  INFO(v);
  CHECK(v.rfind("INVALID: rank 0: error word", 0) == 0);
  const size_t list = v.find("this launch's pairs never came from ");
  REQUIRE(list != std::string::npos);
  const size_t named = v.find("rank 1 (", list);
  REQUIRE(named != std::string::npos);
  const std::string owed = v.substr(named, v.find(')', named) - named);
  for (const char* flag : {"ATTN 0 of 768", "A_AG 0 of 768", "FFN 0 of 768", "FFN_AG 0 of 768"})
    CHECK_THAT(owed, Catch::Contains(flag));
  CHECK(o.status[0] == 1);
}

TEST_CASE("check --launch layer --per-rank refuses what it cannot do, naming the option", "[layer_rank][cli]") {
  struct Case {
    std::string args, says;
  };
  const std::vector<Case> cases = {
      {"--per-rank --device gfx950-run --rows 2 --tp 2", "--per-rank: runs the Sim device (--device sim) or the GPUs"},
      {"--per-rank --numerics gfx950-run --rows 2 --tp 2", "--per-rank: compares under the IR's numerics"},
      {"--launches 2 --rows 2 --tp 2", "--launches / --wait-seconds: take effect with --per-rank only"},
  };
  for (const Case& c : cases) {
    int code = 0;
    const std::string out = runShell(kMonogen + " check --launch layer --config reduced " + c.args, code);
    INFO(c.args << "\n" << out);
    CHECK(code == 2);
    CHECK_THAT(out, Catch::Contains(c.says));
  }
  int code = 0;  // the attention launch has no per-rank path
  const std::string out = runShell(kMonogen + " check --launch attention --config reduced --per-rank", code);
  INFO(out);
  CHECK(code == 2);
  CHECK_THAT(out, Catch::Contains("--per-rank: is an option of the FFN and layer launches"));
}
