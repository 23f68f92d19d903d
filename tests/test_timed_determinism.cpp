// The timed Sim is a function of its inputs and seed (docs/sim.md, "Determinism"): one launch run
// twice, in one process and in two, gives the same ops, modeled time, issued instructions and
// outputs; so does the compiled ISA the model charges, compiled afresh each time.
#include <catch2/catch.hpp>

#include <cstdio>
#include <memory>
#include <regex>
#include <string>
#include <utility>

#include "runtime/sim/timing/TimingParams.h"
#include "specs/minimax_m3/kernel/FfnVariant.h"
#include "specs/minimax_m3/kernel/Spec.h"
#include "specs/minimax_m3/testing/MoeInputs.h"
#include "specs/minimax_m3/testing/SimHarness.h"
#include "tools/TimedIsa.h"
#include "tests/test_shell.h"

using namespace monogen;
using namespace monogen::specs::minimax_m3;

namespace {

/// `sim`'s output without the wall-clock figures of its seed lines ("18.48 s (0.5 M ops/s)").
std::string withoutWallClock(const std::string& out) {
  return std::regex_replace(out, std::regex(R"( +[0-9]+\.[0-9]+ s( \([0-9.]+ M ops/s\))?)"), " <wall>");
}

const std::string kMonogen = std::string(MONOGEN_BINARY_DIR) + "/tools/monogen";

}  // namespace

TEST_CASE("timed sim: one launch twice in one process (a fresh ISA compile each) is the same run",
          "[sim][timed][determinism]") {
  const ModelConfig cfg = ModelConfig::reduced();
  const FfnVariant v = FfnVariant::make(cfg, makeKey(cfg, 2, 2));
  const runtime::TensorMap in = makeLaunchInputs(cfg, 2, 2, 1);
  runtime::SimStats first;
  runtime::TensorMap firstOut;
  std::shared_ptr<const runtime::timing::IsaCounts> firstIsa;
  for (int run = 0; run < 2; ++run) {
    auto timing = std::make_shared<runtime::timing::TimingParams>();
    timing->isa = tools::timedIsa(buildPlan(v));  // compiled afresh, attributed to the IR ops
    runtime::SimOptions so;
    so.seed = 1;
    so.timing = timing;
    const SimRun r = runOnSim(v, in, so);
    REQUIRE(r.valid);
    INFO("run " << run);
    if (run == 0) {
      first = r.stats, firstOut = r.outputs, firstIsa = timing->isa;
      continue;
    }
    CHECK(timing->isa->byOp == firstIsa->byOp);
    CHECK(timing->isa->byDepth == firstIsa->byDepth);
    CHECK(r.stats.steps == first.steps);
    CHECK(r.stats.ticks == first.ticks);
    CHECK(r.stats.timed.cycles == first.timed.cycles);  // bit for bit, not approximately
    CHECK(r.stats.timed.instructions == first.timed.instructions);
    CHECK(r.stats.timed.isaInstructions == first.timed.isaInstructions);
    CHECK(r.stats.timed.stageEndUs == first.timed.stageEndUs);
    CHECK_FALSE(firstMismatch(r.outputs, firstOut).has_value());
  }
}

TEST_CASE("timed sim: the same command in two processes prints the same run", "[sim][timed][determinism][cli]") {
  for (const char* args : {" sim --config reduced --rows 2 --tp 2 --timed",
                           " sim --launch layer --config reduced --rows 2 --tp 2 --ag-rs-from 1 --timed"}) {
    INFO(args);
    const auto [code1, out1] = shell(kMonogen + args);
    const auto [code2, out2] = shell(kMonogen + args);
    INFO(out1);
    CHECK(code1 == 0);
    CHECK(code2 == 0);
    REQUIRE(out1.find("modeled launch time: ") != std::string::npos);
    CHECK(withoutWallClock(out1) == withoutWallClock(out2));
  }
}
