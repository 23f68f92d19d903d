// monogen specs: the registered specs (SpecRegistry.h), one line each.
#include <fmt/format.h>

#include "tools/Commands.h"
#include "tools/SpecRegistry.h"
#include "tools/Variant.h"

namespace monogen::tools {

Run addSpecs(CLI::App& app) {
  app.add_subcommand("specs", "the specs monogen can generate (--spec ID), one line each");
  return [] {
    for (const SpecEntry& e : registeredSpecs()) fmt::print("{}  v{}  {}\n", e.id, e.version, e.description);
    flushStdout();
    return 0;
  };
}

}  // namespace monogen::tools
