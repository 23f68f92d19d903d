// The Sim device as one rank of a multi-process launch (runtime/RankDevice.h): it simulates its
// own rank's CTAs only; its symmetric buffer is a POSIX shared-memory segment the peers map too.
// Addresses, handles and waits: docs/sim.md, "One rank a process". SimOptions::races is refused.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/RankDevice.h"
#include "runtime/sim/SimDevice.h"

namespace monogen::runtime {

struct SimProgram;

class SimRankDevice : public RankDevice {
 public:
  SimRankDevice(int rank, int tp, SimOptions opts = {});
  ~SimRankDevice() override;

  std::string name() const override;
  int rank() const override { return rank_; }
  int tp() const override { return tp_; }
  bool runsCodeObjects() const override { return false; }
  uint64_t alloc(int64_t bytes, const std::string& name, int64_t align = 256) override;
  uint64_t allocSymmetric(int64_t bytes, const std::string& name) override;
  std::vector<uint8_t> exportSymmetric() override;
  uint64_t openPeer(int peer, const std::vector<uint8_t>& handle) override;
  void peersOpened() override;
  void upload(uint64_t dst, const void* src, int64_t bytes) override;
  void download(void* dst, uint64_t src, int64_t bytes) override;
  LoadedKernel load(const ir::Plan& plan, const CodeObjectBytes& code) override;
  void launch(const LoadedKernel& k, const std::vector<uint64_t>& values, std::vector<uint8_t>& kernargs,
              void* stream) override;
  void synchronize(void* stream) override {}

  SimOptions& options() { return opts_; }
  const SimStats& lastStats() const { return last_; }
  SimMemory& memory() { return mem_; }
  /// The shared-memory segment's name ("/monogen-sim-<pid>-r<rank>-<n>"), empty before allocSymmetric.
  const std::string& segment() const { return segment_; }

 private:
  struct Mapping {
    void* addr = nullptr;
    size_t bytes = 0;
  };
  int rank_, tp_;
  SimOptions opts_;
  SimMemory mem_;
  std::string segment_;
  bool unlinked_ = false;
  uint64_t symAddr_ = 0;
  int64_t symBytes_ = 0;
  std::vector<Mapping> maps_;
  std::map<int, uint64_t> peers_;  // opened peer -> Sim address
  std::vector<std::unique_ptr<SimProgram>> programs_;
  std::vector<std::vector<uint64_t>> args_;  // one rank's, reused from launch to launch
  SimStats last_;
};

}  // namespace monogen::runtime
