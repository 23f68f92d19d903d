// The Sim device behind the Device interface: it ignores the code object and runs the Plan's
// kernel IR on the CPU through runtime::SimDevice (every CTA of every rank, one address space).
#pragma once
#include "runtime/Device.h"
#include "runtime/sim/SimDevice.h"

namespace monogen::runtime {

class SimDeviceAdapter : public Device {
 public:
  explicit SimDeviceAdapter(SimOptions opts = {}, int maxRanks = 8);

  std::string name() const override { return "sim"; }
  int maxRanks() const override { return maxRanks_; }
  bool runsCodeObjects() const override { return false; }
  uint64_t alloc(int rank, int64_t bytes, const std::string& name, int64_t align = 256) override;
  void free(int rank, uint64_t addr) override {}  // SimMemory keeps every allocation
  void upload(int rank, uint64_t dst, const void* src, int64_t bytes) override;
  void download(int rank, void* dst, uint64_t src, int64_t bytes) override;
  /// SimDevice::run(plan, args.values, options()); the code object is not used.
  void launchPacked(const ir::Plan& plan, const CodeObjectBytes& code, const PackedLaunch& args) override;

  SimDevice& sim() { return sim_; }
  SimOptions& options() { return opts_; }
  /// What the last launch did.
  const SimStats& lastStats() const { return last_; }

 private:
  SimDevice sim_;
  SimOptions opts_;
  int maxRanks_;
  SimStats last_;
};

}  // namespace monogen::runtime
