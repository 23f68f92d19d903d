// Stale and garbage flag pairs on the Sim device: a wait that times out, or a pair whose value is
// no index, must not put its value into an address. The Sim bounds-checks every access (a
// SimError), so a launch that ends is one that touched nothing out of bounds.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "runtime/Gfx950RunDevice.h"
#include "runtime/sim/SimDevice.h"
#include "specs/minimax_m3/kernel/Layout.h"
#include "specs/minimax_m3/kernel/Sites.h"
#include "specs/minimax_m3/testing/SimHarness.h"
#include "test_spec_util.h"

using namespace monogen;
using namespace monogen::specs::minimax_m3;
using runtime::TensorMap;

namespace {

/// Values no index may take: past every count, expert id and LDS pool, and negative.
int32_t garbageValue(int64_t i, int experts) {
  const int32_t v[] = {std::numeric_limits<int32_t>::max(), experts, experts + 1, 1 << 20, 0x7fc00000,
                       std::numeric_limits<int32_t>::min(), -2, 4096, 65535, experts + 977};
  return v[i % 10];
}

int32_t errWord(const SimRun& run, int r) { return run.outputs.at(fmt::format("err.r{}", r)).as<int32_t>()[0]; }

/// Writes pair i = {value(i), tag(i)} over [offset, offset + bytes) of rank r's `buffer`.
template <class Value, class Tag>
void plant(SimSession& s, const std::string& buffer, int r, int64_t offset, int64_t bytes, Value value, Tag tag) {
  std::vector<int32_t> pairs(static_cast<size_t>(bytes / kPairBytes) * 2);
  for (size_t i = 0; i < pairs.size() / 2; ++i) {
    pairs[2 * i] = value(static_cast<int64_t>(i));
    pairs[2 * i + 1] = tag(static_cast<int64_t>(i));
  }
  s.target().upload(r, s.bufferOf(buffer, r) + offset, pairs.data(), static_cast<int64_t>(pairs.size() * 4));
}

/// ROUTE's pairs (picks, then weights, a row) of both halves with the launch's own tag and
/// garbage values, before route publishes them: a CTA that reaches the table first takes them.
void plantRoute(SimSession& s, int tp, int32_t tag, int experts) {
  const Layout& L = s.layout();
  for (int r = 0; r < tp; ++r)
    plant(
        s, "scratch", r, L.routeA.offset, L.routeA.bytes, [&](int64_t i) { return garbageValue(i, experts); },
        [&](int64_t) { return tag; });
}

/// Every rank's error word names site pick for one of its rows, and the error says so.
void checkPickSite(const SimRun& run, int S, int TP) {
  INFO(run.error);
  CHECK_FALSE(run.valid);  // (the CTAs' tables then differ, so later waits may time out too)
  for (int r = 0; r < TP; ++r) {
    const int32_t w = errWord(run, r);
    CHECK(errorSite(w) == kSitePick);
    CHECK(errorRank(w) == r);
    CHECK(errorToken(w) < S);
  }
  CHECK(run.error.find("came with an expert id out of range") != std::string::npos);
}

/// Launches, turning a SimError (an access out of bounds) into a failed check with its text.
SimRun launchChecked(SimSession& s, const TensorMap& in, const runtime::SimOptions& o, const LaunchParams& p) {
  try {
    return s.launch(in, o, p);
  } catch (const std::exception& e) {
    FAIL("the launch touched memory out of bounds: " << e.what());
  }
  return {};
}

}  // namespace

TEST_CASE("stale pairs: garbage under a near tag and a tiny bound reaches no address, INVALID names a site",
          "[spec][stale]") {
  const ModelConfig cfg = ModelConfig::reduced();
  for (int TP : {1, 2})
    for (int S : {3, 16})
      for (uint64_t sched : {1, 2}) {
        INFO(fmt::format("S={} TP={} scheduler seed {}", S, TP, sched));
        SimSession session(cfg, partKey(cfg, S, TP));
        LaunchParams p;
        p.tag = 4097;
        p.waitTicks = 1;
        // every flag array of every rank, both halves: tags of this launch's parity a launch or
        // two away (what an earlier process leaves), or the tag with a high bit flipped
        const int32_t near[] = {p.tag - 2, p.tag + 2, p.tag - 4, p.tag ^ (1 << 29), p.tag + 2048};
        for (const ZeroOnce& z : zeroAtAllocation(session.plan())) {
          if (z.arg != "scratch" && z.arg != "sym") continue;
          for (int r = 0; r < TP; ++r)
            plant(
                session, z.arg, r, z.offset, z.bytes, [&](int64_t i) { return garbageValue(i + r, cfg.experts); },
                [&](int64_t i) { return near[i % 5]; });
        }
        const SimRun run = launchChecked(session, makeInputs(cfg, S, TP, 5 + S), schedSeed(sched), p);
        INFO(run.error);
        CHECK_FALSE(run.valid);
        CHECK(run.stats.waitTimeouts > 0);
        for (int r = 0; r < TP; ++r) {
          const int32_t w = errWord(run, r);
          CHECK(errorSite(w) >= kSiteReduce);
          CHECK(errorSite(w) <= kSiteLast);
          CHECK(run.error.find(errorMeaning(errWord(run, 0))) != std::string::npos);
        }
      }
}

TEST_CASE("stale pairs: a pick that comes with its tag and no expert id drops its row, INVALID names site pick",
          "[spec][stale]") {
  const ModelConfig cfg = ModelConfig::reduced();
  for (int TP : {1, 2})
    for (uint64_t sched : {1, 2, 3}) {
      const int S = 5;
      INFO(fmt::format("S={} TP={} scheduler seed {}", S, TP, sched));
      SimSession session(cfg, partKey(cfg, S, TP));
      LaunchParams p;
      p.tag = 4098;
      plantRoute(session, TP, p.tag, cfg.experts);
      checkPickSite(launchChecked(session, makeInputs(cfg, S, TP, 21), schedSeed(sched), p), S, TP);
    }
}

TEST_CASE("stale pairs on gfx950-run: the machine code drops a pick with no expert id and names site pick",
          "[spec][stale][gfx950run]") {
  if (!runtime::Gfx950RunDevice::toolAvailable()) {
    WARN("gfx950-run not found at '" << runtime::Gfx950RunDevice::defaultToolPath()
                                     << "' (set MONOGEN_GFX950_RUN): skipped");
    return;
  }
  const ModelConfig cfg = ModelConfig::reduced();
  const int S = 2, TP = 1;
  runtime::Gfx950RunDevice dev;
  SimSession session(cfg, partKey(cfg, S, TP), dev);
  LaunchParams p;
  p.tag = 4098;
  plantRoute(session, TP, p.tag, cfg.experts);
  checkPickSite(launchChecked(session, makeInputs(cfg, S, TP, 21), {}, p), S, TP);
}
