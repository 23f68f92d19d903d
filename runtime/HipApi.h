// The HIP runtime's entry points, loaded at run time with dlopen so that building needs no ROCm:
// the one table both HIP devices use (runtime/HipDevice.h, one process driving every GPU, and
// runtime/HipRankDevice.h, one process a rank). HipApi::load tries the library names in order
// (MONOGEN_HIP_LIBRARY when set, naming the one .so to load, e.g. the fake HIP library of
// tests/fake_hip; else libamdhip64.so.7, .so.6, .so.5 -- ROCm 5.2, Debian's libamdhip64-5 --
// and libamdhip64.so), resolves every entry point below (a clear RuntimeError naming the
// library and the missing symbol otherwise) and reads hipRuntimeGetVersion. discover() counts the
// GPUs and refuses, with one message, a machine with no gfx950 GPU. The HIP types and constants
// are declared here as hip_runtime_api.h declares them (ROCm 5.2 and 7 alike), no ROCm headers.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "runtime/CoResidency.h"

namespace monogen::runtime {

namespace hip {
using Error = int;  // hipError_t; hipSuccess == 0
constexpr Error kSuccess = 0;
constexpr Error kErrorNoDevice = 100;  // hipErrorNoDevice
using Module = void*;                  // hipModule_t
using Function = void*;                // hipFunction_t
using Stream = void*;                  // hipStream_t; nullptr: the null stream
using Event = void*;                   // hipEvent_t
enum MemcpyKind : int { HostToHost = 0, HostToDevice = 1, DeviceToHost = 2, DeviceToDevice = 3, Default = 4 };
inline void* const kLaunchParamBufferPointer = reinterpret_cast<void*>(1);  // HIP_LAUNCH_PARAM_BUFFER_POINTER
inline void* const kLaunchParamBufferSize = reinterpret_cast<void*>(2);     // HIP_LAUNCH_PARAM_BUFFER_SIZE
inline void* const kLaunchParamEnd = reinterpret_cast<void*>(3);            // HIP_LAUNCH_PARAM_END
constexpr unsigned kDeviceMallocUncached = 0x3;                              // hipDeviceMallocUncached
constexpr unsigned kIpcMemLazyEnablePeerAccess = 0x1;                        // hipIpcMemLazyEnablePeerAccess
constexpr size_t kIpcHandleSize = 64;                                        // HIP_IPC_HANDLE_SIZE
struct IpcMemHandle {                                                        // hipIpcMemHandle_t
  char reserved[kIpcHandleSize];
};
}  // namespace hip

struct HipApi {
  /// MONOGEN_HIP_LIBRARY alone when it is set and not empty; else the libamdhip64 names above.
  static std::vector<std::string> defaultLibraryNames();
  /// How many entry points load() resolves (every one either HIP device uses).
  static constexpr int kEntryPoints = 25;

  /// dlopens the first of `libraryNames` that loads and resolves every entry point. Throws
  /// RuntimeError (where: `who`) naming every library tried with dlerror's reason when none
  /// loads, or the library and the missing symbol. The library stays loaded for the life of the
  /// process (the HIP runtime does not support being unloaded: no dlclose).
  static HipApi load(const std::vector<std::string>& libraryNames, const std::string& who);

  /// "HIP device (libamdhip64.so.5, runtime 50221151, 25 entry points resolved)", for messages.
  std::string describe() const;
  /// hipGetDeviceCount: the number of GPUs. Throws RuntimeError (where: describe()) saying that
  /// no gfx950 GPU is present when there is no GPU at all, or (when `requireGfx950`, as both
  /// devices do) when none of them is a gfx950 (each one's name listed).
  int discover(bool requireGfx950 = true) const;
  /// Device `device`'s attributes (hipDeviceGetAttribute) for checkCoResidency and messages.
  DeviceLimits limits(int device) const;
  /// Throws RuntimeError at `where` if rc is not hipSuccess: "<call> failed: <hipGetErrorString> (hipError_t N)".
  void check(hip::Error rc, const char* call, const std::string& where) const;

  void* handle = nullptr;
  std::string library;     // the name that loaded
  int runtimeVersion = 0;  // hipRuntimeGetVersion's value (0 if it failed)

  const char* (*getErrorString)(hip::Error) = nullptr;
  hip::Error (*runtimeGetVersion)(int*) = nullptr;
  hip::Error (*getDeviceCount)(int*) = nullptr;
  hip::Error (*setDevice)(int) = nullptr;
  hip::Error (*deviceGetAttribute)(int*, int, int) = nullptr;
  hip::Error (*malloc)(void**, size_t) = nullptr;
  hip::Error (*extMallocWithFlags)(void**, size_t, unsigned) = nullptr;
  hip::Error (*free)(void*) = nullptr;
  hip::Error (*memcpy)(void*, const void*, size_t, hip::MemcpyKind) = nullptr;
  hip::Error (*memset)(void*, int, size_t) = nullptr;
  hip::Error (*ipcGetMemHandle)(hip::IpcMemHandle*, void*) = nullptr;
  hip::Error (*ipcOpenMemHandle)(void**, hip::IpcMemHandle, unsigned) = nullptr;
  hip::Error (*ipcCloseMemHandle)(void*) = nullptr;
  hip::Error (*moduleLoadData)(hip::Module*, const void*) = nullptr;
  hip::Error (*moduleGetFunction)(hip::Function*, hip::Module, const char*) = nullptr;
  hip::Error (*moduleLaunchKernel)(hip::Function, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                   unsigned, hip::Stream, void**, void**) = nullptr;
  hip::Error (*streamCreate)(hip::Stream*) = nullptr;
  hip::Error (*streamDestroy)(hip::Stream) = nullptr;
  hip::Error (*streamSynchronize)(hip::Stream) = nullptr;
  hip::Error (*deviceSynchronize)() = nullptr;
  hip::Error (*eventCreate)(hip::Event*) = nullptr;
  hip::Error (*eventRecord)(hip::Event, hip::Stream) = nullptr;
  hip::Error (*eventSynchronize)(hip::Event) = nullptr;
  hip::Error (*eventElapsedTime)(float*, hip::Event, hip::Event) = nullptr;  // milliseconds
  hip::Error (*eventDestroy)(hip::Event) = nullptr;
};

}  // namespace monogen::runtime
