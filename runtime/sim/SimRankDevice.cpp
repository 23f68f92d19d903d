#include "runtime/sim/SimRankDevice.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "ir/Error.h"
#include "runtime/sim/SimLaunch.h"
#include "runtime/sim/SimProgram.h"
#include "runtime/sim/SimShared.h"

namespace monogen::runtime {

namespace {
uint64_t rankBase(int rank) { return (static_cast<uint64_t>(rank) + 1) << 40; }
constexpr uint64_t kOwnOffset = uint64_t{1} << 39;  // the rank's private allocations start here
std::atomic<int> segmentCounter{0};
}  // namespace

SimRankDevice::SimRankDevice(int rank, int tp, SimOptions opts) : rank_(rank), tp_(tp), opts_(std::move(opts)) {
  if (tp < 1 || tp > 255 || rank < 0 || rank >= tp)
    throw InputError("sim rank device", fmt::format("rank {} of TP {}: expected 0 <= rank < TP <= 255", rank, tp));
  if (opts_.races)
    throw InputError("sim rank device", "the race detector (SimOptions::races) needs every rank in one process; "
                                        "run it through SimDevice");
  mem_.setNextAddress(rankBase(rank) + kOwnOffset);
  opts_.firstRank = rank;
  opts_.realtimeWaits = opts_.realtimeWaits || tp > 1;
  args_.resize(1);
}

SimRankDevice::~SimRankDevice() {
  for (const Mapping& m : maps_) munmap(m.addr, m.bytes);
  if (!segment_.empty() && !unlinked_) shm_unlink(segment_.c_str());
}

std::string SimRankDevice::name() const { return fmt::format("sim rank {} of {} (pid {})", rank_, tp_, getpid()); }

uint64_t SimRankDevice::alloc(int64_t bytes, const std::string& name, int64_t align) {
  return mem_.alloc(bytes, rank_, name, align);
}

uint64_t SimRankDevice::allocSymmetric(int64_t bytes, const std::string& name) {
  const std::string where = fmt::format("sim rank {}: symmetric buffer '{}'", rank_, name);
  if (!segment_.empty()) throw InputError(where, "a rank has one symmetric buffer; it is allocated already");
  if (bytes <= 0) throw InputError(where, fmt::format("{} bytes", bytes));
  const int64_t size = wholePages(bytes);
  if (static_cast<uint64_t>(size) >= kOwnOffset) throw InputError(where, fmt::format("{} bytes is too large", size));
  std::string seg = fmt::format("/monogen-sim-{}-r{}-{}", getpid(), rank_, segmentCounter++);
  const int fd = shm_open(seg.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) throw RuntimeError(where, fmt::format("shm_open('{}') failed: {}", seg, std::strerror(errno)));
  auto failWith = [&](const char* call) {
    const int e = errno;
    close(fd);
    shm_unlink(seg.c_str());
    throw RuntimeError(where, fmt::format("{} on '{}' ({} bytes) failed: {}", call, seg, size, std::strerror(e)));
  };
  if (ftruncate(fd, size) != 0) failWith("ftruncate");
  void* p = mmap(nullptr, static_cast<size_t>(size), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) failWith("mmap");
  close(fd);
  maps_.push_back({p, static_cast<size_t>(size)});
  segment_ = seg;
  symAddr_ = rankBase(rank_);
  symBytes_ = size;
  mem_.attachShared(symAddr_, static_cast<uint8_t*>(p), size, rank_, name);
  return symAddr_;
}

std::vector<uint8_t> SimRankDevice::exportSymmetric() {
  if (segment_.empty()) throw InputError(fmt::format("sim rank {}", rank_), "exportSymmetric before allocSymmetric");
  HandleEnvelope h;
  h.device = "sim";
  h.rank = rank_;
  h.tp = tp_;
  h.bytes = symBytes_;
  h.fields = {{"segment", segment_}, {"sim_address", symAddr_}, {"pid", static_cast<int64_t>(getpid())}};
  return writeHandle(h);
}

uint64_t SimRankDevice::openPeer(int peer, const std::vector<uint8_t>& bytes) {
  const HandleEnvelope h = readHandle(bytes, "sim", peer, tp_);
  const std::string where = fmt::format("sim rank {}: rank {}'s symmetric-buffer handle", rank_, peer);
  if (!h.fields.contains("segment") || !h.fields["segment"].is_string() || !h.fields.contains("sim_address") ||
      !h.fields["sim_address"].is_number_unsigned())
    throw InputError(where, "no 'segment' string or 'sim_address' number: not a Sim handle");
  const std::string seg = h.fields["segment"].get<std::string>();
  const uint64_t addr = h.fields["sim_address"].get<uint64_t>();
  if (addr != rankBase(peer))
    throw InputError(where, fmt::format("Sim address {:#x}; rank {}'s symmetric buffer is at {:#x}", addr, peer,
                                        rankBase(peer)));
  if (peer == rank_) {
    if (seg != segment_) throw InputError(where, fmt::format("segment '{}', this rank's own is '{}'", seg, segment_));
    return symAddr_;
  }
  if (peers_.count(peer)) throw InputError(where, "opened twice");
  const int fd = shm_open(seg.c_str(), O_RDWR, 0);
  if (fd < 0)
    throw InputError(where, fmt::format("shm_open('{}') failed: {} (has rank {}'s process exited, or was the handle "
                                        "opened after its peersOpened()?)",
                                        seg, std::strerror(errno), peer));
  struct stat st {};
  if (fstat(fd, &st) != 0 || st.st_size != h.bytes) {
    close(fd);
    throw InputError(where, fmt::format("segment '{}' holds {} bytes, the handle says {}", seg,
                                        static_cast<int64_t>(st.st_size), h.bytes));
  }
  void* p = mmap(nullptr, static_cast<size_t>(h.bytes), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int e = errno;
  close(fd);
  if (p == MAP_FAILED) throw RuntimeError(where, fmt::format("mmap of '{}' failed: {}", seg, std::strerror(e)));
  maps_.push_back({p, static_cast<size_t>(h.bytes)});
  mem_.attachShared(addr, static_cast<uint8_t*>(p), h.bytes, peer, fmt::format("sym.r{} (rank {}'s, mapped)", peer, peer));
  peers_[peer] = addr;
  return addr;
}

void SimRankDevice::peersOpened() {
  if (!segment_.empty() && !unlinked_) shm_unlink(segment_.c_str());
  unlinked_ = true;
}

void SimRankDevice::upload(uint64_t dst, const void* src, int64_t bytes) {
  if (bytes <= 0) return;
  SimMemory::Allocation* a = mem_.find(dst, bytes);
  uint8_t* p = mem_.host(dst, bytes);  // throws naming the nearest allocation
  if (a && a->shared) simshared::store(p, static_cast<const uint8_t*>(src), bytes);
  else std::memcpy(p, src, static_cast<size_t>(bytes));
}

void SimRankDevice::download(void* dst, uint64_t src, int64_t bytes) {
  if (bytes <= 0) return;
  SimMemory::Allocation* a = mem_.find(src, bytes);
  const uint8_t* p = mem_.host(src, bytes);
  if (a && a->shared) simshared::load(static_cast<uint8_t*>(dst), p, bytes);
  else std::memcpy(dst, p, static_cast<size_t>(bytes));
}

LoadedKernel SimRankDevice::load(const ir::Plan& plan, const CodeObjectBytes&) {
  if (plan.ranks != tp_)
    throw InputError(name(), fmt::format("{} is a TP {} variant", plan.key.variantName(), plan.ranks));
  programs_.push_back(std::make_unique<SimProgram>(SimProgram::compile(plan)));
  return LoadedKernel{&plan, programs_.back().get()};
}

void SimRankDevice::launch(const LoadedKernel& k, const std::vector<uint64_t>& values, std::vector<uint8_t>&, void*) {
  args_[0] = values;  // same size every launch: no allocation after the first
  SimLaunch l(mem_, *k.plan, *static_cast<const SimProgram*>(k.function), args_, opts_);
  last_ = l.run();
}

}  // namespace monogen::runtime
