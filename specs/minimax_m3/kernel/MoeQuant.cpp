#include "specs/minimax_m3/kernel/MoeQuant.h"

#include <fmt/format.h>

#include "ir/Error.h"

namespace monogen::specs::minimax_m3 {

const char* moeQuantName(MoeQuant q) { return q == MoeQuant::A8w4 ? "a8w4" : "a16w4"; }

MoeQuant parseMoeQuant(const std::string& name, const std::string& where) {
  if (name == "a16w4") return MoeQuant::A16w4;
  if (name == "a8w4") return MoeQuant::A8w4;
  throw InputError(where, fmt::format("moe={}: expected a16w4 or a8w4", name));
}

}  // namespace monogen::specs::minimax_m3
