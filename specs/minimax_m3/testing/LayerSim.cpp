#include "specs/minimax_m3/testing/LayerSim.h"

#include <fmt/format.h>

#include <cstring>
#include <set>

#include "ir/Error.h"
#include "runtime/Launch.h"
#include "runtime/sim/SimDeviceAdapter.h"
#include "specs/minimax_m3/kernel/AttentionContext.h"
#include "specs/minimax_m3/kernel/LaunchArgs.h"
#include "specs/minimax_m3/kernel/LayerSpec.h"
#include "specs/minimax_m3/kernel/Spec.h"
#include "specs/minimax_m3/testing/AttentionVerdict.h"
#include "specs/minimax_m3/testing/MoeInputs.h"

namespace monogen::specs::minimax_m3 {

using runtime::DType;
using runtime::HostTensor;

namespace {

template <class T>
HostTensor tensorOf(DType d, std::vector<int64_t> shape, const std::vector<T>& v) {
  return HostTensor::of(d, std::move(shape), v, "layer inputs");
}

}  // namespace

LayerInputs makeLayerInputs(const ModelConfig& cfg, int S, int TP, uint64_t seed, const AttentionInputOptions& o) {
  LayerInputs in;
  in.attention = makeAttentionLaunch(cfg, S, TP, seed, o);
  in.ffn = makeLaunchInputs(cfg, S, TP, seed);
  in.ffn[arg::kSlots] = tensorOf(DType::I64, {S}, in.attention.rows.slots);  // one slots argument
  return in;
}

LayerReference layerReference(const ModelConfig& cfg, const LayerInputs& in, MoeQuant quant, RefNumerics numerics) {
  const int S = in.attention.S, TP = in.attention.TP;
  LayerReference ref;
  ref.attention = attentionReference(cfg, in.attention, numerics);
  runtime::TensorMap m = in.ffn;
  for (int r = 0; r < TP; ++r)
    m[rankName(arg::kAttn, r)] =
        tensorOf(DType::BF16, {S, int64_t(ref.attention.ranks[r].attn.size()) / S}, ref.attention.ranks[r].attn);
  m[arg::kResIn] = tensorOf(DType::BF16, {S, cfg.hidden}, ref.attention.h);
  rederiveDerivedInputs(cfg, S, TP, FfnInput::Attn, m, numerics);  // part, sres, ssq from the rows and residual
  ref.ffn = launchReferenceOutputs(cfg, S, TP, m, MoeExperts::All, quant, numerics);
  return ref;
}

LayerSimRun runLayerOnSim(const ir::Plan& plan, const LayerVariant& v, const LayerInputs& in,
                          const runtime::SimOptions& opts, int32_t tag) {
  runtime::SimDeviceAdapter dev(opts);
  return runLayer(dev, {}, plan, v, in, opts, tag);
}

LayerSimRun runLayer(runtime::Device& dev, const runtime::CodeObjectBytes& code, const ir::Plan& plan,
                     const LayerVariant& v, const LayerInputs& in, const runtime::SimOptions& opts, int32_t tag) {
  SimSession session(v.ffn, plan, dev, code);
  const std::string where = plan.key.variantName();
  AttentionBuffers at = uploadAttention(dev, v.attention, in.attention, tag, 100'000'000, where);
  std::set<std::string> ffnArgs;
  for (const ir::KernelArg& a : buildPlan(v.ffn).args) ffnArgs.insert(a.name);
  std::vector<runtime::RankArgs> extra(at.size());
  for (size_t r = 0; r < at.size(); ++r) {
    const int R = static_cast<int>(r);
    for (const auto& [name, addr] : at[r]) {
      const std::string n = name == attn_arg::kScratch ? kLayerAttnScratch : name;
      if (ffnArgs.count(n) || plan.argIndex(n) < 0) continue;  // the session's, or not the layer's (tag)
      const ir::KernelArg& ka = plan.arg(n);
      extra[r][n] = ka.isPointer ? runtime::LaunchArg::tensor(addr, *runtime::dtypeFor(ka.elem), ka.shape)
                                 : runtime::LaunchArg::scalar(static_cast<int64_t>(addr));
    }
    // the attention's outputs the layer shares with the FFN are the session's buffers
    at[r][attn_arg::kResOut] = session.bufferOf(arg::kResIn, R);
    at[r][attn_arg::kAttn] = session.bufferOf(arg::kAttn, R);
    at[r][attn_arg::kErr] = session.bufferOf(arg::kErr, R);
  }
  LaunchParams params;
  params.tag = tag;
  LayerSimRun run;
  for (const ir::Stage& s : plan.stages) run.stages.push_back(s.name);
  run.ffn = session.launch(in.ffn, opts, params, extra);
  for (int r = 0; r < static_cast<int>(at.size()); ++r) {
    run.attention.ranks.push_back(readAttentionRank(dev, at[r], v.attention, in.attention, r));
    run.attention.errorWords.push_back(run.ffn.outputs.at(rankName(arg::kErr, r)).as<int32_t>()[0]);
  }
  run.attention.stats = run.ffn.stats;
  return run;
}

std::string layerVerdict(const ModelConfig& cfg, const LayerInputs& in, const LayerReference& ref,
                         const LayerSimRun& run) {
  if (!run.ffn.valid) return "INVALID: " + run.ffn.error;
  const std::string a = attentionVerdict(in.attention, ref.attention, run.attention, cfg);
  if (a != "bit-exact") return a;
  if (const auto m = firstMismatch(run.ffn.outputs, ref.ffn, run.stages)) return "MISMATCH: " + describe(*m);
  return "bit-exact";
}

}  // namespace monogen::specs::minimax_m3
