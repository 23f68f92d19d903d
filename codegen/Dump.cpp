#include "codegen/Dump.h"

#include <cstdlib>

#include "codegen/Compiler.h"
#include "ir/Printer.h"
#include "support/AtomicFile.h"

namespace monogen::codegen {

std::optional<std::filesystem::path> dumpDirFromEnv() {
  const char* d = std::getenv("MONOGEN_DUMP_DIR");
  if (!d || !*d) return std::nullopt;
  return std::filesystem::path(d);
}

void dumpVariant(const ir::Plan& plan, const std::filesystem::path& dir) {
  support::makeDirectories(dir, 0755, "MONOGEN_DUMP_DIR " + dir.string());
  const std::string stem = plan.key.variantName();
  const std::string planText = ir::printPlan(plan);
  support::writeFileAtomically(dir / (stem + ".plan.txt"), {planText}, 0644);
  support::writeFileAtomically(dir / (stem + ".ir.txt"), {planText, "\n", ir::printKernel(plan)}, 0644);
  support::writeFileAtomically(dir / (stem + ".ll"), {llvmIr(plan, true)}, 0644);
  support::writeFileAtomically(dir / (stem + ".s"), {isaText(plan)}, 0644);
}

}  // namespace monogen::codegen
