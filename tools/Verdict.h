// The verdict line `monogen sim` and `monogen check` print for one run against the reference, and
// the tally of a run under several scheduler seeds.
#pragma once
#include <map>
#include <optional>
#include <string>

#include "specs/minimax_m3/testing/SimHarness.h"

namespace monogen::tools {

/// "bit-exact", "MISMATCH: ..." (the first differing element) or "INVALID: ..." (an error word
/// is set: no output of the launch is a result, whatever its bits).
std::string verdictOf(const specs::minimax_m3::SimRun& run, const std::optional<specs::minimax_m3::Mismatch>& m);

/// `verdict` as "RACE: ..." or "UNINIT: ..." when the race detector found anything: a racy
/// launch, or one that read memory it never wrote, is never bit-exact, whatever its outputs.
std::string withFindings(const std::string& verdict, const runtime::SimStats& stats);

/// Prints the detector's findings of one run (indented, under its seed line); with `races` on and
/// nothing found, says that it checked.
void printFindings(const runtime::SimStats& stats, bool races);

/// The verdicts of one launch under several scheduler seeds.
class SeedTally {
 public:
  /// Counts seed `seed`'s verdict; true when it is bit-exact.
  bool add(const std::string& verdict, uint64_t seed);
  int bad() const { return bad_; }
  /// "bit-exact under 3 seeds", or "MISMATCH under 1, RACE under 2 of 3 seeds; the first, seed 2:
  /// MISMATCH: out.r0[7] ..." (the first failing seed's whole verdict, its first mismatch kept).
  std::string overall() const;

 private:
  int seeds_ = 0, bad_ = 0;
  std::string first_;  // the first failing seed's verdict, with its seed
  std::map<std::string, int> kinds_;  // a failing verdict's kind (its text before ':') -> seeds
};

}  // namespace monogen::tools
