// What every monogen subcommand shares: the variant options (--rows, --tp, --arch, --config,
// knobs), the key they make, and building a variant: plan -> verify -> code object (cached).
#pragma once
#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <string>

#include "codegen/Compiler.h"
#include "ir/Plan.h"
#include "runtime/Cache.h"
#include "specs/minimax_m3/ModelConfig.h"

namespace monogen::tools {

struct VariantOptions {
  int rows = 8;
  int tp = 4;
  std::string arch = "gfx950";
  std::string config = "full";
  std::string experts = "all";
  bool trace = false;
  int dropMark = -1;
  bool noCache = false;
};

/// Adds --arch, --config and the knobs; with rowsTp also --rows and --tp (validated ranges).
void addVariantOptions(CLI::App* app, VariantOptions& o, bool rowsTp);

/// The model config the options name ("full", "reduced" or a config.json path).
specs::minimax_m3::ModelConfig configOf(const VariantOptions& o);

/// The key for (rows, tp) with the options' knobs. Throws InputError on an unknown arch.
ir::Key keyOf(const VariantOptions& o, const specs::minimax_m3::ModelConfig& cfg, int rows, int tp);

/// A built variant: its verified Plan, and its checked code object when compiled.
struct BuiltVariant {
  ir::Plan plan;
  std::shared_ptr<const runtime::CacheEntry> entry;  // null when not compiled
  codegen::CodeObjectInfo info;
  runtime::CacheSource source = runtime::CacheSource::Compiled;
  double seconds = 0;
};

/// The verified Plan of a key.
ir::Plan planOf(const specs::minimax_m3::ModelConfig& cfg, const ir::Key& key);

/// Plan, verify, compile (through `cache` when given), read back and check the metadata.
BuiltVariant buildVariant(const specs::minimax_m3::ModelConfig& cfg, const ir::Key& key, runtime::Cache* cache);

/// The cache the options ask for: the default directory, or none with --no-cache.
std::unique_ptr<runtime::Cache> openCache(const VariantOptions& o);

/// Writes bytes to path through a temp file and a rename: never a half-written file.
void writeFileAtomically(const std::string& path, const std::string& bytes);

}  // namespace monogen::tools
