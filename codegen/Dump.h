// MONOGEN_DUMP_DIR: every variant compiled leaves its plan, kernel IR, optimized LLVM IR and ISA
// in that directory, for looking at what the generator made without rerunning it.
#pragma once
#include <filesystem>
#include <optional>

#include "ir/Plan.h"

namespace monogen::codegen {

/// $MONOGEN_DUMP_DIR when set and non-empty.
std::optional<std::filesystem::path> dumpDirFromEnv();

/// Writes DIR/<variant>.plan.txt, .ir.txt, .ll and .s (each atomically; the directory is made if
/// need be). Throws RuntimeError naming the file on a write failure.
void dumpVariant(const ir::Plan& plan, const std::filesystem::path& dir);

}  // namespace monogen::codegen
