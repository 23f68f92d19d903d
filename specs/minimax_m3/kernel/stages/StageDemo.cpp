#include "specs/minimax_m3/kernel/stages/Stages.h"

namespace monogen::specs::minimax_m3 {

// A demonstration stage: one task on the last CTA that computes nothing and publishes nothing.
extern const StageDef kDemoStage = {
    .placement = [](const Layout& L) { return Placement{"demo", 1, L.blocks - 1}; },
    .waits = [](const Layout&) { return std::vector<ir::FlagUse>{}; },
    .publishes = [](const Layout&) { return std::vector<ir::FlagUse>{}; },
    .doc = [](const Layout&) -> std::string { return "a demonstration: one empty task on the last CTA"; },
    .body = [](KernelContext& c) { c.forEachTask(Placement{"demo", 1, c.L.blocks - 1}, [](ir::Val) {}); },
    .reference = "none: it writes nothing",
};

}  // namespace monogen::specs::minimax_m3
