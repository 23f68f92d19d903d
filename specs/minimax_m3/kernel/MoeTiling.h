// The MoE half of the FFN launch's tiling: every constant vLLM's FlyDSL kernel
// hard-codes for hidden 6144 / 128 experts / 512 threads, derived here
// from the ModelConfig and TP instead. The native reference (MoeReference) and the generated
// kernel use this one struct, so a reduced config (hidden 1536, 16 experts, intermediate 768)
// tiles the same way the full one does.
#pragma once
#include <string>

#include "specs/minimax_m3/kernel/ModelConfig.h"

namespace monogen::specs::minimax_m3 {

struct MoeTiling {
  // --- the CTA ---
  int waveLanes = 64;  // lanes a wave (gfx950 wave64)
  int waves = 8;       // WAVES: threads / 64 (512 threads -> 8)

  // --- norm ---
  // SEAM_TASKS: the reduce stage's task count, i.e. how many SSQ parts (one f32 sum of squares
  // a reduce task) the norm sums per token. The FlyDSL kernel's reduce runs 192 tasks of 32 columns
  // (hidden / 32). The reference takes the count from the ssq tensor; this is the default.
  int seamTasks = 192;

  // --- router: FP32 weight x f32(XN) on v_mfma_f32_16x16x4_f32 ---
  int routerTile = 16;    // experts a router task (the MFMA's 16 rows)
  int routerTiles = 8;    // experts / 16
  int routerParts = 16;   // ROUTER_PARTS: K parts a tile is split over (one task each);
                          // the largest of {16, 8, 4} with hidden / parts a multiple of
                          // waves * 16 (full: 16, reduced 1536: 4)
  int routerK = 384;      // ROUTER_K: columns a part (hidden / routerParts)
  int routerWaveK = 48;   // columns a wave (routerK / waves)
  int routerChunks = 3;   // a lane's float4 chunks (routerWaveK / 16): 4 lane groups x 4 columns
  int routerTasks = 128;  // routerTiles * routerParts

  // --- route: the parts summed in 4 quarters, then the quarters in order ---
  int routeQuarters = 4;          // wave 0 sums 4 quarter sums in order
  int routePartsPerQuarter = 4;   // a thread sums routerParts / 4 parts in order
  int routeExpertsPerLane = 2;    // wave 0's experts a lane (lane + 64 i): ceil(experts / 64);
                                  // a lane's local pick prefers its lower expert on a tie

  // --- A16W4 (MXFP4 weights x bf16 activations) on v_mfma_f32_16x16x32_bf16 ---
  int kStep = 128;        // K of one A16W4 step: 4 lane groups x 32 K (one e8m0 block each),
                          // as 4 MFMAs of 16x16x32 (a lane's 8 K a MFMA)
  int kGroup = 32;        // K a lane group holds in a step (= the e8m0 block)

  // --- up: 16 gate + 16 up rows of a slot's expert a task ("tile pair") ---
  int interPerRank = 768;  // I / TP: a rank's intermediate rows (INTER in the FlyDSL kernel)
  int upTiles = 48;        // UP_TILES: tile pairs an expert (I / TP / 16)
  int upSteps = 48;        // K steps over hidden (hidden / 128)
  int upWaveSteps = 6;     // UP_WAVE_STEPS: K steps a wave (ceil(upSteps / waves)); wave w
                           // takes steps [w * upWaveSteps, min(.. + upWaveSteps, upSteps))
  int upWaves = 8;         // waves with K steps (ceil(upSteps / upWaveSteps)); the rest add 0

  // --- down: 16 hidden rows a task, every slot's GEMV over the rank's I / TP ---
  int downTile = 16;       // hidden rows a down task
  int downTasks = 384;     // DOWN_TASKS: hidden / 16
  int downSteps = 6;       // K2_STEPS: ceil(I / TP / 128) (a slot's GEMV runs in one wave)
  int downTailK = 0;       // K of a partial last down step ((I / TP) % 128, a multiple of 32;
                           // 0: none). Its missing lane groups add +0 products.

  // --- the slot table and the combine ---
  int slotCols = 16;       // columns (token rows) a slot at most: the MFMA's 16 columns >= S
  int maxSlots = 65;       // 1 (shared) + min(experts, maxRows * topk)
  int contribPicks = 80;   // CONTRIB rows a down task: maxRows * topk routed + maxRows shared

  /// Derives the tiling; throws InputError (where = `where`) when the dims do not fit it.
  static MoeTiling derive(const ModelConfig& cfg, int tp, const std::string& where = "MoeTiling");
  std::string describe() const;
};

}  // namespace monogen::specs::minimax_m3
