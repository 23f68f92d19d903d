// The per-rank device seam (runtime/RankDevice.h) on one GPU through libamdhip64, for a serving
// process that holds one rank. NOT RUN HERE on a GPU: this machine has none; every HIP call in it
// is written against the HIP API's documented signatures, and the sequence of calls it makes is
// checked against the fake HIP library (tests/fake_hip, tests/test_hip_rank.cpp), not a real runtime.
//
// - libamdhip64 is dlopen'd through runtime/HipApi.h, the entry-point table HipDevice uses too
//   (MONOGEN_HIP_LIBRARY, or .so.7, .so.6, .so.5, the unversioned name). Every entry point is
//   resolved at construction, so a library without one is a clear error before any work; so is a
//   machine without a gfx950 GPU (HipApi::discover, the same message as HipDevice).
// - The GPU is device `deviceOrdinal` (default: the rank, as one process a GPU with
//   HIP_VISIBLE_DEVICES unset; pass 0 when the framework set HIP_VISIBLE_DEVICES per process).
// - allocSymmetric: hipExtMallocWithFlags(hipDeviceMallocUncached) in whole 4 KiB pages;
//   exportSymmetric: hipIpcGetMemHandle's 64 bytes, hex, in the envelope with the node's boot id;
//   openPeer: hipIpcOpenMemHandle(hipIpcMemLazyEnablePeerAccess), refusing another node's or a
//   malformed handle before calling HIP.
// - launch: hipModuleLaunchKernel on the caller's hipStream_t with the packed kernarg segment
//   (HIP_LAUNCH_PARAM_BUFFER_POINTER); nothing else: no allocation, copy or synchronization.
// - load: the code object's own symbol (its kernel descriptor's), after runtime::checkCoResidency
//   (runtime/CoResidency.h) refuses a GPU that cannot hold the whole grid at one CTA a CU.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "runtime/CoResidency.h"
#include "runtime/RankDevice.h"

namespace monogen::runtime {

struct HipApi;  // runtime/HipApi.h

class HipRankDevice : public RankDevice {
 public:
  static std::vector<std::string> defaultLibraryNames();
  /// Loads libamdhip64, resolves every entry point, selects the GPU. RuntimeError naming each
  /// library tried, the missing symbol, or that no GPU is present.
  HipRankDevice(int rank, int tp, int deviceOrdinal = -1, std::vector<std::string> libraryNames = defaultLibraryNames());
  ~HipRankDevice() override;

  std::string name() const override;
  int rank() const override { return rank_; }
  int tp() const override { return tp_; }
  bool runsCodeObjects() const override { return true; }
  uint64_t alloc(int64_t bytes, const std::string& name, int64_t align = 256) override;
  uint64_t allocSymmetric(int64_t bytes, const std::string& name) override;
  std::vector<uint8_t> exportSymmetric() override;
  uint64_t openPeer(int peer, const std::vector<uint8_t>& handle) override;
  void upload(uint64_t dst, const void* src, int64_t bytes) override;
  void download(void* dst, uint64_t src, int64_t bytes) override;
  void zero(uint64_t dst, int64_t bytes) override;
  LoadedKernel load(const ir::Plan& plan, const CodeObjectBytes& code) override;
  void launch(const LoadedKernel& k, const std::vector<uint64_t>& values, std::vector<uint8_t>& kernargs,
              void* stream) override;
  void synchronize(void* stream) override;

  const std::string& library() const { return library_; }
  /// This rank's GPU as hipDeviceGetAttribute reports it (name with the arch, CU count, ...).
  DeviceLimits limits() const;
  /// The loaded entry points (HipApi::describe() names the library and runtime version).
  const HipApi& api() const;

 private:
  void select(const std::string& where);
  std::unique_ptr<HipApi> api_;
  std::string library_;
  int rank_, tp_, device_;
  int deviceCount_ = 0;
  uint64_t sym_ = 0;
  int64_t symBytes_ = 0;
  std::vector<void*> allocations_, opened_, modules_;
  std::vector<CodeObjectBytes> codes_;  // a loaded module's bytes stay alive with it
};

}  // namespace monogen::runtime
