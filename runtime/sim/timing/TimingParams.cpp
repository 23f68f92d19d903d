// TimingParams: Gfx950Timing.def's rows, unit conversion and the JSON override.
#include "runtime/sim/timing/TimingParams.h"

#include <fmt/format.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "ir/Error.h"

namespace monogen::runtime::timing {

std::vector<TimingParamInfo> TimingParams::rows() const {
  std::vector<TimingParamInfo> r;
#define TIMING_PARAM(id_, value, unit, kind, lo, hi, source) r.push_back({#id_, id_, #unit, #kind, lo, hi, source});
#include "runtime/sim/timing/Gfx950Timing.def"
#undef TIMING_PARAM
  return r;
}

void TimingParams::set(const std::string& id, double value, const std::string& where) {
  for (const TimingParamInfo& row : rows()) {
    if (id != row.id) continue;
    if (!(value > 0))
      throw InputError(where, fmt::format("timing parameter '{}' = {}: expected a positive value in {}", id, value,
                                          row.unit));
    if (row.fittable() && (value < row.lo || value > row.hi))
      throw InputError(where, fmt::format("timing parameter '{}' = {} {}: outside its bracket [{}, {}]", id, value,
                                          row.unit, row.lo, row.hi));
#define TIMING_PARAM(id_, v, unit, kind, lo, hi, source) \
  if (id == #id_) id_ = value;
#include "runtime/sim/timing/Gfx950Timing.def"
#undef TIMING_PARAM
    return;
  }
  std::string names;
  for (const TimingParamInfo& row : rows()) names += fmt::format("{}{}", names.empty() ? "" : ", ", row.id);
  throw InputError(where, fmt::format("no timing parameter '{}': expected one of {}", id, names));
}

void TimingParams::load(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw InputError("--timing-params", fmt::format("cannot read '{}'", path));
  nlohmann::json j;
  try {
    f >> j;
  } catch (const nlohmann::json::exception& e) {
    throw InputError("--timing-params", fmt::format("'{}' is not JSON: {}", path, e.what()));
  }
  if (!j.is_object())
    throw InputError("--timing-params", fmt::format("'{}': expected an object {{\"parameter\": value, ...}}", path));
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!it.value().is_number())
      throw InputError("--timing-params", fmt::format("'{}': '{}' is not a number", path, it.key()));
    set(it.key(), it.value().get<double>(), fmt::format("--timing-params {}", path));
  }
}

double TimingParams::cycles(const TimingParamInfo& row) const {
  const std::string u = row.unit;
  if (u == "clk" || u == "B/clk" || u == "x" || u == "Hz") return row.value;
  if (u == "ns") return row.value * 1e-9 * clock;
  if (u == "us") return row.value * 1e-6 * clock;
  if (u == "GB/s") return row.value * 1e9 / clock;
  if (u == "TB/s") return row.value * 1e12 / clock;
  throw InputError("timing parameters", fmt::format("'{}' has unit '{}', which the model cannot convert", row.id, u));
}

}  // namespace monogen::runtime::timing
