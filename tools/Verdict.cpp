#include "tools/Verdict.h"

#include <fmt/format.h>

namespace monogen::tools {

namespace mm = specs::minimax_m3;

std::string verdictOf(const mm::SimRun& run, const std::optional<mm::Mismatch>& m) {
  if (!run.valid) return "INVALID: " + run.error;  // an error word is set: no output of this launch is a result
  if (m && m->index >= 0)
    return fmt::format("MISMATCH: {}[{}] = {}, reference {}{}", m->tensor, m->index, m->got, m->want,
                       m->stage.empty() ? "" : fmt::format(" (written by stage '{}')", m->stage));
  if (m) return "MISMATCH: " + mm::describe(*m);  // a tensor missing or of another shape
  return "bit-exact";
}

std::string withFindings(const std::string& verdict, const runtime::SimStats& stats) {
  const int64_t nr = stats.raceCount, nu = stats.uninitCount;
  if (nr == 0 && nu == 0) return verdict;
  std::string what;
  if (nr > 0) what = fmt::format("{} racing op pair{}", nr, nr == 1 ? "" : "s");
  if (nu > 0)
    what += fmt::format("{}{} op{} reading uninitialized memory", what.empty() ? "" : ", ", nu, nu == 1 ? "" : "s");
  return fmt::format("{}: {} (outputs: {})", nr > 0 ? "RACE" : "UNINIT", what, verdict);
}

void printFindings(const runtime::SimStats& stats, bool races) {
  for (const std::string& r : stats.races) fmt::print("    {}\n", r);
  if (stats.raceCount > static_cast<int64_t>(stats.races.size()))
    fmt::print("    ... and {} more racing op pairs\n", stats.raceCount - static_cast<int64_t>(stats.races.size()));
  for (const std::string& r : stats.uninit) fmt::print("    {}\n", r);
  if (stats.uninitCount > static_cast<int64_t>(stats.uninit.size()))
    fmt::print("    ... and {} more ops reading uninitialized memory\n",
               stats.uninitCount - static_cast<int64_t>(stats.uninit.size()));
  if (races && stats.raceCount == 0 && stats.uninitCount == 0)
    fmt::print("    race detector: on, clean: no racing op pair, no read of unwritten memory ({} lane accesses checked)\n",
               stats.raceChecks);
  if (races && stats.raceUncheckedWrites)
    fmt::print("    ({} writes hit a word whose shadow read set had overflowed: a write-after-read race there "
               "may go unseen)\n",
               stats.raceUncheckedWrites);
}

bool SeedTally::add(const std::string& verdict, uint64_t seed) {
  ++seeds_;
  if (verdict == "bit-exact") return true;
  if (bad_ == 0) first_ = fmt::format("seed {}: {}", seed, verdict);
  ++bad_;
  ++kinds_[verdict.substr(0, verdict.find(':'))];
  return false;
}

std::string SeedTally::overall() const {
  const char* plural = seeds_ > 1 ? "s" : "";
  if (bad_ == 0) return fmt::format("bit-exact under {} seed{}", seeds_, plural);
  std::string kinds;
  for (const auto& [kind, n] : kinds_) kinds += fmt::format("{}{} under {}", kinds.empty() ? "" : ", ", kind, n);
  return fmt::format("{} of {} seed{}; the first, {}", kinds, seeds_, plural, first_);
}

}  // namespace monogen::tools
