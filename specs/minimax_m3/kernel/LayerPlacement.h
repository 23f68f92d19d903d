// Where the one-launch decoder layer puts its tasks and data for one (S, TP): each stage's base
// (task t on CTA (base + t) % blocks), the routed up / gate tasks' CTAs, the shared expert's
// window, the MoE's narrow or wide form, the all-reduce's form, the LDS pool and the symmetric
// peer regions. The serving stack's layer kernel's placement (docs/layer.md), on any config.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "specs/minimax_m3/kernel/ModelConfig.h"

namespace monogen::specs::minimax_m3 {

/// The placement's trade-off constants: knobs the timing model can judge.
struct LayerPlacementKnobs {
  /// From this S A8W4's down stages every pick's MID once a CTA (wide); the default, every S, is
  /// the modeled figures' choice (docs/layer.md, "The wide form"; the serving stack uses 5).
  int wideFrom = 1;
  /// From this S the all-reduces are reduce-scatter + all-gather; the default, past every S, keeps
  /// the one-shot push (the modeled figures in docs/layer.md; the serving stack uses 12).
  int agRsFrom = 17;
};

/// One named byte range of the per-rank symmetric peer buffer.
struct SymRegion {
  std::string name;
  int64_t offset = 0;
  int64_t pairs = 0;  // (value, tag) pairs; the region's bytes are pairs x 8, aligned to 256
};

struct LayerPlacement {
  // --- the variant and the task counts the placement derives from the config ---
  int rows = 1, tp = 1, blocks = 0, waves = 0, topk = 0;
  int nSplit = 0;     // split tasks a (row, KV head): the sparse key budget (top-k x block) / 256 keys a split
  int splitTasks = 0; // split tasks in all: nSplit x the rank's KV heads x S
  int nMerge = 0;     // merge tasks: one a row when S > 1 (at S = 1 the o task merges)
  int nO = 0;         // o_proj tasks: hidden / 32 rows each
  int nRouter = 0;    // router tasks a row: one expert a wave
  int ugPerSlot = 0;  // routed up / gate tasks an expert slot: I / TP / 16 mid rows each
  int shTasks = 0;    // the shared expert's half tasks: I / TP / 8 mid rows each
  int nDown = 0;      // down tasks: hidden / 32 rows each
  LayerPlacementKnobs knobs;

  // --- stage bases, task t of a stage on CTA (base + t) % blocks ---
  int splitBase = 0, mergeBase = 0, oBase = 0, routerBase = 0, sharedBase = 0, ugBase = 0,
      downBase = 0;

  /// CTAs a row's routed up / gate tasks run on (row k on CTAs k C .. (k + 1) C - 1), or none:
  /// round-robin over the grid (S < 4, or S not dividing it).
  std::optional<int> ugCtasPerRow;
  /// Routed up / gate tasks CTA `cta` runs.
  int ugTasksOf(int cta) const;
  /// Whether every CTA carries the same count of routed up / gate tasks; then a shared-expert
  /// CTA routes first and runs its shared task while its routed weights are in flight.
  bool sharedAfterRouting = false;
  /// The MoE grouped by expert (every distinct expert's weights read once) from knobs.wideFrom.
  bool wideMoe = false;
  /// The all-reduces as reduce-scatter to the row's owner rank + all-gather, from knobs.agRsFrom.
  bool reduceScatter = false;
  /// LDS words of the activation pool: narrow, every row's bf16 xn; wide, the largest of the
  /// split's PV partials, the up / gate operands and the down operands.
  int64_t poolWords = 0;
  /// The per-rank symmetric buffer: attn, ffn (partials [src rank][row][hidden]), a_ag, ffn_ag
  /// (the owner's finished rows), sel_cp (the indexer's candidates from the peers, [parity][row]
  /// [owned index head][src rank x part][topk][key, block]).
  std::vector<SymRegion> sym;
  int64_t symBytes = 0;

  /// The placement of (S, TP) on cfg. `splitFrom`: the first CTA past the attention's norm, heads,
  /// index and index-share tasks; the splits start there when they all fit before the grid's end,
  /// else at 0 (a split waits behind no index task). Throws InputError naming the value on a bad
  /// S or TP, or a config whose dims the tasks do not divide.
  static LayerPlacement make(const ModelConfig& cfg, int rows, int tp, LayerPlacementKnobs knobs = {},
                             int splitFrom = 0);

  /// Which CTA runs what: one line a stage (tasks, base, CTA range), then the MoE's form.
  std::string describe() const;

  /// The shared window's rank key for a base: (the busiest window CTA's routed tasks, its router
  /// CTAs when that is the grid's most, its down CTAs, its router CTAs). The base is the argmin.
  std::vector<int> sharedWindowCost(int base) const;
};

}  // namespace monogen::specs::minimax_m3
