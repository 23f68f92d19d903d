// RankProcesses: local processes, one a rank (the Sim one rank per process, the HIP per-rank
// path): the parent forks TP children and relays what a framework's CPU process group would
// (all-gathers, barriers) over pipes, standing in for torch.distributed, and collects report lines.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace monogen::runtime {

/// A child's end: what the rank's code calls.
class RankChannel {
 public:
  RankChannel(int rank, int tp, int toParent, int fromParent) : rank_(rank), tp_(tp), out_(toParent), in_(fromParent) {}
  int rank() const { return rank_; }
  int tp() const { return tp_; }
  /// Every rank's `mine`, in rank order (all_gather_object). Throws RuntimeError if a rank is gone.
  std::vector<std::vector<uint8_t>> allGather(const std::vector<uint8_t>& mine);
  void barrier() { allGather({}); }
  /// One line to the parent (RankProcesses::run's onReport).
  void report(const std::string& line);

 private:
  int rank_, tp_, out_, in_;
};

/// The parent's end.
class RankProcesses {
 public:
  using Body = std::function<int(RankChannel&)>;
  /// Forks `tp` children; child r runs body(channel of rank r) and exits with its result (an
  /// exception is reported as "error: <what>" and exits 2). Nothing of the parent runs in them
  /// after the body.
  RankProcesses(int tp, const Body& body);
  /// Kills (SIGKILL) and reaps the children still running.
  ~RankProcesses();
  RankProcesses(const RankProcesses&) = delete;
  RankProcesses& operator=(const RankProcesses&) = delete;

  /// Relays gathers and report lines until every child has exited or `timeoutSec` has passed
  /// (then the rest are killed). onReport(rank, line) may call kill(). Returns each child's exit
  /// status: its exit code, or 128 + the signal that ended it, or -1 if it was killed at the timeout.
  std::vector<int> run(const std::function<void(int rank, const std::string& line)>& onReport, double timeoutSec);
  /// SIGKILL rank r's process (a crash mid-launch).
  void kill(int rank);
  pid_t pid(int rank) const { return kids_[rank].pid; }
  int tp() const { return static_cast<int>(kids_.size()); }

 private:
  struct Kid {
    pid_t pid = -1;
    int fromKid = -1, toKid = -1;
    bool exited = false;
    int status = -1;
    std::string buf;  // bytes read, not yet a whole frame
  };
  std::vector<Kid> kids_;
};

}  // namespace monogen::runtime
