#include "runtime/Trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "ir/Error.h"

namespace monogen::runtime {

std::vector<TraceSpan> decodeTrace(const TraceBuffers& t) {
  const std::string where = t.name.empty() ? std::string("trace") : "trace of " + t.name;
  const int ns = static_cast<int>(t.stages.size());
  if (t.blocks <= 0 || ns == 0)
    throw InputError(where, fmt::format("{} CTAs and {} stages: expected at least one of each", t.blocks, ns));
  if (t.clockHz <= 0) throw InputError(where, fmt::format("clock of {} Hz: expected a positive rate", t.clockHz));
  const size_t want = static_cast<size_t>(t.blocks) * ns * 2;
  std::vector<TraceSpan> spans;
  for (size_t r = 0; r < t.ranks.size(); ++r) {
    const auto& buf = t.ranks[r];
    if (buf.size() != want)
      throw InputError(where, fmt::format("rank {}'s buffer holds {} stamps, expected {} CTAs x {} stages x 2 = {}",
                                          r, buf.size(), t.blocks, ns, want));
    for (int c = 0; c < t.blocks; ++c)
      for (int s = 0; s < ns; ++s) {
        const uint64_t a = buf[(static_cast<size_t>(c) * ns + s) * 2], b = buf[(static_cast<size_t>(c) * ns + s) * 2 + 1];
        if (a == 0 && b == 0) continue;  // the CTA never got to this stage
        const std::string at = fmt::format("rank {} CTA {} stage '{}'", r, c, t.stages[s]);
        if (a == 0 || b == 0)
          throw InputError(where, fmt::format("{}: start {} and end {}: a span needs both stamps", at, a, b));
        if (b < a) throw InputError(where, fmt::format("{}: ends at {}, before its start {}", at, b, a));
        spans.push_back({static_cast<int>(r), c, s, a, b});
      }
  }
  return spans;
}

nlohmann::json chromeTrace(const TraceBuffers& t) {
  using nlohmann::json;
  const std::vector<TraceSpan> spans = decodeTrace(t);
  uint64_t origin = std::numeric_limits<uint64_t>::max();
  for (const TraceSpan& s : spans) origin = std::min(origin, s.start);
  const double usPerTick = 1e6 / static_cast<double>(t.clockHz);
  json events = json::array();
  for (size_t r = 0; r < t.ranks.size(); ++r) {
    events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", r}, {"tid", 0},
                      {"args", {{"name", fmt::format("rank {}", r)}}}});
    events.push_back({{"name", "process_sort_index"}, {"ph", "M"}, {"pid", r}, {"tid", 0},
                      {"args", {{"sort_index", r}}}});
    for (int c = 0; c < t.blocks; ++c) {
      events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", r}, {"tid", c},
                        {"args", {{"name", fmt::format("CTA {}", c)}}}});
      events.push_back({{"name", "thread_sort_index"}, {"ph", "M"}, {"pid", r}, {"tid", c},
                        {"args", {{"sort_index", c}}}});
    }
  }
  for (const TraceSpan& s : spans)
    events.push_back({{"name", t.stages[s.stage]},
                      {"cat", "stage"},
                      {"ph", "X"},
                      {"pid", s.rank},
                      {"tid", s.cta},
                      {"ts", static_cast<double>(s.start - origin) * usPerTick},
                      {"dur", static_cast<double>(s.end - s.start) * usPerTick},
                      {"args", {{"stage", s.stage}, {"start_tick", s.start}, {"end_tick", s.end}}}});
  return {{"traceEvents", events},
          {"displayTimeUnit", "ns"},
          {"otherData",
           {{"variant", t.name},
            {"clock_hz", t.clockHz},
            {"origin_tick", spans.empty() ? 0 : origin},
            {"ranks", t.ranks.size()},
            {"ctas", t.blocks},
            {"stages", t.stages}}}};
}

}  // namespace monogen::runtime
