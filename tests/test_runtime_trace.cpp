// Trace decoding: a trace buffer of every rank -> Chrome / Perfetto trace-event JSON, its
// checks, and `monogen trace` end to end on the Sim device.
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "ir/Error.h"
#include "runtime/Trace.h"
#include "test_shell.h"

using namespace monogen;
using runtime::TraceBuffers;

namespace {

// 2 ranks x 3 CTAs x 2 stages; rank r CTA c stage s runs [base + 100 s, base + 100 s + 50].
TraceBuffers sample() {
  TraceBuffers t;
  t.name = "test";
  t.stages = {"push", "reduce"};
  t.blocks = 3;
  for (int r = 0; r < 2; ++r) {
    std::vector<uint64_t> b;
    for (int c = 0; c < 3; ++c)
      for (int s = 0; s < 2; ++s) {
        const uint64_t base = 1'000'000 + 10 * r + c;
        b.push_back(base + 100 * s);
        b.push_back(base + 100 * s + 50);
      }
    t.ranks.push_back(b);
  }
  return t;
}

}  // namespace

TEST_CASE("trace: spans decode in (rank, CTA, stage) order", "[runtime][trace]") {
  const auto spans = runtime::decodeTrace(sample());
  REQUIRE(spans.size() == 12);
  CHECK(spans[0].rank == 0);
  CHECK(spans[0].cta == 0);
  CHECK(spans[0].stage == 0);
  CHECK(spans[0].start == 1'000'000);
  CHECK(spans[0].end == 1'000'050);
  CHECK(spans[11].rank == 1);
  CHECK(spans[11].cta == 2);
  CHECK(spans[11].stage == 1);
  CHECK(spans[11].start == 1'000'112);
}

TEST_CASE("trace: chrome JSON has a process a rank, a thread a CTA, microseconds at 100 MHz", "[runtime][trace]") {
  const nlohmann::json j = nlohmann::json::parse(runtime::chromeTrace(sample()).dump());
  std::set<int> procs;
  std::set<std::pair<int, int>> threads;
  std::vector<nlohmann::json> xs;
  for (const auto& e : j.at("traceEvents")) {
    if (e.at("name") == "process_name") procs.insert(e.at("pid").get<int>());
    if (e.at("name") == "thread_name") threads.insert({e.at("pid").get<int>(), e.at("tid").get<int>()});
    if (e.at("ph") == "X") xs.push_back(e);
  }
  CHECK(procs.size() == 2);
  CHECK(threads.size() == 6);
  REQUIRE(xs.size() == 12);
  // rank 1 CTA 2 reduce: starts 112 ticks after the earliest stamp = 1.12 us, lasts 0.5 us
  const auto& e = xs.back();
  CHECK(e.at("name") == "reduce");
  CHECK(e.at("pid") == 1);
  CHECK(e.at("tid") == 2);
  CHECK(e.at("ts").get<double>() == Approx(1.12));
  CHECK(e.at("dur").get<double>() == Approx(0.5));
  CHECK(xs.front().at("ts").get<double>() == 0.0);
  CHECK(j.at("otherData").at("clock_hz") == 100'000'000);
}

TEST_CASE("trace: a CTA that never got to a stage has no event, bad buffers are refused", "[runtime][trace]") {
  TraceBuffers t = sample();
  t.ranks[1][(2 * 2 + 1) * 2] = 0;  // rank 1 CTA 2 reduce: neither stamp
  t.ranks[1][(2 * 2 + 1) * 2 + 1] = 0;
  CHECK(runtime::decodeTrace(t).size() == 11);

  t = sample();
  t.ranks[0][3] = 0;  // rank 0 CTA 0 reduce: a start without an end
  CHECK_THROWS_AS(runtime::decodeTrace(t), InputError);
  CHECK_THROWS_WITH(runtime::decodeTrace(t), Catch::Contains("rank 0 CTA 0 stage 'reduce'"));

  t = sample();
  t.ranks[1][1] = t.ranks[1][0] - 1;  // ends before it starts
  CHECK_THROWS_WITH(runtime::decodeTrace(t), Catch::Contains("before its start"));

  t = sample();
  t.ranks[0].pop_back();
  CHECK_THROWS_WITH(runtime::decodeTrace(t), Catch::Contains("expected 3 CTAs x 2 stages x 2 = 12"));
}

TEST_CASE("monogen trace: the traced variant on the Sim device as trace-event JSON", "[runtime][trace][cli]") {
  const std::string exe = std::string(MONOGEN_BINARY_DIR) + "/tools/monogen";
  if (!std::filesystem::exists(exe)) {
    WARN("no monogen binary at " + exe);
    return;
  }
  std::string dir = (std::filesystem::temp_directory_path() / "monogen-trace-XXXXXX").string();
  REQUIRE(mkdtemp(dir.data()));
  const std::string out = dir + "/trace.json";
  int code = -1;
  const std::string text = runShell(exe + " trace --rows 2 --tp 2 --config reduced --seed 3 -o " + out, code);
  INFO(text);
  REQUIRE(code == 0);
  CHECK(text.find("verdict: bit-exact") != std::string::npos);
  std::ifstream f(out);
  const nlohmann::json j = nlohmann::json::parse(f);
  const int ctas = j.at("otherData").at("ctas");
  const auto stages = j.at("otherData").at("stages").get<std::vector<std::string>>();
  std::set<std::pair<int, int>> threads;
  std::map<std::pair<int, int>, std::vector<nlohmann::json>> byThread;
  for (const auto& e : j.at("traceEvents")) {
    if (e.at("name") == "thread_name") threads.insert({e.at("pid").get<int>(), e.at("tid").get<int>()});
    if (e.at("ph") == "X") byThread[{e.at("pid").get<int>(), e.at("tid").get<int>()}].push_back(e);
  }
  CHECK(threads.size() == static_cast<size_t>(2 * ctas));
  CHECK(byThread.size() == static_cast<size_t>(2 * ctas));
  for (const auto& [who, evs] : byThread) {
    REQUIRE(evs.size() == stages.size());
    double prevEnd = 0;
    uint64_t prevEndTick = 0;
    for (size_t s = 0; s < evs.size(); ++s) {
      CHECK(evs[s].at("name") == stages[s]);
      CHECK(evs[s].at("dur").get<double>() >= 0);
      CHECK(evs[s].at("ts").get<double>() >= prevEnd - 1e-9);  // microseconds, up to rounding
      const uint64_t a = evs[s].at("args").at("start_tick"), b = evs[s].at("args").at("end_tick");
      CHECK(b >= a);
      CHECK(a >= prevEndTick);  // the CTA's stages in program order, exactly
      prevEnd = evs[s].at("ts").get<double>() + evs[s].at("dur").get<double>();
      prevEndTick = b;
    }
  }
  // --timed: every stamp is the timing model's clock, so the last stage ends just before the modeled launch does
  const std::string timed =
      runShell(exe + " trace --rows 2 --tp 2 --config reduced --experts 4 --timed -o " + out, code);
  INFO(timed);
  REQUIRE(code == 0);
  const size_t at = timed.find(" us modeled");
  REQUIRE(at != std::string::npos);
  const double modeledUs = std::stod(timed.substr(timed.rfind(", ", at) + 2));
  std::ifstream ft(out);
  const nlohmann::json jt = nlohmann::json::parse(ft);
  CHECK(jt.at("otherData").at("clock").get<std::string>().rfind("modeled", 0) == 0);
  double lastEnd = 0;
  for (const auto& e : jt.at("traceEvents"))
    if (e.at("ph") == "X") lastEnd = std::max(lastEnd, e.at("ts").get<double>() + e.at("dur").get<double>());
  CHECK(modeledUs > 1);
  CHECK(lastEnd <= modeledUs + 0.01);
  CHECK(lastEnd >= 0.95 * modeledUs);
  // a dropped mark: the trace is still written, the verdict refuses the launch
  const std::string bad =
      runShell(exe + " trace --rows 2 --tp 2 --config reduced --drop-mark 1 --wait-ticks 20000 -o " + out, code);
  INFO(bad);
  CHECK(code == 1);
  CHECK(bad.find("verdict: INVALID") != std::string::npos);
  std::filesystem::remove_all(dir);
}
