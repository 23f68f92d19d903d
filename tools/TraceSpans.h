// monogen trace --launch attention | layer: the launch on the Sim device, every CTA of every rank,
// its per-CTA stage spans (the Sim's record of each CTA's first and last op in a stage,
// SimOptions::stageSpans: these launches have no trace knob) as Chrome / Perfetto trace-event JSON.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "runtime/sim/timing/TimingParams.h"

#include "tools/Variant.h"

namespace monogen::tools {

/// Runs the attention launch (under `timing` when set: the spans in modeled time), writes `out`
/// and prints the spans written and "verdict: ...". Returns 0 only when the outputs are bit-exact
/// and every error word is 0, else 1.
int traceAttention(const VariantOptions& v, uint64_t seed, const std::string& out,
                   std::shared_ptr<const runtime::timing::TimingParams> timing = nullptr, bool irIssue = false);

/// The same for the one-launch decoder layer (its inputs and reference as `check --launch layer`'s,
/// the FFN's natural routing).
int traceLayer(const VariantOptions& v, uint64_t seed, const std::string& out,
               std::shared_ptr<const runtime::timing::TimingParams> timing = nullptr, bool irIssue = false);

}  // namespace monogen::tools
