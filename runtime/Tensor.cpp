#include "runtime/Tensor.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ir/Error.h"

namespace monogen::runtime {

const HostTensor& requireTensor(const TensorMap& m, const std::string& name, DType d,
                                const std::vector<int64_t>& shape, const std::string& where) {
  auto it = m.find(name);
  if (it == m.end())
    throw InputError(where, fmt::format("no tensor '{}' (expected {} [{}])", name, dtypeName(d), fmt::join(shape, ", ")));
  const HostTensor& t = it->second;
  if (t.dtype != d || (!shape.empty() && t.shape != shape))
    throw InputError(where, fmt::format("tensor '{}': expected {} [{}], given {} [{}]", name, dtypeName(d),
                                        fmt::join(shape, ", "), dtypeName(t.dtype), fmt::join(t.shape, ", ")));
  return t;
}

const char* dtypeName(DType d) {
  static const char* n[] = {"BF16", "F32", "F64", "I32", "I64", "U8", "U64"};
  return n[static_cast<int>(d)];
}

int dtypeBytes(DType d) {
  static const int n[] = {2, 4, 8, 4, 8, 1, 8};
  return n[static_cast<int>(d)];
}

int64_t HostTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

HostTensor HostTensor::zeros(DType d, std::vector<int64_t> shape) {
  HostTensor t;
  t.dtype = d;
  t.shape = std::move(shape);
  t.data.assign(static_cast<size_t>(t.numel() * dtypeBytes(d)), 0);
  return t;
}

HostTensor HostTensor::fromBytes(DType d, std::vector<int64_t> shape, const void* src, size_t bytes,
                                 const std::string& where) {
  HostTensor t = zeros(d, std::move(shape));
  if (t.data.size() != bytes)
    throw InputError(where, fmt::format("{} bytes for a {} tensor of [{}]: expected {}", bytes, dtypeName(d),
                                        fmt::join(t.shape, ", "), t.data.size()));
  if (bytes) std::memcpy(t.data.data(), src, bytes);
  return t;
}

}  // namespace monogen::runtime
