// monogen dump: the Plan, the kernel IR, the LLVM IR or the ISA of one variant.
#include <fmt/format.h>

#include "codegen/Compiler.h"
#include "ir/Printer.h"
#include "specs/minimax_m3/kernel/Generate.h"
#include "tools/Commands.h"
#include "tools/Variant.h"

namespace monogen::tools {

Run addDump(CLI::App& app) {
  struct Options {
    VariantOptions v;
    std::string what = "plan";
    std::string pipeline = "fast";
  };
  auto o = std::make_shared<Options>();
  CLI::App* c = app.add_subcommand("dump", "print a variant's plan, kernel IR, LLVM IR (optimized) or ISA");
  addVariantOptions(c, o->v, true);
  c->add_option("--what", o->what, "plan, ir, llvm, llvm-raw (before the IR pipeline) or isa")
      ->check(CLI::IsMember({"plan", "ir", "llvm", "llvm-raw", "isa"}))
      ->capture_default_str();
  c->add_option("--pipeline", o->pipeline, "the LLVM IR pipeline for llvm and isa: fast (the generator's) or O3")
      ->check(CLI::IsMember({"fast", "O3"}))
      ->capture_default_str();
  return [o] {
    codegen::CompileOptions opts;
    opts.pipeline = o->pipeline == "O3" ? codegen::Pipeline::O3 : codegen::Pipeline::Fast;
    const auto cfg = configOf(o->v);
    const ir::Plan plan = specOf(o->v).plan(cfg, keyOf(o->v, cfg, o->v.rows, o->v.tp));
    if (o->what == "plan") fmt::print("{}", ir::printPlan(plan));
    if (o->what == "ir") fmt::print("{}\n{}", ir::printPlan(plan), ir::printKernel(plan));
    if (o->what == "llvm") fmt::print("{}", codegen::llvmIr(plan, true, opts));
    if (o->what == "llvm-raw") fmt::print("{}", codegen::llvmIr(plan, false));
    if (o->what == "isa") fmt::print("{}", codegen::isaText(plan, opts));
    return 0;
  };
}

}  // namespace monogen::tools
