// monogen check: one seeded launch on the Sim, gfx950-run or hip (one process a rank), every output
// of every rank compared bit for bit with the reference under the device's numerics profile.
// Exit 0 only when every output is bit-exact and every rank's error word is 0.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <memory>

#include "ir/Error.h"
#include "runtime/Gfx950RunDevice.h"
#include "runtime/sim/SimDeviceAdapter.h"
#include "specs/minimax_m3/kernel/Generate.h"
#include "specs/minimax_m3/kernel/Spec.h"
#include "specs/minimax_m3/testing/MoeInputs.h"
#include "specs/minimax_m3/testing/RankHarness.h"
#include "runtime/RankProcesses.h"
#include "specs/minimax_m3/testing/SimHarness.h"
#include "tools/CheckLaunch.h"
#include "tools/CheckRanks.h"
#include "tools/Commands.h"
#include "tools/Variant.h"
#include "tools/Verdict.h"
#include "tools/NumericFlag.h"

namespace monogen::tools {

namespace mm = specs::minimax_m3;

namespace {

/// monogen check --device sim --per-rank and --device hip: TP processes (fork), one a rank, each
/// through the per-rank runtime on its own device (specs/minimax_m3/testing/RankHarness.h: runSimRank, a
/// SimRankDevice; runHipRank, a HipRankDevice on GPU `rank`), handle bytes exchanged over the
/// RankChannel; the lines and the verdict are runRankCheck's (tools/CheckRanks.h).
int checkPerRank(const std::string& device, const VariantOptions& v, const mm::ModelConfig& cfg, uint64_t seed,
                 int launches, double waitSeconds) {
  const mm::FfnVariant variant = mm::FfnVariant::make(cfg, keyOf(v, cfg, v.rows, v.tp));
  const ir::Key& key = variant.key;
  const int TP = variant.layout.tp;
  fmt::print("{} on the {} device, one process a rank (per-rank runtime): {} processes x {} CTAs x {} threads\n",
             key.variantName(), device, TP, cfg.blocks, cfg.threads);
  fmt::print("inputs: seed {} (launch k: seed + k), {} launch{} of one bound argument set; wait bound {} s of idle\n",
             seed, launches, launches == 1 ? "" : "es", waitSeconds);
  std::fflush(stdout);
  mm::SimRankJob job;
  job.rows = {variant.layout.rows};
  job.launches = launches;
  job.seed = seed;
  job.waitTicks = static_cast<int64_t>(waitSeconds * 1e8);  // the kernel's wait_ticks run at 100 MHz
  job.sim.seed = seed;
  job.knobs = variant.knobs;
  const auto r0 = std::chrono::steady_clock::now();
  const mm::SimRankData data = mm::makeSimRankData(cfg, job, TP);  // once, before the fork: the ranks share it
  fmt::print("inputs and reference: {:.2f} s\n",
             std::chrono::duration<double>(std::chrono::steady_clock::now() - r0).count());
  std::fflush(stdout);
  std::shared_ptr<runtime::Cache> cache = v.noCache ? nullptr : mm::defaultCache();
  const runtime::RankProcesses::Body body = [&](runtime::RankChannel& ch) {
    return device == "hip" ? mm::runHipRank(cfg, job, data, ch, cache) : mm::runSimRank(cfg, job, data, ch);
  };
  return runRankCheck(TP, launches, body);
}

}  // namespace

Run addCheck(CLI::App& app) {
  struct Options {
    VariantOptions v;
    std::string device = "sim";
    uint64_t seed = 1;
    double timeout = 600;
    std::string numerics = "auto";
    bool perRank = false;
    int launches = 1;
    double waitSeconds = 60;
  };
  auto o = std::make_shared<Options>();
  CLI::App* c = app.add_subcommand(
      "check", "run one seeded launch on a device (sim, gfx950-run, hip) and compare every output with the reference");
  addVariantOptions(c, o->v, true);
  c->add_option("--device", o->device,
                "sim: the kernel IR on the Sim device; gfx950-run: the code object on AMD's gfx950 simulator "
                "($MONOGEN_GFX950_RUN, default <source>/../shared/tools/gfx950-run); hip: the GPUs, one process a rank "
                "through the per-rank runtime (libamdhip64, or the library $MONOGEN_HIP_LIBRARY names)")
      ->check(CLI::IsMember({"sim", "gfx950-run", "hip"}))
      ->capture_default_str();
  c->add_option("--seed", o->seed, "input seed (makeLaunchInputs; the Sim's scheduler seed too)")
      ->check(numeric<uint64_t>(0, std::numeric_limits<uint64_t>::max()))
      ->capture_default_str();
  c->add_option("--timeout", o->timeout, "gfx950-run: seconds after which the launch is a hang")
      ->check(numeric(0.001, 86400.0))
      ->capture_default_str();
  c->add_option("--numerics", o->numerics,
                "the reference's numerics profile: auto (the device's), ir (the IR's declared models) or "
                "gfx950-run (the executor's declared differences)")
      ->check(CLI::IsMember({"auto", "ir", "gfx950-run"}))
      ->capture_default_str();
  c->add_flag("--per-rank", o->perRank,
              "sim, --launch ffn or layer: one process a rank through the per-rank runtime (runtime/RankRuntime.h): each simulates its "
              "own rank's CTAs, symmetric buffers in POSIX shared memory, handles exchanged over pipes (--device hip "
              "always runs this way, a HipRankDevice a process)");
  c->add_option("--launches", o->launches, "--per-rank, hip: back-to-back launches of one bound argument set (the replay)")
      ->check(numeric(1, 100))
      ->capture_default_str();
  c->add_option("--wait-seconds", o->waitSeconds,
                "--per-rank, hip: a wait's bound, real seconds while a rank's process idles (the kernel's wait_ticks at "
                "100 MHz)")
      ->check(numeric(0.001, 3600.0))
      ->capture_default_str();
  addContextOption(c, o->v);
  addAgRsFromOption(c, o->v);
  return [o] {
    refuseAgRsFrom(o->v);
    if (isAttention(o->v))
      for (const char* n : {"--per-rank", "--launches", "--wait-seconds"})
        if (optionGiven(o->v, n))
          throw InputError(n, "is an option of the FFN and layer launches (one process a rank): the attention launch "
                              "runs every rank in one process (--device sim or gfx950-run)");
    refuseOtherLaunchOptions(o->v);
    const bool perRank = o->perRank || o->device == "hip";  // hip: always one process a rank
    if (!isAttention(o->v)) {
      if ((o->launches != 1 || o->waitSeconds != 60) && !perRank)
        throw InputError("--launches / --wait-seconds", "take effect with --per-rank only (--device hip always runs one process a rank)");
      if (perRank && o->device == "gfx950-run")
        throw InputError("--per-rank", "runs the Sim device (--device sim) or the GPUs (--device hip) one process a "
                                       "rank; --device is 'gfx950-run'");
      if (perRank && o->numerics != "auto" && o->numerics != "ir")
        throw InputError("--per-rank", "compares under the IR's numerics (the Sim's and the GPUs'): --numerics ir or "
                                       "auto");
    }
    if (isLayer(o->v)) {
      if (perRank) return checkLayerPerRank(o->v, o->device, o->seed, o->launches, o->waitSeconds);
      return checkLayer(o->v, {o->device, o->seed, o->timeout, o->numerics});
    }
    if (isAttention(o->v)) return checkAttention(o->v, {o->device, o->seed, o->timeout, o->numerics});
    const auto cfg = configOf(o->v);
    if (perRank) return checkPerRank(o->device, o->v, cfg, o->seed, o->launches, o->waitSeconds);
    const mm::FfnVariant v = mm::FfnVariant::make(cfg, keyOf(o->v, cfg, o->v.rows, o->v.tp));
    const ir::Key& key = v.key;
    const int S = v.layout.rows, TP = v.layout.tp;

    std::unique_ptr<runtime::Device> dev;
    mm::RefNumerics numerics = mm::RefNumerics::Ir;
    runtime::Gfx950RunDevice* g950 = nullptr;
    if (o->device == "sim") {
      runtime::SimOptions so;
      so.seed = o->seed;
      dev = std::make_unique<runtime::SimDeviceAdapter>(so);
    } else if (o->device == "gfx950-run") {
      runtime::Gfx950RunOptions go;
      go.timeoutSeconds = o->timeout;
      auto d = std::make_unique<runtime::Gfx950RunDevice>(go);
      g950 = d.get();
      if (!runtime::Gfx950RunDevice::toolAvailable())
        throw RuntimeError("--device gfx950-run",
                           fmt::format("the simulator '{}' does not exist or is not executable: set MONOGEN_GFX950_RUN",
                                       runtime::Gfx950RunDevice::defaultToolPath()));
      dev = std::move(d);
      numerics = mm::RefNumerics::Gfx950Run;
    }
    if (o->numerics != "auto") numerics = o->numerics == "ir" ? mm::RefNumerics::Ir : mm::RefNumerics::Gfx950Run;
    fmt::print("{} on the {} device: {} ranks x {} CTAs x {} threads\n", key.variantName(), dev->name(), TP,
               cfg.blocks, cfg.threads);
    std::fflush(stdout);

    runtime::CodeObjectBytes code;
    if (dev->runsCodeObjects()) {
      runtime::Generator gen = generatorOf(o->v, cfg);
      const BuiltVariant built = buildVariant(gen, key);
      code = built.bytes();
      fmt::print("code object: {} bytes ({:.2f} s)\n", code.size(), built.seconds);
    }

    mm::LaunchInputOptions io;
    io.matchVariant(v.knobs);  // the weights held as the variant reads them
    io.numerics = numerics;  // o_proj's partial (io.oproj) is derived under them
    const runtime::TensorMap inputs = mm::makeLaunchInputs(cfg, S, TP, o->seed, io);
    const runtime::TensorMap want = mm::launchReferenceOutputs(v, inputs, numerics);
    fmt::print("inputs: seed {}, {}, scales {}; reference numerics: {}\n", o->seed, io.describe(),
               mm::scaleLayoutName(io.scales),
               numerics == mm::RefNumerics::Ir ? "the IR's declared models"
                                               : "gfx950-run's (exp2 = exp2f, f32 division results below FLT_MIN -> "
                                                 "+-0, f32 MFMA = fma chain)");
    std::fflush(stdout);

    mm::SimSession session(v, *dev, code);
    mm::LaunchParams params;
    runtime::SimOptions so;
    so.seed = o->seed;
    const auto t0 = std::chrono::steady_clock::now();
    const mm::SimRun run = session.launch(inputs, so, params);
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const std::string verdict = verdictOf(run, mm::firstMismatch(run.outputs, want));
    std::string detail;
    if (g950)
      detail = fmt::format("{} wave-instructions, simulation {:.2f} s", g950->lastRun().waveInstructions,
                           g950->lastRun().seconds);
    else if (o->device == "sim")
      detail = fmt::format("{} ops, {} ticks", run.stats.steps, run.stats.ticks);
    fmt::print("  launch {:6.2f} s ({})  {}\n", sec, detail, verdict);
    if (verdict != "bit-exact" && run.valid)
      for (const auto& [name, n] : mm::mismatchCounts(run.outputs, want))
        fmt::print("    {}: {} of {} elements differ\n", name, n, want.at(name).numel());
    fmt::print("verdict: {}\n", verdict == "bit-exact" ? "bit-exact" : verdict.substr(0, verdict.find(':')));
    return verdict == "bit-exact" ? 0 : 1;
  };
}

}  // namespace monogen::tools
