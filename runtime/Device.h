// The Device interface: where a launch runs. A device owns memory on every rank (alloc,
// upload, download) and runs one launch of a Plan on all TP ranks at once. Two devices
// implement it: the HIP device (runtime/HipDevice.h, a code object on real GPUs) and the Sim
// device (runtime/sim/SimDeviceAdapter.h, the kernel IR on the CPU; it ignores the code object).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ir/Plan.h"
#include "runtime/Launch.h"
#include "runtime/Tensor.h"

namespace monogen::runtime {

/// A gfx950 code object (an ELF shared object), as the cache holds it.
using CodeObjectBytes = std::vector<uint8_t>;

class Device {
 public:
  virtual ~Device();

  /// "hip (2 x gfx950)", "sim", ... for messages.
  virtual std::string name() const = 0;
  /// How many ranks a launch may span (rank r runs on device r).
  virtual int maxRanks() const = 0;
  /// Whether a launch runs the code object (HIP) or the kernel IR itself (Sim): the
  /// generate-and-launch API compiles only for devices that need it.
  virtual bool runsCodeObjects() const { return true; }

  /// `bytes` of device memory on `rank`, aligned to at least `align`. Throws RuntimeError.
  virtual uint64_t alloc(int rank, int64_t bytes, const std::string& name, int64_t align = 256) = 0;
  /// Frees an allocation made by alloc (a no-op where the device keeps memory until it dies).
  virtual void free(int rank, uint64_t addr) = 0;
  virtual void upload(int rank, uint64_t dst, const void* src, int64_t bytes) = 0;
  virtual void download(int rank, void* dst, uint64_t src, int64_t bytes) = 0;

  /// Runs one checked, packed launch of `plan` on ranks 0..TP-1 and waits for it to finish.
  virtual void launchPacked(const ir::Plan& plan, const CodeObjectBytes& code, const PackedLaunch& args) = 0;

  /// Checks `ranks` against the plan (runtime/Launch.h: InputError before anything runs) and
  /// that this device has TP ranks (RuntimeError), then runs the launch.
  void launch(const ir::Plan& plan, const CodeObjectBytes& code, const std::vector<RankArgs>& ranks);
  /// The same for arguments packLaunch already checked and packed (checked once, not twice).
  void launch(const ir::Plan& plan, const CodeObjectBytes& code, const PackedLaunch& packed);

  /// alloc + upload of a host tensor; returns its device address.
  uint64_t put(int rank, const HostTensor& t, const std::string& name, int64_t align = 256);
  /// download into a host tensor of the given dtype and shape.
  HostTensor get(int rank, uint64_t addr, DType dtype, std::vector<int64_t> shape);
  /// put + the launch argument that names it (declaring t.layout).
  LaunchArg putArg(int rank, const HostTensor& t, const std::string& name, int64_t align = 256);
};

}  // namespace monogen::runtime
