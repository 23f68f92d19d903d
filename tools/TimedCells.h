// What `monogen sim|bench --timed` print and write for a run, whatever the launch: the critical
// path of a modeled run, its stage timeline and the --json file of the cells.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "runtime/sim/SimDevice.h"

namespace monogen::tools {

/// "ends: stage 'up' rank 0 CTA 3; issue 1.00, memory stall 2.00, flag wait 0.50, barrier 0.10 us".
std::string criticalPathText(const runtime::SimTimedResult& t);

/// Prints a modeled run under its seed line: the launch time, the critical path, its stages and
/// when the last wave left each stage.
void printTimed(const runtime::SimTimedResult& t);

/// Writes `cells` to `path` whole or not at all (a temporary beside it, then renamed); nothing
/// when `path` is empty. RuntimeError naming the path when it cannot.
void writeCellsJson(const std::string& path, const nlohmann::json& cells);

}  // namespace monogen::tools
