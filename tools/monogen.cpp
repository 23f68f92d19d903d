// monogen: the JIT kernel generator's command line. `monogen --help` lists the commands.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>

#include "ir/Error.h"
#include "tools/Commands.h"

int main(int argc, char** argv) {
  using namespace monogen::tools;
  CLI::App app{"monogen: fused decode monokernels for AMD MI350X/MI355X (gfx950), generated from a C++ DSL"};
  app.require_subcommand(0, 1);
  std::vector<std::pair<CLI::App*, Run>> commands;
  auto add = [&](Run (*f)(CLI::App&)) {
    const size_t before = app.get_subcommands({}).size();
    Run r = f(app);
    commands.push_back({app.get_subcommands({}).at(before), r});
  };
  add(addEmit);
  add(addDump);
  add(addInfo);
  add(addSim);
  add(addTrace);
  add(addBench);
  add(addCheck);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    for (auto& [sub, run] : commands)
      if (sub->parsed()) return run();
    std::fprintf(stderr, "monogen: a command is required: emit, dump, info, sim, trace or bench (monogen --help)\n");
    return 2;
  } catch (const monogen::Error& e) {
    std::fprintf(stderr, "monogen: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "monogen: internal error: %s\n", e.what());
    return 3;
  }
  return 0;
}
