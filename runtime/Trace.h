// Trace decoding: the trace knob's per-CTA, per-stage realtime stamps (a u64 [blocks][stages][2]
// buffer a rank: the clock at a stage's start and at its end, 0 where a CTA never got there)
// as Chrome / Perfetto trace-event JSON: one process a rank, one thread a CTA, one complete
// ("X") event a stage, timestamps in microseconds from the earliest stamp of any rank.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace monogen::runtime {

/// Every rank's trace buffer of one launch, with what is needed to read it.
struct TraceBuffers {
  std::string name;                 // the variant, for the trace's metadata and messages
  std::vector<std::string> stages;  // the Plan's stage names, in order
  int blocks = 0;                   // CTAs a rank
  int64_t clockHz = 100'000'000;    // the realtime clock the stamps count (s_memrealtime: 100 MHz)
  std::vector<std::vector<uint64_t>> ranks;  // ranks[r]: blocks x stages x 2 stamps, row-major
};

/// One stage on one CTA of one rank: its start and end stamps (clock ticks).
struct TraceSpan {
  int rank = 0, cta = 0, stage = 0;
  uint64_t start = 0, end = 0;
};

/// The spans of every rank, CTA and stage whose two stamps are set, in (rank, CTA, stage)
/// order. Throws InputError naming the rank, CTA and stage for a buffer of the wrong size, a
/// span with one stamp alone, or an end before its start.
std::vector<TraceSpan> decodeTrace(const TraceBuffers& t);

/// The trace-event JSON object ({"traceEvents": [...], ...}) of every span: per rank a
/// process_name ("rank r") and per CTA a thread_name ("CTA c") metadata event, and a complete
/// event per span with ts / dur in microseconds (ts from the earliest start of the launch).
nlohmann::json chromeTrace(const TraceBuffers& t);

}  // namespace monogen::runtime
