#include "tools/CheckLaunch.h"

#include <fmt/format.h>

#include <chrono>
#include <memory>

#include "ir/Error.h"
#include "runtime/Gfx950RunDevice.h"
#include "runtime/sim/SimDeviceAdapter.h"
#include "specs/minimax_m3/kernel/AttentionVariant.h"
#include "specs/minimax_m3/kernel/LayerVariant.h"
#include "specs/minimax_m3/reference/AttentionReference.h"
#include "specs/minimax_m3/testing/AttentionInputs.h"
#include "specs/minimax_m3/testing/AttentionSim.h"
#include "specs/minimax_m3/testing/LayerSim.h"
#include "tools/SimAttention.h"

namespace monogen::tools {

namespace mm = specs::minimax_m3;

int runCheck(const CheckLaunchOptions& o, CheckedLaunch& c) {
  if (o.device != "sim" && o.device != "gfx950-run")
    throw InputError("--device", fmt::format("'{}': --launch {} runs on sim or gfx950-run", o.device, c.launch));
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
  fmt::print("{} on the {} device: {} ranks x {} CTAs x {} threads\n", c.key.variantName(), dev->name(), c.tp,
             c.blocks, c.threads);
  flushStdout();

  // The Generator's verified Plan, and on a device that runs code objects its code object.
  std::shared_ptr<const runtime::Variant> variant;
  runtime::CodeObjectBytes code;
  if (dev->runsCodeObjects()) {
    const BuiltVariant b = buildVariant(c.generator, c.key);
    variant = b.variant;
    code = b.bytes();
    fmt::print("code object: {} bytes, {} VGPR, {} SGPR, {} B LDS, {} B scratch ({:.2f} s)\n", code.size(),
               b.info.vgprs, b.info.sgprs, b.info.ldsBytes, b.info.scratchBytes, b.seconds);
  } else {
    variant = c.generator.variant(c.key, false);
  }

  const std::string inputs = c.prepare(numerics);
  fmt::print("inputs: {}; reference numerics: {}\n", inputs,
             numerics == mm::RefNumerics::Ir ? "the IR's declared models"
                                             : "gfx950-run's (runtime/Gfx950RunNumerics.h: its declared differences)");
  flushStdout();

  const auto t0 = std::chrono::steady_clock::now();
  const CheckOutcome out = c.run(*dev, code, variant->plan);
  const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::string detail;
  if (g950)
    detail = fmt::format("{} wave-instructions, simulation {:.2f} s", g950->lastRun().waveInstructions,
                         g950->lastRun().seconds);
  else
    detail = fmt::format("{} ops, {} ticks", sim->lastStats().steps, sim->lastStats().ticks);
  fmt::print("  launch {:6.2f} s ({})  {}\n", sec, detail, out.verdict);
  for (const std::string& line : out.details) fmt::print("    {}\n", line);
  const bool exact = out.verdict == "bit-exact";
  fmt::print("verdict: {}\n", exact ? "bit-exact" : out.verdict.substr(0, out.verdict.find(':')));
  return exact ? 0 : 1;
}

int checkAttention(const VariantOptions& vo, const CheckLaunchOptions& o) {
  const mm::ModelConfig cfg = configOf(vo);
  const ir::Key key = keyOf(vo, cfg, vo.rows, vo.tp);
  const mm::AttentionVariant v = mm::AttentionVariant::make(cfg, key);
  const mm::AttentionInputOptions io = attentionInputOptions(v.knobs, vo.context);
  mm::AttentionLaunch in;
  mm::AttentionResult ref;
  CheckedLaunch c{"attention", key, vo.tp, cfg.blocks, cfg.threads, generatorOf(vo, cfg), {}, {}};
  c.prepare = [&](mm::RefNumerics numerics) {
    in = mm::makeAttentionLaunch(cfg, vo.rows, vo.tp, o.seed, io);
    ref = mm::attentionReference(cfg, in, numerics);
    return fmt::format("seed {}, {}", o.seed, io.describe());
  };
  c.run = [&](runtime::Device& dev, const runtime::CodeObjectBytes& code, const ir::Plan& plan) {
    const mm::AttentionSimRun run = mm::runAttention(dev, code, plan, v, in);
    return CheckOutcome{attentionVerdict(in, ref, run, cfg), {}};
  };
  return runCheck(o, c);
}

int checkLayer(const VariantOptions& vo, const CheckLaunchOptions& o) {
  const mm::ModelConfig cfg = configOf(vo);
  const mm::LayerVariant v = mm::LayerVariant::make(cfg, keyOf(vo, cfg, vo.rows, vo.tp));
  const mm::AttentionInputOptions io = attentionInputOptions(v.knobs, vo.context);
  mm::LayerInputs in;
  mm::LayerReference ref;
  CheckedLaunch c{"layer", v.key, vo.tp, cfg.blocks, cfg.threads, generatorOf(vo, cfg), {}, {}};
  c.prepare = [&](mm::RefNumerics numerics) {
    in = mm::makeLayerInputs(cfg, vo.rows, vo.tp, o.seed, io);
    ref = mm::layerReference(cfg, in, v.moe, numerics);
    return fmt::format("seed {}, {}; the FFN's natural routing", o.seed, io.describe());
  };
  c.run = [&](runtime::Device& dev, const runtime::CodeObjectBytes& code, const ir::Plan& plan) {
    runtime::SimOptions so;
    so.seed = o.seed;
    const mm::LayerSimRun run = mm::runLayer(dev, code, plan, v, in, so);
    CheckOutcome out{mm::layerVerdict(cfg, in, ref, run), {}};
    if (out.verdict != "bit-exact" && run.ffn.valid)
      for (const auto& [name, n] : mm::mismatchCounts(run.ffn.outputs, ref.ffn))
        out.details.push_back(fmt::format("{}: {} of {} elements differ", name, n, ref.ffn.at(name).numel()));
    return out;
  };
  return runCheck(o, c);
}

}  // namespace monogen::tools
