// MiniMax-M3.1-Flash's own dims (hidden 6144, 128 routed experts + the shared one, intermediate
// 3072, 256 CTAs) on the Sim device, the whole launch bit for bit against the references, at S=8
// and S=1, TP=4. Its own executable and CTest label (test_spec_full): about 3 minutes and 8 GB
// (4 ranks' contract weights, about 0.9 GB each, held by the inputs and by the Sim device).
#include <catch2/catch.hpp>

#include "specs/minimax_m3/MoeInputs.h"
#include "test_spec_util.h"

using namespace monogen;
using namespace monogen::specs::minimax_m3;

TEST_CASE("full dims: the whole launch at S=8 TP=4 and S=1 TP=4 equals the reference bit for bit",
          "[spec][full]") {
  const ModelConfig cfg = ModelConfig::flash();
  REQUIRE(cfg.experts == 128);
  REQUIRE(cfg.hidden == 6144);
  for (int S : {8, 1}) {
    const runtime::TensorMap in = makeLaunchInputs(cfg, S, 4, 90 + S, LaunchInputOptions{});
    REQUIRE(in.at("w13.r3").shape == std::vector<int64_t>{129, 2 * 3072 / 4, 6144 / 2});
    checkWholeLaunch(cfg, S, 4, in, 3 + S);
  }
}
