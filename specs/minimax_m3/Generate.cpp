#include "specs/minimax_m3/Generate.h"

#include "codegen/Compiler.h"
#include "codegen/Dump.h"
#include "codegen/Toolchain.h"
#include "ir/Verifier.h"
#include "specs/minimax_m3/Spec.h"

namespace monogen::specs::minimax_m3 {

ir::Plan verifiedPlan(const ModelConfig& cfg, const ir::Key& key) {
  ir::Plan p = buildPlan(cfg, key);
  ir::verify(p);
  return p;
}

runtime::Generator makeGenerator(const ModelConfig& cfg, std::shared_ptr<runtime::Cache> cache) {
  auto plan = [cfg](const ir::Key& key) { return verifiedPlan(cfg, key); };
  auto compile = [](const ir::Plan& p) {
    codegen::CodeObject co = codegen::compile(p);  // reads back and checks the metadata
    if (const auto dir = codegen::dumpDirFromEnv()) codegen::dumpVariant(p, *dir);
    return co.bytes;
  };
  return runtime::Generator(plan, compile, std::move(cache));
}

std::shared_ptr<runtime::Cache> defaultCache() {
  return std::make_shared<runtime::Cache>(runtime::Cache::defaultDir(), codegen::toolchainId());
}

}  // namespace monogen::specs::minimax_m3
