#include "specs/minimax_m3/kernel/ModelConfig.h"

#include <fmt/format.h>

#include <cstdint>
#include <fstream>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "ir/Error.h"
#include "runtime/JsonBrief.h"

namespace monogen::specs::minimax_m3 {

namespace {

using nlohmann::json;

// ------------------------------------------------------------------------------- the bounds
// Each field's range, checked at load and by validate(): what the kernel builds for with 512
// threads on gfx950, with no spill and within the LDS (measured: docs/minimax-m3-kernel.md).
struct IntField {
  const char* name;  // the HF field (the name messages use)
  int64_t lo, hi;
  int64_t multiple;  // 1: any
  const char* why;   // a few words for the message
};

// hidden: a multiple of 512 (the router's 4, 8 or 16 parts of a multiple of 128 columns), at most
// 8192 (up's prefetched weights spill VGPRs above; why: docs/minimax-m3-kernel.md).
constexpr IntField kHidden{"hidden_size", 512, 8192, 512,
                           "the router's parts of 128 columns; up's prefetched weights spill VGPRs above 8192"};
// routed experts: router tiles of 16 experts (the MFMA's 16 rows); route's wave 0 holds two
// experts a lane (lane, lane + 64), so at most 128.
constexpr IntField kExperts{"num_local_experts", 16, 128, 16,
                            "router tiles of 16; route holds two experts a lane of one wave"};
// top-k: the table's threads take one pick each (maxRows x top-k <= 512 threads: 32) and route's
// lane k of wave 0 publishes pick k (64); route and the combine unroll k. At most 8, the bound
// before too (the model has 4): every corner above builds with it, and 8 ran bit for bit on the
// Sim device. 32 spills SGPRs (11 at the model's hidden 6144, S=2 TP=1; 13 at hidden 8192), so
// more would need every corner rebuilt (16 built at the few variants tried).
constexpr IntField kTopk{"num_experts_per_tok", 1, 8, 1, "the largest top-k the launch has been checked at"};
static_assert(kTopk.hi <= kExperts.lo, "top-k <= routed experts holds for every config in range");
// the one shared expert, fused as expert `experts` with the routed experts' shape.
constexpr IntField kShared{"n_shared_experts", 1, 1, 1, "the launch fuses exactly one shared expert"};
// intermediate: I / TP a multiple of 32 (one e8m0 block; up's tile pairs of 16) for TP up to 8.
// At most 8192: the largest built.
constexpr IntField kInter{"moe_intermediate_size", 256, 8192, 256,
                          "I / TP a multiple of 32 for TP 1..8"};
// CTAs: the persistent grid's CTAs wait on each other, so all must be resident at once. A
// 512-thread CTA at up to 256 VGPRs a wave fills a CU (8 waves, 2 a SIMD of 512), and MI350X /
// MI355X have 256 CUs. At least 8: the smallest grid the launch has been run at (the bound
// before was 8 too).
constexpr IntField kBlocks{"monogen_blocks", 8, 256, 1, "all CTAs resident: one a CU, 256 CUs"};
// layers: only recorded (the launch is one sparse layer's FFN); a sanity bound.
constexpr IntField kLayers{"num_hidden_layers", 1, 1024, 1, "a sanity bound"};
constexpr IntField kFirstSparse{"first_k_dense_replace", 0, 1023, 1, "below num_hidden_layers"};
// not read from config.json: the launch is written for 512 threads; S is 1..16 (a slot's 16
// columns are the MFMA's 16 columns, a row mask an i32's bits).
constexpr IntField kThreads{"threads", 512, 512, 1, "the launch is written for 512 threads a CTA"};
// attention: o_proj's input is heads x head_dim wide (MiniMax-M3: 64 x 128). Only the launch with
// o_proj inside reads them (Layout: heads x head_dim / TP a multiple of 128, the GEMM's 4 K parts
// of 32-K MFMA steps); the bounds are a sanity range.
constexpr IntField kHeads{"num_attention_heads", 1, 256, 1, "a sanity bound"};
constexpr IntField kHeadDim{"head_dim", 1, 512, 1, "a sanity bound (Layout checks the width a rank)"};
constexpr IntField kMaxRows{"maxRows", 1, 16, 1, "a slot's columns are the MFMA's 16"};
constexpr int64_t kMaxMoeLayerFreq = 1024;
// --- the attention side (docs/attention.md): each field's own range; the rules across fields are
// validateAttention's, which only the attention launch calls (an FFN config is not refused for them).
constexpr IntField kKvHeads{"num_key_value_heads", 1, 64, 1, "a sanity bound (it must divide the query heads)"};
// rotary: pairs (d, d + rotary/2) on one head task's lanes of 4 channels: a multiple of 8.
constexpr IntField kRotary{"rotary_dim", 8, 512, 8, "RoPE's channel pairs on lanes of 4 channels"};
constexpr IntField kIndexHeads{"sparse_num_index_heads", 1, 64, 1, "one index head a KV head"};
// head widths: the FP8 / bf16 MFMA's K steps of 32 and the page-16 layout's 16-channel groups.
constexpr IntField kIndexDim{"sparse_index_dim", 32, 256, 32, "the MFMA's K steps of 32"};
// the cache block, the scored block and the selection: what vLLM's and ATOM's kernels require.
constexpr IntField kIndexBlock{"sparse_block_size", 128, 128, 1,
                               "the KV cache block and the scored block: vLLM's and ATOM's kernels require 128"};
constexpr IntField kIndexTopk{"sparse_topk_blocks", 16, 16, 1,
                              "8 splits of 256 keys over 16 blocks: vLLM's and ATOM's kernels require 16"};
constexpr IntField kIndexLocal{"sparse_local_block", 1, 1, 1, "vLLM's and ATOM's kernels require 1"};
constexpr IntField kIndexInit{"sparse_init_block", 0, 0, 1, "vLLM's and ATOM's kernels require 0"};

struct NumField {
  const char* name;
  double lo, hi;
  bool loOpen;  // (lo, hi] instead of [lo, hi]
  const char* why;
};

// eps: added to the f32 mean of squares. Positive, and at least 1e-12 (BERT's, the smallest in
// use; far above f32's smallest normal, so f32(eps) is never 0 or flushed, and an all-zero row
// never gets rstd = inf); at most 1e-2 (models use 1e-5 and 1e-6): a typo guard.
constexpr NumField kEps{"rms_norm_eps", 1e-12, 1e-2, false, "models use 1e-5 or 1e-6"};
// the routed weights' scale (f32 in the kernel): 0 turns the routed experts off and a negative
// scale flips them; models use 1 to 2.83 (MiniMax-M3 2.0); at most 64: a typo guard.
constexpr NumField kScale{"routed_scaling_factor", 0, 64, true, "models use 1 to 2.83"};
// SwiGLU-OAI's clamp: gate <= limit, -limit <= up <= limit; a limit <= 0 inverts the clamp.
// gpt-oss and MiniMax-M3 use 7; at most 1000 (SwiGLU's largest output, limit x (limit + 1),
// stays far inside bf16 and f32): a typo guard.
constexpr NumField kLimit{"swiglu_limit", 0, 1000, true, "gpt-oss and MiniMax-M3 use 7"};
// SwiGLU-OAI's sigmoid slope: 0 makes sigmoid a constant 1/2, a negative slope flips it;
// models use 1.702; at most 100: a typo guard.
constexpr NumField kAlpha{"swiglu_alpha", 0, 100, true, "gpt-oss and MiniMax-M3 use 1.702"};
// RoPE's base: models use 1e4 to 5e6 (MiniMax-M3); above 1 (theta^(-2i/d) must fall with i).
constexpr NumField kTheta{"rope_theta", 1, 1e9, true, "models use 1e4 to 5e6"};

std::string expectedText(const IntField& f) {
  std::string s = f.lo == f.hi ? fmt::format("the integer {}", f.lo) : fmt::format("an integer in {}..{}", f.lo, f.hi);
  if (f.multiple > 1) s += fmt::format(", a multiple of {}", f.multiple);
  return s + fmt::format(" ({})", f.why);
}
std::string expectedText(const NumField& f) {
  return fmt::format("a number in {}{}, {}] ({})", f.loOpen ? "(" : "[", f.lo, f.hi, f.why);
}
bool fits(int64_t v, const IntField& f) { return v >= f.lo && v <= f.hi && v % f.multiple == 0; }
bool fits(double v, const NumField& f) { return (f.loOpen ? v > f.lo : v >= f.lo) && v <= f.hi; }  // NaN: false

/// "field 'name' = value: expected ..."
std::string fieldText(const std::string& name, const std::string& value, const std::string& expected) {
  return fmt::format("field '{}' = {}: expected {}", name, value, expected);
}
/// A JSON value as the file has it, cut to a readable length. A value nested below its first
/// level shows as runtime::jsonBrief does ([[...], ...]): dump() recurses once a level.
std::string shown(const json& v) {
  for (const json& e : v)
    if (e.is_structured()) return runtime::jsonBrief(v);
  std::string s = v.dump();
  if (s.size() > 80) s = s.substr(0, 77) + "...";
  return s;
}

/// The names of the fields with aliases, as the file spells them (validate: the HF defaults).
struct Names {
  std::string experts = kExperts.name;
  std::string inter = kInter.name;
  std::string shared = kShared.name;
};

/// Every rule on a config's values: the ranges, then the rules across fields.
void check(const ModelConfig& c, const std::string& where, const Names& n) {
  auto intField = [&](int64_t v, const IntField& f, const std::string& name) {
    if (!fits(v, f)) throw InputError(where, fieldText(name, std::to_string(v), expectedText(f)));
  };
  auto numField = [&](double v, const NumField& f) {
    if (!fits(v, f)) throw InputError(where, fieldText(f.name, fmt::format("{}", v), expectedText(f)));
  };
  intField(c.hidden, kHidden, kHidden.name);
  intField(c.experts, kExperts, n.experts);
  intField(c.topk, kTopk, kTopk.name);
  intField(c.sharedExperts, kShared, n.shared);
  intField(c.intermediate, kInter, n.inter);
  intField(c.blocks, kBlocks, kBlocks.name);
  intField(c.threads, kThreads, kThreads.name);
  intField(c.maxRows, kMaxRows, kMaxRows.name);
  intField(c.heads, kHeads, kHeads.name);
  intField(c.headDim, kHeadDim, kHeadDim.name);
  intField(c.layers, kLayers, kLayers.name);
  intField(c.firstSparseLayer, kFirstSparse, kFirstSparse.name);
  numField(c.rmsEps, kEps);
  numField(c.routedScale, kScale);
  numField(c.swigluLimit, kLimit);
  numField(c.swigluAlpha, kAlpha);
  intField(c.kvHeads, kKvHeads, kKvHeads.name);
  intField(c.rotaryDim, kRotary, kRotary.name);
  intField(c.indexHeads, kIndexHeads, kIndexHeads.name);
  intField(c.indexHeadDim, kIndexDim, kIndexDim.name);
  intField(c.indexBlock, kIndexBlock, kIndexBlock.name);
  intField(c.indexTopk, kIndexTopk, kIndexTopk.name);
  intField(c.indexLocal, kIndexLocal, kIndexLocal.name);
  intField(c.indexInit, kIndexInit, kIndexInit.name);
  numField(c.ropeTheta, kTheta);
  if (c.firstSparseLayer >= c.layers)
    throw InputError(where, fieldText(kFirstSparse.name, std::to_string(c.firstSparseLayer),
                                      fmt::format("0..{}, below 'num_hidden_layers' = {}", c.layers - 1, c.layers)));
  if (c.sparseLayers < 1 || c.sparseLayers > c.layers - c.firstSparseLayer)
    throw InputError(where, fieldText("sparseLayers", std::to_string(c.sparseLayers),
                                      fmt::format("1..{} (layers {}..{})", c.layers - c.firstSparseLayer,
                                                  c.firstSparseLayer, c.layers - 1)));
}

// ------------------------------------------------------------------------------- the reader

class Reader {
 public:
  Reader(const json& j, const std::string& path) : j_(j), path_(path) {}

  /// The one of `names` the file has (the first; a second that disagrees is refused), or none.
  std::optional<std::string> find(std::initializer_list<const char*> names) const {
    std::optional<std::string> at;
    for (const char* nm : names) {
      if (!j_.contains(nm)) continue;
      if (!at) {
        at = nm;
      } else if (j_[nm] != j_[*at]) {
        throw InputError(path_, fmt::format("fields '{}' = {} and '{}' = {} name the same value and disagree", *at,
                                            shown(j_[*at]), nm, shown(j_[nm])));
      }
    }
    return at;
  }
  /// The value of `name`, a JSON integer (not a boolean, not 6144.0) that fits `f`, as int.
  int intAt(const std::string& name, const IntField& f) const {
    const json& v = j_[name];
    std::optional<int64_t> x;
    if (v.is_number_unsigned()) {
      const uint64_t u = v.get<uint64_t>();
      if (u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) x = static_cast<int64_t>(u);
    } else if (v.is_number_integer()) {
      x = v.get<int64_t>();
    }
    if (!x || !fits(*x, f)) throw InputError(path_, fieldText(name, shown(v), expectedText(f)));
    return static_cast<int>(*x);  // in f's range: every bound fits an int
  }
  /// Reads the first of `names` into `out` (range-checked); false when the file has none.
  bool readInt(std::initializer_list<const char*> names, const IntField& f, int& out, bool required,
               std::string* usedName = nullptr) const {
    const auto at = find(names);
    if (!at) {
      if (required)
        throw InputError(path_, fmt::format("missing field '{}' (a MiniMax-M3 text config has it; expected {})",
                                            *names.begin(), expectedText(f)));
      return false;
    }
    out = intAt(*at, f);
    if (usedName) *usedName = *at;
    return true;
  }
  /// A JSON number (integer or not; not a boolean, not null) in `f`.
  void readNum(const NumField& f, double& out) const {
    if (!j_.contains(f.name)) return;
    const json& v = j_[f.name];
    if (!v.is_number() || !fits(v.get<double>(), f))
      throw InputError(path_, fieldText(f.name, shown(v), expectedText(f)));
    out = v.get<double>();
  }

  const json& at(const char* name) const { return j_[name]; }
  bool has(const char* name) const { return j_.contains(name); }
  const std::string& path() const { return path_; }

 private:
  const json& j_;
  const std::string& path_;
};

/// The sparse (MoE) layers the file names: mlp_layer_types and moe_layer_freq where present,
/// which must agree; else layers first_k_dense_replace.. . Sets layers, firstSparseLayer and
/// sparseLayers. `haveLayers` / `haveFirst`: the file gave num_hidden_layers /
/// first_k_dense_replace.
void readLayerPattern(const Reader& r, ModelConfig& c, bool haveLayers, bool haveFirst) {
  const std::string& path = r.path();
  std::optional<std::vector<bool>> types, freq;
  auto lengthText = [&] {
    return haveLayers ? fmt::format("num_hidden_layers ({})", c.layers) : fmt::format("1..{}", kLayers.hi);
  };
  if (r.has("mlp_layer_types")) {
    const json& v = r.at("mlp_layer_types");
    const std::string expect = fmt::format(
        "a list of {} strings, each \"dense\", \"sparse\" or \"moe\" (one a layer)", lengthText());
    if (!v.is_array() || v.empty() || v.size() > static_cast<size_t>(kLayers.hi) ||
        (haveLayers && v.size() != static_cast<size_t>(c.layers)))
      throw InputError(path, fieldText("mlp_layer_types", shown(v), expect));
    types.emplace();
    for (size_t i = 0; i < v.size(); ++i) {
      const json& e = v[i];
      if (!e.is_string() || (e != "dense" && e != "sparse" && e != "moe"))
        throw InputError(path, fieldText(fmt::format("mlp_layer_types[{}]", i), shown(e),
                                         "\"dense\", \"sparse\" or \"moe\""));
      types->push_back(e != "dense");
    }
    if (!haveLayers) c.layers = static_cast<int>(v.size());
  }
  if (r.has("moe_layer_freq")) {
    const json& v = r.at("moe_layer_freq");
    freq.emplace();
    if (v.is_array()) {  // one 0 / 1 a layer
      if (v.empty() || v.size() > static_cast<size_t>(kLayers.hi) ||
          ((haveLayers || types) && v.size() != static_cast<size_t>(c.layers)))
        throw InputError(path, fieldText("moe_layer_freq", shown(v),
                                         fmt::format("an integer 1..{} (every n-th layer from first_k_dense_replace "
                                                     "is sparse) or a list of {} integers 0 or 1 (1: sparse)",
                                                     kMaxMoeLayerFreq, lengthText())));
      for (size_t i = 0; i < v.size(); ++i) {
        const json& e = v[i];
        if (!e.is_number_integer() || (e != 0 && e != 1))
          throw InputError(path, fieldText(fmt::format("moe_layer_freq[{}]", i), shown(e), "the integer 0 or 1"));
        freq->push_back(e == 1);
      }
      if (!haveLayers && !types) c.layers = static_cast<int>(v.size());
    } else {  // every n-th layer from first_k_dense_replace (DeepSeek's rule)
      const IntField f{"moe_layer_freq", 1, kMaxMoeLayerFreq, 1,
                       "every n-th layer from first_k_dense_replace is sparse; or a list of 0 / 1 a layer"};
      const int n = r.intAt("moe_layer_freq", f);
      for (int i = 0; i < c.layers; ++i) freq->push_back(i >= c.firstSparseLayer && i % n == 0);
    }
  }
  if (types && freq && *types != *freq) {
    size_t i = 0;
    while ((*types)[i] == (*freq)[i]) ++i;
    throw InputError(path, fmt::format("fields 'mlp_layer_types' and 'moe_layer_freq' disagree at layer {}: {} and {}",
                                       i, (*types)[i] ? "sparse" : "dense", (*freq)[i] ? "sparse" : "dense"));
  }
  const std::optional<std::vector<bool>>& mask = types ? types : freq;
  if (!mask) {
    c.sparseLayers = c.layers - c.firstSparseLayer;  // first_k_dense_replace.. (check() bounds it)
    return;
  }
  int first = -1, count = 0;
  for (size_t i = 0; i < mask->size(); ++i)
    if ((*mask)[i]) {
      if (first < 0) first = static_cast<int>(i);
      ++count;
    }
  const char* from = types ? "mlp_layer_types" : "moe_layer_freq";
  const bool explicitList = types || r.at("moe_layer_freq").is_array();
  if (count == 0)
    throw InputError(path, fieldText(from, shown(r.at(from)),
                                     "at least one sparse (MoE) layer: the kernel is a sparse layer's FFN"));
  if (haveFirst && explicitList && first < c.firstSparseLayer)  // layers below it are dense
    throw InputError(path, fieldText(kFirstSparse.name, std::to_string(c.firstSparseLayer),
                                     fmt::format("at most {}, the first sparse layer of '{}'", first, from)));
  c.firstSparseLayer = first;
  c.sparseLayers = count;
}

/// sparse_attention_config's indexer fields, each checked for type and range where present.
void readSparseAttention(const Reader& r, ModelConfig& c) {
  if (!r.has("sparse_attention_config")) return;
  const json& v = r.at("sparse_attention_config");
  if (!v.is_object())
    throw InputError(r.path(), fieldText("sparse_attention_config", shown(v), "an object (the indexer's fields)"));
  const Reader s(v, r.path());
  s.readInt({"sparse_num_index_heads"}, kIndexHeads, c.indexHeads, false);
  s.readInt({"sparse_index_dim"}, kIndexDim, c.indexHeadDim, false);
  s.readInt({"sparse_block_size"}, kIndexBlock, c.indexBlock, false);
  s.readInt({"sparse_topk_blocks"}, kIndexTopk, c.indexTopk, false);
  s.readInt({"sparse_local_block"}, kIndexLocal, c.indexLocal, false);
  s.readInt({"sparse_init_block"}, kIndexInit, c.indexInit, false);
}

/// layer_types ("minimax_m3_sparse" / "full_attention", one a layer) and / or
/// sparse_attention_config.sparse_attention_freq (a list of 0 / 1 a layer, 1: sparse), which must
/// agree; neither: layers below first_k_dense_replace full, the rest sparse.
void readLayerTypes(const Reader& r, ModelConfig& c) {
  const std::string& path = r.path();
  std::optional<std::vector<bool>> types, freq;
  if (r.has("layer_types")) {
    const json& v = r.at("layer_types");
    const std::string expect = fmt::format(
        "a list of num_hidden_layers ({}) strings, each \"minimax_m3_sparse\" or \"full_attention\"", c.layers);
    if (!v.is_array() || v.size() != static_cast<size_t>(c.layers)) throw InputError(path, fieldText("layer_types", shown(v), expect));
    types.emplace();
    for (size_t i = 0; i < v.size(); ++i) {
      const json& e = v[i];
      if (!e.is_string() || (e != "minimax_m3_sparse" && e != "full_attention"))
        throw InputError(path, fieldText(fmt::format("layer_types[{}]", i), shown(e),
                                         "\"minimax_m3_sparse\" or \"full_attention\""));
      types->push_back(e == "full_attention");
    }
  }
  if (r.has("sparse_attention_config") && r.at("sparse_attention_config").contains("sparse_attention_freq")) {
    const json& v = r.at("sparse_attention_config")["sparse_attention_freq"];
    const std::string expect =
        fmt::format("a list of num_hidden_layers ({}) integers 0 or 1 (1: a sparse layer)", c.layers);
    if (!v.is_array() || v.size() != static_cast<size_t>(c.layers))
      throw InputError(path, fieldText("sparse_attention_config.sparse_attention_freq", shown(v), expect));
    freq.emplace();
    for (size_t i = 0; i < v.size(); ++i) {
      const json& e = v[i];
      if (!e.is_number_integer() || (e != 0 && e != 1))
        throw InputError(path, fieldText(fmt::format("sparse_attention_freq[{}]", i), shown(e), "the integer 0 or 1"));
      freq->push_back(e == 0);
    }
  }
  if (types && freq && *types != *freq) {
    size_t i = 0;
    while ((*types)[i] == (*freq)[i]) ++i;
    throw InputError(path, fmt::format("fields 'layer_types' and 'sparse_attention_freq' disagree at layer {}: {} and {}",
                                       i, (*types)[i] ? "full" : "sparse", (*freq)[i] ? "full" : "sparse"));
  }
  if (types) c.fullAttention = *types;
  else if (freq) c.fullAttention = *freq;
  else c.fullAttention = ModelConfig::defaultLayerTypes(c.layers, c.firstSparseLayer);
}

}  // namespace

ModelConfig ModelConfig::reduced() {
  ModelConfig c;
  c.hidden = 1536;
  c.experts = 16;
  c.intermediate = 768;
  c.blocks = 32;
  c.heads = 16;
  c.headDim = 64;
  c.kvHeads = 4;
  c.rotaryDim = 32;
  c.indexHeads = 4;
  c.indexHeadDim = 64;
  return c;
}

std::string ModelConfig::attentionCanonical() const {
  std::string types;
  for (bool f : fullAttention) types += f ? 'F' : 'S';
  return fmt::format(
      "{} kv_heads={} rotary={} theta={} index_heads={} index_dim={} block={} topk={} local={} init={} "
      "layer_types={}",
      canonical(), kvHeads, rotaryDim, ropeTheta, indexHeads, indexHeadDim, indexBlock, indexTopk, indexLocal,
      indexInit, types);
}

bool ModelConfig::isFullAttention(int layer) const {
  if (layer < 0 || layer >= static_cast<int>(fullAttention.size()))
    throw InputError("layer types", fmt::format("layer {}: expected 0..{}", layer,
                                                static_cast<int>(fullAttention.size()) - 1));
  return fullAttention[static_cast<size_t>(layer)];
}

void ModelConfig::validateAttention(const std::string& where) const {
  validate(where);
  if (heads % kvHeads != 0)
    throw InputError(where, fieldText(kKvHeads.name, std::to_string(kvHeads),
                                      fmt::format("a divisor of num_attention_heads = {} (GQA groups)", heads)));
  if (indexHeads != kvHeads)
    throw InputError(where, fieldText(kIndexHeads.name, std::to_string(indexHeads),
                                      fmt::format("num_key_value_heads = {}: one index head a KV head", kvHeads)));
  if (headDim % 32 != 0 || headDim < 32 || headDim > 256)
    throw InputError(where, fieldText(kHeadDim.name, std::to_string(headDim),
                                      "a multiple of 32 in 32..256 (the FP8 MFMA's K steps; page-16 rows of 16)"));
  if (rotaryDim > headDim)
    throw InputError(where, fieldText(kRotary.name, std::to_string(rotaryDim),
                                      fmt::format("at most head_dim = {}", headDim)));
  if (hidden % 512 != 0)
    throw InputError(where, fieldText(kHidden.name, std::to_string(hidden),
                                      "a multiple of 512 (the QKV GEMV's 64-K chunks over 8 waves)"));
  if (static_cast<int>(fullAttention.size()) != layers)
    throw InputError(where, fmt::format("layer_types has {} entries: expected num_hidden_layers = {}",
                                        fullAttention.size(), layers));
}

std::string ModelConfig::canonical() const {
  return fmt::format(
      "hidden={} experts={} topk={} shared={} inter={} scale={} eps={} limit={} alpha={} blocks={} threads={} "
      "heads={} head_dim={}",
      hidden, experts, topk, sharedExperts, intermediate, routedScale, rmsEps, swigluLimit, swigluAlpha, blocks,
      threads, heads, headDim);
}

void ModelConfig::validate(const std::string& where) const {
  check(*this, where, Names{});
}

ModelConfig ModelConfig::fromHfJson(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path, "cannot open the config file (expected a Hugging Face config.json)");
  return fromHfJsonText(std::string(std::istreambuf_iterator<char>(in), {}), path);
}

ModelConfig ModelConfig::fromHfJsonText(const std::string& text, const std::string& path) {
  json j;
  try {
    j = json::parse(text);
  } catch (const std::exception& e) {
    throw InputError(path, std::string("not valid JSON: ") + e.what());
  }
  if (!j.is_object())
    throw InputError(path, fmt::format("the file holds {}: expected a JSON object (a Hugging Face config.json)",
                                       shown(j)));
  if (j.contains("text_config")) {
    if (!j["text_config"].is_object())
      throw InputError(path, fieldText("text_config", shown(j["text_config"]), "an object (the text model's config)"));
    json t = std::move(j["text_config"]);  // moved: a copy recurses once a nesting level
    j = std::move(t);
  }
  const Reader r(j, path);
  ModelConfig c;
  Names n;
  r.readInt({"hidden_size"}, kHidden, c.hidden, true);
  r.readInt({"num_local_experts", "n_routed_experts", "num_experts"}, kExperts, c.experts, true, &n.experts);
  r.readInt({"num_experts_per_tok"}, kTopk, c.topk, true);
  // moe_intermediate_size is the experts'; intermediate_size, when both are there, is a dense
  // layer's (not read); alone (MiniMax-M2 style) it is the experts'.
  if (!r.readInt({"moe_intermediate_size"}, kInter, c.intermediate, false, &n.inter) &&
      !r.readInt({"intermediate_size"}, kInter, c.intermediate, false, &n.inter))
    throw InputError(path, fmt::format("missing field 'moe_intermediate_size' (or 'intermediate_size'; a MiniMax-M3 "
                                       "text config has it; expected {})",
                                       expectedText(kInter)));
  r.readInt({"n_shared_experts", "num_shared_experts"}, kShared, c.sharedExperts, false, &n.shared);
  const bool haveLayers = r.readInt({"num_hidden_layers"}, kLayers, c.layers, false);
  const bool haveFirst = r.readInt({"first_k_dense_replace"}, kFirstSparse, c.firstSparseLayer, false);
  r.readInt({"monogen_blocks"}, kBlocks, c.blocks, false);
  r.readInt({"num_attention_heads"}, kHeads, c.heads, false);
  r.readInt({"head_dim"}, kHeadDim, c.headDim, false);
  r.readNum(kScale, c.routedScale);
  r.readNum(kEps, c.rmsEps);
  r.readNum(kLimit, c.swigluLimit);
  r.readNum(kAlpha, c.swigluAlpha);
  r.readInt({"num_key_value_heads"}, kKvHeads, c.kvHeads, false);
  r.readInt({"rotary_dim"}, kRotary, c.rotaryDim, false);
  r.readNum(kTheta, c.ropeTheta);
  readSparseAttention(r, c);
  if (r.has("shared_intermediate_size")) {
    // the shared expert is fused as expert `experts`: it has the routed experts' intermediate
    const IntField f{"shared_intermediate_size", c.intermediate, c.intermediate, 1,
                     "the routed experts' intermediate: the launch fuses the shared expert as one more of them"};
    r.intAt("shared_intermediate_size", f);
  }
  if (haveFirst && haveLayers && c.firstSparseLayer >= c.layers)
    throw InputError(path, fieldText(kFirstSparse.name, std::to_string(c.firstSparseLayer),
                                     fmt::format("0..{}, below 'num_hidden_layers' = {}", c.layers - 1, c.layers)));
  readLayerPattern(r, c, haveLayers, haveFirst);
  readLayerTypes(r, c);
  check(c, path, n);
  return c;
}

ModelConfig ModelConfig::byName(const std::string& nameOrPath) {
  if (nameOrPath == "full" || nameOrPath.empty()) return flash();
  if (nameOrPath == "reduced") return reduced();
  return fromHfJson(nameOrPath);
}

}  // namespace monogen::specs::minimax_m3
