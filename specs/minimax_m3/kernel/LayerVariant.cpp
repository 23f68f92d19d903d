#include "specs/minimax_m3/kernel/LayerVariant.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <sstream>

#include "ir/Error.h"
#include "specs/minimax_m3/kernel/Spec.h"

namespace monogen::specs::minimax_m3 {

namespace {

constexpr const char* kAgRsFromKnob = "ag_rs_from=";
constexpr const char* kWideFromKnob = "wide_from=";
constexpr const char* kMoeKnob = "moe=";

/// The layer's knobs a key's knob text (comma-separated) holds.
struct LayerKnobText {
  std::string attention;  // the attention launch's knobs
  LayerPlacementKnobs placement;
  MoeQuant moe = MoeQuant::A16w4;
};

LayerKnobText splitKnobs(const std::string& text, const std::string& where) {
  LayerKnobText out;
  bool moeSeen = false;
  std::istringstream in(text);
  for (std::string tok; std::getline(in, tok, ',');) {
    if (tok.rfind(kMoeKnob, 0) == 0) {
      if (moeSeen) throw InputError(where, fmt::format("knob '{}': moe= is given twice", tok));
      moeSeen = true;
      out.moe = parseMoeQuant(tok.substr(std::string(kMoeKnob).size()), where);
      if (out.moe == MoeQuant::A16w4)
        throw InputError(where, "knob 'moe=a16w4' is the default, which a canonical key leaves out");
      continue;
    }
    const bool wide = tok.rfind(kWideFromKnob, 0) == 0;
    if (!wide && tok.rfind(kAgRsFromKnob, 0) != 0) {
      out.attention += (out.attention.empty() ? "" : ",") + tok;
      continue;
    }
    const std::string name = wide ? kWideFromKnob : kAgRsFromKnob;
    const std::string value = tok.substr(name.size());
    int n = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
    if (ec != std::errc{} || end != value.data() + value.size())
      throw InputError(where, fmt::format("knob '{}': expected {}<rows>", tok, name));
    (wide ? out.placement.wideFrom : out.placement.agRsFrom) = n;
  }
  return out;
}

std::string layerKnobText(const AttentionKnobs& knobs, const LayerPlacementKnobs& pk, MoeQuant moe) {
  std::string t = knobs.canonical();
  if (moe != MoeQuant::A16w4) t += fmt::format("{}{}{}", t.empty() ? "" : ",", kMoeKnob, moeQuantName(moe));
  if (pk.wideFrom != LayerPlacementKnobs{}.wideFrom)
    t += fmt::format("{}{}{}", t.empty() ? "" : ",", kWideFromKnob, pk.wideFrom);
  if (pk.agRsFrom != LayerPlacementKnobs{}.agRsFrom)
    t += fmt::format("{}{}{}", t.empty() ? "" : ",", kAgRsFromKnob, pk.agRsFrom);
  return t;
}

}  // namespace

FfnKnobs layerFfnKnobs(const ir::Key& key) {
  FfnKnobs k;
  k.moe = splitKnobs(key.knobs, key.variantName()).moe;
  return k;
}

ir::Key makeLayerKey(const ModelConfig& cfg, int rows, int tp, const AttentionKnobs& knobs,
                     const LayerPlacementKnobs& placement, MoeQuant moe) {
  ir::Key k = makeAttentionKey(cfg, rows, tp, knobs);
  k.spec = kLayerSpecId;
  k.specVersion = kLayerSpecVersion;
  k.knobs = layerKnobText(knobs, placement, moe);
  return k;
}

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
  const LayerKnobText parts = splitKnobs(keyIn.knobs, where);
  v.knobs = AttentionKnobs::parse(parts.attention, where);
  v.placementKnobs = parts.placement;
  v.moe = parts.moe;
  if (layerKnobText(v.knobs, v.placementKnobs, v.moe) != keyIn.knobs)
    throw InputError(where, fmt::format("knobs '{}' are not canonical ('{}')", keyIn.knobs,
                                        layerKnobText(v.knobs, v.placementKnobs, v.moe)));
  const int S = rowsOf(keyIn), TP = tpOf(keyIn);
  v.attention = AttentionVariant::make(cfg, makeAttentionKey(cfg, S, TP, v.knobs), true);
  v.ffn = FfnVariant::make(cfg, makeKey(cfg, S, TP));  // the FFN launch's checks, which refuse moe=
  v.ffn.knobs = layerFfnKnobs(keyIn);
  v.ffn.key = withKnobs(v.ffn.key, v.ffn.knobs);  // under A8W4 not the A16W4 variant's key
  AttentionLaunchLayout& A = v.attention.layout;
  // the splits past the attention's index and share tasks where they fit, as the attention launch's
  const int64_t front = A.rows + A.heads.tasks + A.index.tasks + A.indexShare.tasks;
  v.placement = LayerPlacement::make(cfg, S, TP, v.placementKnobs, static_cast<int>(front));
  const LayerPlacement& P = v.placement;
  if (P.nMerge > 0) {
    A.ardyOffset = A.scratchBytes;  // past every other area: zeroed with the flags before them
    A.scratchBytes += (8 * int64_t{S} + 255) / 256 * 256;
  } else {
    A.merge.tasks = 0;  // S = 1: each o_proj CTA merges the row itself (LayerSpec.cpp)
  }
  Layout& F = v.ffn.layout;
  if (P.reduceScatter) {
    // ATTN and FFN: each rank's row t reaches rank t % TP alone; A_AG and FFN_AG (the owner's
    // all-reduced rows to every rank) past the FFN launch's sym areas
    const int64_t rowPairs = int64_t{S} * (cfg.hidden / 2);
    const auto gathered = [&](const char* name, const char* what) {
      Area a{name, "sym", F.symBytes, 2 * rowPairs * 8, 2 * rowPairs, true,
             fmt::format("pairs [parity][S][hidden / 2]: row t's all-reduced {} as bf16 pairs, published by its owner "
                         "rank t % TP to every rank into half (tag & 1)",
                         what),
             true};
      F.symBytes += (a.bytes + 255) / 256 * 256;
      return a;
    };
    F.attnReduceScatter = F.ffnReduceScatter = true;
    F.attn.publishedPairs = F.ffn.publishedPairs = int64_t{TP} * rowPairs;
    F.attnAg = gathered("A_AG", "o_proj output");
    F.ffnAg = gathered("FFN_AG", "MoE output");
  }
  if (v.knobs.indexCp()) {
    // SEL_CP past the FFN's sym areas: [parity][S][kvHeads][src rank][part][topk][key, block]
    const int64_t half = int64_t{S} * A.shape.kvHeads * TP * A.cpParts * A.shape.topk * 2;
    A.selCpOffset = F.symBytes;
    A.selCpPairs = 2 * half;
    F.symBytes += (A.selCpPairs * 8 + 255) / 256 * 256;
  }
  A.split.base = P.splitBase % P.blocks;
  A.merge.base = P.mergeBase % P.blocks;
  F.push.base = F.reduce.base = P.oBase % P.blocks;  // a CTA reduces the columns it pushed
  F.router.base = P.routerBase % P.blocks;
  // up's tasks round-robin from the shared window's base: slot 0's (the shared expert's) tasks on
  // the window's first CTAs, the routed slots' after them (docs/layer.md, "The launch on it")
  F.up.base = P.sharedBase % P.blocks;
  F.down.base = P.downBase % P.blocks;
  F.moe = v.ffn.knobs.moe;  // the FFN knob is the source: up's and down's numerics (StageUpA8w4.cpp, ...)
  if (v.moe == MoeQuant::A8w4) {
    // up's A is XN as MXFP8 in bstage (E4M3 bytes [S][hidden], code words [S][hidden / 32]), not
    // the bf16 copy; down's wave regions hold the MID columns the same way (smaller than bf16)
    constexpr int64_t kLdsLimit = 160 * 1024;
    F.xnInLds = false;
    // wide (from wide_from): down's pool is every pick's MID column once a CTA, [S (topk + 1)][I/TP]
    F.moeWide = P.wideMoe;
    const int64_t midBytes = F.moeWide ? int64_t{S} * (cfg.topk + 1) * F.tiling.interPerRank * 9 / 8
                             : F.midInLds ? F.waves * F.midWaveBytes
                                          : 0;
    F.bstage.bytes = std::max(midBytes, int64_t{S} * cfg.hidden * 9 / 8);
    F.bstage.doc = std::string("up: XN as MXFP8, E4M3 [S][hidden] then i32 codes [S][hidden / 32]; ") +
                   (F.moeWide ? "down (wide): every pick's MID column likewise, [S (topk + 1)][I/TP] then codes"
                              : "down: a wave's slot's MID columns likewise [S][I/TP] a wave (midWaveBytes apart)");
    F.ldsBytes = F.bstage.offset + F.bstage.bytes;
    if (F.ldsBytes > kLdsLimit)
      throw InputError(where, fmt::format("A8W4's XN in LDS takes {} B, past {}", F.ldsBytes, kLdsLimit));
  }
  if (A.shape.attnWidth() != v.ffn.layout.attnWidth || A.blocks != v.ffn.layout.blocks ||
      A.threads != cfg.threads)
    throw InputError(where, fmt::format("the attention rows ({} wide, {} CTAs) are not o_proj's ({} wide, {} CTAs)",
                                        A.shape.attnWidth(), A.blocks, v.ffn.layout.attnWidth, v.ffn.layout.blocks));
  return v;
}

}  // namespace monogen::specs::minimax_m3
