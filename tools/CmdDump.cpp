// monogen dump: the Plan, the kernel IR, the LLVM IR or the ISA of one variant; with --launch
// layer, --what plan is the layer's placement (its Plan print heads --what ir).
#include <fmt/format.h>

#include "codegen/Compiler.h"
#include "ir/Error.h"
#include "ir/Printer.h"
#include "specs/minimax_m3/kernel/Generate.h"
#include "specs/minimax_m3/kernel/LayerPlacement.h"
#include "specs/minimax_m3/kernel/LayerVariant.h"
#include "tools/Commands.h"
#include "tools/NumericFlag.h"
#include "tools/Variant.h"

namespace monogen::tools {

namespace {

namespace mm = specs::minimax_m3;

/// The layer's placement at --rows S, or at every S 1..maxRows when --rows is not given.
int dumpLayerPlacement(const VariantOptions& v, const mm::LayerPlacementKnobs& knobs) {
  refuseForLayer(v, {"--pipeline"});
  const auto cfg = configOf(v);
  std::vector<int> rows;
  if (optionGiven(v, "--rows"))
    rows = {v.rows};
  else
    for (int s = 1; s <= cfg.maxRows; ++s) rows.push_back(s);
  fmt::print("minimax_m3 layer placement (the layer launch follows its split, merge, o, router and down bases, "
             "runs up round-robin from the shared base and its all-reduces in the form named below; not yet the up / "
             "gate row CTAs, the task shapes, the MoE form, the pool or the regions' offsets: docs/layer.md), --config "
             "{}, TP {}, wide_from {}, ag_rs_from {}\n",
             v.config, v.tp, knobs.wideFrom, knobs.agRsFrom);
  // with the sparse layer variant's split base: past the attention's index tasks where they fit
  for (int s : rows) {
    const int splitFrom = mm::LayerVariant::make(cfg, mm::makeLayerKey(cfg, s, v.tp)).placement.splitBase;
    fmt::print("\n{}", mm::LayerPlacement::make(cfg, s, v.tp, knobs, splitFrom).describe());
  }
  return 0;
}

}  // namespace

Run addDump(CLI::App& app) {
  struct Options {
    VariantOptions v;
    std::string what = "plan";
    std::string pipeline = "fast";
    mm::LayerPlacementKnobs layer;
  };
  auto o = std::make_shared<Options>();
  CLI::App* c = app.add_subcommand("dump", "print a variant's plan, kernel IR, LLVM IR (optimized) or ISA");
  addVariantOptions(c, o->v, true);
  c->add_option("--what", o->what,
                "plan, ir, llvm, llvm-raw (before the IR pipeline) or isa; --launch layer: plan is its placement")
      ->check(CLI::IsMember({"plan", "ir", "llvm", "llvm-raw", "isa"}))
      ->capture_default_str();
  c->add_option("--pipeline", o->pipeline, "the LLVM IR pipeline for llvm and isa: fast (the generator's) or O3")
      ->check(CLI::IsMember({"fast", "O3"}))
      ->capture_default_str();
  c->add_option("--wide-from", o->layer.wideFrom,
                "--launch layer --what plan: the MoE is wide (grouped by expert) from this S")
      ->check(numeric(1, 64))
      ->capture_default_str();
  c->add_option("--ag-rs-from", o->layer.agRsFrom,
                "--launch layer --what plan: the all-reduces are reduce-scatter + all-gather from this S")
      ->check(numeric(1, 64))
      ->capture_default_str();
  return [o] {
    if (isLayer(o->v) && o->what == "plan") return dumpLayerPlacement(o->v, o->layer);
    for (const char* n : {"--wide-from", "--ag-rs-from"})
      if (optionGiven(o->v, n))
        throw InputError(n, isLayer(o->v)
                                ? fmt::format("is a knob of the layer's placement (--what plan): the launch's code "
                                              "(--what {}) is on the default knobs", o->what)
                                : "is an option of --launch layer: not with the " + o->v.launch + " launch");
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
