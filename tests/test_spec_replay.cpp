// Graph replay: the launch tag comes from device memory (the epoch), never from an argument, so
// the same packed arguments launched again are a new, correct launch, as a captured HIP graph
// replays them. On the Sim device and, as machine code, on gfx950-run; and the scheme it replaces
// (the same tag every launch, what a tag argument does under replay) shown wrong.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "runtime/Gfx950RunDevice.h"
#include "specs/minimax_m3/kernel/KernelContext.h"
#include "specs/minimax_m3/testing/MoeInputs.h"
#include "specs/minimax_m3/reference/MoeReference.h"
#include "specs/minimax_m3/testing/SimHarness.h"
#include "specs/minimax_m3/kernel/Spec.h"
#include "test_spec_util.h"

using namespace monogen;
using namespace monogen::specs::minimax_m3;
using runtime::TensorMap;

namespace {

/// Every output of a launch against the references for its inputs; the first mismatch, if any.
std::optional<Mismatch> wrongOutput(const ModelConfig& cfg, int S, int TP, const TensorMap& in, const SimRun& run,
                                    RefNumerics numerics = RefNumerics::Ir) {
  return firstMismatch(run.outputs, launchReferenceOutputs(cfg, S, TP, in, MoeExperts::All, MoeQuant::A16w4, numerics));
}

}  // namespace

TEST_CASE("replay: no kernel argument changes from launch to launch", "[spec][replay]") {
  const ModelConfig cfg = ModelConfig::reduced();
  const ir::Plan plan = buildPlan(cfg, makeKey(cfg, 8, 4));
  for (const ir::KernelArg& a : plan.args) {
    INFO(a.name);
    CHECK(a.name != "tag");
    if (!a.isPointer) CHECK((a.name == "rank" || a.name == "wait_ticks" || a.name == "handshake"));
  }
}

TEST_CASE("replay: the same arguments three times on the same buffers are three correct launches (Sim)",
          "[spec][replay]") {
  const ModelConfig cfg = ModelConfig::reduced();
  const int S = 3, TP = 2;
  SimSession session(cfg, makeKey(cfg, S, TP));
  LaunchParams p;
  p.replay = true;  // the session never touches the epochs: the device's own state decides the tag
  for (int k = 0; k < 3; ++k) {
    INFO("launch " << k);
    const TensorMap in = makeLaunchInputs(cfg, S, TP, 70 + k, {});  // new activations in the same buffers
    runtime::SimOptions o = schedSeed(k + 1);
    o.races = true;  // and no launch reads what it did not write: only the pairs cross launches
    const SimRun run = session.launch(in, o, p);
    INFO((run.stats.uninit.empty() ? std::string("no uninitialized read") : run.stats.uninit.front()));
    INFO((run.stats.races.empty() ? std::string("no race") : run.stats.races.front()));
    CHECK(run.stats.findings() == 0);
    CHECK(run.tag == k + 1);  // the epochs start at 0 (zeroAtAllocation)
    CHECK(run.valid);
    const auto m = wrongOutput(cfg, S, TP, in, run);
    INFO((m ? describe(*m) : std::string("no mismatch")));
    CHECK_FALSE(m.has_value());
    for (int r = 0; r < TP; ++r) CHECK(run.outputs.at(fmt::format("epoch.r{}", r)).as<int32_t>()[0] == k + 1);
  }
}

TEST_CASE("replay: under a tag that stays the same (a replayed tag argument) the second launch is wrong",
          "[spec][replay]") {
  const ModelConfig cfg = ModelConfig::reduced();
  const int S = 3, TP = 2;
  SimSession session(cfg, makeKey(cfg, S, TP));
  LaunchParams p;
  p.tag = 5;  // the session resets the epochs so every launch runs on tag 5: what a graph of a tag argument does
  const TensorMap first = makeLaunchInputs(cfg, S, TP, 80, {});
  const SimRun a = session.launch(first, schedSeed(1), p);
  REQUIRE(a.valid);
  REQUIRE_FALSE(wrongOutput(cfg, S, TP, first, a).has_value());
  const TensorMap second = makeLaunchInputs(cfg, S, TP, 81, {});
  runtime::SimOptions o = schedSeed(2);
  o.races = true;
  const SimRun b = session.launch(second, o, p);
  // The uninitialized-read check sees it too (a wait passes on the first launch's pair, and what it
  // guards, this launch has not written), or the race detector does; the count depends on the
  // interleaving.
  CHECK(b.stats.findings() > 0);
  if (!b.stats.uninit.empty()) WARN("a replayed tag: " << b.stats.uninit.front());
  // The waits take the first launch's pairs as this launch's, so the outputs are not the second
  // launch's (whether some later check also trips depends on the interleaving).
  const auto m = wrongOutput(cfg, S, TP, second, b);
  REQUIRE(m.has_value());
  WARN("a replayed tag: " << describe(*m) << (b.valid ? "; the launch even looks valid" : "; " + b.error));
}

TEST_CASE("replay: the same kernarg bytes three times on gfx950-run, every launch bit-exact", "[spec][replay][gfx950run]") {
  if (!runtime::Gfx950RunDevice::toolAvailable()) {
    WARN("gfx950-run not found at '" << runtime::Gfx950RunDevice::defaultToolPath() << "': the replay on the "
                                     "executor is skipped");
    return;
  }
  const ModelConfig cfg = ModelConfig::reduced();
  const int S = 2, TP = 2;
  runtime::Gfx950RunDevice dev;
  SimSession session(cfg, makeKey(cfg, S, TP), dev);
  LaunchParams p;
  p.replay = true;
  for (int k = 0; k < 3; ++k) {
    INFO("launch " << k);
    const TensorMap in = makeLaunchInputs(cfg, S, TP, 90 + k, {});
    const SimRun run = session.launch(in, {}, p);
    INFO(run.error);
    CHECK(run.valid);
    CHECK(run.tag == k + 1);
    const auto m = wrongOutput(cfg, S, TP, in, run, RefNumerics::Gfx950Run);
    INFO((m ? describe(*m) : std::string("no mismatch")));
    CHECK_FALSE(m.has_value());
  }
}

TEST_CASE("replay: a session zeroes the flag arrays, the epoch and the error word at allocation, nothing else",
          "[spec][replay]") {
  // Sim allocations start poisoned, as hipMalloc's memory is uninitialized: the contract's ranges
  // (zeroAtAllocation) are zeroed by the host, and the rest of scratch and sym stays poison until
  // the launch writes it.
  const ModelConfig cfg = ModelConfig::reduced();
  const int S = 3, TP = 2;
  SimSession session(cfg, makeKey(cfg, S, TP));
  const std::vector<ZeroOnce> zs = zeroAtAllocation(session.plan());
  CHECK(zs.size() == session.plan().flags.size() + 2);
  auto& mem = session.device().memory();
  for (int r = 0; r < TP; ++r) {
    int64_t zeroed = 0;
    for (const ZeroOnce& z : zs) {
      INFO("rank " << r << ": " << z.what << " in " << z.arg);
      const uint8_t* p = mem.host(session.bufferOf(z.arg, r) + static_cast<uint64_t>(z.offset), z.bytes);
      CHECK(std::all_of(p, p + z.bytes, [](uint8_t v) { return v == 0; }));
      if (z.arg == arg::kScratch) zeroed += z.bytes;
    }
    // XN, a data region of scratch: poisoned, not zeroed.
    const Layout& L = session.layout();
    const uint8_t* xn = mem.host(session.bufferOf(arg::kScratch, r) + static_cast<uint64_t>(L.xn.offset), L.xn.bytes);
    CHECK(std::count(xn, xn + L.xn.bytes, uint8_t{0}) < L.xn.bytes / 16);
    CHECK(zeroed < L.scratchBytes / 2);
  }
}
