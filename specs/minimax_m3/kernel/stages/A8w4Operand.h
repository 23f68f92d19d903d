// The A8W4 MoE's A operand staged in LDS as MXFP8 (docs/layer.md, "The A8W4 MoE"): rows quantized
// once, row-major E4M3 bytes then one scale word a 32-K block, and a lane's mfma_scale A read back.
#pragma once
#include <functional>

#include "specs/minimax_m3/kernel/KernelContext.h"
#include "specs/minimax_m3/kernel/Mxfp8.h"

namespace monogen::specs::minimax_m3 {

/// Quantizes runs of 8 bf16 (run i = `load(i)`: values 8 i .. of row-major rows, K % 32 == 0) for i
/// in [first, end) by `stride` (first = lane mod 4, stride a multiple of 4: a block's 4 runs are a
/// lane quad; `live(i)`, if given, is a block's). Stores run i's E4M3 bytes at `bytes` + 8 i and
/// block i / 4's code word at `words` + 4 (i / 4).
void mxfp8QuantizeRuns(KernelContext& c, ir::Val first, ir::Val end, ir::Val stride, ir::Val bytes, ir::Val words,
                       const std::function<ir::Val(ir::Val)>& load, const std::function<ir::Val(ir::Val)>& live);

/// A lane's A operand of K step `st` from rows staged by mxfp8QuantizeRuns (rowK K a row): the row
/// `row`, K 128 st + 64 h + 16 (l / 16) .. for halves h = 0, 1, and block 4 st + l / 16's code word.
/// K at or past `kEnd` (0: none) reads as zero bytes under code 0, the quant of a +0 run.
Mxfp8Operand mxfp8StagedA(KernelContext& c, ir::Val bytes, ir::Val words, ir::Val row, int rowK, int st, int kEnd);

}  // namespace monogen::specs::minimax_m3
