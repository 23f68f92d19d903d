// One stage of the FFN launch as one record, defined next to its body: where its tasks run, the
// flag arrays it waits on and publishes, its doc, its code and the reference that defines it.
#pragma once
#include <string>
#include <vector>

#include "ir/Plan.h"
#include "specs/minimax_m3/kernel/KernelContext.h"
#include "specs/minimax_m3/kernel/Layout.h"

namespace monogen::specs::minimax_m3 {

struct StageDef {
  Placement (*placement)(const Layout&);                 // its tasks and its first CTA
  std::vector<ir::FlagUse> (*waits)(const Layout&);      // pairs counted over the whole launch
  std::vector<ir::FlagUse> (*publishes)(const Layout&);  // likewise
  std::string (*doc)(const Layout&);
  void (*body)(KernelContext&);  // the stage's code, its task loop included
  const char* reference;         // the host reference function(s) whose numerics it must match
  bool everyCta = false;         // every CTA runs it once, with no task loop
  bool runtimeTasks = false;     // tasks is a bound; the count is read at run time

  /// The stage's Plan record at this layout.
  ir::Stage record(const Layout& L) const;
};

/// The pairs an all-to-all of S x hidden bf16 moves over xGMI: TP ranks to TP ranks.
inline int64_t allToAllPairs(const Layout& L) { return int64_t{L.tp} * L.tp * L.rows * (L.hidden / 2); }
/// SSQ's pairs: a sum of squares a row and reduce task.
inline int64_t ssqPairs(const Layout& L) { return int64_t{L.rows} * L.reduce.tasks; }

/// The pairs an all-gather of S x hidden bf16 moves: each row once from its owner to TP ranks.
inline int64_t gatherPairs(const Layout& L) { return int64_t{L.tp} * L.rows * (L.hidden / 2); }

/// The launch's stages in Plan and code order (the finish stages follow them, StageFinish.cpp).
const std::vector<const StageDef*>& ffnStages();
/// The FFN stages of the layer launch: ffnStages(), with reduce_ag after reduce and final_ag after
/// final when the layout's all-reduces are reduce-scattered.
std::vector<const StageDef*> layerFfnStages(const Layout& L);

}  // namespace monogen::specs::minimax_m3
