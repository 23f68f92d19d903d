#include "specs/minimax_m3/kernel/LayerVariant.h"

#include <fmt/format.h>

#include <sstream>

#include "ir/Error.h"
#include "specs/minimax_m3/kernel/Spec.h"

namespace monogen::specs::minimax_m3 {

ir::Key makeLayerKey(const ModelConfig& cfg, int rows, int tp, const AttentionKnobs& knobs, MoeQuant moe) {
  ir::Key k = makeAttentionKey(cfg, rows, tp, knobs);
  k.spec = kLayerSpecId;
  k.specVersion = kLayerSpecVersion;
  if (moe != MoeQuant::A16w4) k.knobs += std::string(k.knobs.empty() ? "" : ",") + "moe=" + moeQuantName(moe);
  return k;
}

namespace {

/// The key's knob text without the layer's own "moe=" token, which sets `moe`.
std::string attentionKnobText(const std::string& text, MoeQuant& moe, const std::string& where) {
  std::stringstream ss(text);
  std::string tok, rest;
  bool seen = false;
  while (std::getline(ss, tok, ',')) {
    if (tok.rfind("moe=", 0) != 0) {
      rest += (rest.empty() ? "" : ",") + tok;
      continue;
    }
    if (seen) throw InputError(where, fmt::format("knob '{}': moe= is given twice", tok));
    seen = true;
    moe = parseMoeQuant(tok.substr(4), where);
    if (moe == MoeQuant::A16w4)
      throw InputError(where, "knob 'moe=a16w4' is the default, which a canonical key leaves out");
  }
  if (moe == MoeQuant::A8w4)
    throw InputError(where, "knob 'moe=a8w4': the layer's A8W4 MoE stages (MXFP8 xn and mids on the scaled MFMA) "
                            "are not built yet; expected moe=a16w4 (the default)");
  return rest;
}

}  // namespace

LayerVariant LayerVariant::make(const ModelConfig& cfg, const ir::Key& keyIn) {
  const std::string where = keyIn.variantName();
  if (keyIn.spec != kLayerSpecId || keyIn.specVersion != kLayerSpecVersion)
    throw InputError(where, fmt::format("spec {} v{}: expected {} v{}", keyIn.spec, keyIn.specVersion, kLayerSpecId,
                                        kLayerSpecVersion));
  if (keyIn.params.size() != 2 || keyIn.params[0].name != kParamRows || keyIn.params[1].name != kParamTp)
    throw InputError(where, "expected the parameters (S, TP)");
  LayerVariant v;
  v.cfg = cfg;
  v.key = keyIn;
  const std::string canon = cfg.attentionCanonical();
  if (v.key.config.empty()) v.key.config = canon;
  if (v.key.config != canon)
    throw InputError(where, fmt::format("the key's config '{}' is not the model config's '{}'", v.key.config, canon));
  const std::string attnKnobs = attentionKnobText(keyIn.knobs, v.moe, where);
  v.knobs = AttentionKnobs::parse(attnKnobs, where);
  if (v.knobs.canonical() != attnKnobs)
    throw InputError(where, fmt::format("knobs '{}' are not canonical ('{}')", keyIn.knobs, v.knobs.canonical()));
  const int S = rowsOf(keyIn), TP = tpOf(keyIn);
  v.attention = AttentionVariant::make(cfg, makeAttentionKey(cfg, S, TP, v.knobs));
  v.ffn = FfnVariant::make(cfg, makeKey(cfg, S, TP));
  AttentionLaunchLayout& A = v.attention.layout;
  A.ardyOffset = A.scratchBytes;  // past every other area: zeroed with the flags before them
  A.scratchBytes += (8 * int64_t{S} + 255) / 256 * 256;
  v.placement = LayerPlacement::make(cfg, S, TP);
  const LayerPlacement& P = v.placement;
  Layout& F = v.ffn.layout;
  A.split.base = P.splitBase % P.blocks;
  A.merge.base = P.mergeBase % P.blocks;  // at S = 1 the placement's o base: the one merge task runs there
  F.push.base = F.reduce.base = P.oBase % P.blocks;  // a CTA reduces the columns it pushed
  F.router.base = P.routerBase % P.blocks;
  F.up.base = P.ugBase % P.blocks;  // round-robin from CTA 0 (the placement's row-k CTAs from S = 4: not yet)
  F.down.base = P.downBase % P.blocks;
  if (A.shape.attnWidth() != v.ffn.layout.attnWidth || A.blocks != v.ffn.layout.blocks ||
      A.threads != cfg.threads)
    throw InputError(where, fmt::format("the attention rows ({} wide, {} CTAs) are not o_proj's ({} wide, {} CTAs)",
                                        A.shape.attnWidth(), A.blocks, v.ffn.layout.attnWidth, v.ffn.layout.blocks));
  return v;
}

}  // namespace monogen::specs::minimax_m3
