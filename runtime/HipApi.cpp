#include "runtime/HipApi.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>

#include "ir/Error.h"

namespace monogen::runtime {

namespace {

template <class F>
void resolve(const HipApi& api, F& fn, const char* symbol, const std::string& who, int& count) {
  dlerror();
  void* p = dlsym(api.handle, symbol);
  if (!p)
    throw RuntimeError(who, fmt::format("{} was loaded but has no symbol {}; the HIP devices need a ROCm 5.2 or later "
                                        "libamdhip64",
                                        api.library, symbol));
  fn = reinterpret_cast<F>(p);
  ++count;
}

}  // namespace

std::vector<std::string> HipApi::defaultLibraryNames() {
  if (const char* lib = std::getenv("MONOGEN_HIP_LIBRARY"); lib && *lib) return {lib};
  return {"libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5", "libamdhip64.so"};
}

HipApi HipApi::load(const std::vector<std::string>& libraryNames, const std::string& who) {
  HipApi a;
  std::string tried;
  for (const std::string& lib : libraryNames) {
    if (void* h = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      a.handle = h;
      a.library = lib;
      break;
    }
    const char* err = dlerror();
    const std::string why = err ? err : "not found";
    tried += "\n  " + (why.rfind(lib, 0) == 0 ? why : lib + ": " + why);  // dlerror usually starts with the name
  }
  if (!a.handle)
    throw RuntimeError(who, "cannot load the HIP runtime (libamdhip64); tried, in order:" + tried +
                                "\nThe HIP device needs ROCm (5.2 or later; 6 or 7 for gfx950) installed, with "
                                "libamdhip64 on the loader path (e.g. LD_LIBRARY_PATH=/opt/rocm/lib), or "
                                "MONOGEN_HIP_LIBRARY naming it. Without a GPU, use the Sim device.");
  int n = 0;
  resolve(a, a.getErrorString, "hipGetErrorString", who, n);
  resolve(a, a.runtimeGetVersion, "hipRuntimeGetVersion", who, n);
  resolve(a, a.getDeviceCount, "hipGetDeviceCount", who, n);
  resolve(a, a.setDevice, "hipSetDevice", who, n);
  resolve(a, a.deviceGetAttribute, "hipDeviceGetAttribute", who, n);
  resolve(a, a.malloc, "hipMalloc", who, n);
  resolve(a, a.extMallocWithFlags, "hipExtMallocWithFlags", who, n);
  resolve(a, a.free, "hipFree", who, n);
  resolve(a, a.memcpy, "hipMemcpy", who, n);
  resolve(a, a.memset, "hipMemset", who, n);
  resolve(a, a.ipcGetMemHandle, "hipIpcGetMemHandle", who, n);
  resolve(a, a.ipcOpenMemHandle, "hipIpcOpenMemHandle", who, n);
  resolve(a, a.ipcCloseMemHandle, "hipIpcCloseMemHandle", who, n);
  resolve(a, a.moduleLoadData, "hipModuleLoadData", who, n);
  resolve(a, a.moduleGetFunction, "hipModuleGetFunction", who, n);
  resolve(a, a.moduleLaunchKernel, "hipModuleLaunchKernel", who, n);
  resolve(a, a.streamCreate, "hipStreamCreate", who, n);
  resolve(a, a.streamDestroy, "hipStreamDestroy", who, n);
  resolve(a, a.streamSynchronize, "hipStreamSynchronize", who, n);
  resolve(a, a.deviceSynchronize, "hipDeviceSynchronize", who, n);
  resolve(a, a.eventCreate, "hipEventCreate", who, n);
  resolve(a, a.eventRecord, "hipEventRecord", who, n);
  resolve(a, a.eventSynchronize, "hipEventSynchronize", who, n);
  resolve(a, a.eventElapsedTime, "hipEventElapsedTime", who, n);
  resolve(a, a.eventDestroy, "hipEventDestroy", who, n);
  if (n != kEntryPoints) throw std::logic_error("HipApi::kEntryPoints is not the number of entry points resolved");
  int version = 0;
  if (a.runtimeGetVersion(&version) == hip::kSuccess) a.runtimeVersion = version;
  return a;
}

std::string HipApi::describe() const {
  return fmt::format("HIP device ({}, runtime {}, {} entry points resolved)", library, runtimeVersion, kEntryPoints);
}

void HipApi::check(hip::Error rc, const char* call, const std::string& where) const {
  if (rc == hip::kSuccess) return;
  const char* s = getErrorString ? getErrorString(rc) : nullptr;
  throw RuntimeError(where, fmt::format("{} failed: {} (hipError_t {})", call, s ? s : "unknown error", rc));
}

int HipApi::discover(bool requireGfx950) const {
  const std::string where = describe();
  int n = 0;
  const hip::Error rc = getDeviceCount(&n);
  if (rc == hip::kErrorNoDevice || (rc == hip::kSuccess && n <= 0))
    throw RuntimeError(where, "no gfx950 GPU is present: hipGetDeviceCount found no GPU at all (is /dev/kfd there, "
                              "and the user in the render group?). Without a GPU, use --device sim or gfx950-run.");
  check(rc, "hipGetDeviceCount", where);
  if (!requireGfx950) return n;
  std::string found;
  int gfx950 = 0;
  for (int d = 0; d < n; ++d) {
    const DeviceLimits l = limits(d);
    gfx950 += l.gfx950;  // not the name: "..., not gfx950" contains "gfx950"
    found += "\n  " + l.name;
  }
  if (gfx950 == 0)
    throw RuntimeError(where, fmt::format("no gfx950 GPU is present: the {} GPU(s) found are{}\nmonogen's code objects "
                                          "are for gfx950 (MI350X / MI355X) only",
                                          n, found));
  return n;
}

DeviceLimits HipApi::limits(int device) const {
  return readDeviceLimits(device, [&](HipAttribute attr, const char* name) {
    int v = 0;
    check(deviceGetAttribute(&v, static_cast<int>(attr), device), "hipDeviceGetAttribute",
          fmt::format("HIP device {}, attribute {}", device, name));
    return v;
  });
}

}  // namespace monogen::runtime
