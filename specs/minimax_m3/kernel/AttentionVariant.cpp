#include "specs/minimax_m3/kernel/AttentionVariant.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <sstream>

#include "ir/Error.h"
#include "specs/minimax_m3/kernel/Spec.h"

namespace monogen::specs::minimax_m3 {

std::string AttentionKnobs::canonical() const {
  std::string s;
  if (mode != CacheMode::Vllm) s += fmt::format("cache={}", cacheModeName(mode));
  if (fullLayer) s += std::string(s.empty() ? "" : ",") + "layer=full";
  if (indexCpFrom > 0) s += std::string(s.empty() ? "" : ",") + fmt::format("index_cp_from={}", indexCpFrom);
  return s;
}

AttentionKnobs AttentionKnobs::parse(const std::string& text, const std::string& where) {
  AttentionKnobs k;
  std::stringstream ss(text);
  std::string tok;
  while (std::getline(ss, tok, ',')) {
    if (tok.empty()) continue;
    const auto eq = tok.find('=');
    const std::string name = tok.substr(0, eq), value = eq == std::string::npos ? "" : tok.substr(eq + 1);
    if (name == "cache") {
      k.mode = cacheModeOf(value, where);
    } else if (name == "layer" && (value == "full" || value == "sparse")) {
      k.fullLayer = value == "full";
    } else if (name == "index_cp_from") {
      int n = 0;
      const auto r = std::from_chars(value.data(), value.data() + value.size(), n);
      if (r.ec != std::errc() || r.ptr != value.data() + value.size() || n < 1)
        throw InputError(where, fmt::format("knob '{}': expected index_cp_from=<blocks>, at least 1", tok));
      k.indexCpFrom = n;
    } else {
      throw InputError(where, fmt::format("knob '{}': expected cache=vllm|atom, layer=sparse|full or "
                                          "index_cp_from=<blocks>",
                                          tok));
    }
  }
  return k;
}

std::string attentionErrorMeaning(int32_t code) {
  if (code == 0) return "";
  const int32_t site = code & 0xff, token = (code >> 16) & 0xffff;
  switch (site) {
    case kSiteAttnGemv: return fmt::format("attn_gemv waited past its bound for XRDY {}", token);
    case kSiteAttnHeads: return fmt::format("attn_heads waited past its bound for QRDY {}", token);
    case kSiteAttnSplit: return fmt::format("attn_split waited past its bound for HRDY {}", token);
    case kSiteAttnMerge: return fmt::format("attn_merge waited past its bound for SRDY {}", token);
    case kSiteAttnIndex: return fmt::format("attn_index waited past its bound for HRDY {}", token);
    case kSiteAttnSplitSel: return fmt::format("attn_split waited past its bound for IRDY {}", token);
    case kSiteAttnIndexShare: return fmt::format("attn_index waited past its bound for CRDY {}", token);
    case kSiteAttnIndexMail:
      return fmt::format("attn_index: selection {}'s candidates from the peers (SEL_CP) did not come; dropped", token);
    case kSiteAttnSelRange:
      return fmt::format("attn_split: selection {} came with a block id or length out of range; its splits "
                         "attend nothing",
                         token);
    default: return fmt::format("unknown site {} (token {})", site, token);
  }
}

ir::Key makeAttentionKey(const ModelConfig& cfg, int rows, int tp, const AttentionKnobs& knobs) {
  ir::Key k;
  k.spec = kAttentionSpecId;
  k.specVersion = kAttentionSpecVersion;
  k.params = {{kParamRows, rows}, {kParamTp, tp}};
  k.target = ir::gfx950();
  k.knobs = knobs.canonical();
  k.config = cfg.attentionCanonical();
  return k;
}

AttentionVariant AttentionVariant::make(const ModelConfig& cfg, const ir::Key& keyIn, bool inLayer) {
  AttentionVariant v;
  v.cfg = cfg;
  v.key = keyIn;
  const std::string where = keyIn.variantName();
  if (keyIn.spec != kAttentionSpecId || keyIn.specVersion != kAttentionSpecVersion)
    throw InputError(where, fmt::format("spec {} v{}: expected {} v{}", keyIn.spec, keyIn.specVersion, kAttentionSpecId,
                                        kAttentionSpecVersion));
  if (keyIn.params.size() != 2 || keyIn.params[0].name != kParamRows || keyIn.params[1].name != kParamTp)
    throw InputError(where, "expected the parameters (S, TP)");
  cfg.validate(where);
  cfg.validateAttention(where);
  const std::string canon = cfg.attentionCanonical();
  if (v.key.config.empty()) v.key.config = canon;
  if (v.key.config != canon)
    throw InputError(where, fmt::format("the key's config '{}' is not the model config's '{}'", v.key.config, canon));
  v.knobs = AttentionKnobs::parse(keyIn.knobs, where);
  if (v.knobs.canonical() != keyIn.knobs)
    throw InputError(where, fmt::format("knobs '{}' are not canonical ('{}')", keyIn.knobs, v.knobs.canonical()));

  AttentionLaunchLayout& L = v.layout;
  L.rows = rowsOf(keyIn);
  L.tp = tpOf(keyIn);
  if (L.rows < 1 || L.rows > cfg.maxRows)
    throw InputError(where, fmt::format("S = {} rows: expected 1..{}", L.rows, cfg.maxRows));
  if (v.knobs.indexCp() && (v.knobs.fullLayer || L.tp == 1 || v.knobs.indexCpFrom < cfg.indexTopk))
    throw InputError(where, fmt::format("index_cp_from={}: indexer context parallelism needs a sparse layer, TP > 1 "
                                        "and at least top-k = {} blocks (a row of fewer selects every block)",
                                        v.knobs.indexCpFrom, cfg.indexTopk));
  if (v.knobs.indexCp() && !inLayer)
    throw InputError(where, fmt::format("index_cp_from={}: indexer context parallelism mails each rank's candidates "
                                        "to peer ranks, which the attention launch alone cannot reach; it is a knob "
                                        "of the layer launch (--launch layer)",
                                        v.knobs.indexCpFrom));
  L.shape = AttentionShape::make(cfg, L.tp, 0, where, v.knobs.indexCp());
  L.hidden = cfg.hidden;
  L.blocks = cfg.blocks;
  L.threads = cfg.threads;
  L.waves = cfg.threads / 64;
  L.qkvRows = L.shape.rowsOf(v.knobs.fullLayer);
  L.qkvTiles = L.qkvRows / 16;
  if (L.hidden % (64 * L.waves) != 0)
    throw InputError(where, fmt::format("hidden = {}: the GEMV expects a multiple of 64 x {} waves", L.hidden, L.waves));
  if (L.hidden % 256 != 0 || L.hidden / 256 > 32)
    throw InputError(where, fmt::format("hidden = {}: the norm expects a multiple of 256, at most 8192", L.hidden));
  if (L.shape.headDim / 4 > 32 || L.shape.indexDim / 4 > 32 || L.shape.rotaryDim % 8 != 0)
    throw InputError(where, fmt::format("head dims {} / {} and rotary {}: expected at most 128 and rotary a multiple of 8",
                                        L.shape.headDim, L.shape.indexDim, L.shape.rotaryDim));
  L.headUnits = L.shape.qHeads + 2 * L.shape.kvHeads + (v.knobs.fullLayer ? 0 : L.shape.indexHeads + 1) +
                L.shape.cpHeads;
  L.headTasks = (L.headUnits + L.waves - 1) / L.waves;
  L.vTask0 = (L.shape.qHeads + L.shape.kvHeads) / L.waves;
  L.vTasks = (L.shape.qHeads + 2 * L.shape.kvHeads - 1) / L.waves - L.vTask0 + 1;
  L.splitTasks = L.rows * L.shape.kvHeads * kAttnSplits;
  if (L.waves != 8 || L.shape.qGroup > 16 || L.shape.headDim % 32 != 0)
    throw InputError(where, fmt::format("{} waves, {} query heads a KV head, head dim {}: the split expects 8 waves "
                                        "(32 keys each), at most 16 heads (the MFMA's rows) and a multiple of 32",
                                        L.waves, L.shape.qGroup, L.shape.headDim));

  auto align = [](int64_t x) { return (x + 255) / 256 * 256; };
  L.x8Offset = 0;
  L.xScaleOffset = align(int64_t{L.rows} * L.hidden);
  L.rstdOffset = L.xScaleOffset + align(4 * int64_t{L.rows});
  L.qkvOffset = L.rstdOffset + align(4 * int64_t{L.rows});
  const int64_t G = L.shape.qGroup;
  L.splitOOffset = L.qkvOffset + align(2 * int64_t{L.rows} * L.qkvRows);
  L.splitMOffset = L.splitOOffset + align(2 * L.splitTasks * G * L.shape.headDim);
  L.splitLOffset = L.splitMOffset + align(4 * L.splitTasks * G);
  L.xrdyOffset = L.splitLOffset + align(4 * L.splitTasks * G);
  L.qrdyOffset = L.xrdyOffset + align(8 * int64_t{L.rows});
  L.hrdyOffset = L.qrdyOffset + align(8 * int64_t{L.qkvTiles});
  L.srdyOffset = L.hrdyOffset + align(8 * int64_t{L.rows});
  const int64_t sels = int64_t{L.rows} * L.shape.kvHeads;
  L.selOffset = L.srdyOffset + align(8 * int64_t{L.splitTasks});
  L.irdyOffset = L.selOffset + align(4 * sels * kSelWords);
  L.candOffset = L.irdyOffset + align(8 * sels);
  L.crdyOffset = L.candOffset + align(8 * sels * kAttnSplits * L.shape.topk);
  L.iscoreOffset = L.crdyOffset + align(8 * sels * kAttnSplits);
  L.scratchBytes = L.iscoreOffset + align(4 * sels * kLongFromBlocks);
  if (v.knobs.indexCp()) {
    L.cpParts = kAttnSplits / L.tp;
    L.iqCpOffset = L.scratchBytes;
    L.scratchBytes += align(2 * int64_t{L.rows} * L.shape.cpHeads * L.shape.indexDim);
  }
  // a span's tiles two a pass where their doubled slots fit the CU's LDS (atom's sparse tile: one)
  const bool spans = v.knobs.mode != CacheMode::Atom || v.knobs.fullLayer;
  const int64_t pvBytes = 4 * int64_t{L.waves} * 16 * L.shape.headDim;
  L.splitPass = spans && 2 * pvBytes + 8 * 1024 <= 160 * 1024 ? 2 : 1;
  L.splitLdsM = 0;
  L.splitLdsL = L.splitLdsM + L.splitPass * 4 * int64_t{L.waves} * 16;
  L.splitLdsV = L.splitLdsL + L.splitPass * 4 * int64_t{L.waves} * 16;
  L.splitLdsP = L.splitLdsV + L.splitPass * 4 * int64_t{L.waves};
  L.splitLdsPv = L.splitLdsP + int64_t{L.waves} * 16 * 32;
  L.splitLdsSel = L.splitLdsPv + L.splitPass * pvBytes;
  L.ldsBytes = std::max({int64_t{4} * (32 + L.waves), 4 * int64_t{L.waves} * 16 * 16,
                         L.splitLdsSel + 4 * (1 + int64_t{L.shape.topk}),
                         int64_t{4} * L.waves * kIndexTaskBlocks,
                         int64_t{8} * L.shape.qHeads * kAttnSplits});  // the merge's sl and w

  L.norm = Placement{"attn_norm", L.rows, 0};
  // the tiles past the norm's CTAs where they fit: a norm CTA's tile loads its weights only
  // after its row, the others while the norms run
  L.gemv = Placement{"attn_gemv", L.qkvTiles, L.rows + L.qkvTiles <= L.blocks ? L.rows : 0};
  L.heads = Placement{"attn_heads", int64_t{L.rows} * L.headTasks, L.rows % L.blocks};
  L.index = Placement{"attn_index", v.knobs.fullLayer ? 0 : sels,
                      static_cast<int>((L.rows + L.heads.tasks) % L.blocks)};
  // the shares after the index tasks: a long row's index task waits on them
  L.indexShare = Placement{"attn_index_share", v.knobs.fullLayer ? 0 : sels * kAttnSplits,
                           static_cast<int>((L.rows + L.heads.tasks + L.index.tasks) % L.blocks)};
  // a scored row's blocks are scored by its 8 shares while they take at most 2 tasks a CTA; past
  // that (reduced dims, 32 CTAs, S 16 TP 1: 16 a CTA) the index task scores them itself
  L.indexSpread = L.indexShare.tasks <= 2 * int64_t{L.blocks};
  // the splits after the shares where the CTAs hold them all (no split waits behind an index or
  // share task on its CTA), else from CTA 0; the merges after the splits
  int64_t splitBase = L.rows + L.heads.tasks + L.index.tasks + L.indexShare.tasks;
  if (splitBase + L.splitTasks > L.blocks) splitBase = 0;
  L.split = Placement{"attn_split", L.splitTasks, static_cast<int>(splitBase % L.blocks)};
  L.merge = Placement{"attn_merge", L.rows, static_cast<int>((splitBase + L.splitTasks) % L.blocks)};
  return v;
}

}  // namespace monogen::specs::minimax_m3
