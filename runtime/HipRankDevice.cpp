// NOT RUN HERE on a GPU (there is none): run against the fake HIP library only. See HipRankDevice.h.
#include "runtime/HipRankDevice.h"

#include <fmt/format.h>

#include <cstring>

#include "ir/Error.h"
#include "runtime/CoResidency.h"
#include "runtime/HipApi.h"

namespace monogen::runtime {

std::vector<std::string> HipRankDevice::defaultLibraryNames() { return HipApi::defaultLibraryNames(); }

HipRankDevice::HipRankDevice(int rank, int tp, int deviceOrdinal, std::vector<std::string> libraryNames)
    : rank_(rank), tp_(tp), device_(deviceOrdinal < 0 ? rank : deviceOrdinal) {
  if (tp < 1 || rank < 0 || rank >= tp)
    throw InputError("HIP rank device", fmt::format("rank {} of TP {}: expected 0 <= rank < TP", rank, tp));
  api_ = std::make_unique<HipApi>(HipApi::load(libraryNames, "HIP rank device"));
  library_ = api_->library;
  const HipApi& a = *api_;
  deviceCount_ = a.discover();  // no GPU, or none a gfx950: RuntimeError saying so (HipDevice's message)
  if (device_ >= deviceCount_)
    throw RuntimeError(name(), fmt::format("device {} does not exist: {} GPU(s) visible (with HIP_VISIBLE_DEVICES set "
                                           "per process, pass deviceOrdinal 0)",
                                           device_, deviceCount_));
  if (const DeviceLimits l = a.limits(device_); !l.gfx950)
    throw RuntimeError(name(), fmt::format("{} is not a gfx950: monogen's code objects are for gfx950 (MI350X / "
                                           "MI355X) only",
                                           l.name));
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

DeviceLimits HipRankDevice::limits() const { return api_->limits(device_); }

const HipApi& HipRankDevice::api() const { return *api_; }

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
  api_->check(api_->extMallocWithFlags(&p, static_cast<size_t>(size), hip::kDeviceMallocUncached),
              "hipExtMallocWithFlags(hipDeviceMallocUncached)", where + fmt::format(" ({} bytes)", size));
  allocations_.push_back(p);
  sym_ = reinterpret_cast<uint64_t>(p);
  symBytes_ = size;
  return sym_;
}

std::vector<uint8_t> HipRankDevice::exportSymmetric() {
  const std::string where = name() + ": export";
  if (!sym_) throw InputError(where, "exportSymmetric before allocSymmetric");
  hip::IpcMemHandle h{};
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
  if (hex.size() != 2 * hip::kIpcHandleSize || hex.find_first_not_of("0123456789abcdef") != std::string::npos)
    throw InputError(where, fmt::format("ipc_handle is {} characters; expected {} lowercase hex digits", hex.size(),
                                        2 * hip::kIpcHandleSize));
  if (peer == rank_) return sym_;
  hip::IpcMemHandle h{};
  for (size_t i = 0; i < hip::kIpcHandleSize; ++i)
    h.reserved[i] = static_cast<char>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
  select(where);
  void* p = nullptr;
  api_->check(api_->ipcOpenMemHandle(&p, h, hip::kIpcMemLazyEnablePeerAccess), "hipIpcOpenMemHandle", where);
  opened_.push_back(p);
  return reinterpret_cast<uint64_t>(p);
}

void HipRankDevice::upload(uint64_t dst, const void* src, int64_t bytes) {
  const std::string where = fmt::format("{}: upload of {} bytes to {:#x}", name(), bytes, dst);
  select(where);
  api_->check(api_->memcpy(reinterpret_cast<void*>(dst), src, static_cast<size_t>(bytes), hip::HostToDevice),
              "hipMemcpy", where);
}

void HipRankDevice::download(void* dst, uint64_t src, int64_t bytes) {
  const std::string where = fmt::format("{}: download of {} bytes from {:#x}", name(), bytes, src);
  select(where);
  api_->check(api_->memcpy(dst, reinterpret_cast<const void*>(src), static_cast<size_t>(bytes), hip::DeviceToHost),
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
  const DeviceLimits limits = api_->limits(device_);
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
  void* extra[] = {hip::kLaunchParamBufferPointer, kernargs.data(), hip::kLaunchParamBufferSize, &size,
                   hip::kLaunchParamEnd};
  api_->check(api_->moduleLaunchKernel(k.function, static_cast<unsigned>(k.plan->grid.blocks), 1, 1,
                                       static_cast<unsigned>(k.plan->grid.threads), 1, 1, 0, stream, nullptr, extra),
              "hipModuleLaunchKernel", name());
}

void* HipRankDevice::createStream() {
  select("hipStreamCreate");
  hip::Stream s = nullptr;
  api_->check(api_->streamCreate(&s), "hipStreamCreate", name());
  return s;
}

void HipRankDevice::destroyStream(void* stream) {
  api_->check(api_->streamDestroy(stream), "hipStreamDestroy", name());
}

HipStream::~HipStream() {
  try {
    device_.destroyStream(stream_);
  } catch (const std::exception&) {  // a destructor does not throw; the process is ending its use of the GPU
  }
}

void HipRankDevice::synchronize(void* stream) {
  api_->check(api_->streamSynchronize(stream), "hipStreamSynchronize", name());
}

double HipRankDevice::elapsedMs(void* stream, const std::function<void()>& enqueue) {
  hip::Event start = nullptr, stop = nullptr;
  api_->check(api_->eventCreate(&start), "hipEventCreate", name());
  const auto destroy = [&] {
    if (start) api_->eventDestroy(start);
    if (stop) api_->eventDestroy(stop);
  };
  try {
    api_->check(api_->eventCreate(&stop), "hipEventCreate", name());
    api_->check(api_->eventRecord(start, stream), "hipEventRecord", name());
    enqueue();
    api_->check(api_->eventRecord(stop, stream), "hipEventRecord", name());
    api_->check(api_->eventSynchronize(stop), "hipEventSynchronize", name());
    float ms = 0;
    api_->check(api_->eventElapsedTime(&ms, start, stop), "hipEventElapsedTime", name());
    destroy();
    return ms;
  } catch (...) {
    destroy();
    throw;
  }
}

}  // namespace monogen::runtime
