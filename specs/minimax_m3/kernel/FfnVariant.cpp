#include "specs/minimax_m3/kernel/FfnVariant.h"

#include <fmt/format.h>

#include <variant>

#include "ir/Error.h"
#include "specs/minimax_m3/kernel/Spec.h"

namespace monogen::specs::minimax_m3 {

FfnVariant FfnVariant::make(const ModelConfig& cfg, const ir::Key& in) {
  FfnVariant v{cfg, in, {}, {}};
  ir::Key& key = v.key;
  const std::string where = key.variantName();
  if (key.spec != kSpecId)
    throw InputError(where, fmt::format("spec '{}': this builder makes '{}'", key.spec, kSpecId));
  if (key.specVersion != kSpecVersion)
    throw InputError(where, fmt::format("spec version {}: this builder makes version {}", key.specVersion,
                                        kSpecVersion));
  const bool paramsOk = key.params.size() == 2 && key.params[0].name == kParamRows &&
                        key.params[1].name == kParamTp &&
                        std::holds_alternative<int64_t>(key.params[0].value) &&
                        std::holds_alternative<int64_t>(key.params[1].value);
  if (!paramsOk) {
    std::string given;
    for (const ir::KeyParam& p : key.params) given += (given.empty() ? "" : " ") + p.name + "=" + p.valueText();
    throw InputError(where, fmt::format("parameters [{}]: this builder takes integers {} and {}, in that order", given,
                                        kParamRows, kParamTp));
  }
  const std::string canon = cfg.canonical();
  if (key.config.empty()) key.config = canon;
  if (key.config != canon)
    throw InputError(where, fmt::format("the key's config '{}' is not the model config's '{}'", key.config, canon));
  v.knobs = knobsOf(key);  // an unknown or bad knob is an InputError
  if (v.knobs.moe != MoeQuant::A16w4)
    throw InputError(where, fmt::format("knob moe={}: the FFN launch runs A16W4; moe= is the layer launch's knob",
                                        moeQuantName(v.knobs.moe)));
  if (v.knobs.dropMark < -1 || v.knobs.dropMark >= cfg.blocks)
    throw InputError(where, fmt::format("drop mark CTA {}: expected -1 (none) or 0..{}", v.knobs.dropMark,
                                        cfg.blocks - 1));
  try {
    v.layout = Layout::make(cfg, rowsOf(key), tpOf(key), v.knobs.input);
  } catch (const InputError& e) {
    throw InputError(where, e.what());
  }
  return v;
}

}  // namespace monogen::specs::minimax_m3
