// monogen check, one process a rank (--per-rank on the Sim, --device hip): the parent's side of the
// run (the ranks' report lines printed, the verdict over every rank and launch) and the layer
// launch's check on it; the FFN launch's is CmdCheck's checkPerRank.
#pragma once
#include <cstdint>
#include <string>

#include "runtime/RankProcesses.h"
#include "tools/Variant.h"

namespace monogen::tools {

/// Forks tp processes running `body` (one a rank) and prints each rank's device, warm-up, every
/// launch's tag and verdict, then "verdict: ..." over every rank and launch. Returns bit-exact 0,
/// ERROR / INVALID / MISMATCH 1; a rank whose process failed before it was ready (no library, no
/// gfx950 GPU, a co-residency refusal) 2, its message on stderr.
int runRankCheck(int tp, int launches, const runtime::RankProcesses::Body& body);

/// `check --launch layer --per-rank` (device sim) or `--device hip`: v's rows, tp, --cache,
/// --layer-type, --context and --ag-rs-from; `launches` back-to-back launches of one bound argument set.
int checkLayerPerRank(const VariantOptions& v, const std::string& device, uint64_t seed, int launches,
                      double waitSeconds);

}  // namespace monogen::tools
