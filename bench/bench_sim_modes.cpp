// bench_sim_modes: the Sim's ops/s plain, under the race detector and under the gfx950 timing model,
// interleaved in one run, for a reduced launch and a full-dims one; one launch a benchmark, with
// CPU-time rates and peak RSS. Usage and the measured tables: docs/sim.md and docs/timing.md.
#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <sys/resource.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <sstream>

#include "runtime/sim/SimDevice.h"
#include "runtime/sim/timing/TimingParams.h"
#include "specs/minimax_m3/kernel/ModelConfig.h"
#include "specs/minimax_m3/testing/MoeInputs.h"
#include "specs/minimax_m3/testing/SimHarness.h"
#include "specs/minimax_m3/kernel/Spec.h"

namespace {

using namespace monogen;
namespace mm = specs::minimax_m3;

struct Case {
  const char* config;
  int rows, tp;
};

struct Inputs {
  mm::ModelConfig cfg;
  runtime::TensorMap in;
};

Inputs& inputsOf(const Case& c) {
  static std::map<std::string, std::unique_ptr<Inputs>> cache;
  const std::string k = fmt::format("{}-{}-{}", c.config, c.rows, c.tp);
  auto& p = cache[k];
  if (!p) {
    p = std::make_unique<Inputs>();
    p->cfg = mm::ModelConfig::byName(c.config);
    p->in = mm::makeLaunchInputs(p->cfg, c.rows, c.tp, 7, mm::LaunchInputOptions{});
  }
  return *p;
}

double cpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

double peakMb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // KB on Linux
}

enum class Mode { plain, races, timed };
const char* nameOf(Mode m) { return m == Mode::plain ? "plain" : m == Mode::races ? "races" : "timed"; }

void launch(benchmark::State& st, Case c, Mode mode) {
  Inputs& x = inputsOf(c);
  const ir::Key key = mm::makeKey(x.cfg, c.rows, c.tp);
  runtime::SimOptions o;
  o.races = mode == Mode::races;
  if (mode == Mode::timed) o.timing = std::make_shared<runtime::timing::TimingParams>();
  int64_t ops = 0, raceCount = 0;
  bool ok = true;
  double cpu = 0;
  for (auto _ : st) {
    const double c0 = cpuSeconds();
    const mm::SimRun run = mm::runOnSim(x.cfg, key, x.in, o);
    cpu += cpuSeconds() - c0;
    ops += run.stats.steps;
    raceCount += run.stats.raceCount;
    ok = ok && run.valid;
  }
  st.counters["ops"] = static_cast<double>(ops);
  st.counters["ops/s"] = benchmark::Counter(static_cast<double>(ops), benchmark::Counter::kIsRate);
  st.counters["ops/cpu_s"] = cpu > 0 ? static_cast<double>(ops) / cpu : 0;  // robust on a shared machine
  st.counters["races"] = static_cast<double>(raceCount);
  st.counters["peak_MB"] = peakMb();
  if (!ok) st.SkipWithError("the launch was INVALID");
}

int envInt(const char* name, int def) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : def;
}

}  // namespace

int main(int argc, char** argv) {
  Case reduced{"reduced", 8, 4};
  Case full{"full", 8, 4};
  if (const char* f = std::getenv("MONOGEN_BENCH_SIM_FULL")) {
    std::istringstream s(f);
    s >> full.rows >> full.tp;
  }
  const int reps = envInt("MONOGEN_BENCH_SIM_REPS", 0);
  const int reducedReps = reps > 0 ? reps : 2, fullReps = reps > 0 ? reps : 1;
  for (int r = 0; r < std::max(reducedReps, fullReps); ++r) {
    for (const Case& c : {reduced, full}) {
      if (r >= (std::string(c.config) == "reduced" ? reducedReps : fullReps)) continue;
      for (Mode m : {Mode::plain, Mode::races, Mode::timed}) {
        const std::string name = fmt::format("{}_S{}_TP{}/{}/round{}", c.config, c.rows, c.tp, nameOf(m), r + 1);
        benchmark::RegisterBenchmark(name.c_str(), [c, m](benchmark::State& st) { launch(st, c, m); })
            ->Iterations(1)
            ->Unit(benchmark::kSecond)
            ->UseRealTime();
      }
    }
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
