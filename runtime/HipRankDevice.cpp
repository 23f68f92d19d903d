// NOT RUN HERE (no GPU, no ROCm on this machine): compiled only. See HipRankDevice.h.
#include "runtime/HipRankDevice.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstring>

#include "ir/Error.h"
#include "runtime/CoResidency.h"

namespace monogen::runtime {

// The HIP types and constants used, as hip_runtime_api.h declares them (no ROCm headers needed).
namespace hipr {
using Error = int;  // hipError_t, hipSuccess == 0
constexpr Error kSuccess = 0;
constexpr unsigned kDeviceMallocUncached = 0x3;       // hipDeviceMallocUncached
constexpr unsigned kIpcMemLazyEnablePeerAccess = 0x1;  // hipIpcMemLazyEnablePeerAccess
constexpr size_t kIpcHandleSize = 64;                  // HIP_IPC_HANDLE_SIZE
struct IpcMemHandle {                                  // hipIpcMemHandle_t
  char reserved[kIpcHandleSize];
};
enum MemcpyKind : int { HostToDevice = 1, DeviceToHost = 2 };
inline void* const kLaunchParamBufferPointer = reinterpret_cast<void*>(1);
inline void* const kLaunchParamBufferSize = reinterpret_cast<void*>(2);
inline void* const kLaunchParamEnd = reinterpret_cast<void*>(3);
}  // namespace hipr

struct HipRankApi {
  void* handle = nullptr;
  const char* (*getErrorString)(hipr::Error) = nullptr;
  hipr::Error (*getDeviceCount)(int*) = nullptr;
  hipr::Error (*setDevice)(int) = nullptr;
  hipr::Error (*malloc)(void**, size_t) = nullptr;
  hipr::Error (*extMallocWithFlags)(void**, size_t, unsigned) = nullptr;
  hipr::Error (*free)(void*) = nullptr;
  hipr::Error (*memcpy)(void*, const void*, size_t, hipr::MemcpyKind) = nullptr;
  hipr::Error (*memset)(void*, int, size_t) = nullptr;
  hipr::Error (*ipcGetMemHandle)(hipr::IpcMemHandle*, void*) = nullptr;
  hipr::Error (*ipcOpenMemHandle)(void**, hipr::IpcMemHandle, unsigned) = nullptr;
  hipr::Error (*ipcCloseMemHandle)(void*) = nullptr;
  hipr::Error (*moduleLoadData)(void**, const void*) = nullptr;
  hipr::Error (*moduleGetFunction)(void**, void*, const char*) = nullptr;
  hipr::Error (*moduleLaunchKernel)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*,
                                    void**, void**) = nullptr;
  hipr::Error (*streamSynchronize)(void*) = nullptr;
  hipr::Error (*deviceGetAttribute)(int*, int, int) = nullptr;

  void check(hipr::Error rc, const char* call, const std::string& where) const {
    if (rc == hipr::kSuccess) return;
    const char* s = getErrorString ? getErrorString(rc) : nullptr;
    throw RuntimeError(where, fmt::format("{} failed: {} (hipError_t {})", call, s ? s : "unknown error", rc));
  }
};

namespace {
template <class F>
void resolve(HipRankApi& api, F& fn, const char* symbol, const std::string& lib) {
  dlerror();
  void* p = dlsym(api.handle, symbol);
  if (!p)
    throw RuntimeError("HIP rank device",
                       fmt::format("{} was loaded but has no symbol {}: the per-rank runtime needs it", lib, symbol));
  fn = reinterpret_cast<F>(p);
}
}  // namespace

std::vector<std::string> HipRankDevice::defaultLibraryNames() {
  return {"libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5", "libamdhip64.so"};
}

HipRankDevice::HipRankDevice(int rank, int tp, int deviceOrdinal, std::vector<std::string> libraryNames)
    : api_(std::make_unique<HipRankApi>()), rank_(rank), tp_(tp), device_(deviceOrdinal < 0 ? rank : deviceOrdinal) {
  if (tp < 1 || rank < 0 || rank >= tp)
    throw InputError("HIP rank device", fmt::format("rank {} of TP {}: expected 0 <= rank < TP", rank, tp));
  std::string tried;
  for (const std::string& lib : libraryNames) {
    if (void* h = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      api_->handle = h;
      library_ = lib;
      break;
    }
    const char* err = dlerror();
    tried += "\n  " + lib + ": " + (err ? err : "not found");
  }
  if (!api_->handle)
    throw RuntimeError("HIP rank device", "cannot load the HIP runtime (libamdhip64); tried, in order:" + tried +
                                              "\nThe HIP device needs ROCm with libamdhip64 on the loader path. "
                                              "Without a GPU, use the Sim device.");
  HipRankApi& a = *api_;
  resolve(a, a.getErrorString, "hipGetErrorString", library_);
  resolve(a, a.getDeviceCount, "hipGetDeviceCount", library_);
  resolve(a, a.setDevice, "hipSetDevice", library_);
  resolve(a, a.malloc, "hipMalloc", library_);
  resolve(a, a.extMallocWithFlags, "hipExtMallocWithFlags", library_);
  resolve(a, a.free, "hipFree", library_);
  resolve(a, a.memcpy, "hipMemcpy", library_);
  resolve(a, a.memset, "hipMemset", library_);
  resolve(a, a.ipcGetMemHandle, "hipIpcGetMemHandle", library_);
  resolve(a, a.ipcOpenMemHandle, "hipIpcOpenMemHandle", library_);
  resolve(a, a.ipcCloseMemHandle, "hipIpcCloseMemHandle", library_);
  resolve(a, a.moduleLoadData, "hipModuleLoadData", library_);
  resolve(a, a.moduleGetFunction, "hipModuleGetFunction", library_);
  resolve(a, a.moduleLaunchKernel, "hipModuleLaunchKernel", library_);
  resolve(a, a.streamSynchronize, "hipStreamSynchronize", library_);
  resolve(a, a.deviceGetAttribute, "hipDeviceGetAttribute", library_);
  a.check(a.getDeviceCount(&deviceCount_), "hipGetDeviceCount", "HIP rank device (" + library_ + ")");
  if (deviceCount_ <= 0) throw RuntimeError("HIP rank device (" + library_ + ")", "hipGetDeviceCount found no GPU");
  if (device_ >= deviceCount_)
    throw RuntimeError(name(), fmt::format("device {} does not exist: {} GPU(s) visible (with HIP_VISIBLE_DEVICES set "
                                           "per process, pass deviceOrdinal 0)",
                                           device_, deviceCount_));
  select(name());
}

HipRankDevice::~HipRankDevice() {
  if (!api_ || !api_->handle) return;
  for (void* p : opened_) api_->ipcCloseMemHandle(p);
  for (void* p : allocations_) api_->free(p);
}

std::string HipRankDevice::name() const {
  return fmt::format("hip rank {} of {} (device {}, {})", rank_, tp_, device_, library_);
}

void HipRankDevice::select(const std::string& where) { api_->check(api_->setDevice(device_), "hipSetDevice", where); }

uint64_t HipRankDevice::alloc(int64_t bytes, const std::string& name, int64_t align) {
  const std::string where = fmt::format("{}: alloc '{}' ({} bytes)", this->name(), name, bytes);
  select(where);
  void* p = nullptr;
  api_->check(api_->malloc(&p, static_cast<size_t>(bytes)), "hipMalloc", where);
  allocations_.push_back(p);
  const auto addr = reinterpret_cast<uint64_t>(p);
  if (align > 0 && addr % static_cast<uint64_t>(align) != 0)
    throw RuntimeError(where, fmt::format("hipMalloc returned {:#x}, not aligned to {}", addr, align));
  return addr;
}

uint64_t HipRankDevice::allocSymmetric(int64_t bytes, const std::string& name) {
  const std::string where = fmt::format("{}: symmetric buffer '{}'", this->name(), name);
  if (sym_) throw InputError(where, "a rank has one symmetric buffer; it is allocated already");
  const int64_t size = wholePages(bytes);  // an uncached buffer must be whole pages to be exported
  select(where);
  void* p = nullptr;
  api_->check(api_->extMallocWithFlags(&p, static_cast<size_t>(size), hipr::kDeviceMallocUncached),
              "hipExtMallocWithFlags(hipDeviceMallocUncached)", where + fmt::format(" ({} bytes)", size));
  allocations_.push_back(p);
  sym_ = reinterpret_cast<uint64_t>(p);
  symBytes_ = size;
  return sym_;
}

std::vector<uint8_t> HipRankDevice::exportSymmetric() {
  const std::string where = name() + ": export";
  if (!sym_) throw InputError(where, "exportSymmetric before allocSymmetric");
  hipr::IpcMemHandle h{};
  select(where);
  api_->check(api_->ipcGetMemHandle(&h, reinterpret_cast<void*>(sym_)), "hipIpcGetMemHandle", where);
  std::string hex;
  for (char c : h.reserved) hex += fmt::format("{:02x}", static_cast<uint8_t>(c));
  HandleEnvelope e;
  e.device = "hip";
  e.rank = rank_;
  e.tp = tp_;
  e.bytes = symBytes_;
  e.fields = {{"ipc_handle", hex}};
  return writeHandle(e);
}

uint64_t HipRankDevice::openPeer(int peer, const std::vector<uint8_t>& bytes) {
  const HandleEnvelope e = readHandle(bytes, "hip", peer, tp_);  // another node, a bad handle: InputError
  const std::string where = fmt::format("{}: rank {}'s symmetric-buffer handle", name(), peer);
  if (e.bytes != symBytes_)
    throw InputError(where, fmt::format("a buffer of {} bytes; this rank's is {}: every rank allocates it alike",
                                        e.bytes, symBytes_));
  if (!e.fields.contains("ipc_handle") || !e.fields["ipc_handle"].is_string())
    throw InputError(where, "no 'ipc_handle' string: not a HIP handle");
  const std::string hex = e.fields["ipc_handle"].get<std::string>();
  if (hex.size() != 2 * hipr::kIpcHandleSize || hex.find_first_not_of("0123456789abcdef") != std::string::npos)
    throw InputError(where, fmt::format("ipc_handle is {} characters; expected {} lowercase hex digits", hex.size(),
                                        2 * hipr::kIpcHandleSize));
  if (peer == rank_) return sym_;
  hipr::IpcMemHandle h{};
  for (size_t i = 0; i < hipr::kIpcHandleSize; ++i)
    h.reserved[i] = static_cast<char>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
  select(where);
  void* p = nullptr;
  api_->check(api_->ipcOpenMemHandle(&p, h, hipr::kIpcMemLazyEnablePeerAccess), "hipIpcOpenMemHandle", where);
  opened_.push_back(p);
  return reinterpret_cast<uint64_t>(p);
}

void HipRankDevice::upload(uint64_t dst, const void* src, int64_t bytes) {
  const std::string where = fmt::format("{}: upload of {} bytes to {:#x}", name(), bytes, dst);
  select(where);
  api_->check(api_->memcpy(reinterpret_cast<void*>(dst), src, static_cast<size_t>(bytes), hipr::HostToDevice),
              "hipMemcpy", where);
}

void HipRankDevice::download(void* dst, uint64_t src, int64_t bytes) {
  const std::string where = fmt::format("{}: download of {} bytes from {:#x}", name(), bytes, src);
  select(where);
  api_->check(api_->memcpy(dst, reinterpret_cast<const void*>(src), static_cast<size_t>(bytes), hipr::DeviceToHost),
              "hipMemcpy", where);
}

void HipRankDevice::zero(uint64_t dst, int64_t bytes) {
  const std::string where = fmt::format("{}: zero {} bytes at {:#x}", name(), bytes, dst);
  select(where);
  api_->check(api_->memset(reinterpret_cast<void*>(dst), 0, static_cast<size_t>(bytes)), "hipMemset", where);
}

LoadedKernel HipRankDevice::load(const ir::Plan& plan, const CodeObjectBytes& code) {
  const std::string where = fmt::format("{}: load of {}", name(), plan.key.variantName());
  if (code.empty()) throw RuntimeError(where, "the code object is empty");
  select(where);
  // The code object's own symbol (monogen_<variant>, from its kernel descriptor), and before the
  // first launch: can this device hold the whole grid at once, one CTA a CU (runtime/CoResidency.h)?
  const KernelResources res = readKernelResources(code);
  const DeviceLimits limits = readDeviceLimits(device_, [&](HipAttribute attr, const char* attrName) {
    int v = 0;
    api_->check(api_->deviceGetAttribute(&v, static_cast<int>(attr), device_), "hipDeviceGetAttribute",
                fmt::format("{}: attribute {}", name(), attrName));
    return v;
  });
  checkCoResidency(res, plan.grid.blocks, plan.grid.threads, limits, where);
  codes_.push_back(code);
  void* mod = nullptr;
  api_->check(api_->moduleLoadData(&mod, codes_.back().data()), "hipModuleLoadData", where);
  modules_.push_back(mod);
  void* fn = nullptr;
  api_->check(api_->moduleGetFunction(&fn, mod, res.symbol.c_str()), "hipModuleGetFunction",
              where + " (kernel '" + res.symbol + "')");
  return LoadedKernel{&plan, fn};
}

void HipRankDevice::launch(const LoadedKernel& k, const std::vector<uint64_t>&, std::vector<uint8_t>& kernargs,
                           void* stream) {
  // The caller's thread has this rank's device current (select() at setup): no hipSetDevice here.
  size_t size = kernargs.size();
  void* extra[] = {hipr::kLaunchParamBufferPointer, kernargs.data(), hipr::kLaunchParamBufferSize, &size,
                   hipr::kLaunchParamEnd};
  api_->check(api_->moduleLaunchKernel(k.function, static_cast<unsigned>(k.plan->grid.blocks), 1, 1,
                                       static_cast<unsigned>(k.plan->grid.threads), 1, 1, 0, stream, nullptr, extra),
              "hipModuleLaunchKernel", name());
}

void HipRankDevice::synchronize(void* stream) {
  api_->check(api_->streamSynchronize(stream), "hipStreamSynchronize", name());
}

}  // namespace monogen::runtime
