// The model dimensions and the grid every part of the MiniMax-M3 FFN launch derives from.
// MiniMax-M3.1-Flash is the default; reduced() is the test config; fromHfJson() reads a
// Hugging Face config.json.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace monogen::specs::minimax_m3 {

struct ModelConfig {
  int hidden = 6144;          // hidden_size
  int experts = 128;          // routed experts (the shared expert is fused as expert `experts`)
  int topk = 4;               // num_experts_per_tok
  int sharedExperts = 1;      // fused as one extra expert
  int intermediate = 3072;    // per-expert intermediate size (I); I / TP per rank
  double routedScale = 2.0;   // routed_scaling_factor
  double rmsEps = 1e-6;       // Gemma RMSNorm eps
  double swigluLimit = 7.0;   // SwiGLU-OAI clamp
  double swigluAlpha = 1.702; // SwiGLU-OAI sigmoid slope
  int layers = 60;            // num_hidden_layers
  int firstSparseLayer = 3;   // the first sparse layer: layers 3..59 are (first_k_dense_replace, or
                              // the first sparse layer of mlp_layer_types / moe_layer_freq)
  int sparseLayers = 57;      // how many layers are sparse (MoE); informational, not in the key
  int blocks = 256;           // CTAs of the persistent grid (MI350X/MI355X: 256 CUs)
  int threads = 512;          // threads a CTA
  int maxRows = 16;           // S is 1..maxRows
  int heads = 64;             // num_attention_heads: o_proj's input is heads x headDim wide
  int headDim = 128;          // head_dim (heads x headDim / TP a rank, with o_proj in the launch)

  // --- the attention side (docs/attention.md): read by the attention launch and its reference
  // only; not in canonical(), so the FFN launch's key does not see them (attentionCanonical()) ---
  int kvHeads = 4;            // num_key_value_heads (GQA: heads / kvHeads query heads a KV head)
  int rotaryDim = 64;         // rotary_dim: partial NeoX RoPE on channels 0 .. rotaryDim-1
  double ropeTheta = 5e6;     // rope_theta
  int indexHeads = 4;         // sparse_num_index_heads: one a KV head
  int indexHeadDim = 128;     // sparse_index_dim
  int indexBlock = 128;       // sparse_block_size: keys a scored block (and the KV cache block)
  int indexTopk = 16;         // sparse_topk_blocks
  int indexLocal = 1;         // sparse_local_block: the query's own block (and local - 1 before it)
  int indexInit = 0;          // sparse_init_block: the first blocks, always kept
  /// layer_types: true = full attention (no indexer), false = MiniMax-M3 sparse; one a layer.
  /// Default: layers 0..2 full (the dense layers ATOM's runner requires), 3..59 sparse.
  std::vector<bool> fullAttention = defaultLayerTypes(60, 3);
  static std::vector<bool> defaultLayerTypes(int layers, int fullFirst) {
    std::vector<bool> v(static_cast<size_t>(layers), false);
    for (int i = 0; i < fullFirst && i < layers; ++i) v[i] = true;
    return v;
  }

  /// MiniMax-M3.1-Flash on MI350X.
  static ModelConfig flash() { return {}; }
  /// A scaled-down config for fast tests: hidden 1536, 16 experts, intermediate 768, 32 CTAs,
  /// 16 heads of 64 (o_proj's input 1024 wide: 128 a rank at TP 8); attention: 4 KV heads (GQA
  /// groups of 4), rotary 32, 4 index heads of 64, blocks of 128, top-16 (docs/attention.md).
  static ModelConfig reduced();
  /// Reads a Hugging Face config.json (a MiniMax-M3 text config, or a wrapper whose
  /// "text_config" is one). Every field it reads is checked when the file is loaded: its JSON
  /// type (integers must be JSON integers: not booleans, not 6144.0, not strings), its range
  /// (read as int64 / uint64 / double, never truncated), the divisibilities the tiling needs and
  /// the cross-field rules of validate(). Throws InputError (where = `path`) naming the field,
  /// the value and what is allowed. Fields it does not read are ignored.
  static ModelConfig fromHfJson(const std::string& path);
  /// The same from the file's text (a Python dict, json.dumps'd); `where` names it in messages.
  static ModelConfig fromHfJsonText(const std::string& text, const std::string& where);
  /// Parses "full", "reduced" or a path to a config.json (what the CLI's --config takes).
  static ModelConfig byName(const std::string& nameOrPath);

  int expertsWithShared() const { return experts + sharedExperts; }
  int interPerRank(int tp) const { return intermediate / tp; }
  /// o_proj's input width on a rank: heads x headDim / TP (Layout refuses a TP it does not divide).
  int attnWidth(int tp) const { return heads * headDim / tp; }
  /// Throws InputError (where = `where`) unless every field is in its range (the bounds and
  /// why are in ModelConfig.cpp).
  void validate(const std::string& where) const;
  /// Throws InputError (where = `where`) unless the attention fields fit together: kvHeads
  /// divides heads, indexHeads == kvHeads, rotaryDim <= headDim, one layer type a layer.
  void validateAttention(const std::string& where) const;
  /// "hidden=6144 experts=128 topk=4 ..." : goes into the cache key.
  std::string canonical() const;
  /// canonical() plus the attention fields: the attention launch's key text.
  std::string attentionCanonical() const;
  /// Whether layer `layer` is a full-attention layer (InputError unless 0 <= layer < layers).
  bool isFullAttention(int layer) const;
};

}  // namespace monogen::specs::minimax_m3
