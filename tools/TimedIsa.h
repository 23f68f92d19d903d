// `--timed`: the variant's compiled ISA attributed to its IR ops (codegen::attributeIsa), for the
// timing model's issue (TimingParams::isa).
#pragma once
#include <memory>

#include "codegen/Compiler.h"
#include "runtime/sim/timing/TimingIsa.h"

namespace monogen::tools {

inline std::shared_ptr<const runtime::timing::IsaCounts> timedIsa(const ir::Plan& plan) {
  static_assert(codegen::kIsaClasses == runtime::timing::kIsaKinds, "IsaClass and IsaKind differ");
  const codegen::IsaAttribution a = codegen::attributeIsa(plan);
  auto c = std::make_shared<runtime::timing::IsaCounts>();
  c->byOp.resize(a.byOp.size());
  for (size_t i = 0; i < a.byOp.size(); ++i)
    for (int k = 0; k < codegen::kIsaClasses; ++k) c->byOp[i][k] = a.byOp[i][k];
  c->byDepth.resize(a.byDepth.size());
  for (size_t i = 0; i < a.byDepth.size(); ++i)
    for (const auto& d : a.byDepth[i]) {
      auto& out = c->byDepth[i].emplace_back();
      for (int k = 0; k < codegen::kIsaClasses; ++k) out[k] = d[k];
    }
  return c;
}

/// `timing` for a run of `plan`: with the plan's compiled ISA as its issue unless `irIssue`
/// (then by IR op class); null when `timing` is (an untimed run).
inline std::shared_ptr<const runtime::timing::TimingParams> timingFor(
    const std::shared_ptr<const runtime::timing::TimingParams>& timing, bool irIssue, const ir::Plan& plan) {
  if (!timing || irIssue) return timing;
  auto withIsa = std::make_shared<runtime::timing::TimingParams>(*timing);
  withIsa->isa = timedIsa(plan);
  return withIsa;
}

}  // namespace monogen::tools
