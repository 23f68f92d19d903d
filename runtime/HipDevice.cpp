#include "runtime/HipDevice.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include "ir/Error.h"
#include "runtime/CoResidency.h"

namespace monogen::runtime {

// The few HIP types and constants used, declared here because no ROCm headers are needed to
// build (values as in hip_runtime_api.h).
namespace hip {
using Error = int;  // hipError_t; hipSuccess == 0
constexpr Error kSuccess = 0;
using Module = void*;    // hipModule_t
using Function = void*;  // hipFunction_t
using Stream = void*;    // hipStream_t; nullptr: the null stream
enum MemcpyKind : int { HostToHost = 0, HostToDevice = 1, DeviceToHost = 2, DeviceToDevice = 3, Default = 4 };
inline void* const kLaunchParamBufferPointer = reinterpret_cast<void*>(1);  // HIP_LAUNCH_PARAM_BUFFER_POINTER
inline void* const kLaunchParamBufferSize = reinterpret_cast<void*>(2);     // HIP_LAUNCH_PARAM_BUFFER_SIZE
inline void* const kLaunchParamEnd = reinterpret_cast<void*>(3);            // HIP_LAUNCH_PARAM_END
constexpr Error kErrorNoDevice = 100;                                         // hipErrorNoDevice
using IpcMemHandle = struct { char reserved[64]; };  // hipIpcMemHandle_t (HIP_IPC_HANDLE_SIZE 64)
}  // namespace hip

struct HipApi {
  void* handle = nullptr;
  hip::Error (*moduleLoadData)(hip::Module*, const void*) = nullptr;
  hip::Error (*moduleGetFunction)(hip::Function*, hip::Module, const char*) = nullptr;
  hip::Error (*moduleLaunchKernel)(hip::Function, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                   unsigned, hip::Stream, void**, void**) = nullptr;
  hip::Error (*getDeviceCount)(int*) = nullptr;
  hip::Error (*setDevice)(int) = nullptr;
  hip::Error (*malloc)(void**, size_t) = nullptr;
  hip::Error (*free)(void*) = nullptr;
  hip::Error (*memcpy)(void*, const void*, size_t, hip::MemcpyKind) = nullptr;
  hip::Error (*deviceSynchronize)() = nullptr;
  const char* (*getErrorString)(hip::Error) = nullptr;
  hip::Error (*deviceGetAttribute)(int*, int, int) = nullptr;
  // Resolved for the per-rank runtime (uncached symmetric buffers, IPC peers, the caller's
  // stream); present in ROCm 5.2's libamdhip64.so.5 as in 6 and 7.
  hip::Error (*extMallocWithFlags)(void**, size_t, unsigned) = nullptr;
  hip::Error (*ipcGetMemHandle)(hip::IpcMemHandle*, void*) = nullptr;
  hip::Error (*ipcOpenMemHandle)(void**, hip::IpcMemHandle, unsigned) = nullptr;
  hip::Error (*ipcCloseMemHandle)(void*) = nullptr;
  hip::Error (*streamSynchronize)(hip::Stream) = nullptr;
  hip::Error (*runtimeGetVersion)(int*) = nullptr;

  /// Throws RuntimeError at `where` if rc is not hipSuccess.
  void check(hip::Error rc, const char* call, const std::string& where) const {
    if (rc == hip::kSuccess) return;
    const char* s = getErrorString ? getErrorString(rc) : nullptr;
    throw RuntimeError(where, fmt::format("{} failed: {} (hipError_t {})", call, s ? s : "unknown error", rc));
  }
};

namespace {

template <class F>
void resolve(HipApi& api, F& fn, const char* symbol, const std::string& lib) {
  dlerror();
  void* p = dlsym(api.handle, symbol);
  if (!p)
    throw RuntimeError("HIP device",
                       fmt::format("{} was loaded but has no symbol {}; the HIP device needs a ROCm 5.2 or later "
                                   "libamdhip64",
                                   lib, symbol));
  fn = reinterpret_cast<F>(p);
}

}  // namespace

std::vector<std::string> HipDevice::defaultLibraryNames() {
  return {"libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5", "libamdhip64.so"};
}

HipDevice::HipDevice(std::vector<std::string> libraryNames) : api_(std::make_unique<HipApi>()) {
  std::string tried;
  for (const std::string& lib : libraryNames) {
    void* h = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h) {
      api_->handle = h;
      library_ = lib;
      break;
    }
    const char* err = dlerror();
    const std::string why = err ? err : "not found";
    // dlerror usually starts with the name already.
    tried += "\n  " + (why.rfind(lib, 0) == 0 ? why : lib + ": " + why);
  }
  if (!api_->handle)
    throw RuntimeError("HIP device",
                       "cannot load the HIP runtime (libamdhip64); tried, in order:" + tried +
                           "\nThe HIP device needs ROCm (5.2 or later; 6 or 7 for gfx950) installed, with libamdhip64 on the loader path "
                           "(e.g. LD_LIBRARY_PATH=/opt/rocm/lib). Without a GPU, use the Sim device.");
  // The library stays loaded for the life of the process: the HIP runtime does not support
  // being unloaded, so there is no dlclose.
  resolve(*api_, api_->getErrorString, "hipGetErrorString", library_);
  resolve(*api_, api_->moduleLoadData, "hipModuleLoadData", library_);
  resolve(*api_, api_->moduleGetFunction, "hipModuleGetFunction", library_);
  resolve(*api_, api_->moduleLaunchKernel, "hipModuleLaunchKernel", library_);
  resolve(*api_, api_->getDeviceCount, "hipGetDeviceCount", library_);
  resolve(*api_, api_->setDevice, "hipSetDevice", library_);
  resolve(*api_, api_->malloc, "hipMalloc", library_);
  resolve(*api_, api_->free, "hipFree", library_);
  resolve(*api_, api_->memcpy, "hipMemcpy", library_);
  resolve(*api_, api_->deviceSynchronize, "hipDeviceSynchronize", library_);
  resolve(*api_, api_->deviceGetAttribute, "hipDeviceGetAttribute", library_);
  resolve(*api_, api_->extMallocWithFlags, "hipExtMallocWithFlags", library_);
  resolve(*api_, api_->ipcGetMemHandle, "hipIpcGetMemHandle", library_);
  resolve(*api_, api_->ipcOpenMemHandle, "hipIpcOpenMemHandle", library_);
  resolve(*api_, api_->ipcCloseMemHandle, "hipIpcCloseMemHandle", library_);
  resolve(*api_, api_->streamSynchronize, "hipStreamSynchronize", library_);
  resolve(*api_, api_->runtimeGetVersion, "hipRuntimeGetVersion", library_);
  int version = 0;
  if (api_->runtimeGetVersion(&version) == hip::kSuccess) runtimeVersion_ = version;
  const std::string where = fmt::format("HIP device ({}, runtime {}, {} entry points resolved)", library_,
                                        runtimeVersion_, kResolvedEntryPoints);
  int n = 0;
  const hip::Error rc = api_->getDeviceCount(&n);
  if (rc == hip::kErrorNoDevice || (rc == hip::kSuccess && n <= 0))
    throw RuntimeError(where, "no gfx950 GPU is present: hipGetDeviceCount found no GPU at all (is /dev/kfd there, "
                              "and the user in the render group?). Without a GPU, use --device sim or gfx950-run.");
  api_->check(rc, "hipGetDeviceCount", where);
  deviceCount_ = n;
  std::string found;
  int gfx950 = 0;
  for (int d = 0; d < n; ++d) {
    const DeviceLimits l = limits(d);
    gfx950 += l.name.find("gfx950") != std::string::npos;
    found += "\n  " + l.name;
  }
  if (gfx950 == 0)
    throw RuntimeError(where, fmt::format("no gfx950 GPU is present: the {} GPU(s) found are{}\nmonogen's code objects "
                                          "are for gfx950 (MI350X / MI355X) only",
                                          n, found));
}

int HipDevice::attribute(int device, int attr, const char* name) const {
  int v = 0;
  api_->check(api_->deviceGetAttribute(&v, attr, device), "hipDeviceGetAttribute",
              fmt::format("HIP device {}, attribute {}", device, name));
  return v;
}

DeviceLimits HipDevice::limits(int device) const {
  return readDeviceLimits(device, [&](HipAttribute attr, const char* name) {
    return attribute(device, static_cast<int>(attr), name);
  });
}

// Modules stay loaded (hipModuleUnload is not among the resolved entry points); allocations
// not freed by free() are released when the process exits.
HipDevice::~HipDevice() = default;

std::string HipDevice::name() const { return fmt::format("hip ({} device{}, {})", deviceCount_, deviceCount_ == 1 ? "" : "s", library_); }

void HipDevice::setDevice(int rank, const std::string& where) {
  if (rank < 0 || rank >= deviceCount_)
    throw RuntimeError(where, fmt::format("rank {} has no device: {} HIP device(s) present", rank, deviceCount_));
  api_->check(api_->setDevice(rank), "hipSetDevice", where);
}

uint64_t HipDevice::alloc(int rank, int64_t bytes, const std::string& name, int64_t align) {
  const std::string where = fmt::format("hip alloc '{}' on rank {}", name, rank);
  setDevice(rank, where);
  void* p = nullptr;
  api_->check(api_->malloc(&p, static_cast<size_t>(bytes)), "hipMalloc", where + fmt::format(" ({} bytes)", bytes));
  const auto addr = reinterpret_cast<uint64_t>(p);
  if (align > 0 && addr % static_cast<uint64_t>(align) != 0) {
    api_->free(p);
    throw RuntimeError(where, fmt::format("hipMalloc returned 0x{:x}, not aligned to {} bytes", addr, align));
  }
  return addr;
}

void HipDevice::free(int rank, uint64_t addr) {
  const std::string where = fmt::format("hip free 0x{:x} on rank {}", addr, rank);
  setDevice(rank, where);
  api_->check(api_->free(reinterpret_cast<void*>(addr)), "hipFree", where);
}

void HipDevice::upload(int rank, uint64_t dst, const void* src, int64_t bytes) {
  const std::string where = fmt::format("hip upload of {} bytes to 0x{:x} on rank {}", bytes, dst, rank);
  setDevice(rank, where);
  api_->check(api_->memcpy(reinterpret_cast<void*>(dst), src, static_cast<size_t>(bytes), hip::HostToDevice),
              "hipMemcpy", where);
}

void HipDevice::download(int rank, void* dst, uint64_t src, int64_t bytes) {
  const std::string where = fmt::format("hip download of {} bytes from 0x{:x} on rank {}", bytes, src, rank);
  setDevice(rank, where);
  api_->check(api_->memcpy(dst, reinterpret_cast<const void*>(src), static_cast<size_t>(bytes), hip::DeviceToHost),
              "hipMemcpy", where);
}

void* HipDevice::function(int rank, const CodeObjectBytes& code, const std::string& kernel, const std::string& where) {
  std::lock_guard<std::mutex> g(mu_);
  std::vector<Module>& mods = modules_[rank];
  Module* m = nullptr;
  for (Module& x : mods)
    if (x.code == code) m = &x;
  if (!m) {
    hip::Module mod = nullptr;
    api_->check(api_->moduleLoadData(&mod, code.data()), "hipModuleLoadData", where);
    mods.push_back(Module{code, mod, {}});
    m = &mods.back();
  }
  auto it = m->functions.find(kernel);
  if (it != m->functions.end()) return it->second;
  hip::Function f = nullptr;
  api_->check(api_->moduleGetFunction(&f, m->module, kernel.c_str()), "hipModuleGetFunction",
              where + " (kernel '" + kernel + "')");
  m->functions[kernel] = f;
  return f;
}

void HipDevice::launchPacked(const ir::Plan& plan, const CodeObjectBytes& code, const PackedLaunch& args) {
  const int tp = plan.key.tp;
  const std::string where = "hip launch of " + plan.key.variantName();
  if (code.empty()) throw RuntimeError(where, "the code object is empty");
  // The symbol is the code object's own (codegen's kernelSymbol(plan), "monogen_<variant>"), read
  // from its kernel descriptor: plan.kernel.name is the spec's name for the kernel, not a symbol.
  const KernelResources res = readKernelResources(code);
  if (static_cast<int>(args.kernargs.size()) != tp)
    throw RuntimeError(where, fmt::format("{} kernarg segments for TP = {}", args.kernargs.size(), tp));
  if (tp > deviceCount_)
    throw RuntimeError(where, fmt::format("TP = {} ranks, but only {} HIP device(s) are present", tp, deviceCount_));
  // Load everywhere first, so a load error cannot leave some ranks running without peers.
  std::vector<void*> fns(tp);
  for (int r = 0; r < tp; ++r) {
    const std::string w = fmt::format("{}, rank {}", where, r);
    setDevice(r, w);
    fns[r] = function(r, code, res.symbol, w);
    // Before the first launch of this code object on this device: the whole grid resident at
    // one CTA a CU, or a clear refusal (runtime/CoResidency.h).
    bool first;
    {
      std::lock_guard<std::mutex> g(mu_);
      first = !coResident_.count({r, code});
    }
    if (first) {
      checkCoResidency(res, plan.grid.blocks, plan.grid.threads, limits(r), w);
      std::lock_guard<std::mutex> g(mu_);
      coResident_.insert({r, code});
    }
  }
  std::vector<std::vector<uint8_t>> kernargs = args.kernargs;  // launch wants non-const pointers
  for (int r = 0; r < tp; ++r) {
    const std::string w = fmt::format("{}, rank {}", where, r);
    setDevice(r, w);
    size_t size = kernargs[r].size();
    void* extra[] = {hip::kLaunchParamBufferPointer, kernargs[r].data(), hip::kLaunchParamBufferSize, &size,
                     hip::kLaunchParamEnd};
    api_->check(api_->moduleLaunchKernel(fns[r], static_cast<unsigned>(plan.grid.blocks), 1, 1,
                                         static_cast<unsigned>(plan.grid.threads), 1, 1, 0, nullptr, nullptr, extra),
                "hipModuleLaunchKernel", w);
  }
  for (int r = 0; r < tp; ++r) {
    const std::string w = fmt::format("{}, rank {}", where, r);
    setDevice(r, w);
    api_->check(api_->deviceSynchronize(), "hipDeviceSynchronize", w);
  }
}

}  // namespace monogen::runtime
