#include "tools/CheckAttention.h"

#include <fmt/format.h>

#include <chrono>
#include <memory>

#include "ir/Error.h"
#include "runtime/Gfx950RunDevice.h"
#include "runtime/sim/SimDeviceAdapter.h"
#include "specs/minimax_m3/kernel/AttentionVariant.h"
#include "specs/minimax_m3/reference/AttentionReference.h"
#include "specs/minimax_m3/testing/AttentionInputs.h"
#include "specs/minimax_m3/testing/AttentionSim.h"
#include "tools/SimAttention.h"

namespace monogen::tools {

namespace mm = specs::minimax_m3;

int checkAttention(const VariantOptions& vo, const CheckAttentionOptions& o) {
  if (o.device != "sim" && o.device != "gfx950-run")
    throw InputError("--device", fmt::format("'{}': --launch attention runs on sim or gfx950-run", o.device));
  const mm::ModelConfig cfg = configOf(vo);
  const ir::Key key = keyOf(vo, cfg, vo.rows, vo.tp);
  const mm::AttentionVariant v = mm::AttentionVariant::make(cfg, key);
  std::unique_ptr<runtime::Device> dev;
  runtime::Gfx950RunDevice* g950 = nullptr;
  runtime::SimDeviceAdapter* sim = nullptr;
  mm::RefNumerics numerics = mm::RefNumerics::Ir;
  if (o.device == "sim") {
    runtime::SimOptions so;
    so.seed = o.seed;
    auto d = std::make_unique<runtime::SimDeviceAdapter>(so);
    sim = d.get();
    dev = std::move(d);
  } else {
    if (!runtime::Gfx950RunDevice::toolAvailable())
      throw RuntimeError("--device gfx950-run",
                         fmt::format("the simulator '{}' does not exist or is not executable: set MONOGEN_GFX950_RUN",
                                     runtime::Gfx950RunDevice::defaultToolPath()));
    runtime::Gfx950RunOptions go;
    go.timeoutSeconds = o.timeoutSeconds;
    auto d = std::make_unique<runtime::Gfx950RunDevice>(go);
    g950 = d.get();
    dev = std::move(d);
    numerics = mm::RefNumerics::Gfx950Run;
  }
  if (o.numerics != "auto") numerics = o.numerics == "ir" ? mm::RefNumerics::Ir : mm::RefNumerics::Gfx950Run;
  fmt::print("{} on the {} device: {} ranks x {} CTAs x {} threads\n", key.variantName(), dev->name(), vo.tp,
             cfg.blocks, cfg.threads);
  flushStdout();

  runtime::CodeObjectBytes code;
  std::shared_ptr<const runtime::Variant> built;
  if (dev->runsCodeObjects()) {
    runtime::Generator gen = generatorOf(vo, cfg);
    const BuiltVariant b = buildVariant(gen, key);
    built = b.variant;
    code = b.bytes();
    fmt::print("code object: {} bytes, {} VGPR, {} SGPR, {} B LDS, {} B scratch ({:.2f} s)\n", code.size(),
               b.info.vgprs, b.info.sgprs, b.info.ldsBytes, b.info.scratchBytes, b.seconds);
  }
  const ir::Plan plan = built ? built->plan : specOf(vo).plan(cfg, key);

  mm::AttentionInputOptions io;
  io.mode = v.knobs.mode;
  io.fullLayer = v.knobs.fullLayer;
  io.context = vo.context;
  const mm::AttentionLaunch in = mm::makeAttentionLaunch(cfg, vo.rows, vo.tp, o.seed, io);
  const mm::AttentionResult ref = mm::attentionReference(cfg, in, numerics);
  fmt::print("inputs: seed {}, {}; reference numerics: {}\n", o.seed, io.describe(),
             numerics == mm::RefNumerics::Ir ? "the IR's declared models"
                                             : "gfx950-run's (runtime/Gfx950RunNumerics.h: its declared differences)");
  flushStdout();

  const auto t0 = std::chrono::steady_clock::now();
  const mm::AttentionSimRun run = mm::runAttention(*dev, code, plan, v, in);
  const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::string verdict = attentionVerdict(in, ref, run, cfg);
  std::string detail;
  if (g950)
    detail = fmt::format("{} wave-instructions, simulation {:.2f} s", g950->lastRun().waveInstructions,
                         g950->lastRun().seconds);
  else
    detail = fmt::format("{} ops, {} ticks", sim->lastStats().steps, sim->lastStats().ticks);
  fmt::print("  launch {:6.2f} s ({})  {}\n", sec, detail, verdict);
  fmt::print("verdict: {}\n", verdict == "bit-exact" ? "bit-exact" : verdict.substr(0, verdict.find(':')));
  return verdict == "bit-exact" ? 0 : 1;
}

}  // namespace monogen::tools
