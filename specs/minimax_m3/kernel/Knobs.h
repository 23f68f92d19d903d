// The MiniMax-M3 FFN spec's own knobs (experts, input, scales, trace, drop_mark, mutation, moe), carried
// in a key as canonical text of the non-default ones only ("experts=shared input=part trace=1").
// What each one means: docs/minimax-m3-kernel.md, "The knobs".
#pragma once
#include <string>

#include "ir/Plan.h"
#include "specs/minimax_m3/kernel/MoeQuant.h"
#include "specs/minimax_m3/kernel/Mutation.h"
#include "specs/minimax_m3/kernel/WeightContract.h"

namespace monogen::specs::minimax_m3 {

/// Which expert terms the combine sums.
enum class MoeExperts { All = 0, Shared = 1, Routed = 2 };
const char* moeExpertsName(MoeExperts e);  // "all", "shared", "routed"

struct FfnKnobs {
  MoeExperts experts = MoeExperts::All;
  bool trace = false;
  int dropMark = -1;  // fault test: this CTA never marks the launch done (-1: none)
  Mutation mutation{};  // race tests only (Mutation.h): "mutate=kind@stage.ordinal" in the key
  ScaleLayout scales = ScaleLayout::E8m0Shuffle;  // how s13 / s2 are held: the frameworks' by default
  FfnInput input = FfnInput::Attn;  // o_proj in the launch; "input=part": the partial
  /// The experts' numerics: "moe=a8w4" only in the layer launch's FFN variant (LayerVariant), so
  /// that its key is not A16W4's; FfnVariant::make refuses it.
  MoeQuant moe = MoeQuant::A16w4;

  /// The non-default knobs as "name=value" tokens in a fixed order ("" when every knob is default).
  std::string canonical() const;
  /// Reads canonical() text back; an unknown knob, a repeated one or a bad value is an InputError
  /// at `where` naming it and what is allowed.
  static FfnKnobs parse(const std::string& text, const std::string& where);
};

/// The knobs a key of this spec carries (parsed from key.knobs).
FfnKnobs knobsOf(const ir::Key& key);
/// The key with these knobs.
ir::Key withKnobs(ir::Key key, const FfnKnobs& knobs);

}  // namespace monogen::specs::minimax_m3
