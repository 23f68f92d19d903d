// The HIP device: gfx950 code objects on real GPUs through libamdhip64, loaded at run time with
// dlopen by runtime/HipApi.h (MONOGEN_HIP_LIBRARY, or libamdhip64.so.7, then .so.6, then .so.5 --
// ROCm 5.2, Debian's libamdhip64-5 -- then libamdhip64.so), so building needs no ROCm. Without ROCm, construction throws a RuntimeError
// that says what it tried; without a gfx950 GPU, one that says what it found; it never crashes.
// Rank r of a launch runs on HIP device r. Before the first launch of a code object on a device,
// checkCoResidency (runtime/CoResidency.h) refuses a device that cannot hold the whole grid at one
// CTA per CU. Nothing else may run on those GPUs during a launch: a persistent kernel's CTAs wait
// for each other, and a CU another kernel holds is a CTA that never starts.
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "runtime/CoResidency.h"
#include "runtime/Device.h"
#include "runtime/HipApi.h"

namespace monogen::runtime {

class HipDevice : public Device {
 public:
  /// The library names tried in order by default.
  static std::vector<std::string> defaultLibraryNames();

  /// How many HIP entry points the device resolves (HipApi's: every one either HIP device uses).
  static constexpr int kResolvedEntryPoints = HipApi::kEntryPoints;

  /// Loads the first of `libraryNames` that dlopen accepts, resolves the HIP entry points and
  /// counts the GPUs. Throws RuntimeError naming every library tried (with dlerror's reason)
  /// when none loads, the missing symbol when one is absent, or that no gfx950 GPU is present
  /// (none at all, or only other GPUs, listed).
  explicit HipDevice(std::vector<std::string> libraryNames = defaultLibraryNames());
  ~HipDevice() override;

  std::string name() const override;
  int maxRanks() const override { return deviceCount_; }
  uint64_t alloc(int rank, int64_t bytes, const std::string& name, int64_t align = 256) override;
  void free(int rank, uint64_t addr) override;
  void upload(int rank, uint64_t dst, const void* src, int64_t bytes) override;
  void download(int rank, void* dst, uint64_t src, int64_t bytes) override;
  /// Loads `code` on every rank's device (once per device and code object), checks that the
  /// grid is co-resident there (once per device and code object), launches the code object's
  /// kernel (its descriptor's symbol, codegen's kernelSymbol(plan)) with grid plan.grid.blocks x plan.grid.threads and rank r's kernarg
  /// segment (HIP_LAUNCH_PARAM_BUFFER_POINTER), on every rank before waiting on any (the
  /// ranks of a persistent kernel wait for each other), then synchronizes every device.
  void launchPacked(const ir::Plan& plan, const CodeObjectBytes& code, const PackedLaunch& args) override;

  /// The library that was loaded.
  const std::string& library() const { return library_; }
  /// hipRuntimeGetVersion's value (0 if it failed).
  int runtimeVersion() const { return runtimeVersion_; }
  /// Device `device`'s attributes for checkCoResidency.
  DeviceLimits limits(int device) const;

 private:
  void setDevice(int rank, const std::string& where);
  void* function(int rank, const CodeObjectBytes& code, const std::string& kernel, const std::string& where);

  std::unique_ptr<HipApi> api_;
  std::string library_;
  int deviceCount_ = 0;
  int runtimeVersion_ = 0;
  std::set<std::pair<int, CodeObjectBytes>> coResident_;  // (rank, code object) checked
  struct Module {
    CodeObjectBytes code;
    void* module = nullptr;
    std::map<std::string, void*> functions;
  };
  std::mutex mu_;
  std::map<int, std::vector<Module>> modules_;  // by rank
};

}  // namespace monogen::runtime
