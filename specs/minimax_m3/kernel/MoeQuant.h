// The numerics of the layer's routed and shared experts: A16W4 (bf16 xn and mids times MXFP4 on
// the bf16 MFMA) or A8W4 (MXFP8 xn and mids times MXFP4 on the scaled MFMA, LAYER-FRAMEWORKS.md §3).
#pragma once
#include <string>

namespace monogen::specs::minimax_m3 {

enum class MoeQuant { A16w4 = 0, A8w4 = 1 };
/// "a16w4", "a8w4".
const char* moeQuantName(MoeQuant q);
/// The MoeQuant named `name`; InputError at `where` naming the allowed values otherwise.
MoeQuant parseMoeQuant(const std::string& name, const std::string& where);

}  // namespace monogen::specs::minimax_m3
