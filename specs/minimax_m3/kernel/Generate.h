// The MiniMax-M3 FFN, attention and layer launches behind the generate-and-launch API: Plans from this spec (built and
// verified), code objects from codegen (compiled in-process, checked against the Plan and the
// target's limits), cached under the given cache.
#pragma once
#include <memory>

#include "runtime/Generator.h"
#include "specs/minimax_m3/kernel/ModelConfig.h"

namespace monogen::specs::minimax_m3 {

/// buildPlan + ir::verify: the Plan every way in (API, CLI, tests) uses.
ir::Plan verifiedPlan(const ModelConfig& cfg, const ir::Key& key);

/// A Generator for `cfg`. `cache` may be null (memory only); Cache(Cache::defaultDir(),
/// codegen::toolchainId()) is the usual one.
runtime::Generator makeGenerator(const ModelConfig& cfg, std::shared_ptr<runtime::Cache> cache);

/// buildAttentionPlan + ir::verify for a key of spec minimax_m3.attention.
ir::Plan verifiedAttentionPlan(const ModelConfig& cfg, const ir::Key& key);

/// A Generator of the attention launch (AttentionSpec.h) for `cfg`, as makeGenerator's.
runtime::Generator makeAttentionGenerator(const ModelConfig& cfg, std::shared_ptr<runtime::Cache> cache);

/// buildLayerPlan + ir::verify for a key of spec minimax_m3.layer (LayerVariant.h).
ir::Plan verifiedLayerPlan(const ModelConfig& cfg, const ir::Key& key);

/// A Generator of the one-launch decoder layer (LayerSpec.h) for `cfg`, as makeGenerator's: its
/// s13 / s2 declare the layout of the layer's FFN variant.
runtime::Generator makeLayerGenerator(const ModelConfig& cfg, std::shared_ptr<runtime::Cache> cache);

/// The layouts a launch of `plan` must declare on its tensor arguments (runtime::ArgLayouts), read
/// from its key as the spec it names: the FFN launch's and the layer's s13 and s2 in their FFN
/// variant's scales layout, none for the attention launch; InputError for another spec. Each
/// generator hands it to its Generator, so Generator::launch and RankRuntime::bind refuse
/// undeclared or other layouts.
runtime::ArgLayouts argLayouts(const ir::Plan& plan);

/// The default on-disk cache: $MONOGEN_CACHE_DIR or ~/.cache/monogen, keyed with this LLVM.
std::shared_ptr<runtime::Cache> defaultCache();

}  // namespace monogen::specs::minimax_m3
