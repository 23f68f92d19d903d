// monogen check: one seeded launch of a variant on a chosen device -- the Sim device (the kernel
// IR), gfx950-run (the code object on AMD's CPU simulator of gfx950) or hip (real GPUs) -- and
// a bit-for-bit comparison of every output of every rank with the native reference, the same
// outputs and verdict as `monogen sim`. Exit 0 only when every output is bit-exact and every
// rank's error word is 0.
//
// The reference is computed under the device's numerics profile (MoeReference.h, RefNumerics):
// the IR's declared models for sim and hip, the executor's declared differences (exp2f, f32
// division results below FLT_MIN flushed to +-0, the f32 MFMA as an fma chain) for gfx950-run.
// Nothing else is tolerated.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <memory>

#include "ir/Error.h"
#include "runtime/Gfx950RunDevice.h"
#include "runtime/HipDevice.h"
#include "runtime/sim/SimDeviceAdapter.h"
#include "specs/minimax_m3/MoeInputs.h"
#include "specs/minimax_m3/SimHarness.h"
#include "tools/Commands.h"
#include "tools/Variant.h"
#include "tools/Verdict.h"

namespace monogen::tools {

namespace mm = specs::minimax_m3;

Run addCheck(CLI::App& app) {
  struct Options {
    VariantOptions v;
    std::string device = "sim";
    uint64_t seed = 1;
    double timeout = 600;
    std::string numerics = "auto";
  };
  auto o = std::make_shared<Options>();
  CLI::App* c = app.add_subcommand(
      "check", "run one seeded launch on a device (sim, gfx950-run, hip) and compare every output with the reference");
  addVariantOptions(c, o->v, true);
  c->add_option("--device", o->device,
                "sim: the kernel IR on the Sim device; gfx950-run: the code object on AMD's gfx950 simulator "
                "($MONOGEN_GFX950_RUN, default <source>/../shared/tools/gfx950-run); hip: the GPUs")
      ->check(CLI::IsMember({"sim", "gfx950-run", "hip"}))
      ->capture_default_str();
  c->add_option("--seed", o->seed, "input seed (makeLaunchInputs; the Sim's scheduler seed too)")->capture_default_str();
  c->add_option("--timeout", o->timeout, "gfx950-run: seconds after which the launch is a hang")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  c->add_option("--numerics", o->numerics,
                "the reference's numerics profile: auto (the device's), ir (the IR's declared models) or "
                "gfx950-run (the executor's declared differences)")
      ->check(CLI::IsMember({"auto", "ir", "gfx950-run"}))
      ->capture_default_str();
  return [o] {
    const auto cfg = configOf(o->v);
    const ir::Key key = keyOf(o->v, cfg, o->v.rows, o->v.tp);
    const int S = key.rows, TP = key.tp;

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
    } else {
      dev = std::make_unique<runtime::HipDevice>();
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

    const mm::LaunchInputOptions io;
    const runtime::TensorMap inputs = mm::makeLaunchInputs(cfg, S, TP, o->seed, io);
    const runtime::TensorMap want = mm::launchReferenceOutputs(cfg, S, TP, inputs, mm::knobsOf(key).experts, numerics);
    fmt::print("inputs: seed {}, {}; reference numerics: {}\n", o->seed, io.describe(),
               numerics == mm::RefNumerics::Ir ? "the IR's declared models"
                                               : "gfx950-run's (exp2 = exp2f, f32 division results below FLT_MIN -> "
                                                 "+-0, f32 MFMA = fma chain)");
    std::fflush(stdout);

    mm::SimSession session(cfg, key, *dev, code);
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
