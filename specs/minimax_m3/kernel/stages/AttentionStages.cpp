#include "specs/minimax_m3/kernel/stages/AttentionStageDef.h"

namespace monogen::specs::minimax_m3 {

// Each is defined at the end of its stage's file.
extern const AttentionStageDef kAttnNormStage, kAttnGemvStage, kAttnHeadsStage, kAttnIndexShareStage,
    kAttnIndexStage, kAttnSplitStage, kAttnMergeStage;

ir::Stage AttentionStageDef::record(const AttentionLaunchLayout& L) const {
  const Placement p = placement(L);
  ir::Stage s;
  s.name = p.name;
  s.tasks = p.tasks;
  s.base = p.base;
  s.waits = waits(L);
  s.publishes = publishes(L);
  s.doc = doc(L);
  return s;
}

const std::vector<const AttentionStageDef*>& attentionStages() {
  static const std::vector<const AttentionStageDef*> stages = {
      &kAttnNormStage,  &kAttnGemvStage,  &kAttnHeadsStage, &kAttnIndexShareStage,
      &kAttnIndexStage, &kAttnSplitStage, &kAttnMergeStage};
  return stages;
}

ir::Val e4m3Writer(ir::Builder& b, ir::Val x) {
  ir::Val code = b.f32ToFp8(x);
  ir::Val nan = b.select(x < b.f32(0), b.i32(0xff), b.i32(0x7f));
  return b.select(b.unary(ir::OpCode::Abs, x) > b.f32(464), nan, code);
}

}  // namespace monogen::specs::minimax_m3
