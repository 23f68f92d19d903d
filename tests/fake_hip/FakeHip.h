// A fake HIP runtime for tests (tests/fake_hip/FakeHip.cpp, built as libmonogen_fake_hip.so): it
// exports every hip* entry point runtime/HipApi.h resolves, backed by host memory, so the HIP
// devices' code runs on a machine without a GPU. Selected with MONOGEN_HIP_LIBRARY=<its path>, or
// by passing its path as the library name. It launches nothing: hipModuleLaunchKernel records the
// call (grid, block, stream, a copy of the kernarg segment) and returns.
//
// What it models, and what it does not:
// - hipGetDeviceCount: MONOGEN_FAKE_HIP_DEVICES GPUs (default 8); 0 gives hipErrorNoDevice.
// - hipDeviceGetAttribute: a gfx950 (compute capability 9.5; MONOGEN_FAKE_HIP_ARCH="9.4" makes it
//   another), MONOGEN_FAKE_HIP_CUS CUs (default 256), 160 KiB LDS, 2048 threads a CU, 1024 a
//   block, 512 VGPRs x 4 SIMDs x 64 lanes of registers, 64-lane waves. Read at every call.
// - hipMalloc: aligned host memory. hipExtMallocWithFlags: a POSIX shared-memory segment mapped
//   here, whatever the flags (recorded); hipIpcGetMemHandle of it writes the segment's name into
//   the handle (refused, as real HIP does, for an uncached buffer that is not whole 4 KiB pages,
//   or a pointer that is not the start of such a segment); hipIpcOpenMemHandle maps the named
//   segment, so a handle opens in another process as in this one.
// - hipMemcpy, hipMemset: host memcpy / memset. Synchronizations do nothing.
// - hipModuleLoadData: accepts an ELF image (refuses anything else); hipModuleGetFunction any name.
// Every call is appended to fakeHipLog() (this process's), in order.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

struct FakeHipCall {
  std::string name;              // "hipModuleLaunchKernel", ...
  int device = -1;               // the current device (hipSetDevice) at the call
  uint64_t size = 0;             // bytes: allocations, copies, memsets
  unsigned flags = 0;            // hipExtMallocWithFlags, hipIpcOpenMemHandle
  uint64_t pointer = 0;          // the allocation, opened peer, copy destination, launched function
  int attribute = 0;             // hipDeviceGetAttribute
  void* stream = nullptr;        // launches and stream synchronizations
  unsigned grid = 0, block = 0;  // hipModuleLaunchKernel: gridDimX, blockDimX
  std::vector<uint8_t> kernargs; // hipModuleLaunchKernel: the HIP_LAUNCH_PARAM_BUFFER_POINTER segment
};

/// This process's calls so far (the test dlsyms it from the same handle HipApi loaded).
extern "C" std::vector<FakeHipCall>* fakeHipLog();
