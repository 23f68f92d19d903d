// What every monogen subcommand shares: the variant options (--spec, --rows, --tp, --arch,
// --config, knobs), the key they make, and building a variant: plan -> verify -> code object (cached).
#pragma once
#include <CLI/CLI.hpp>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "codegen/Compiler.h"
#include "ir/Plan.h"
#include "runtime/Cache.h"
#include "runtime/Generator.h"
#include "specs/minimax_m3/kernel/AttentionVariant.h"
#include "specs/minimax_m3/kernel/LayerPlacement.h"
#include "specs/minimax_m3/kernel/ModelConfig.h"
#include "specs/minimax_m3/testing/MoeInputs.h"
#include "tools/SpecRegistry.h"

namespace monogen::tools {

struct VariantOptions {
  std::string spec = "minimax_m3.ffn";  // --spec: the registered spec (SpecRegistry.h)
  int rows = 8;
  int tp = 4;
  std::string arch = "gfx950";
  std::string config = "full";
  std::string sum = "all";  // --sum: which expert terms the combine sums (the key's experts knob)
  std::string scales = "e8m0_shuffle";  // --scales: the e8m0 scales' layout (the key's scales knob)
  std::string input = "attn";  // --input: the launch's input, attn (o_proj in the launch) or part
  bool trace = false;
  int dropMark = -1;
  bool noCache = false;
  std::string launch = "ffn";       // --launch: ffn, attention (spec minimax_m3.attention) or layer
  std::string cache = "vllm";       // --cache (attention): the KV cache mode, vllm or atom
  std::string layerType = "sparse";  // --layer-type (attention): sparse or full
  std::string moe = "a16w4";        // --moe (layer): the experts' numerics, a16w4 or a8w4
  int context = 128;                // --context (attention, commands that run it): keys a sequence holds
  int agRsFrom = specs::minimax_m3::LayerPlacementKnobs{}.agRsFrom;                // --ag-rs-from (layer, commands that run it): the key's ag_rs_from knob
  int wideFrom = specs::minimax_m3::LayerPlacementKnobs{}.wideFrom;                // --wide-from (layer, with --ag-rs-from): the key's wide_from knob
  int indexCpFrom = 0;              // --index-cp-from (layer, with --ag-rs-from): the key's index_cp_from knob (0: off)
  const CLI::App* app = nullptr;    // the command the options were added to (which were given)
};

/// Adds --spec, --arch, --config and the knobs; with rowsTp also --rows and --tp (validated ranges).
void addVariantOptions(CLI::App* app, VariantOptions& o, bool rowsTp);

/// Adds --context (the attention launch's keys a sequence holds) to a command that runs the launch.
void addContextOption(CLI::App* app, VariantOptions& o);

/// Adds --ag-rs-from (the layer launch's ag_rs_from knob) to a command that runs the launch; with
/// another launch, refuseAgRsFrom names it.
void addAgRsFromOption(CLI::App* app, VariantOptions& o);
void refuseAgRsFrom(const VariantOptions& o);

/// Whether the options name the attention launch (--launch attention or its --spec) and not the layer.
bool isAttention(const VariantOptions& o);

/// Whether the options name the layer launch (--launch layer or its --spec, docs/layer.md).
bool isLayer(const VariantOptions& o);

/// Whether the option `name` was given on the command the options were added to.
bool optionGiven(const VariantOptions& o, const char* name);

/// With --launch layer: refuses (InputError naming the option) every variant option but --config,
/// --rows and --tp, and the command's own `others`.
void refuseForLayer(const VariantOptions& o, std::initializer_list<const char*> others = {});

/// Refuses (InputError naming the option, exit 2) an option of the other launch: the FFN's knobs
/// and `ffnOnly` with --launch attention or layer (which take the attention launch's options);
/// --cache, --layer-type, --context and `attnOnly` without; a --spec that is not --launch's.
void refuseOtherLaunchOptions(const VariantOptions& o, std::initializer_list<const char*> ffnOnly = {},
                              std::initializer_list<const char*> attnOnly = {});

/// The attention launch's knobs the options name.
specs::minimax_m3::AttentionKnobs attentionKnobsOf(const VariantOptions& o);
/// The knobs of a cache mode and a layer type ("sparse" | "full"); InputError naming the option.
specs::minimax_m3::AttentionKnobs attentionKnobsOf(const std::string& cache, const std::string& layerType);

/// The registered spec the options name: --launch attention's, else --spec's (InputError listing
/// the known ones when none); refuses the other launch's options (refuseOtherLaunchOptions).
const SpecEntry& specOf(const VariantOptions& o);

/// The model config the options name ("full", "reduced" or a config.json path).
specs::minimax_m3::ModelConfig configOf(const VariantOptions& o);

/// The key for (rows, tp) with the options' knobs. Throws InputError on an unknown arch.
ir::Key keyOf(const VariantOptions& o, const specs::minimax_m3::ModelConfig& cfg, int rows, int tp);

/// A built variant: its verified Plan and checked code object, and how long it took.
struct BuiltVariant {
  std::shared_ptr<const runtime::Variant> variant;
  codegen::CodeObjectInfo info;
  double seconds = 0;
  const ir::Plan& plan() const { return variant->plan; }
  const std::vector<uint8_t>& bytes() const { return variant->code->bytes; }
};

/// The generate-and-launch API's Generator for the options: their config and cache (the
/// default directory, or memory only with --no-cache).
runtime::Generator generatorOf(const VariantOptions& o, const specs::minimax_m3::ModelConfig& cfg);

/// The variant's code object (compiled or cached), its metadata read back and checked against
/// the Plan and the target's limits (a cached file is checked like a fresh one).
BuiltVariant buildVariant(runtime::Generator& gen, const ir::Key& key);

/// --inject-ticks given (`ticks` counted) with --inject-rank -1 (none): the stall would be
/// silently ignored, so it is refused (InputError). Without --inject-rank CLI11's needs() refuses it.
void checkInjection(int injectRank, const CLI::Option& ticks);

/// Flushes stdout; throws RuntimeError at "standard output" with the errno text when the write
/// fails (`monogen info > /dev/full`), so a command stops rather than work for no reader.
void flushStdout();

/// Writes a tool's output file (support::writeFileAtomically, mode 0644): never a half-written
/// file, never through a symlink. Check the path with support::checkOutputFile before the work.
void writeOutputFile(const std::string& path, std::string_view bytes);

/// The input options --experts N and --padded-rows K ask for, checked against the config and S:
/// K in 0..S; N = 0 (natural routing) or top-k .. min(experts, valid rows x top-k).
specs::minimax_m3::LaunchInputOptions inputOptionsOf(const specs::minimax_m3::ModelConfig& cfg, int S, int experts,
                                                     int padded);

}  // namespace monogen::tools
