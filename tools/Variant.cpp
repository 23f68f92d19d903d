#include "tools/Variant.h"
#include "tools/NumericFlag.h"

#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "ir/Error.h"
#include "support/AtomicFile.h"
#include "specs/minimax_m3/kernel/Generate.h"
#include "specs/minimax_m3/kernel/LayerVariant.h"

namespace monogen::tools {

namespace mm = specs::minimax_m3;

void addVariantOptions(CLI::App* app, VariantOptions& o, bool rowsTp) {
  if (rowsTp) {
    app->add_option("--rows,-S", o.rows, "decode rows S, 1..16")->check(numeric(1, 16))->capture_default_str();
    app->add_option("--tp,-T", o.tp, "tensor-parallel size: 1, 2, 4 or 8")
        ->check(numeric(1, 8))
        ->check(CLI::IsMember({1, 2, 4, 8}))
        ->capture_default_str();
  }
  app->add_option("--spec", o.spec, "the spec to generate: " + knownSpecIds() + " (monogen specs lists them)")
      ->check(CLI::Validator([](std::string& id) { return findSpec(id) ? std::string() : unknownSpecText(id); }, "SPEC"))
      ->capture_default_str();
  app->add_option("--arch", o.arch, "target: gfx950 (MI350X/MI355X), optionally with :sramecc+:xnack-")
      ->capture_default_str();
  app->add_option("--config", o.config, "model dims: full (MiniMax-M3.1-Flash), reduced, or a config.json path")
      ->capture_default_str();
  app->add_option("--sum", o.sum, "which expert terms the combine sums: all, shared or routed (the experts knob)")
      ->check(CLI::IsMember({"all", "shared", "routed"}))
      ->capture_default_str();
  app->add_option("--scales", o.scales,
                  "the layout the kernel reads s13 / s2 in: e8m0_shuffle (AITER's, as vLLM / SGLang hold them) or "
                  "rowmajor (the scales knob)")
      ->check(CLI::IsMember({"e8m0_shuffle", "rowmajor"}))
      ->capture_default_str();
  app->add_option("--input", o.input,
                  "the launch's input: attn (the attention rows; o_proj's per-token FP8 quant and GEMM in the "
                  "launch) or part (this rank's o_proj partial; the input knob)")
      ->check(CLI::IsMember({"part", "attn"}))
      ->capture_default_str();
  app->add_flag("--trace", o.trace, "per-CTA, per-stage timestamps (the trace knob)");
  app->add_option("--drop-mark", o.dropMark, "fault test: this CTA never marks the launch done")
      ->check(numeric(-1, 1023));
  app->add_flag("--no-cache", o.noCache, "compile without the code-object cache");
  app->add_option("--launch", o.launch,
                  "the launch: ffn, attention (spec minimax_m3.attention, docs/attention.md) or layer (spec "
                  "minimax_m3.layer, docs/layer.md; dump --what plan prints its placement)")
      ->check(CLI::IsMember({"ffn", "attention", "layer"}))
      ->capture_default_str();
  app->add_option("--cache", o.cache, "--launch attention or layer: the KV cache mode, vllm or atom (the key's cache knob)")
      ->check(CLI::IsMember({"vllm", "atom"}));
  app->add_option("--layer-type,--layer", o.layerType,
                  "--launch attention or layer: the layer type, sparse (the indexer's selections) or full (every key)")
      ->check(CLI::IsMember({"sparse", "full"}));
  app->add_option("--moe", o.moe, "--launch layer: the experts' numerics, a16w4 or a8w4 (the key's moe knob)")
      ->check(CLI::IsMember({"a16w4", "a8w4"}));
  o.app = app;
}

void addAgRsFromOption(CLI::App* app, VariantOptions& o) {
  app->add_option("--ag-rs-from", o.agRsFrom,
                  "--launch layer: the FFN output's all-reduce is reduce-scatter + all-gather from this S (the key's "
                  "ag_rs_from knob)")
      ->check(numeric(1, 17))
      ->capture_default_str();
  app->add_option("--wide-from", o.wideFrom,
                  "--launch layer: A8W4's down stages every pick's MID once a CTA (wide) from this S (the key's "
                  "wide_from knob)")
      ->check(numeric(1, 17))
      ->capture_default_str();
  app->add_option("--index-cp-from", o.indexCpFrom,
                  "--launch layer (sparse, TP > 1): a row of more blocks than this is scored a slice a rank and its "
                  "candidates merged by the index head's owner (the key's index_cp_from knob; 0: off)")
      ->check(numeric(0, 1 << 20))
      ->capture_default_str();
}

void refuseAgRsFrom(const VariantOptions& o) {
  for (const char* name : {"--ag-rs-from", "--wide-from", "--index-cp-from"})
    if (optionGiven(o, name) && !isLayer(o))
      throw InputError(name, std::string("is a knob of --launch layer: not with the ") + o.launch + " launch");
}

void addContextOption(CLI::App* app, VariantOptions& o) {
  app->add_option("--context", o.context, "--launch attention or layer: keys each sequence holds before the launch")
      ->check(numeric(0, 1 << 20));
}

bool isAttention(const VariantOptions& o) {
  return !isLayer(o) && (o.launch == "attention" || o.spec == mm::kAttentionSpecId);
}

bool isLayer(const VariantOptions& o) { return o.launch == "layer" || o.spec == mm::kLayerSpecId; }

bool optionGiven(const VariantOptions& o, const char* name) {
  if (!o.app) return false;
  try {
    return o.app->count(name) > 0;
  } catch (const CLI::OptionNotFound&) {
    return false;  // the command has no such option
  }
}

void refuseForLayer(const VariantOptions& o, std::initializer_list<const char*> others) {
  const auto refuse = [&](const char* n) {
    if (optionGiven(o, n))
      throw InputError(n, "does not apply to --launch layer: its placement depends on --config, --rows, --tp, "
                          "--wide-from, --ag-rs-from and --index-cp-from alone");
  };
  for (const char* n : {"--spec", "--arch", "--sum", "--scales", "--input", "--trace", "--drop-mark", "--no-cache",
                        "--cache", "--layer-type", "--context", "--moe"})
    refuse(n);
  for (const char* n : others) refuse(n);
}

void refuseOtherLaunchOptions(const VariantOptions& o, std::initializer_list<const char*> ffnOnly,
                              std::initializer_list<const char*> attnOnly) {
  if (!o.app) return;
  const auto given = [&](const char* name) { return optionGiven(o, name); };
  if (isLayer(o)) {
    if (o.launch != "layer" && given("--launch"))
      throw InputError("--launch", fmt::format("'{}' with --spec {}: expected layer or no --launch", o.launch, o.spec));
    if (o.launch == "layer" && given("--spec") && o.spec != mm::kLayerSpecId)
      throw InputError("--spec", fmt::format("'{}' with --launch layer: expected {} or no --spec", o.spec,
                                             mm::kLayerSpecId));
    for (const char* n : {"--sum", "--scales", "--input", "--trace", "--drop-mark"})
      if (given(n)) throw InputError(n, "is an option of the FFN launch: not with --launch layer");
    for (const char* n : ffnOnly)
      if (given(n)) throw InputError(n, "is an option of the FFN launch: not with --launch layer");
    return;
  }
  if (given("--moe")) throw InputError("--moe", "is an option of --launch layer: not with the FFN or attention launch");
  if (isAttention(o)) {
    if (o.launch != "attention" && given("--launch"))
      throw InputError("--launch", fmt::format("'{}' with --spec {}: expected attention or no --launch", o.launch, o.spec));
    for (const char* n : {"--sum", "--scales", "--input", "--trace", "--drop-mark"})
      if (given(n)) throw InputError(n, "is an option of the FFN launch: not with --launch attention");
    for (const char* n : ffnOnly)
      if (given(n)) throw InputError(n, "is an option of the FFN launch: not with --launch attention");
    return;
  }
  for (const char* n : {"--cache", "--layer-type", "--context"})
    if (given(n)) throw InputError(n, "is an option of --launch attention: not with the FFN launch");
  for (const char* n : attnOnly)
    if (given(n)) throw InputError(n, "is an option of --launch attention: not with the FFN launch");
}

mm::AttentionKnobs attentionKnobsOf(const VariantOptions& o) {
  mm::AttentionKnobs k = attentionKnobsOf(o.cache, o.layerType);
  k.indexCpFrom = o.indexCpFrom;
  return k;
}

mm::AttentionKnobs attentionKnobsOf(const std::string& cache, const std::string& layerType) {
  mm::AttentionKnobs k;
  k.mode = mm::cacheModeOf(cache, "--cache");
  if (layerType != "sparse" && layerType != "full")
    throw InputError("--layer", fmt::format("'{}': expected sparse or full", layerType));
  k.fullLayer = layerType == "full";
  return k;
}

const SpecEntry& specOf(const VariantOptions& o) {
  refuseOtherLaunchOptions(o);
  return specNamed(isLayer(o)       ? std::string(mm::kLayerSpecId)
                   : isAttention(o) ? std::string(mm::kAttentionSpecId)
                                    : o.spec);
}

mm::ModelConfig configOf(const VariantOptions& o) {
  // A path must be a regular file of a config's size: a directory, a device (/dev/zero) or a
  // FIFO is refused before it is read.
  constexpr uintmax_t kMaxConfigBytes = 1 << 20;
  if (o.config != "full" && o.config != "reduced" && !o.config.empty()) {
    std::error_code ec;
    const std::filesystem::file_status st = std::filesystem::status(o.config, ec);
    if (!ec && std::filesystem::exists(st)) {
      if (!std::filesystem::is_regular_file(st))
        throw InputError("--config", fmt::format("'{}' is not a regular file: expected full, reduced or a config.json "
                                                 "path", o.config));
      const uintmax_t bytes = std::filesystem::file_size(o.config, ec);
      if (!ec && bytes > kMaxConfigBytes)
        throw InputError("--config", fmt::format("'{}' holds {} bytes: a config.json is at most {} bytes", o.config,
                                                 bytes, kMaxConfigBytes));
    }
  }
  return mm::ModelConfig::byName(o.config);
}

ir::Key keyOf(const VariantOptions& o, const mm::ModelConfig& cfg, int rows, int tp) {
  return specOf(o).makeKey(o, cfg, rows, tp);
}

runtime::Generator generatorOf(const VariantOptions& o, const mm::ModelConfig& cfg) {
  return specOf(o).generator(cfg, o.noCache ? nullptr : mm::defaultCache());
}

BuiltVariant buildVariant(runtime::Generator& gen, const ir::Key& key) {
  const auto t0 = std::chrono::steady_clock::now();
  BuiltVariant b;
  b.variant = gen.variant(key, true);
  b.info = codegen::readMetadata(b.variant->code->bytes);
  codegen::checkLimits(b.info, b.variant->plan, b.bytes().size());
  b.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return b;
}

void checkInjection(int injectRank, const CLI::Option& ticks) {
  if (ticks.count() > 0 && injectRank < 0)
    throw InputError("--inject-ticks", fmt::format("a stall needs a rank to stall: expected --inject-rank 0..TP-1 "
                                                   "with it, got --inject-rank {} (none)",
                                                   injectRank));
}

void flushStdout() {
  if (std::fflush(stdout) == 0) return;
  const int err = errno;
  throw RuntimeError("standard output",
                     fmt::format("a write failed: {}; the output is incomplete", std::strerror(err)));
}

void writeOutputFile(const std::string& path, std::string_view bytes) {
  support::writeFileAtomically(path, {bytes}, 0644);
}

specs::minimax_m3::LaunchInputOptions inputOptionsOf(const specs::minimax_m3::ModelConfig& cfg, int S, int experts, int padded) {
  if (padded < 0 || padded > S)
    throw InputError("--padded-rows", fmt::format("K = {}: expected 0..S = 0..{} (the last K rows get slot -1)",
                                                  padded, S));
  const int valid = S - padded, K = cfg.topk;
  if (experts != 0) {
    if (valid < 1)
      throw InputError("--experts", fmt::format("N = {}: steering needs a valid row, and all {} rows are padded "
                                                "(--padded-rows {}); use 0 (natural routing)",
                                                experts, S, padded));
    const int most = std::min(cfg.experts, valid * K);
    if (experts < K || experts > most)
      throw InputError("--experts",
                       fmt::format("N = {}: expected top-k {} .. min(experts {}, valid rows {} x top-k {}) = {}, or 0 "
                                   "for natural routing",
                                   experts, K, cfg.experts, valid, K, most));
  }
  specs::minimax_m3::LaunchInputOptions o;
  o.distinctExperts = experts;
  o.paddedRows = padded;
  return o;
}

}  // namespace monogen::tools
