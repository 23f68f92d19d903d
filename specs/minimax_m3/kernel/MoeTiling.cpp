#include "specs/minimax_m3/kernel/MoeTiling.h"

#include <fmt/format.h>

#include <algorithm>

#include "ir/Error.h"

namespace monogen::specs::minimax_m3 {

MoeTiling MoeTiling::derive(const ModelConfig& cfg, int tp, const std::string& where) {
  auto need = [&](bool ok, const std::string& what) {
    if (!ok) throw InputError(where, what);
  };
  need(tp == 1 || tp == 2 || tp == 4 || tp == 8, fmt::format("TP {}: expected 1, 2, 4 or 8", tp));
  need(cfg.threads % 64 == 0 && cfg.threads > 0, fmt::format("{} threads: expected a multiple of 64", cfg.threads));
  MoeTiling t;
  t.waves = cfg.threads / t.waveLanes;
  need(cfg.hidden % 256 == 0, fmt::format("hidden {}: expected a multiple of 256", cfg.hidden));
  need(cfg.experts % 16 == 0 && cfg.experts > 0, fmt::format("{} experts: expected a multiple of 16", cfg.experts));
  need(cfg.maxRows >= 1 && cfg.maxRows <= 16, fmt::format("max rows {}: expected 1..16", cfg.maxRows));
  t.seamTasks = cfg.hidden / 32;

  t.routerTiles = cfg.experts / t.routerTile;
  const int perWaveUnit = t.waves * 16;  // a part's columns must split into waves x 16
  t.routerParts = 0;
  for (int p : {16, 8, 4})
    if (cfg.hidden % (p * perWaveUnit) == 0) {
      t.routerParts = p;
      break;
    }
  need(t.routerParts != 0,
       fmt::format("hidden {}: the router needs hidden / parts a multiple of {} for 4, 8 or 16 parts",
                   cfg.hidden, perWaveUnit));
  t.routerK = cfg.hidden / t.routerParts;
  t.routerWaveK = t.routerK / t.waves;
  t.routerChunks = t.routerWaveK / 16;
  t.routerTasks = t.routerTiles * t.routerParts;
  t.routeQuarters = 4;
  t.routePartsPerQuarter = t.routerParts / t.routeQuarters;
  t.routeExpertsPerLane = (cfg.experts + t.waveLanes - 1) / t.waveLanes;

  need(cfg.intermediate % tp == 0, fmt::format("intermediate {} does not split over TP {}", cfg.intermediate, tp));
  t.interPerRank = cfg.intermediate / tp;
  need(t.interPerRank % 32 == 0,
       fmt::format("I / TP = {}: expected a multiple of 32 (one e8m0 block)", t.interPerRank));
  t.upTiles = t.interPerRank / 16;
  t.upSteps = cfg.hidden / t.kStep;
  t.upWaveSteps = (t.upSteps + t.waves - 1) / t.waves;
  t.upWaves = (t.upSteps + t.upWaveSteps - 1) / t.upWaveSteps;

  t.downTasks = cfg.hidden / t.downTile;
  t.downSteps = (t.interPerRank + t.kStep - 1) / t.kStep;
  t.downTailK = t.interPerRank % t.kStep;

  t.slotCols = 16;
  t.maxSlots = 1 + std::min(cfg.experts, cfg.maxRows * cfg.topk);
  t.contribPicks = cfg.maxRows * (cfg.topk + 1);
  return t;
}

std::string MoeTiling::describe() const {
  return fmt::format(
      "waves={} seam={} router: tiles={} parts={} K={} waveK={} chunks={} route: quarters={}x{} "
      "up: inter/rank={} tiles={} steps={} waveSteps={} waves={} down: tasks={} steps={} tail={} "
      "slots={} contrib={}",
      waves, seamTasks, routerTiles, routerParts, routerK, routerWaveK, routerChunks, routeQuarters,
      routePartsPerQuarter, interPerRank, upTiles, upSteps, upWaveSteps, upWaves, downTasks, downSteps,
      downTailK, maxSlots, contribPicks);
}

}  // namespace monogen::specs::minimax_m3
