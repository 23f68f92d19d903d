#include "specs/minimax_m3/kernel/Generate.h"

#include <fmt/format.h>

#include "codegen/Compiler.h"
#include "codegen/Dump.h"
#include "codegen/Toolchain.h"
#include "ir/Error.h"
#include "ir/Verifier.h"
#include "specs/minimax_m3/kernel/AttentionSpec.h"
#include "specs/minimax_m3/kernel/AttentionVariant.h"
#include "specs/minimax_m3/kernel/Knobs.h"
#include "specs/minimax_m3/kernel/LayerSpec.h"
#include "specs/minimax_m3/kernel/LayerVariant.h"
#include "specs/minimax_m3/kernel/Spec.h"

namespace monogen::specs::minimax_m3 {

namespace {

/// `p`, once ir::verify passed it.
ir::Plan verified(ir::Plan p) {
  ir::verify(p);
  return p;
}

/// A Plan's code object (its metadata read back and checked), left in $MONOGEN_DUMP_DIR too.
std::vector<uint8_t> compileChecked(const ir::Plan& p) {
  codegen::CodeObject co = codegen::compile(p);
  if (const auto dir = codegen::dumpDirFromEnv()) codegen::dumpVariant(p, *dir);
  return co.bytes;
}

}  // namespace

ir::Plan verifiedPlan(const ModelConfig& cfg, const ir::Key& key) { return verified(buildPlan(cfg, key)); }

runtime::Generator makeGenerator(const ModelConfig& cfg, std::shared_ptr<runtime::Cache> cache) {
  auto plan = [cfg](const ir::Key& key) {
    // A mutated variant (Mutation.h) is for the Sim's race tests only: never compiled for a
    // device, never in the code-object cache (its key differs from the real one's anyway).
    if (knobsOf(key).mutation)
      throw InputError(key.variantName(), "a mutated variant (knob mutate) runs on the Sim device only; the "
                                          "generator never compiles or caches one");
    return verifiedPlan(cfg, key);
  };
  return runtime::Generator(plan, compileChecked, std::move(cache), argLayouts);
}

ir::Plan verifiedAttentionPlan(const ModelConfig& cfg, const ir::Key& key) {
  return verified(buildAttentionPlan(cfg, key));
}

runtime::Generator makeAttentionGenerator(const ModelConfig& cfg, std::shared_ptr<runtime::Cache> cache) {
  auto plan = [cfg](const ir::Key& key) { return verifiedAttentionPlan(cfg, key); };
  return runtime::Generator(plan, compileChecked, std::move(cache), argLayouts);
}

ir::Plan verifiedLayerPlan(const ModelConfig& cfg, const ir::Key& key) { return verified(buildLayerPlan(cfg, key)); }

runtime::Generator makeLayerGenerator(const ModelConfig& cfg, std::shared_ptr<runtime::Cache> cache) {
  auto plan = [cfg](const ir::Key& key) { return verifiedLayerPlan(cfg, key); };
  return runtime::Generator(plan, compileChecked, std::move(cache), argLayouts);
}

runtime::ArgLayouts argLayouts(const ir::Plan& plan) {
  const ir::Key& key = plan.key;
  if (key.spec == kSpecId) return scaleArgLayouts(knobsOf(key).scales);
  if (key.spec == kLayerSpecId) return scaleArgLayouts(layerFfnKnobs(key).scales);
  if (key.spec == kAttentionSpecId) return {};
  throw InputError(key.variantName(), fmt::format("spec '{}': expected {}, {} or {}", key.spec, kSpecId,
                                                  kAttentionSpecId, kLayerSpecId));
}

std::shared_ptr<runtime::Cache> defaultCache() {
  return std::make_shared<runtime::Cache>(runtime::Cache::defaultDir(), codegen::toolchainId());
}

}  // namespace monogen::specs::minimax_m3
