// MiniMax-M3.1-Flash's own dims at S=8 TP=4 (the test_spec_full case) with the Sim's race detector
// on (runtime/sim/SimRaces.h): every output of every rank bit for bit against the
// references, and no race. Its own executable and CTest label (test_spec_races_full), opt-in:
// it holds over 13 GB (8 GB as test_spec_full's cases: the inputs and the Sim's copy of 3.9 GB of
// weights, which the detector does not shadow, being read-only; then the vector clocks of 8192
// waves, the LDS shadow of 1024 CTAs and the release snapshots) and takes minutes, so CTest
// registers it only with -DMONOGEN_TEST_FULL_RACES=ON, under test_spec_full's RESOURCE_LOCK.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <chrono>

#include "specs/minimax_m3/testing/MoeInputs.h"
#include "test_spec_util.h"

using namespace monogen;
using namespace monogen::specs::minimax_m3;

TEST_CASE("races full dims: the whole launch at S=8 TP=4 is race-free and bit-exact", "[spec][races][full]") {
  const ModelConfig cfg = ModelConfig::flash();
  REQUIRE(cfg.hidden == 6144);
  const runtime::TensorMap in = makeLaunchInputs(cfg, 8, 4, 98, LaunchInputOptions{});
  runtime::SimOptions o = schedSeed(11);
  o.races = true;
  const auto t0 = std::chrono::steady_clock::now();
  checkWholeLaunch(cfg, 8, 4, in, o);
  WARN(fmt::format("full dims S=8 TP=4 with the race detector: {:.0f} s",
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()));
}
