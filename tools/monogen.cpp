// monogen: the JIT kernel generator's command line. `monogen --help` lists the commands.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "ir/Error.h"
#include "tools/Commands.h"

namespace {

/// Flushes stdout and returns `code`, or, when a write to stdout failed (now or earlier: the
/// stream's error flag sticks), says so on stderr and returns non-zero: a table or verdict
/// that never reached its reader (`monogen info > /dev/full`) is not a success.
int finish(int code) {
  errno = 0;
  const int flushed = std::fflush(stdout);
  const int err = errno;
  if (flushed == 0 && !std::ferror(stdout)) return code;
  std::fprintf(stderr, "monogen: runtime error at standard output: a write failed: %s; the output is incomplete\n",
               err ? std::strerror(err) : "an earlier write failed");
  return code == 0 ? 2 : code;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace monogen::tools;
  CLI::App app{"monogen: fused decode monokernels for AMD MI350X/MI355X (gfx950), generated from a C++ DSL"};
  app.require_subcommand(0, 1);
  app.footer(
      "Environment:\n"
      "  MONOGEN_CACHE_DIR     the code-object cache directory (default ~/.cache/monogen, private: 0700)\n"
      "  MONOGEN_CACHE=off     no disk cache: code objects stay in the process's memory\n"
      "  MONOGEN_RECOMPILE=1   ignore cache hits: compile and rewrite\n"
      "  MONOGEN_RUN_ONLY=1    a cache miss is an error naming the variant, never a compile\n"
      "  MONOGEN_DUMP_DIR      every variant compiled leaves its plan, IR, LLVM IR and ISA there\n"
      "  MONOGEN_GFX950_RUN    the gfx950-run simulator (default <source>/../shared/tools/gfx950-run)");
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
  add(addCache);
  add(addSpecs);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help prints to stdout and exits 0; every usage error (CLI11's own too) exits 2, as bad input does
    return finish(app.exit(e) == 0 ? 0 : 2);
  }
  try {
    for (auto& [sub, run] : commands)
      if (sub->parsed()) return finish(run());
    std::fprintf(stderr, "monogen: a command is required: emit, dump, info, sim, trace, bench, check, cache or specs (monogen --help)\n");
    return 2;
  } catch (const monogen::Error& e) {
    std::fprintf(stderr, "monogen: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    if (std::ferror(stdout)) {  // fmt::print throws when a write to stdout fails
      std::fprintf(stderr, "monogen: runtime error at standard output: a write failed: %s; the output is incomplete\n",
                   e.what());
      return 2;
    }
    std::fprintf(stderr, "monogen: internal error: %s\n", e.what());
    return 3;
  }
  return 0;
}
