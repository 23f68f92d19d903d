// ModelConfig::fromHfJson and validate on hostile config.json files: every field's type, range
// and divisibility checked at load time, each refusal naming the file, the field, the value and
// what is allowed; the model's own config (HF style), the full and reduced configs still load.
#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <stdlib.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ir/Error.h"
#include "specs/minimax_m3/kernel/ModelConfig.h"

using namespace monogen;
using namespace monogen::specs::minimax_m3;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

/// This process's temp dir, removed at exit.
const fs::path& tempDir() {
  struct Dir {
    fs::path path;
    Dir() {
      std::string t = (fs::temp_directory_path() / "monogen-config-XXXXXX").string();
      if (!mkdtemp(t.data())) throw std::runtime_error("mkdtemp failed");
      path = t;
    }
    ~Dir() {
      std::error_code ec;
      fs::remove_all(path, ec);
    }
  };
  static const Dir d;
  return d.path;
}

/// Writes `text` to a new <temp>/<n>/config.json and returns its path.
std::string writeText(const std::string& text) {
  static int n = 0;
  const fs::path dir = tempDir() / std::to_string(n++);
  fs::create_directories(dir);
  const fs::path p = dir / "config.json";
  std::ofstream(p) << text;
  return p.string();
}
std::string writeJson(const json& j) { return writeText(j.dump(2)); }

std::vector<std::string> layerTypes(int dense, int sparse, const char* sparseName = "sparse") {
  std::vector<std::string> v(dense, "dense");
  v.insert(v.end(), sparse, sparseName);
  return v;
}

/// MiniMax-M3.1-Flash's text config as a Hugging Face config.json has it: the fields the loader
/// reads and a few it ignores (intermediate_size is a dense layer's here, not read: the experts'
/// is moe_intermediate_size).
json flashJson() {
  return json{{"architectures", {"MiniMaxM3ForCausalLM"}},
              {"model_type", "minimax_m3"},
              {"hidden_size", 6144},
              {"num_local_experts", 128},
              {"num_experts_per_tok", 4},
              {"moe_intermediate_size", 3072},
              {"intermediate_size", 9216},
              {"shared_intermediate_size", 3072},
              {"n_shared_experts", 1},
              {"num_hidden_layers", 60},
              {"first_k_dense_replace", 3},
              {"mlp_layer_types", layerTypes(3, 57)},
              {"rms_norm_eps", 1e-06},
              {"routed_scaling_factor", 2.0},
              {"swiglu_limit", 7.0},
              {"swiglu_alpha", 1.702},
              {"num_attention_heads", 64},
              {"head_dim", 128},
              {"scoring_func", "sigmoid"},
              {"vocab_size", 200064},
              {"rope_theta", 5000000.0},
              {"torch_dtype", "bfloat16"},
              {"tie_word_embeddings", false},
              {"quantization_config", {{"quant_method", "mxfp4"}}}};
}
/// reduced() as a config.json (the fields it differs in; the rest as the model's).
json reducedJson() {
  json j = flashJson();
  j["hidden_size"] = 1536;
  j["num_local_experts"] = 16;
  j["moe_intermediate_size"] = 768;
  j["shared_intermediate_size"] = 768;
  j["monogen_blocks"] = 32;
  j["num_attention_heads"] = 16;
  j["head_dim"] = 64;
  return j;
}
json with(json j, const std::string& key, json v) {
  j[key] = std::move(v);
  return j;
}
json without(json j, const std::string& key) {
  j.erase(key);
  return j;
}

/// The InputError fromHfJson(path) throws (empty: none).
std::string refusal(const std::string& path) {
  try {
    ModelConfig::fromHfJson(path);
  } catch (const InputError& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("not an InputError: ") + e.what();
  }
  return "";
}

/// The file is refused with "<path>: field '<field>' = <value>: expected ..." that contains
/// each of `expected` (the range, the divisibility).
void refusedField(const std::string& path, const std::string& field, const std::string& value,
                  std::vector<std::string> expected) {
  const std::string msg = refusal(path);
  INFO(fmt::format("field {} = {}; message: {}", field, value, msg.empty() ? "(loaded, no error)" : msg));
  CHECK_THAT(msg, Catch::StartsWith("input error at " + path + ": "));
  CHECK_THAT(msg, Catch::Contains(fmt::format("{}: field '{}' = {}: expected ", path, field, value)));
  for (const std::string& e : expected) CHECK_THAT(msg, Catch::Contains(e));
}
void refusedField(const json& j, const std::string& field, const std::string& value,
                  std::vector<std::string> expected) {
  refusedField(writeJson(j), field, value, std::move(expected));
}
/// The file is refused with a message naming it and containing each of `parts`.
void refused(const std::string& path, std::vector<std::string> parts) {
  const std::string msg = refusal(path);
  INFO(fmt::format("message: {}", msg.empty() ? "(loaded, no error)" : msg));
  CHECK_THAT(msg, Catch::StartsWith("input error at " + path + ": "));
  for (const std::string& p : parts) CHECK_THAT(msg, Catch::Contains(p));
}
void refused(const json& j, std::vector<std::string> parts) { refused(writeJson(j), std::move(parts)); }

const std::vector<std::string> kHiddenRange{"an integer in 512..8192", "a multiple of 512"};

}  // namespace

// ------------------------------------------------------------------------- what must load

TEST_CASE("config: the model's HF config.json, the full and the reduced config load", "[spec][config]") {
  REQUIRE_NOTHROW(ModelConfig::flash().validate("flash"));
  REQUIRE_NOTHROW(ModelConfig::reduced().validate("reduced"));
  CHECK(ModelConfig::byName("full").canonical() == ModelConfig::flash().canonical());
  CHECK(ModelConfig::byName("reduced").canonical() == ModelConfig::reduced().canonical());

  const ModelConfig f = ModelConfig::fromHfJson(writeJson(flashJson()));
  CHECK(f.canonical() == ModelConfig::flash().canonical());
  CHECK(f.layers == 60);
  CHECK(f.firstSparseLayer == 3);
  CHECK(f.sparseLayers == 57);
  // a multimodal wrapper: the text model's config under text_config
  CHECK(ModelConfig::fromHfJson(writeJson(json{{"text_config", flashJson()}, {"vision_config", json::object()}}))
            .canonical() == ModelConfig::flash().canonical());
  CHECK(ModelConfig::fromHfJson(writeJson(reducedJson())).canonical() == ModelConfig::reduced().canonical());
  // o_proj's input width (read for input=attn): heads x head_dim, in the config text
  CHECK(ModelConfig::fromHfJson(writeJson(with(flashJson(), "head_dim", 96))).headDim == 96);
  CHECK_THROWS_WITH(ModelConfig::fromHfJson(writeJson(with(flashJson(), "num_attention_heads", 0))),
                    Catch::Contains("num_attention_heads"));
  // only the required fields: the rest default to the model's
  const json minimal{{"hidden_size", 6144},
                     {"num_local_experts", 128},
                     {"num_experts_per_tok", 4},
                     {"moe_intermediate_size", 3072}};
  const ModelConfig m = ModelConfig::fromHfJson(writeJson(minimal));
  CHECK(m.canonical() == ModelConfig::flash().canonical());
  CHECK(m.sparseLayers == 57);
  // the aliases: n_routed_experts; intermediate_size alone is the experts'; integral numbers
  // for the float fields; both expert names when they agree
  json alias = without(without(flashJson(), "num_local_experts"), "moe_intermediate_size");
  alias["n_routed_experts"] = 128;
  alias["intermediate_size"] = 3072;
  alias["swiglu_limit"] = 7;
  alias["routed_scaling_factor"] = 2;
  CHECK(ModelConfig::fromHfJson(writeJson(alias)).canonical() == ModelConfig::flash().canonical());
  CHECK(ModelConfig::fromHfJson(writeJson(with(flashJson(), "n_routed_experts", 128))).canonical() ==
        ModelConfig::flash().canonical());
}

TEST_CASE("config: the corners of every range load", "[spec][config]") {
  for (auto [h, e, k, i, b] : {std::array<int, 5>{512, 16, 1, 256, 8}, std::array<int, 5>{8192, 128, 8, 3840, 256},
                               std::array<int, 5>{512, 128, 8, 8192, 256}, std::array<int, 5>{8192, 16, 1, 256, 8}}) {
    INFO(fmt::format("hidden {} experts {} topk {} inter {} blocks {}", h, e, k, i, b));
    json j = with(with(flashJson(), "hidden_size", h), "num_local_experts", e);
    j = with(with(with(j, "num_experts_per_tok", k), "moe_intermediate_size", i), "monogen_blocks", b);
    j["shared_intermediate_size"] = i;
    CHECK_NOTHROW(ModelConfig::fromHfJson(writeJson(j)));
  }
  json j = flashJson();
  j["rms_norm_eps"] = 1e-12;
  j["routed_scaling_factor"] = 64;
  j["swiglu_limit"] = 1000;
  j["swiglu_alpha"] = 100;
  CHECK_NOTHROW(ModelConfig::fromHfJson(writeJson(j)));
  j["rms_norm_eps"] = 1e-2;
  j["routed_scaling_factor"] = 1e-3;
  j["swiglu_limit"] = 0.5;
  j["swiglu_alpha"] = 0.01;
  CHECK_NOTHROW(ModelConfig::fromHfJson(writeJson(j)));
}

// ------------------------------------------------------------------------- hidden_size

TEST_CASE("config: hidden_size out of range, of the wrong type or not a multiple of 512 is refused",
          "[spec][config]") {
  const json f = flashJson();
  // 2^32 + 1536: an int would hold 1536, reduced's hidden (and its cache key)
  refusedField(with(f, "hidden_size", (uint64_t{1} << 32) + 1536), "hidden_size", "4294968832", kHiddenRange);
  refusedField(with(f, "hidden_size", int64_t{1} << 30), "hidden_size", "1073741824", kHiddenRange);  // bad_alloc
  refusedField(with(f, "hidden_size", 1 << 20), "hidden_size", "1048576", kHiddenRange);  // minutes to compile
  refusedField(with(f, "hidden_size", 65536), "hidden_size", "65536", kHiddenRange);     // 3,111 VGPRs spilled
  refusedField(with(f, "hidden_size", 9216), "hidden_size", "9216", kHiddenRange);       // spills 6 VGPRs
  refusedField(with(f, "hidden_size", -6144), "hidden_size", "-6144", kHiddenRange);
  refusedField(with(f, "hidden_size", 0), "hidden_size", "0", kHiddenRange);
  // multiples of 256 but not of 512: the router fits no 4, 8 or 16 parts of 128 columns
  refusedField(with(f, "hidden_size", 768), "hidden_size", "768", kHiddenRange);
  refusedField(with(f, "hidden_size", 6400), "hidden_size", "6400", kHiddenRange);
  refusedField(with(f, "hidden_size", 256), "hidden_size", "256", kHiddenRange);
  refusedField(with(f, "hidden_size", 6100), "hidden_size", "6100", kHiddenRange);
  // not JSON integers
  refusedField(with(f, "hidden_size", true), "hidden_size", "true", kHiddenRange);
  refusedField(with(f, "hidden_size", "6144"), "hidden_size", "\"6144\"", kHiddenRange);
  refusedField(with(f, "hidden_size", 6144.0), "hidden_size", "6144.0", kHiddenRange);
  refusedField(with(f, "hidden_size", nullptr), "hidden_size", "null", kHiddenRange);
  refusedField(with(f, "hidden_size", json::array({6144})), "hidden_size", "[6144]", kHiddenRange);
  // past int64 (an unsigned 2^63) and past uint64 (parsed as a float)
  std::string text = flashJson().dump();
  const std::string from = "\"hidden_size\":6144";
  REQUIRE(text.find(from) != std::string::npos);
  for (const char* big : {"9223372036854775808", "18446744073709551617"}) {
    std::string t = text;
    t.replace(t.find(from), from.size(), std::string("\"hidden_size\":") + big);
    const std::string path = writeText(t);
    const std::string msg = refusal(path);
    INFO(msg);
    CHECK_THAT(msg, Catch::Contains(path + ": field 'hidden_size' = "));
    CHECK_THAT(msg, Catch::Contains("an integer in 512..8192"));
  }
  refused(without(f, "hidden_size"), {"missing field 'hidden_size'", "an integer in 512..8192"});
}

// ------------------------------------------------------------------------- experts, top-k

TEST_CASE("config: routed experts and top-k out of range or of the wrong type are refused", "[spec][config]") {
  const json f = flashJson();
  const std::vector<std::string> experts{"an integer in 16..128", "a multiple of 16"};
  refusedField(with(f, "num_local_experts", 144), "num_local_experts", "144", experts);  // route: 2 a lane
  refusedField(with(f, "num_local_experts", 256), "num_local_experts", "256", experts);
  refusedField(with(f, "num_local_experts", (uint64_t{1} << 32) + 16), "num_local_experts", "4294967312", experts);
  refusedField(with(f, "num_local_experts", 24), "num_local_experts", "24", experts);
  refusedField(with(f, "num_local_experts", 8), "num_local_experts", "8", experts);
  refusedField(with(f, "num_local_experts", -128), "num_local_experts", "-128", experts);
  refusedField(with(f, "num_local_experts", false), "num_local_experts", "false", experts);
  refusedField(with(f, "num_local_experts", 128.0), "num_local_experts", "128.0", experts);
  json alias = without(f, "num_local_experts");
  alias["n_routed_experts"] = 130;
  refusedField(alias, "n_routed_experts", "130", experts);
  refused(with(f, "n_routed_experts", 64),
          {"fields 'num_local_experts' = 128 and 'n_routed_experts' = 64", "disagree"});

  const std::vector<std::string> topk{"an integer in 1..8"};
  refusedField(with(f, "num_experts_per_tok", 0), "num_experts_per_tok", "0", topk);
  refusedField(with(f, "num_experts_per_tok", 9), "num_experts_per_tok", "9", topk);
  refusedField(with(f, "num_experts_per_tok", 64), "num_experts_per_tok", "64", topk);
  refusedField(with(f, "num_experts_per_tok", -4), "num_experts_per_tok", "-4", topk);
  refusedField(with(f, "num_experts_per_tok", (uint64_t{1} << 32) + 4), "num_experts_per_tok", "4294967300", topk);
  refusedField(with(f, "num_experts_per_tok", true), "num_experts_per_tok", "true", topk);
  refusedField(with(f, "num_experts_per_tok", "4"), "num_experts_per_tok", "\"4\"", topk);
  refusedField(with(f, "num_experts_per_tok", 4.5), "num_experts_per_tok", "4.5", topk);
}

// ------------------------------------------------------------------------- intermediate

TEST_CASE("config: the expert intermediate out of range or not a multiple of 256 is refused",
          "[spec][config]") {
  const json f = flashJson();
  const std::vector<std::string> inter{"an integer in 256..8192", "a multiple of 256"};
  refusedField(with(f, "moe_intermediate_size", 384), "moe_intermediate_size", "384", inter);  // I/8 = 48
  refusedField(with(f, "moe_intermediate_size", 128), "moe_intermediate_size", "128", inter);
  refusedField(with(f, "moe_intermediate_size", 16384), "moe_intermediate_size", "16384", inter);
  refusedField(with(f, "moe_intermediate_size", (uint64_t{1} << 32) + 768), "moe_intermediate_size", "4294968064",
               inter);
  refusedField(with(f, "moe_intermediate_size", -3072), "moe_intermediate_size", "-3072", inter);
  refusedField(with(f, "moe_intermediate_size", 3072.0), "moe_intermediate_size", "3072.0", inter);
  refusedField(with(f, "moe_intermediate_size", true), "moe_intermediate_size", "true", inter);
  // intermediate_size is the experts' only when moe_intermediate_size is absent
  json alone = with(without(f, "moe_intermediate_size"), "intermediate_size", 100);
  refusedField(alone, "intermediate_size", "100", inter);
  refused(without(without(f, "moe_intermediate_size"), "intermediate_size"),
          {"missing field 'moe_intermediate_size' (or 'intermediate_size'", "an integer in 256..8192"});
}

// ------------------------------------------------------------------------- the shared expert

TEST_CASE("config: a shared expert other than one of the routed experts' shape is refused", "[spec][config]") {
  const json f = flashJson();
  refusedField(with(f, "shared_intermediate_size", 0), "shared_intermediate_size", "0",
               {"the integer 3072", "the routed experts' intermediate"});  // MiniMax-M2: none
  refusedField(with(f, "shared_intermediate_size", 6144), "shared_intermediate_size", "6144", {"the integer 3072"});
  refusedField(with(f, "shared_intermediate_size", 1536), "shared_intermediate_size", "1536", {"the integer 3072"});
  refusedField(with(f, "shared_intermediate_size", "3072"), "shared_intermediate_size", "\"3072\"",
               {"the integer 3072"});
  refusedField(with(f, "shared_intermediate_size", 3072.0), "shared_intermediate_size", "3072.0",
               {"the integer 3072"});
  refusedField(with(f, "shared_intermediate_size", -1), "shared_intermediate_size", "-1", {"the integer 3072"});
  refusedField(with(reducedJson(), "shared_intermediate_size", 3072), "shared_intermediate_size", "3072",
               {"the integer 768"});
  refusedField(with(f, "n_shared_experts", 2), "n_shared_experts", "2", {"the integer 1"});
  refusedField(with(f, "n_shared_experts", 0), "n_shared_experts", "0", {"the integer 1"});
  refusedField(with(f, "n_shared_experts", true), "n_shared_experts", "true", {"the integer 1"});
  refusedField(with(without(f, "n_shared_experts"), "num_shared_experts", 4), "num_shared_experts", "4",
               {"the integer 1"});
}

// ------------------------------------------------------------------------- the grid

TEST_CASE("config: a grid of more CTAs than MI350X has CUs, or too few, is refused", "[spec][config]") {
  const json f = flashJson();
  const std::vector<std::string> blocks{"an integer in 8..256"};
  refusedField(with(f, "monogen_blocks", 257), "monogen_blocks", "257", blocks);
  refusedField(with(f, "monogen_blocks", 1024), "monogen_blocks", "1024", blocks);
  refusedField(with(f, "monogen_blocks", 4), "monogen_blocks", "4", blocks);
  refusedField(with(f, "monogen_blocks", -1), "monogen_blocks", "-1", blocks);
  refusedField(with(f, "monogen_blocks", (uint64_t{1} << 32) + 32), "monogen_blocks", "4294967328", blocks);
  refusedField(with(f, "monogen_blocks", 32.0), "monogen_blocks", "32.0", blocks);
}

// ------------------------------------------------------------------------- the float fields

TEST_CASE("config: eps, the routed scale and the SwiGLU limit and slope out of range or not numbers are refused",
          "[spec][config]") {
  const json f = flashJson();
  const std::vector<std::string> eps{"a number in [1e-12, 0.01]"};
  refusedField(with(f, "rms_norm_eps", 0), "rms_norm_eps", "0", eps);
  refusedField(with(f, "rms_norm_eps", -1e-6), "rms_norm_eps", "-1e-06", eps);
  refusedField(with(f, "rms_norm_eps", 1e-13), "rms_norm_eps", "1e-13", eps);
  refusedField(with(f, "rms_norm_eps", 1e-40), "rms_norm_eps", "1e-40", eps);  // an f32 denormal
  refusedField(with(f, "rms_norm_eps", 1), "rms_norm_eps", "1", eps);
  refusedField(with(f, "rms_norm_eps", 1e300), "rms_norm_eps", "1e+300", eps);
  refusedField(with(f, "rms_norm_eps", "1e-6"), "rms_norm_eps", "\"1e-6\"", eps);
  refusedField(with(f, "rms_norm_eps", true), "rms_norm_eps", "true", eps);
  refusedField(with(f, "rms_norm_eps", nullptr), "rms_norm_eps", "null", eps);

  const std::vector<std::string> scale{"a number in (0, 64]"};
  refusedField(with(f, "routed_scaling_factor", 0), "routed_scaling_factor", "0", scale);
  refusedField(with(f, "routed_scaling_factor", -2.0), "routed_scaling_factor", "-2.0", scale);
  refusedField(with(f, "routed_scaling_factor", 65), "routed_scaling_factor", "65", scale);
  refusedField(with(f, "routed_scaling_factor", 1e39), "routed_scaling_factor", "1e+39", scale);  // inf as f32
  refusedField(with(f, "routed_scaling_factor", "2.0"), "routed_scaling_factor", "\"2.0\"", scale);
  refusedField(with(f, "routed_scaling_factor", false), "routed_scaling_factor", "false", scale);

  const std::vector<std::string> limit{"a number in (0, 1000]"};
  refusedField(with(f, "swiglu_limit", 0), "swiglu_limit", "0", limit);
  refusedField(with(f, "swiglu_limit", -7.0), "swiglu_limit", "-7.0", limit);
  refusedField(with(f, "swiglu_limit", 1e5), "swiglu_limit", "100000.0", limit);
  refusedField(with(f, "swiglu_limit", nullptr), "swiglu_limit", "null", limit);  // the kernel always clamps

  const std::vector<std::string> alpha{"a number in (0, 100]"};
  refusedField(with(f, "swiglu_alpha", 0), "swiglu_alpha", "0", alpha);
  refusedField(with(f, "swiglu_alpha", -1.702), "swiglu_alpha", "-1.702", alpha);
  refusedField(with(f, "swiglu_alpha", 1e3), "swiglu_alpha", "1000.0", alpha);
  refusedField(with(f, "swiglu_alpha", json::array({1.702})), "swiglu_alpha", "[1.702]", alpha);
}

// ------------------------------------------------------------------------- the layers

TEST_CASE("config: the layer counts and the sparse layers' pattern are checked", "[spec][config]") {
  const json f = flashJson();
  refusedField(with(f, "num_hidden_layers", 0), "num_hidden_layers", "0", {"an integer in 1..1024"});
  refusedField(with(f, "num_hidden_layers", (uint64_t{1} << 32) + 60), "num_hidden_layers", "4294967356",
               {"an integer in 1..1024"});
  refusedField(with(f, "num_hidden_layers", true), "num_hidden_layers", "true", {"an integer in 1..1024"});
  refusedField(with(f, "first_k_dense_replace", -1), "first_k_dense_replace", "-1", {"an integer in 0..1023"});
  refusedField(with(f, "first_k_dense_replace", 3.0), "first_k_dense_replace", "3.0", {"an integer in 0..1023"});
  const json noTypes = without(f, "mlp_layer_types");
  refusedField(with(noTypes, "first_k_dense_replace", 60), "first_k_dense_replace", "60",
               {"0..59, below 'num_hidden_layers' = 60"});

  // mlp_layer_types: one "dense" / "sparse" / "moe" a layer, at least one sparse
  const std::vector<std::string> list{"a list of num_hidden_layers (60) strings", "\"dense\", \"sparse\" or \"moe\""};
  refusedField(with(f, "mlp_layer_types", "sparse"), "mlp_layer_types", "\"sparse\"", list);
  refusedField(with(f, "mlp_layer_types", json::array()), "mlp_layer_types", "[]", list);
  refused(with(f, "mlp_layer_types", layerTypes(3, 56)),  // 59 layers
          {"field 'mlp_layer_types' = [\"dense\",", "...: expected a list of num_hidden_layers (60) strings"});
  std::vector<std::string> bad = layerTypes(3, 57);
  bad[7] = "mlp";
  refusedField(with(f, "mlp_layer_types", bad), "mlp_layer_types[7]", "\"mlp\"", {"\"dense\", \"sparse\" or \"moe\""});
  json mixed = with(f, "mlp_layer_types", layerTypes(3, 57));
  mixed["mlp_layer_types"][9] = 1;
  refusedField(mixed, "mlp_layer_types[9]", "1", {"\"dense\", \"sparse\" or \"moe\""});
  refused(with(f, "mlp_layer_types", layerTypes(60, 0)),
          {"field 'mlp_layer_types' = [\"dense\"", "at least one sparse (MoE) layer"});
  // layers below first_k_dense_replace are dense
  refusedField(with(f, "first_k_dense_replace", 5), "first_k_dense_replace", "5",
               {"at most 3, the first sparse layer of 'mlp_layer_types'"});

  // moe_layer_freq: an integer (every n-th layer from first_k_dense_replace) or one 0 / 1 a layer
  refusedField(with(f, "moe_layer_freq", 0), "moe_layer_freq", "0", {"an integer in 1..1024"});
  refusedField(with(f, "moe_layer_freq", -1), "moe_layer_freq", "-1", {"an integer in 1..1024"});
  refusedField(with(f, "moe_layer_freq", "1"), "moe_layer_freq", "\"1\"", {"an integer in 1..1024"});
  refusedField(with(f, "moe_layer_freq", true), "moe_layer_freq", "true", {"an integer in 1..1024"});
  refusedField(with(f, "moe_layer_freq", json::array({0, 1})), "moe_layer_freq", "[0,1]",
               {"a list of num_hidden_layers (60) integers 0 or 1"});
  std::vector<int> freq(60, 1);
  freq[0] = freq[1] = freq[2] = 0;
  json badFreq = with(f, "moe_layer_freq", freq);
  badFreq["moe_layer_freq"][4] = 2;
  refusedField(badFreq, "moe_layer_freq[4]", "2", {"the integer 0 or 1"});
  refused(with(noTypes, "moe_layer_freq", std::vector<int>(60, 0)), {"field 'moe_layer_freq' = [0,0,", "at least one sparse"});
  std::vector<int> off = freq;
  off[10] = 0;
  refused(with(f, "moe_layer_freq", off), {"fields 'mlp_layer_types' and 'moe_layer_freq' disagree at layer 10"});
  refused(with(f, "moe_layer_freq", 2), {"fields 'mlp_layer_types' and 'moe_layer_freq' disagree at layer 3"});
}

TEST_CASE("config: the sparse layers are recorded from mlp_layer_types or moe_layer_freq", "[spec][config]") {
  const json f = flashJson();
  ModelConfig c = ModelConfig::fromHfJson(writeJson(with(f, "mlp_layer_types", layerTypes(3, 57, "moe"))));
  CHECK(c.firstSparseLayer == 3);
  CHECK(c.sparseLayers == 57);
  std::vector<std::string> t = layerTypes(3, 57);
  t[30] = "dense";
  c = ModelConfig::fromHfJson(writeJson(with(f, "mlp_layer_types", t)));
  CHECK(c.sparseLayers == 56);
  const json noTypes = without(without(f, "mlp_layer_types"), "num_hidden_layers");
  c = ModelConfig::fromHfJson(writeJson(with(noTypes, "moe_layer_freq", 2)));  // layers 4, 6, .. 58
  CHECK(c.layers == 60);
  CHECK(c.firstSparseLayer == 4);
  CHECK(c.sparseLayers == 28);
  std::vector<int> freq(20, 0);
  freq[5] = freq[6] = 1;
  c = ModelConfig::fromHfJson(writeJson(with(without(noTypes, "first_k_dense_replace"), "moe_layer_freq", freq)));
  CHECK(c.layers == 20);
  CHECK(c.firstSparseLayer == 5);
  CHECK(c.sparseLayers == 2);
  c = ModelConfig::fromHfJson(writeJson(without(without(f, "mlp_layer_types"), "first_k_dense_replace")));
  CHECK(c.sparseLayers == 57);
  // the layer pattern is not the kernel's: not in the cache key
  CHECK(c.canonical() == ModelConfig::flash().canonical());
}

// ------------------------------------------------------------------------- the file itself

TEST_CASE("config: a file that is not a config object is refused, naming it", "[spec][config]") {
  refused(writeText("[1, 2, 3]"), {"expected a JSON object"});
  refused(writeText("6144"), {"expected a JSON object"});
  refused(writeText("{\"hidden_size\": 6144,"), {"not valid JSON"});
  refused(writeJson(json{{"text_config", "minimax"}}), {"field 'text_config' = \"minimax\": expected an object"});
  const std::string missing = (tempDir() / "none" / "config.json").string();
  refused(missing, {"cannot open"});
}

TEST_CASE("config: a value nested 100000 deep is refused with a message, not a stack overflow", "[spec][config]") {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  refused(writeText("{\"hidden_size\": " + deep + "}"), {"field 'hidden_size' = [[...]]"});
  refused(writeText(deep), {"the file holds [[...]]: expected a JSON object"});
  const std::string deeper = std::string(1000000, '[') + std::string(1000000, ']');
  refused(writeText("{\"text_config\": {\"x\": " + deeper + "}}"), {"missing field 'hidden_size'"});
}

// ------------------------------------------------------------------------- validate

TEST_CASE("config: validate names the field, value and range of a config built in code", "[spec][config]") {
  auto refusedBy = [](const ModelConfig& c, std::vector<std::string> parts) {
    std::string msg;
    try {
      c.validate("here");
    } catch (const InputError& e) {
      msg = e.what();
    }
    INFO(msg);
    CHECK_THAT(msg, Catch::StartsWith("input error at here: "));
    for (const std::string& p : parts) CHECK_THAT(msg, Catch::Contains(p));
  };
  ModelConfig c = ModelConfig::reduced();
  c.hidden = 768;
  refusedBy(c, {"field 'hidden_size' = 768: expected an integer in 512..8192, a multiple of 512"});
  c = ModelConfig::reduced();
  c.threads = 256;
  refusedBy(c, {"field 'threads' = 256: expected the integer 512"});
  c = ModelConfig::reduced();
  c.maxRows = 17;
  refusedBy(c, {"field 'maxRows' = 17: expected an integer in 1..16"});
  c = ModelConfig::reduced();
  c.rmsEps = std::nan("");
  refusedBy(c, {"field 'rms_norm_eps' = nan: expected a number in [1e-12, 0.01]"});
  c = ModelConfig::reduced();
  c.swigluAlpha = std::numeric_limits<double>::infinity();
  refusedBy(c, {"field 'swiglu_alpha' = inf"});
  c = ModelConfig::reduced();
  c.sparseLayers = 0;
  refusedBy(c, {"field 'sparseLayers' = 0: expected 1..57"});
}
