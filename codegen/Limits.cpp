// The limits a monogen code object must meet, checked against its read-back metadata; the
// register figure is the unified VGPR + AGPR count (docs/codegen.md, "Register limits").
#include <fmt/format.h>

#include <algorithm>

#include "codegen/Internal.h"
#include "codegen/amdgpu/Gfx950Target.h"
#include "ir/Error.h"

namespace monogen::codegen {

int detail::unifiedRegisters(const CodeObjectInfo& info) {
  const int arch = std::max(0, info.vgprs - info.agprs);
  return std::max(info.vgprs, (arch + 3) / 4 * 4 + info.agprs);
}

void detail::checkPlan(const ir::Plan& plan) {
  const std::string built = amdgpu::gfx950().targetId();
  if (plan.target().targetId() != built)
    throw CodegenError(plan.key.variantName(),
                       fmt::format("the Plan targets {}; this code generator builds {}", plan.target().targetId(), built));
  if (plan.grid.threads <= 0 || plan.grid.threads > plan.target().maxThreads || plan.grid.threads % plan.target().waveSize)
    throw CodegenError(plan.key.variantName(),
                       fmt::format("a CTA of {} threads; expected a multiple of {} up to {}", plan.grid.threads,
                                   plan.target().waveSize, plan.target().maxThreads));
  if (plan.ldsBytes > plan.target().ldsBytes)
    throw CodegenError(plan.key.variantName(),
                       fmt::format("the Plan allocates {} bytes of LDS; the limit is {} bytes ({} KiB per CU)",
                                   plan.ldsBytes, plan.target().ldsBytes, plan.target().ldsBytes / 1024));
}

void checkLimits(const CodeObjectInfo& info, const ir::Plan& plan, size_t codeBytes) {
  std::vector<std::string> bad;
  const ir::Target& tg = plan.target();
  if (info.scratchBytes != 0)
    bad.push_back(fmt::format("{} bytes of scratch (private segment) per lane; expected 0", info.scratchBytes));
  if (info.vgprSpills != 0) bad.push_back(fmt::format("{} VGPRs spilled; expected 0", info.vgprSpills));
  if (info.sgprSpills != 0) bad.push_back(fmt::format("{} SGPRs spilled; expected 0", info.sgprSpills));
  if (info.ldsBytes > tg.ldsBytes)
    bad.push_back(fmt::format("{} bytes of LDS; the limit is {} bytes", info.ldsBytes, tg.ldsBytes));
  else if (plan.ldsBytes > tg.ldsBytes)
    bad.push_back(fmt::format("the Plan allocates {} bytes of LDS; the limit is {} bytes", plan.ldsBytes, tg.ldsBytes));
  const int regs = detail::unifiedRegisters(info);
  const int budget = tg.regBudgetPerWave(plan.grid.threads);
  if (regs > budget)
    bad.push_back(fmt::format("{} VGPRs + AGPRs per wave ({} VGPR count, {} AGPRs); the budget for {} threads is {}",
                              regs, info.vgprs, info.agprs, plan.grid.threads, budget));
  if (info.maxFlatWorkgroupSize != plan.grid.threads)
    bad.push_back(fmt::format("max flat workgroup size {}; the Plan's CTA has {} threads", info.maxFlatWorkgroupSize,
                              plan.grid.threads));
  if (info.wavefrontSize != 0 && info.wavefrontSize != tg.waveSize)
    bad.push_back(fmt::format("wavefront size {}; expected {}", info.wavefrontSize, tg.waveSize));
  if (!info.target.empty() && info.target.find(tg.targetId()) == std::string::npos)
    bad.push_back(fmt::format("target '{}'; expected {}", info.target, tg.targetId()));

  // Kernarg layout: the explicit (non-hidden) arguments, in order, at the Plan's offsets.
  std::vector<const ArgMeta*> explicitArgs;
  for (const ArgMeta& a : info.args)
    if (a.valueKind.rfind("hidden_", 0) != 0) explicitArgs.push_back(&a);
  const std::vector<int> offs = plan.kernargOffsets();
  if (explicitArgs.size() != plan.args.size())
    bad.push_back(fmt::format("{} kernel arguments; the Plan has {}", explicitArgs.size(), plan.args.size()));
  for (size_t i = 0; i < plan.args.size() && i < explicitArgs.size(); ++i) {
    const ir::KernelArg& pa = plan.args[i];
    const ArgMeta& ma = *explicitArgs[i];
    if (ma.offset != offs[i] || ma.size != pa.kernargSize())
      bad.push_back(fmt::format("argument {} '{}' at kernarg offset {} size {}; the Plan says offset {} size {}", i,
                                pa.name, ma.offset, ma.size, offs[i], pa.kernargSize()));
    if (!ma.name.empty() && ma.name != detail::sanitize(pa.name))
      bad.push_back(fmt::format("argument {} is named '{}'; the Plan calls it '{}'", i, ma.name, pa.name));
  }
  if (bad.empty()) return;
  std::string msg = "code object over its limits: ";
  for (size_t i = 0; i < bad.size(); ++i) msg += (i ? "; " : "") + bad[i];
  throw LimitsError(plan.key.variantName(), msg, info, codeBytes);
}

}  // namespace monogen::codegen
