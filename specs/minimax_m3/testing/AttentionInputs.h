// Seeded, platform-independent inputs for the MiniMax-M3 attention launch on every rank of a TP
// group: the weights (FP8 w_qkv with per-row scales, the norms, cos/sin), caches pre-filled for a
// context, block tables, slots and positions, for rows sharing one sequence (speculative verify:
// consecutive positions) or a batch of sequences, with padded rows (docs/attention.md).
#pragma once
#include <cstdint>
#include <string>

#include "specs/minimax_m3/kernel/AttentionLayout.h"
#include "specs/minimax_m3/kernel/ModelConfig.h"
#include "specs/minimax_m3/reference/AttentionReference.h"

namespace monogen::specs::minimax_m3 {

struct AttentionInputOptions {
  CacheMode mode = CacheMode::Vllm;
  bool fullLayer = false;
  bool indexCp = false;  // w_qkv holds the other index heads' q rows (the indexer CP variant's)
  /// Keys each sequence holds before the launch; a row's position is context (+ its index
  /// among its sequence's rows).
  int context = 128;
  /// true: the live rows share one sequence at positions context, context + 1, ..; false: a
  /// batch, row t its own sequence at position context.
  bool shareSequence = false;
  int paddedRows = 0;   // the last paddedRows rows are padded (slot -1)
  int spareBlocks = 2;  // physical blocks beyond the ones the sequences use (never read)
  /// vllm's scalar K / V scales (the per-token ones of atom mode are the writer's amax / 448).
  float kScale = 8.0f / 448.0f, vScale = 8.0f / 448.0f;
  std::string describe() const;
};

/// The whole launch's inputs for S rows on TP ranks. Bytes of the caches no sequence holds are
/// NaN (0x7f; scales NaN), so a read outside the contract shows. Throws InputError on bad options.
AttentionLaunch makeAttentionLaunch(const ModelConfig& cfg, int S, int TP, uint64_t seed,
                                    const AttentionInputOptions& opt = {});

}  // namespace monogen::specs::minimax_m3
