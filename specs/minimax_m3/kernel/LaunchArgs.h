// The MiniMax-M3 FFN launch's tensor names: its kernel arguments and the per-rank names a
// launch's tensor map holds them under.
#pragma once
#include <string>

namespace monogen::specs::minimax_m3 {

/// Kernel argument names, in argument order (Spec.cpp declares their types and roles).
namespace arg {
inline constexpr const char* kPart = "part";
inline constexpr const char* kResIn = "res_in";
inline constexpr const char* kResOut = "res_out";
inline constexpr const char* kScratch = "scratch";
inline constexpr const char* kSym = "sym";
inline constexpr const char* kPeers = "peers";
inline constexpr const char* kErr = "err";
inline constexpr const char* kRank = "rank";
inline constexpr const char* kWaitTicks = "wait_ticks";
inline constexpr const char* kEpoch = "epoch";          // the finish stages' control args (StageFinish.cpp)
inline constexpr const char* kHandshake = "handshake";
inline constexpr const char* kInject = "inject";
inline constexpr const char* kTrace = "trace";          // only when key.trace
inline constexpr const char* kNormW = "norm_w";
inline constexpr const char* kRouterW = "router_w";
inline constexpr const char* kBias = "bias";
inline constexpr const char* kW13 = "w13";
inline constexpr const char* kS13 = "s13";
inline constexpr const char* kW2 = "w2";
inline constexpr const char* kS2 = "s2";
inline constexpr const char* kSlots = "slots";
inline constexpr const char* kOut = "out";
// input=attn (o_proj in the launch) instead of kPart: the attention rows and o_proj's rowwise-FP8
// weight and its per-channel scales (WeightContract.h)
inline constexpr const char* kAttn = "attn";
inline constexpr const char* kWo = "wo";
inline constexpr const char* kWoScale = "wo_scale";
}  // namespace arg

/// Rank r's name of a per-rank tensor: "w13" -> "w13.r2".
std::string rankName(const std::string& base, int rank);
/// The name a launch's tensor map holds argument `name` of rank `rank` under: rankName(name,
/// rank) for the per-rank tensors (part, attn, wo, w13, s13, w2, s2), else `name` itself.
std::string launchTensorName(const std::string& name, int rank);

}  // namespace monogen::specs::minimax_m3
