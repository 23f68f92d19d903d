// The FFN launch's stage table (specs/minimax_m3/kernel/stages/StageDef.h): the Plan holds its
// stages in table order at their placements, and every flag a stage waits on is published by an
// earlier stage: the table's order is a dataflow order.
#include <catch2/catch.hpp>

#include <map>
#include <set>

#include "specs/minimax_m3/kernel/Layout.h"
#include "specs/minimax_m3/kernel/FfnVariant.h"
#include "specs/minimax_m3/kernel/Spec.h"
#include "specs/minimax_m3/kernel/stages/StageDef.h"

using namespace monogen;
using namespace monogen::specs::minimax_m3;

namespace {

/// The first problem with the table's order at one layout, or "" when there is none.
std::string dataflowProblem(const std::vector<const StageDef*>& stages, const Layout& L) {
  std::set<std::string> published, names;
  for (const StageDef* d : stages) {
    const std::string name = d->placement(L).name;
    if (!names.insert(name).second) return "stage " + name + " is in the table twice";
    for (const ir::FlagUse& w : d->waits(L))
      if (!published.count(w.flag)) return "stage " + name + " waits on " + w.flag + ", which no earlier stage publishes";
    for (const ir::FlagUse& p : d->publishes(L)) published.insert(p.flag);
  }
  return "";
}

}  // namespace

TEST_CASE("stages: the Plan holds the table's stages in order, at their placements", "[spec][stages]") {
  const ModelConfig cfg = ModelConfig::reduced();
  for (int S : {1, 8, 16})
    for (int TP : {1, 4}) {
      const FfnVariant v = FfnVariant::make(cfg, makeKey(cfg, S, TP));
      const ir::Plan plan = buildPlan(v);
      const Layout& L = v.layout;
      const auto& table = ffnStages();
      REQUIRE(plan.stages.size() > table.size() + 1);
      REQUIRE(plan.stages[0].name == "mark");  // every CTA's first stage, then the table's
      for (size_t i = 0; i < table.size(); ++i) {
        INFO("S=" << S << " TP=" << TP << " stage " << i);
        const Placement p = table[i]->placement(L);
        CHECK(plan.stages[i + 1].name == p.name);
        CHECK(plan.stages[i + 1].tasks == p.tasks);
        CHECK(plan.stages[i + 1].base == p.base);
        for (const auto* uses : {&plan.stages[i + 1].waits, &plan.stages[i + 1].publishes})
          for (const ir::FlagUse& u : *uses) {
            INFO("flag " << u.flag);
            bool found = false;
            for (const ir::FlagArray& f : plan.flags) found = found || f.name == u.flag;
            CHECK(found);
          }
      }
    }
}

TEST_CASE("stages: every wait is on a flag an earlier stage publishes", "[spec][stages]") {
  const ModelConfig cfg = ModelConfig::reduced();
  for (int S : {1, 8, 16})
    for (int TP : {1, 2, 8}) {
      const Layout L = FfnVariant::make(cfg, makeKey(cfg, S, TP)).layout;
      INFO("S=" << S << " TP=" << TP);
      CHECK(dataflowProblem(ffnStages(), L) == "");
    }
  // The check itself: the table with reduce and norm swapped is not a dataflow order.
  std::vector<const StageDef*> swapped = ffnStages();
  std::swap(swapped[1], swapped[2]);
  const Layout L = FfnVariant::make(cfg, makeKey(cfg, 8, 4)).layout;
  CHECK(dataflowProblem(swapped, L) == "stage norm waits on SSQ, which no earlier stage publishes");
}
