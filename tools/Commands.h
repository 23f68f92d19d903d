// The monogen subcommands. Each registers its options on the CLI and returns its exit code.
#pragma once
#include <CLI/CLI.hpp>
#include <functional>

namespace monogen::tools {

using Run = std::function<int()>;

Run addEmit(CLI::App& app);   // monogen emit: code objects, one variant or all
Run addDump(CLI::App& app);   // monogen dump: plan, kernel IR, LLVM IR or ISA
Run addInfo(CLI::App& app);   // monogen info: the resource table per variant
Run addSim(CLI::App& app);    // monogen sim: run on the Sim device against the reference
Run addTrace(CLI::App& app);  // monogen trace: the traced variant on the Sim device -> trace JSON
Run addBench(CLI::App& app);  // monogen bench: Sim-device bytes read vs the minimum, per S, TP, experts
Run addCheck(CLI::App& app);  // monogen check: one seeded launch on sim, gfx950-run or hip vs the reference
Run addCache(CLI::App& app);  // monogen cache: key, ls, verify, clear, prune
Run addSpecs(CLI::App& app);  // monogen specs: the registered specs (--spec ID)

}  // namespace monogen::tools
