// A fake HIP runtime for tests (libmonogen_fake_hip.so, MONOGEN_HIP_LIBRARY=<its path>): every
// hip* entry point runtime/HipApi.h resolves, on host memory; it launches nothing and records each
// call in fakeHipLog(). What it models: docs/minimax-m3-kernel.md, "The fake HIP runtime".
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
