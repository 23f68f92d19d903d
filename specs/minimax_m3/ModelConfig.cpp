#include "specs/minimax_m3/ModelConfig.h"

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "ir/Error.h"

namespace monogen::specs::minimax_m3 {

ModelConfig ModelConfig::reduced() {
  ModelConfig c;
  c.hidden = 1536;
  c.experts = 16;
  c.intermediate = 768;
  c.blocks = 32;
  return c;
}

std::string ModelConfig::canonical() const {
  return fmt::format(
      "hidden={} experts={} topk={} shared={} inter={} scale={} eps={} limit={} alpha={} blocks={} threads={}",
      hidden, experts, topk, sharedExperts, intermediate, routedScale, rmsEps, swigluLimit, swigluAlpha, blocks,
      threads);
}

void ModelConfig::validate(const std::string& where) const {
  auto need = [&](bool ok, const std::string& what) {
    if (!ok) throw InputError(where, what);
  };
  need(hidden > 0 && hidden % 256 == 0, fmt::format("hidden_size {} must be a positive multiple of 256", hidden));
  need(experts >= topk && experts % 16 == 0 && experts <= 128,
       fmt::format("{} routed experts: expected a multiple of 16 in [16, 128] (route: two experts a lane of one wave), at least top-k", experts));
  need(topk >= 1 && topk <= 8, fmt::format("top-k {} must be in 1..8", topk));
  need(sharedExperts == 1, fmt::format("{} shared experts: the launch fuses exactly one", sharedExperts));
  need(intermediate > 0 && intermediate % (8 * 32) == 0,
       fmt::format("intermediate {} must be a multiple of 256 (I / TP a multiple of 32 for TP up to 8)",
                   intermediate));
  need(threads == 512, fmt::format("{} threads a CTA: the launch is written for 512", threads));
  need(blocks >= 8 && blocks <= 1024, fmt::format("{} CTAs: expected 8..1024", blocks));
  need(maxRows >= 1 && maxRows <= 16, fmt::format("max rows {} must be in 1..16", maxRows));
  need(rmsEps > 0, "rms_norm_eps must be positive");
}

ModelConfig ModelConfig::fromHfJson(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path, "cannot open the config file (expected a Hugging Face config.json)");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    throw InputError(path, std::string("not valid JSON: ") + e.what());
  }
  if (j.contains("text_config") && j["text_config"].is_object()) j = j["text_config"];
  ModelConfig c;
  auto intKey = [&](std::initializer_list<const char*> names, int& out, bool required) {
    for (const char* n : names)
      if (j.contains(n)) {
        if (!j[n].is_number_integer()) throw InputError(path, fmt::format("key '{}' must be an integer", n));
        out = j[n].get<int>();
        return;
      }
    if (required)
      throw InputError(path, fmt::format("missing key '{}' (a MiniMax-M3 text config has it)", *names.begin()));
  };
  auto numKey = [&](std::initializer_list<const char*> names, double& out) {
    for (const char* n : names)
      if (j.contains(n)) {
        if (!j[n].is_number()) throw InputError(path, fmt::format("key '{}' must be a number", n));
        out = j[n].get<double>();
        return;
      }
  };
  intKey({"hidden_size"}, c.hidden, true);
  intKey({"num_local_experts", "n_routed_experts", "num_experts"}, c.experts, true);
  intKey({"num_experts_per_tok"}, c.topk, true);
  intKey({"moe_intermediate_size", "intermediate_size"}, c.intermediate, true);
  intKey({"n_shared_experts", "num_shared_experts"}, c.sharedExperts, false);
  intKey({"num_hidden_layers"}, c.layers, false);
  intKey({"first_k_dense_replace"}, c.firstSparseLayer, false);
  intKey({"monogen_blocks"}, c.blocks, false);
  numKey({"routed_scaling_factor"}, c.routedScale);
  numKey({"rms_norm_eps"}, c.rmsEps);
  numKey({"swiglu_limit"}, c.swigluLimit);
  numKey({"swiglu_alpha"}, c.swigluAlpha);
  c.validate(path);
  return c;
}

ModelConfig ModelConfig::byName(const std::string& nameOrPath) {
  if (nameOrPath == "full" || nameOrPath.empty()) return flash();
  if (nameOrPath == "reduced") return reduced();
  return fromHfJson(nameOrPath);
}

}  // namespace monogen::specs::minimax_m3
