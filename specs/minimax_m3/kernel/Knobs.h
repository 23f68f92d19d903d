// The MiniMax-M3 FFN spec's knobs, the spec's own and not the IR's: which expert terms the combine
// sums (the seeds' Experts knob: all in production, one side alone for stage parity), the layout
// of the e8m0 scales the kernel reads (WeightContract.h: e8m0_shuffle, the frameworks', by
// default; rowmajor as the key's "scales=rowmajor"), the trace
// (per-CTA, per-stage timestamps) and the drop-mark fault test (one CTA never marks the launch
// done), and a test-only mutation of one sync site (Mutation.h; never set outside the race tests).
// A key carries them as canonical text (ir::Key::knobs): the non-default ones only, as
// "experts=shared input=part trace=1 drop_mark=3", so a default variant's key has none. The input
// knob says what the launch takes: the attention rows with o_proj's per-token FP8 quant and GEMM
// in the launch (attn, the default: seed 000, what serving runs), or the unreduced o_proj
// partial a framework computed in front of the launch (part, the key's "input=part").
#pragma once
#include <string>

#include "ir/Plan.h"
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
