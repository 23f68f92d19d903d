#include "runtime/HipDevice.h"

#include <fmt/format.h>

#include "ir/Error.h"
#include "runtime/CoResidency.h"
#include "runtime/HipApi.h"

namespace monogen::runtime {

std::vector<std::string> HipDevice::defaultLibraryNames() { return HipApi::defaultLibraryNames(); }

HipDevice::HipDevice(std::vector<std::string> libraryNames)
    : api_(std::make_unique<HipApi>(HipApi::load(libraryNames, "HIP device"))) {
  library_ = api_->library;
  runtimeVersion_ = api_->runtimeVersion;
  deviceCount_ = api_->discover();  // no GPU, or none a gfx950: RuntimeError saying so
}

DeviceLimits HipDevice::limits(int device) const { return api_->limits(device); }

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
  const int tp = plan.ranks;
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
