// The specs the monogen CLI can generate, by id (--spec): each entry's entry points are what the
// commands need from a spec: MiniMax-M3's FFN launch and its attention launch (--launch attention).
#pragma once
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "ir/Plan.h"
#include "runtime/Cache.h"
#include "runtime/Generator.h"
#include "specs/minimax_m3/kernel/ModelConfig.h"

namespace monogen::tools {

struct VariantOptions;

/// One spec the CLI knows: its id and description, and the entry points the commands call.
struct SpecEntry {
  std::string_view id;           // the Key's spec id, "minimax_m3.ffn"
  std::string_view description;  // one line, for `monogen specs`
  int version = 0;               // the Key's spec version
  /// The key of (rows, tp) with the options' knobs; throws InputError on a bad option.
  ir::Key (*makeKey)(const VariantOptions& o, const specs::minimax_m3::ModelConfig& cfg, int rows, int tp);
  /// The verified Plan of `key`.
  ir::Plan (*plan)(const specs::minimax_m3::ModelConfig& cfg, const ir::Key& key);
  /// A Generator for `cfg`; `cache` may be null (memory only).
  runtime::Generator (*generator)(const specs::minimax_m3::ModelConfig& cfg, std::shared_ptr<runtime::Cache> cache);
};

/// Every registered spec, in the order `monogen specs` lists them.
std::span<const SpecEntry> registeredSpecs();

/// The entry of `id`, or nullptr.
const SpecEntry* findSpec(std::string_view id);

/// "unknown spec 'ID': expected one of ..." (the known ids).
std::string unknownSpecText(std::string_view id);

/// The entry of `id`; throws InputError at `where` (unknownSpecText) when there is none.
const SpecEntry& specNamed(std::string_view id, std::string_view where = "--spec");

/// "minimax_m3.ffn, ..." (for messages and --help).
std::string knownSpecIds();

}  // namespace monogen::tools
