#include "specs/minimax_m3/kernel/stages/StageDef.h"

namespace monogen::specs::minimax_m3 {

// Each is defined at the end of its stage's file.
extern const StageDef kPushStage, kReduceStage, kNormStage, kRouterStage, kRouteStage, kTableStage, kUpStage,
    kDownStage, kFinalStage, kReduceAgStage, kFinalAgStage;

ir::Stage StageDef::record(const Layout& L) const {
  const Placement p = placement(L);
  ir::Stage s;
  s.name = p.name;
  s.tasks = p.tasks;
  s.base = p.base;
  s.waits = waits(L);
  s.publishes = publishes(L);
  s.doc = doc(L);
  s.everyCta = everyCta;
  s.runtimeTasks = runtimeTasks;
  return s;
}

const std::vector<const StageDef*>& ffnStages() {
  static const std::vector<const StageDef*> stages = {&kPushStage,  &kReduceStage, &kNormStage,
                                                      &kRouterStage, &kRouteStage, &kTableStage,
                                                      &kUpStage,     &kDownStage,  &kFinalStage};
  return stages;
}

std::vector<const StageDef*> layerFfnStages(const Layout& L) {
  std::vector<const StageDef*> stages;
  for (const StageDef* d : ffnStages()) {
    stages.push_back(d);
    if (d == &kReduceStage && L.attnReduceScatter) stages.push_back(&kReduceAgStage);
    if (d == &kFinalStage && L.ffnReduceScatter) stages.push_back(&kFinalAgStage);
  }
  return stages;
}

}  // namespace monogen::specs::minimax_m3
