#include "runtime/sim/SimDeviceAdapter.h"

#include <cstring>

#include "ir/Error.h"

namespace monogen::runtime {

SimDeviceAdapter::SimDeviceAdapter(SimOptions opts, int maxRanks) : opts_(opts), maxRanks_(maxRanks) {}

uint64_t SimDeviceAdapter::alloc(int rank, int64_t bytes, const std::string& name, int64_t align) {
  if (rank < 0 || rank >= maxRanks_)
    throw RuntimeError("sim alloc '" + name + "'",
                       "rank " + std::to_string(rank) + " out of range 0.." + std::to_string(maxRanks_ - 1));
  return sim_.memory().alloc(bytes, rank, name, align);
}

void SimDeviceAdapter::upload(int rank, uint64_t dst, const void* src, int64_t bytes) {
  if (bytes > 0) std::memcpy(sim_.memory().host(dst, bytes), src, static_cast<size_t>(bytes));
}

void SimDeviceAdapter::download(int rank, void* dst, uint64_t src, int64_t bytes) {
  if (bytes > 0) std::memcpy(dst, sim_.memory().host(src, bytes), static_cast<size_t>(bytes));
}

void SimDeviceAdapter::launchPacked(const ir::Plan& plan, const CodeObjectBytes& code, const PackedLaunch& args) {
  last_ = sim_.run(plan, args.values, opts_);
}

}  // namespace monogen::runtime
