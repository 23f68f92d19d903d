#include "tools/Verdict.h"

#include <fmt/format.h>

namespace monogen::tools {

namespace mm = specs::minimax_m3;

std::string verdictOf(const mm::SimRun& run, const std::optional<mm::Mismatch>& m) {
  if (!run.valid) return "INVALID: " + run.error;  // an error word is set: no output of this launch is a result
  if (m && m->index >= 0) return fmt::format("MISMATCH: {}[{}] = {}, reference {}", m->tensor, m->index, m->got, m->want);
  if (m) return "MISMATCH: " + mm::describe(*m);  // a tensor missing or of another shape
  return "bit-exact";
}

}  // namespace monogen::tools
