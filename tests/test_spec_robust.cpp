// The launch's contracts and robustness on the Sim device: parity halves of the peer regions,
// the epoch and every CTA's mark, the cross-rank fault handshake with injected stalls, the
// harness refusing to call a launch with an error word valid, and the trace knob.
#include <sys/wait.h>

#include <array>
#include <catch2/catch.hpp>
#include <cstdio>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <nlohmann/json.hpp>

#include "ir/Verifier.h"
#include "specs/minimax_m3/kernel/KernelContext.h"
#include "runtime/Trace.h"
#include "specs/minimax_m3/kernel/Layout.h"
#include "specs/minimax_m3/testing/SimHarness.h"
#include "specs/minimax_m3/kernel/Sites.h"
#include "specs/minimax_m3/kernel/Spec.h"
#include "test_shell.h"
#include "test_spec_util.h"

using namespace monogen;
using namespace monogen::specs::minimax_m3;
using runtime::HostTensor;
using runtime::TensorMap;

namespace {


int32_t errWord(const SimRun& run, int r) { return run.outputs.at(fmt::format("err.r{}", r)).as<int32_t>()[0]; }
int32_t errCount(const SimRun& run, int r) { return run.outputs.at(fmt::format("err.r{}", r)).as<int32_t>()[1]; }
int32_t epochOf(const SimRun& run, int r) { return run.outputs.at(fmt::format("epoch.r{}", r)).as<int32_t>()[0]; }

/// The stamp of rank r, CTA c, stage s, start (0) or end (1).
uint64_t stamp(const SimRun& run, const ir::Plan& plan, int r, int c, int s, int end) {
  const auto& t = run.outputs.at(fmt::format("trace.r{}", r));
  return t.as<uint64_t>()[(static_cast<size_t>(c) * plan.stages.size() + s) * 2 + end];
}

std::string errText(int32_t w) {
  return fmt::format("{:#x} (site {}, rank {}, token {})", w, errorSite(w), errorRank(w), errorToken(w));
}

}  // namespace

TEST_CASE("robust plan: parity halves, marks, faults and the finish stages verify for every S and TP",
          "[spec][robust]") {
  const ModelConfig cfg = ModelConfig::reduced();
  for (int S : {1, 5, 16})
    for (int TP : {1, 2, 4, 8})
      for (bool trace : {false, true}) {
        INFO(fmt::format("S={} TP={} trace={}", S, TP, trace));
        const FfnVariant v = FfnVariant::make(cfg, makeKey(cfg, S, TP, FfnKnobs{.trace = trace}));
        const ir::Plan plan = buildPlan(v);
        const auto problems = ir::verifyAll(plan);
        INFO((problems.empty() ? std::string() : problems.front()));
        CHECK(problems.empty());
        const Layout& L = v.layout;
        CHECK(plan.flag("ATTN").parityHalves);
        CHECK(plan.flag("ATTN").launchPairs() == int64_t{TP} * S * cfg.hidden / 2);
        CHECK(plan.flag("FFN").parityHalves);
        CHECK(plan.flag("FFN").launchPairs() == int64_t{TP} * S * cfg.hidden / 2);
        CHECK(plan.flag("FAULTS").parityHalves);
        CHECK(plan.flag("FAULTS").peer);
        CHECK(plan.flag("FAULTS").pairs == 2 * TP);
        CHECK_FALSE(plan.flag("MARKS").parityHalves);
        CHECK(plan.flag("MARKS").pairs == cfg.blocks);
        CHECK(plan.flag("DONE").pairs == cfg.blocks);
        CHECK(L.attn.bytes == 2 * int64_t{TP} * S * (cfg.hidden / 2) * kPairBytes);
        const int n = static_cast<int>(plan.stages.size());
        REQUIRE(n >= 5);
        CHECK(plan.stages[0].name == "mark");
        CHECK(plan.stages[0].everyCta);
        CHECK(plan.stages[n - 3].name == "done");
        CHECK(plan.stages[n - 3].everyCta);
        CHECK(plan.stages[n - 2].name == "epoch");
        CHECK(plan.stages[n - 1].name == "handshake");
        CHECK(plan.argIndex("epoch") >= 0);
        CHECK(plan.argIndex("handshake") >= 0);
        CHECK(plan.arg("inject").shape == std::vector<int64_t>{2});
        if (trace) {
          CHECK(plan.arg("trace").shape == std::vector<int64_t>{cfg.blocks, n, 2});
        } else {
          CHECK(plan.argIndex("trace") < 0);
        }
      }
}

TEST_CASE("robust sim: back-to-back launches on the same buffers alternate parity halves and stay bit-exact",
          "[spec][robust][sim]") {
  const ModelConfig cfg = ModelConfig::reduced();
  const int S = 3, TP = 4;
  SimSession session(cfg, partKey(cfg, S, TP));
  const Layout& L = session.layout();
  runtime::SimMemory& mem = session.device().memory();
  // the tag of rank r's pair i of half h of a parity-halved peer area (pair 0 is [src 0][row 0][pair 0])
  auto tagAt = [&](const Area& a, int r, int h, int64_t i) {
    const uint8_t* p = mem.host(session.bufferOf("sym", r) + a.offset + (h * (a.pairs / 2) + i) * kPairBytes, 8);
    int32_t t;
    std::memcpy(&t, p + 4, 4);
    return t;
  };
  const int32_t tags[] = {101, 102, 103, 104, 105};
  for (int k = 0; k < 5; ++k) {
    INFO(fmt::format("launch {} tag {}", k, tags[k]));
    const TensorMap in = makeLaunchInputs(cfg, S, TP, 40 + k, edgeCases());
    LaunchParams p;
    p.tag = tags[k];
    p.handshake = k == 4;  // the step's last launch
    const SimRun run = session.launch(in, schedSeed(k + 1), p);
    auto mm = firstMismatch(run.outputs, referenceOutputs(cfg, S, TP, in));
    if (!mm) mm = firstMismatch(run.outputs, moeReferenceOutputs(cfg, S, TP, in, run.outputs));
    INFO((mm ? describe(*mm) : run.error));
    CHECK(run.valid);
    CHECK_FALSE(mm.has_value());
    CHECK(run.stats.waitTimeouts == 0);
    for (int r = 0; r < TP; ++r) {
      CHECK(epochOf(run, r) == tags[k]);
      // this launch's half carries its tag, the other half the previous launch's (or nothing yet)
      const int h = tags[k] & 1;
      for (const Area* a : {&L.attn, &L.ffn}) {
        INFO(a->name);
        const int64_t half = a->pairs / 2;
        for (int64_t i : {int64_t{0}, half / 2, half - 1}) {
          CHECK(tagAt(*a, r, h, i) == tags[k]);
          CHECK(tagAt(*a, r, h ^ 1, i) == (k == 0 ? 0 : tags[k - 1]));
        }
      }
    }
  }
}

TEST_CASE("robust sim: a dropped mark skips a tag and names the epoch site and the CTA", "[spec][robust][sim]") {
  const ModelConfig cfg = ModelConfig::reduced();
  const int S = 2, TP = 2;
  const TensorMap in = makeInputs(cfg, S, TP, 3);
  for (int drop : {0, 7, cfg.blocks - 1}) {
    INFO(fmt::format("drop mark of CTA {}", drop));
    const ir::Key key = partKey(cfg, S, TP, FfnKnobs{.dropMark = drop});
    SimSession session(cfg, key);
    LaunchParams p;
    p.waitTicks = 20'000;
    p.tag = 11;
    const SimRun run = session.launch(in, schedSeed(2), p);
    CHECK_FALSE(run.valid);
    CHECK(run.error.find("site 9") != std::string::npos);
    for (int r = 0; r < TP; ++r) {
      const int32_t w = errWord(run, r);
      INFO(fmt::format("rank {}: {}, {} failures", r, errText(w), errCount(run, r)));
      CHECK(errorSite(w) == kSiteEpoch);
      CHECK(errorRank(w) == r);
      CHECK(errorToken(w) == drop);
      CHECK(errCount(run, r) == 1);
      CHECK(epochOf(run, r) == launchTagAfter(11));  // a tag skipped: a late CTA's tag is no later launch's
    }
    // the outputs are still the reference's bits, but the launch is not valid
    TensorMap want = referenceOutputs(cfg, S, TP, in);
    for (int r = 0; r < TP; ++r) want.erase(fmt::format("err.r{}", r));
    CHECK_FALSE(firstMismatch(run.outputs, want).has_value());
    // the next launch on the same buffers (the mark is still dropped) skips one again
    p.tag = 13;
    const SimRun again = session.launch(in, schedSeed(3), p);
    for (int r = 0; r < TP; ++r) CHECK(epochOf(again, r) == 14);
  }
  // without the knob the epoch moves on to the tag
  SimSession ok(cfg, partKey(cfg, S, TP));
  LaunchParams p;
  p.tag = 11;
  const SimRun run = ok.launch(in, schedSeed(2), p);
  CHECK(run.valid);
  for (int r = 0; r < TP; ++r) CHECK(epochOf(run, r) == 11);
}

TEST_CASE("robust sim: a stalled rank is in every rank's error word within the bound", "[spec][robust][sim]") {
  const ModelConfig cfg = ModelConfig::reduced();
  const int S = 2, TP = 4, stalled = 2;
  const ir::Key key = partKey(cfg, S, TP, FfnKnobs{.trace = true});  // CTA 0's handshake end stamp: when a rank's error word was final
  const TensorMap in = makeInputs(cfg, S, TP, 8);
  const int64_t W = 20'000;  // the wait bound

  SimSession base(cfg, key);
  LaunchParams p0;
  p0.handshake = true;
  p0.waitTicks = W;
  const SimRun ok = base.launch(in, schedSeed(1), p0);
  REQUIRE(ok.valid);
  for (int r = 0; r < TP; ++r) REQUIRE(errWord(ok, r) == 0);
  const int64_t clean = ok.stats.ticks;

  const ir::Plan& plan = base.plan();
  const int hs = plan.stageIndex("handshake"), ep = plan.stageIndex("epoch");
  const int64_t start = runtime::SimOptions{}.clockStart;

  for (int64_t ticks : {int64_t{5'000}, int64_t{60'000}}) {  // within the bound, and past it
    INFO(fmt::format("rank {} stalls {} ticks; wait bound {}; a clean launch takes {} ticks", stalled, ticks, W,
                     clean));
    SimSession session(cfg, key);
    LaunchParams p = p0;
    p.injectRank = stalled;
    p.injectTicks = static_cast<int32_t>(ticks);
    const SimRun run = session.launch(in, schedSeed(4), p);
    CHECK_FALSE(run.valid);
    CHECK_FALSE(run.error.empty());
    int64_t lastReport = 0;
    std::string times;
    for (int r = 0; r < TP; ++r) {
      const int32_t w = errWord(run, r);
      const int64_t reported = static_cast<int64_t>(stamp(run, plan, r, 0, hs, 1)) - start;
      const int64_t handshakeAt = static_cast<int64_t>(stamp(run, plan, r, 0, hs, 0)) - start;
      const int64_t epochAt = static_cast<int64_t>(stamp(run, plan, r, 0, ep, 0)) - start;
      INFO(fmt::format("rank {}: {} ({} failures); epoch stage at {}, handshake at {}, final at tick {}", r,
                       errText(w), errCount(run, r), epochAt, handshakeAt, reported));
      if (r == stalled) {
        CHECK(errorSite(w) == kSiteInject);
        CHECK(errorRank(w) == stalled);
        CHECK(reported >= epochAt + ticks);
      } else {
        CHECK(errorSite(w) == kSiteHandshake);
        CHECK(errorRank(w) == stalled);
        // within the bound the stalled rank's flag comes and names its site; past it the wait
        // runs out first (token 0)
        CHECK(errorToken(w) == (ticks < W ? kSiteInject : 0));
        // a rank's error word is final at most one wait bound after its handshake starts
        CHECK(reported - handshakeAt <= W + 1000);
      }
      lastReport = std::max(lastReport, reported);
      times += fmt::format(" r{}:{}", r, reported);
    }
    // every rank's error word is final by the stalled rank's stall past a clean launch (with a
    // clean launch's slack for the other interleaving): no rank waits longer than that
    CHECK(lastReport <= 2 * clean + ticks);
    CHECK(run.stats.ticks <= 2 * clean + ticks);
    WARN(fmt::format("stall {} ticks, bound {}: every rank reported by tick {} (clean launch {} ticks, launch {} "
                     "ticks); error word final per rank at tick{}",
                     ticks, W, lastReport, clean, run.stats.ticks, times));
  }
}

TEST_CASE("robust sim: a fault before the handshake reaches every rank, other launches do not trade",
          "[spec][robust][sim]") {
  const ModelConfig cfg = ModelConfig::reduced();
  const int S = 2, TP = 4;
  const TensorMap in = makeInputs(cfg, S, TP, 9);
  LaunchParams p;
  p.waitTicks = 20'000;
  p.lostFrom = 3;  // rank 3's pushes to rank 1 never land: rank 1's reduce fails
  p.lostTo = 1;
  SECTION("not the step's last launch: no rank trades flags") {
    // rank 1 knows from its reduce; the others only through their own waits: rank 1's FFN
    // partial comes late (past their final's bound), never through a handshake
    const SimRun run = runOnSim(cfg, partKey(cfg, S, TP), in, schedSeed(3), p);
    CHECK_FALSE(run.valid);
    CHECK(errorSite(errWord(run, 1)) == kSiteReduce);
    for (int r : {0, 2, 3}) {
      const int32_t w = errWord(run, r);
      INFO(fmt::format("rank {}: error word {:#x}", r, w));
      if (w != 0) {
        CHECK(errorSite(w) == kSiteFinal);
        CHECK(errorRank(w) == 1);
      }
    }
  }
  SECTION("the step's last launch: every rank names rank 1") {
    p.handshake = true;
    const SimRun run = runOnSim(cfg, partKey(cfg, S, TP), in, schedSeed(3), p);
    CHECK_FALSE(run.valid);
    CHECK(errorSite(errWord(run, 1)) == kSiteReduce);
    CHECK(errorRank(errWord(run, 1)) == 3);
    // the others name rank 1: its flag at the handshake (token: site reduce) or, as rank 1 spent
    // a wait bound or more in its reduce, the bound of their own wait for it (token 0); with the
    // MoE stages, their final's wait for rank 1's late FFN pairs may run out first (site final)
    for (int r : {0, 2, 3}) {
      const int32_t w = errWord(run, r);
      INFO(fmt::format("rank {}: {}", r, errText(w)));
      CHECK(errorRank(w) == 1);
      CHECK((errorSite(w) == kSiteHandshake || errorSite(w) == kSiteFinal));
      if (errorSite(w) == kSiteHandshake) CHECK((errorToken(w) == kSiteReduce || errorToken(w) == 0));
    }
  }
}

TEST_CASE("robust sim: the step's last launch's epoch waits for every CTA's done even the CTA that ends last",
          "[spec][robust][sim][trace]") {
  const ModelConfig cfg = ModelConfig::reduced();
  const int S = 1, TP = 2, late = 17;  // the Sim runs CTA 17 only while no other wave can: it ends last
  const ir::Key key = partKey(cfg, S, TP, FfnKnobs{.trace = true});
  const TensorMap in = makeInputs(cfg, S, TP, 6);
  runtime::SimOptions o = schedSeed(2);
  o.lastCta = late;
  for (bool last : {false, true}) {
    SimSession session(cfg, key);
    const ir::Plan& plan = session.plan();
    const int fin = plan.stageIndex("final"), ep = plan.stageIndex("epoch");
    LaunchParams p;
    p.handshake = last;
    const SimRun run = session.launch(in, o, p);
    REQUIRE(run.valid);
    for (int r = 0; r < TP; ++r) {
      const uint64_t epochEnd = stamp(run, plan, r, 0, ep, 1);
      const uint64_t lateEnd = stamp(run, plan, r, late, fin, 1);
      INFO(fmt::format("{} launch, rank {}: CTA 0's epoch ends at {}, CTA {}'s final at {}",
                       last ? "the step's last" : "an earlier", r, epochEnd, late, lateEnd));
      if (!last) {
        CHECK(lateEnd > epochEnd);  // the epoch waits for no CTA's work: the check below can fail
        continue;
      }
      for (int c = 0; c < cfg.blocks; ++c) {
        INFO(fmt::format("CTA {}'s final ends at {}", c, stamp(run, plan, r, c, fin, 1)));
        CHECK(stamp(run, plan, r, c, fin, 1) <= epochEnd);
      }
    }
  }
}

TEST_CASE("robust sim: the trace has every CTA of every rank, stages in order", "[spec][robust][sim][trace]") {
  const ModelConfig cfg = ModelConfig::reduced();
  const int S = 3, TP = 2;
  const ir::Key key = partKey(cfg, S, TP, FfnKnobs{.trace = true});
  SimSession session(cfg, key);
  const TensorMap in = makeInputs(cfg, S, TP, 5);
  LaunchParams p;
  p.handshake = true;
  const SimRun run = session.launch(in, schedSeed(5), p);
  REQUIRE(run.valid);
  // the trace knob changes no output bit
  CHECK_FALSE(firstMismatch(run.outputs, referenceOutputs(cfg, S, TP, in)).has_value());

  const runtime::TraceBuffers tb = traceOf(session.plan(), run);
  const int ns = static_cast<int>(tb.stages.size());
  const auto spans = runtime::decodeTrace(tb);
  CHECK(spans.size() == static_cast<size_t>(TP) * cfg.blocks * ns);  // every CTA stamps every stage
  const nlohmann::json j = nlohmann::json::parse(runtime::chromeTrace(tb).dump());
  std::set<std::pair<int, int>> threads;
  std::map<std::pair<int, int>, std::vector<const nlohmann::json*>> byThread;
  for (const auto& e : j.at("traceEvents")) {
    const std::pair<int, int> who{e.at("pid").get<int>(), e.at("tid").get<int>()};
    if (e.at("ph") == "M" && e.at("name") == "thread_name") threads.insert(who);
    if (e.at("ph") == "X") byThread[who].push_back(&e);
  }
  CHECK(threads.size() == static_cast<size_t>(TP) * cfg.blocks);
  CHECK(byThread.size() == static_cast<size_t>(TP) * cfg.blocks);
  double lastEnd = 0;
  for (const auto& [who, evs] : byThread) {
    INFO(fmt::format("rank {} CTA {}", who.first, who.second));
    REQUIRE(evs.size() == static_cast<size_t>(ns));
    double prevEnd = -1;
    uint64_t prevEndTick = 0;
    for (int s = 0; s < ns; ++s) {
      const auto& e = *evs[s];
      CHECK(e.at("name") == tb.stages[s]);
      const double ts = e.at("ts"), dur = e.at("dur");
      const uint64_t a = e.at("args").at("start_tick"), b = e.at("args").at("end_tick");
      CHECK(dur >= 0);
      CHECK(b >= a);
      CHECK(a >= prevEndTick);       // a CTA's stages in program order
      CHECK(ts >= prevEnd - 1e-9);   // (microseconds, up to rounding)
      prevEnd = ts + dur;
      prevEndTick = b;
    }
    lastEnd = std::max(lastEnd, prevEnd);
  }
  // the whole trace spans about the launch: ticks at 100 MHz are 0.01 us
  CHECK(lastEnd <= static_cast<double>(run.stats.ticks) * 0.01 + 1e-6);
  CHECK(lastEnd > 0);
}

TEST_CASE("monogen sim: a launch with an error word set is never called bit-exact", "[spec][robust][cli]") {
  const std::string exe = std::string(MONOGEN_BINARY_DIR) + "/tools/monogen";
  int code = -1;
  // CTA 3 drops its mark: every output bit still matches the reference, but the error word is set
  const std::string out = runShell(exe + " sim --rows 2 --tp 2 --config reduced --drop-mark 3", code);
  INFO(out);
  CHECK(code == 1);
  CHECK(out.find("INVALID: rank 0: error word") != std::string::npos);
  CHECK(out.find("site 9") != std::string::npos);
  CHECK(out.find("verdict: bit-exact") == std::string::npos);
  // says which, not "or", and keeps the first failing seed's verdict
  CHECK(out.find("\nverdict: INVALID under 1 of 1 seed; the first, seed 1: INVALID: rank 0: error word") !=
        std::string::npos);
}

TEST_CASE("robust sim: the handshake under many interleavings, every TP", "[spec][robust][sim]") {
  const ModelConfig cfg = ModelConfig::reduced();
  for (int TP : {1, 2, 8})
    for (int S : {1, 7})
      for (uint64_t sched = 1; sched <= 2; ++sched) {
        INFO(fmt::format("S={} TP={} scheduler seed {}", S, TP, sched));
        SimSession session(cfg, partKey(cfg, S, TP));
        const TensorMap in = makeInputs(cfg, S, TP, 7 * S + TP + sched);
        LaunchParams p;
        p.tag = static_cast<int32_t>(1000 + sched);
        p.handshake = true;
        p.waitTicks = 50'000;
        const SimRun ok = session.launch(in, schedSeed(sched), p);
        CHECK(ok.valid);
        CHECK_FALSE(firstMismatch(ok.outputs, referenceOutputs(cfg, S, TP, in)).has_value());
        for (int r = 0; r < TP; ++r) CHECK(epochOf(ok, r) == p.tag);
        // the next launch on the same buffers, the last rank stalled within the bound
        p.tag += 1;
        p.injectRank = TP - 1;
        p.injectTicks = 3'000;
        const SimRun bad = session.launch(in, schedSeed(sched + 4), p);
        CHECK_FALSE(bad.valid);
        for (int r = 0; r < TP; ++r) {
          const int32_t w = errWord(bad, r);
          INFO(fmt::format("rank {}: {}", r, errText(w)));
          CHECK(errorSite(w) == (r == TP - 1 ? kSiteInject : kSiteHandshake));
          CHECK(errorRank(w) == TP - 1);
          if (r != TP - 1) CHECK(errorToken(w) == kSiteInject);
          CHECK(epochOf(bad, r) == p.tag);  // every CTA finished: the epoch moves on, the error word says why not valid
        }
      }
}

TEST_CASE("monogen sim: an injected stall is in every rank's error word and the verdict refuses it",
          "[spec][robust][cli]") {
  const std::string exe = std::string(MONOGEN_BINARY_DIR) + "/tools/monogen";
  std::string out;
  FILE* p = popen((exe + " sim --rows 2 --tp 4 --config reduced --inject-rank 1 --inject-ticks 3000 --wait-ticks "
                         "20000 2>&1")
                      .c_str(),
                  "r");
  REQUIRE(p);
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  const int status = pclose(p);
  INFO(out);
  CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 1));
  // rank 0 is the first rank reported: it names rank 1 (site handshake), whose error word is the inject site
  CHECK(out.find("INVALID: rank 0: error word 0xa010b (site 11, rank 1, token 10)") != std::string::npos);
  CHECK(out.find("verdict: bit-exact") == std::string::npos);
}
