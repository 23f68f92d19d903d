#include "tools/SpecRegistry.h"

#include <fmt/format.h>

#include <array>

#include "ir/Error.h"
#include "specs/minimax_m3/kernel/AttentionVariant.h"
#include "specs/minimax_m3/kernel/Generate.h"
#include "specs/minimax_m3/kernel/LayerVariant.h"
#include "specs/minimax_m3/kernel/Spec.h"
#include "tools/Variant.h"

namespace monogen::tools {

namespace mm = specs::minimax_m3;

namespace {

ir::Key minimaxFfnKey(const VariantOptions& o, const mm::ModelConfig& cfg, int rows, int tp) {
  const ir::Target target = ir::targetNamed(o.arch, "--arch");
  mm::FfnKnobs knobs;
  knobs.experts = o.sum == "shared" ? mm::MoeExperts::Shared : o.sum == "routed" ? mm::MoeExperts::Routed : mm::MoeExperts::All;
  knobs.scales = o.scales == "rowmajor" ? mm::ScaleLayout::RowMajor : mm::ScaleLayout::E8m0Shuffle;
  knobs.input = mm::ffnInputOf(o.input, "--input");
  knobs.trace = o.trace;
  knobs.dropMark = o.dropMark;
  ir::Key key = mm::makeKey(cfg, rows, tp, knobs);
  key.target = target;
  return key;
}

ir::Key minimaxAttentionKey(const VariantOptions& o, const mm::ModelConfig& cfg, int rows, int tp) {
  const ir::Target target = ir::targetNamed(o.arch, "--arch");
  ir::Key key = mm::makeAttentionKey(cfg, rows, tp, attentionKnobsOf(o));
  key.target = target;
  return key;
}

ir::Key minimaxLayerKey(const VariantOptions& o, const mm::ModelConfig& cfg, int rows, int tp) {
  const ir::Target target = ir::targetNamed(o.arch, "--arch");
  ir::Key key =
      mm::makeLayerKey(cfg, rows, tp, attentionKnobsOf(o), {.wideFrom = o.wideFrom, .agRsFrom = o.agRsFrom}, mm::parseMoeQuant(o.moe, "--moe"));
  key.target = target;
  return key;
}

const std::array<SpecEntry, 3> kSpecs{{
    {mm::kSpecId, "MiniMax-M3's FFN decode launch: o_proj, all-reduce, RMSNorm, router, top-k, MoE, combine",
     mm::kSpecVersion, minimaxFfnKey, mm::verifiedPlan, mm::makeGenerator},
    {mm::kAttentionSpecId,
     "MiniMax-M3's attention decode launch (--launch attention): RMSNorm, w_qkv GEMV, heads and cache inserts, ...",
     mm::kAttentionSpecVersion, minimaxAttentionKey, mm::verifiedAttentionPlan, mm::makeAttentionGenerator},
    {mm::kLayerSpecId,
     "MiniMax-M3's one-launch decoder layer (--launch layer): the attention stages, then the FFN's, one persistent "
     "launch a rank",
     mm::kLayerSpecVersion, minimaxLayerKey, mm::verifiedLayerPlan, mm::makeLayerGenerator},
}};

}  // namespace

std::span<const SpecEntry> registeredSpecs() { return kSpecs; }

std::string knownSpecIds() {
  std::string s;
  for (const SpecEntry& e : kSpecs) s += (s.empty() ? "" : ", ") + std::string(e.id);
  return s;
}

const SpecEntry* findSpec(std::string_view id) {
  for (const SpecEntry& e : kSpecs)
    if (e.id == id) return &e;
  return nullptr;
}

std::string unknownSpecText(std::string_view id) {
  return fmt::format("unknown spec '{}': expected one of {}", id, knownSpecIds());
}

const SpecEntry& specNamed(std::string_view id, std::string_view where) {
  if (const SpecEntry* e = findSpec(id)) return *e;
  throw InputError(std::string(where), unknownSpecText(id));
}

}  // namespace monogen::tools
