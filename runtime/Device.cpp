#include "runtime/Device.h"

#include <fmt/format.h>

#include "ir/Error.h"

namespace monogen::runtime {

Device::~Device() = default;

void Device::launch(const ir::Plan& plan, const CodeObjectBytes& code, const std::vector<RankArgs>& ranks) {
  launch(plan, code, packLaunch(plan, ranks));
}

void Device::launch(const ir::Plan& plan, const CodeObjectBytes& code, const PackedLaunch& packed) {
  if (plan.ranks > maxRanks())
    throw RuntimeError("launch of " + plan.key.variantName() + " on " + name(),
                       fmt::format("TP = {} ranks, but the device has only {}", plan.ranks, maxRanks()));
  launchPacked(plan, code, packed);
}

uint64_t Device::put(int rank, const HostTensor& t, const std::string& name, int64_t align) {
  const int64_t bytes = static_cast<int64_t>(t.data.size());
  const uint64_t addr = alloc(rank, bytes > 0 ? bytes : 1, name, align);
  if (bytes > 0) upload(rank, addr, t.data.data(), bytes);
  return addr;
}

HostTensor Device::get(int rank, uint64_t addr, DType dtype, std::vector<int64_t> shape) {
  HostTensor t = HostTensor::zeros(dtype, std::move(shape));
  if (!t.data.empty()) download(rank, t.data.data(), addr, static_cast<int64_t>(t.data.size()));
  return t;
}

LaunchArg Device::putArg(int rank, const HostTensor& t, const std::string& name, int64_t align) {
  return LaunchArg::tensor(put(rank, t, name, align), t.dtype, t.shape, t.layout);  // its declared layout too
}

}  // namespace monogen::runtime
