// Co-residency: every CTA of a persistent grid must be resident at once, one a CU. A pure check of
// a code object's kernel descriptor (read without LLVM) against a device's attributes, refusing
// with every figure that does not fit. docs/runtime.md.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace monogen::runtime {

/// What one CTA of a kernel takes, from its code object's kernel descriptor.
struct KernelResources {
  std::string symbol;         ///< the kernel's symbol (the descriptor's name without ".kd")
  int vgprsPerWave = 0;       ///< VGPRs + AGPRs allocated per wave (granulated: the unified file on gfx90a+)
  int archVgprs = 0;          ///< of which architectural VGPRs (accum_offset; AGPRs start there)
  int sgprsPerWave = 0;       ///< SGPRs allocated per wave (granulated; LLVM raises it to the most
                              ///< that keeps the occupancy its VGPRs allow, so above .sgpr_count)
  int64_t ldsBytes = 0;       ///< group_segment_fixed_size
  int64_t scratchBytes = 0;   ///< private_segment_fixed_size per work-item
  int wavefrontSize = 64;     ///< 32 if the descriptor enables wave32
};

/// Reads the kernel descriptor of the code object's only kernel. Throws RuntimeError (where:
/// "code object") if it is not a 64-bit AMDGPU ELF, has no or several `.kd` symbols, or the
/// descriptor lies outside the file.
KernelResources readKernelResources(const std::vector<uint8_t>& codeObject);

/// What a device offers, as hipDeviceGetAttribute reports it (and the gfx9 facts it does not).
struct DeviceLimits {
  std::string name;                  ///< for messages: "HIP device 3 (gfx950)"
  bool gfx950 = false;               ///< compute capability 9.5 (readDeviceLimits)
  int computeUnits = 0;              ///< hipDeviceAttributeMultiprocessorCount
  int64_t ldsPerCu = 0;              ///< hipDeviceAttributeMaxSharedMemoryPerMultiprocessor
  int64_t ldsPerBlock = 0;           ///< hipDeviceAttributeMaxSharedMemoryPerBlock
  int64_t registersPerCu = 0;        ///< hipDeviceAttributeMaxRegistersPerMultiprocessor (32-bit lanes
                                     ///< x VGPRs: CLR reports VGPRs per SIMD x SIMDs x 64)
  int maxThreadsPerCu = 0;           ///< hipDeviceAttributeMaxThreadsPerMultiProcessor
  int maxThreadsPerBlock = 0;        ///< hipDeviceAttributeMaxThreadsPerBlock
  int warpSize = 0;                  ///< hipDeviceAttributeWarpSize
  int simdsPerCu = 4;                ///< gfx9 (CDNA): 4 SIMDs a CU; no attribute reports it
  int sgprsPerSimd = 800;            ///< gfx9: 800 SGPRs a SIMD (AMDGPUUsage / the backend's total)
  int maxWavesPerSimd = 8;           ///< gfx90a, gfx942, gfx950: 8 wave slots a SIMD
};

/// hipDeviceGetAttribute's values for the limits above (the same in ROCm 5.2's and ROCm 7's
/// hip_runtime_api.h, counted and compiled).
enum class HipAttribute : int {
  ComputeCapabilityMajor = 23,  // gfx950: 9 (gfx9 ...)
  MaxThreadsPerBlock = 56,
  MaxThreadsPerMultiProcessor = 57,
  ComputeCapabilityMinor = 61,  // gfx950: 5 (... 5 x)
  MultiprocessorCount = 63,
  MaxRegistersPerMultiprocessor = 72,
  MaxSharedMemoryPerBlock = 74,
  WarpSize = 87,
  MaxSharedMemoryPerMultiprocessor = 10002,  // AMD-specific
};
/// A HIP device's limits, read through `attribute` (hipDeviceGetAttribute on `device`, throwing
/// on failure; the name is for its message). Used by both HIP devices (HipDevice, HipRankDevice).
DeviceLimits readDeviceLimits(int device, const std::function<int(HipAttribute, const char* name)>& attribute);

/// Throws RuntimeError (where: `where`) unless `blocks` CTAs of `threadsPerCta` threads, each
/// taking `k`, can all be resident at once on `d`, one CTA per CU. The message lists every
/// figure that does not fit, what the kernel needs and what the device has.
void checkCoResidency(const KernelResources& k, int blocks, int threadsPerCta, const DeviceLimits& d,
                      const std::string& where);

}  // namespace monogen::runtime
