// The gfx950 timing model's parameters (Gfx950Timing.def): each in its source's unit, converted to
// engine cycles and bytes a cycle for the model; overridable by name from a JSON file.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "runtime/sim/timing/TimingIsa.h"

namespace monogen::runtime::timing {

/// One parameter's row of Gfx950Timing.def and its current value (in `unit`).
struct TimingParamInfo {
  const char* id;
  double value;
  const char* unit;
  const char* kind;  // M, V, S, D or E
  double lo, hi;     // lo < hi: fittable within [lo, hi]
  const char* source;
  bool fittable() const { return lo < hi; }
};

/// Every parameter, by name, in its source's unit.
struct TimingParams {
#define TIMING_PARAM(id, value, unit, kind, lo, hi, source) double id = value;
#include "runtime/sim/timing/Gfx950Timing.def"
#undef TIMING_PARAM

  /// The compiled kernel's instructions per IR op: an ALU op's issue is its attributed ISA
  /// (TimingModel::issue). Null: every op costs its IR class (the microkernel tests).
  std::shared_ptr<const IsaCounts> isa;

  /// The table's rows with this object's values.
  std::vector<TimingParamInfo> rows() const;
  /// Sets parameter `id` to `value` (in its unit); throws InputError at `where` for an unknown id, a
  /// non-positive value or a fittable one outside its bracket.
  void set(const std::string& id, double value, const std::string& where);
  /// Overrides from a JSON object {"id": value, ...} in file `path` (`monogen sim --timing-params`).
  void load(const std::string& path);
  /// The value of `id` in engine cycles (a time unit) or bytes a cycle (a bandwidth unit).
  double cycles(const TimingParamInfo& row) const;
};

}  // namespace monogen::runtime::timing
