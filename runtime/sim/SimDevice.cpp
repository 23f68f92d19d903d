// The Sim device: compiles the plan's kernel into a flat SIMT program once per run, then runs
// one SimLaunch over every CTA of every rank.
#include "runtime/sim/SimDevice.h"

#include "runtime/sim/SimLaunch.h"
#include "runtime/sim/SimProgram.h"

namespace monogen::runtime {

SimDevice::SimDevice() = default;
SimDevice::~SimDevice() = default;

SimStats SimDevice::run(const ir::Plan& plan, const std::vector<std::vector<uint64_t>>& args, const SimOptions& opts) {
  const SimProgram prog = SimProgram::compile(plan);
  lastFrameBytes_ = prog.frameBytes;
  SimLaunch launch(mem_, plan, prog, args, opts);
  SimStats stats = launch.run();
  return stats;
}

}  // namespace monogen::runtime
