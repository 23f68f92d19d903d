// monogen dump: the Plan, the kernel IR, the LLVM IR or the ISA of one variant.
#include <fmt/format.h>

#include "codegen/Compiler.h"
#include "ir/Printer.h"
#include "specs/minimax_m3/Generate.h"
#include "tools/Commands.h"
#include "tools/Variant.h"

namespace monogen::tools {

Run addDump(CLI::App& app) {
  struct Options {
    VariantOptions v;
    std::string what = "plan";
  };
  auto o = std::make_shared<Options>();
  CLI::App* c = app.add_subcommand("dump", "print a variant's plan, kernel IR, LLVM IR (optimized) or ISA");
  addVariantOptions(c, o->v, true);
  c->add_option("--what", o->what, "plan, ir, llvm, llvm-raw (before O3) or isa")
      ->check(CLI::IsMember({"plan", "ir", "llvm", "llvm-raw", "isa"}))
      ->capture_default_str();
  return [o] {
    const auto cfg = configOf(o->v);
    const ir::Plan plan = specs::minimax_m3::verifiedPlan(cfg, keyOf(o->v, cfg, o->v.rows, o->v.tp));
    if (o->what == "plan") fmt::print("{}", ir::printPlan(plan));
    if (o->what == "ir") fmt::print("{}\n{}", ir::printPlan(plan), ir::printKernel(plan));
    if (o->what == "llvm") fmt::print("{}", codegen::llvmIr(plan, true));
    if (o->what == "llvm-raw") fmt::print("{}", codegen::llvmIr(plan, false));
    if (o->what == "isa") fmt::print("{}", codegen::isaText(plan));
    return 0;
  };
}

}  // namespace monogen::tools
