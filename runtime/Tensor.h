// Host tensors: a dtype, a shape and bytes. The currency of inputs, outputs and safetensors files.
#pragma once
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace monogen::runtime {

/// Element types, named as safetensors names them.
enum class DType : uint8_t { BF16, F32, F64, I32, I64, U8, U64 };
const char* dtypeName(DType d);  // "BF16", "F32", ...
int dtypeBytes(DType d);

/// A host tensor. `data` holds the elements in row-major order, little-endian, unless `layout`
/// declares another storage order of the same bytes: the holder's declaration (a spec names the
/// layouts it reads, e.g. "e8m0_shuffle" for the MiniMax-M3 scales; "" declares none). The
/// tensor itself cannot show it, so whoever makes or loads the bytes sets it.
struct HostTensor {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;
  std::string layout;

  static HostTensor zeros(DType d, std::vector<int64_t> shape);
  /// A tensor of `shape` holding `bytes` bytes from `src`; throws InputError(where) when that is
  /// not the shape's size in `d`.
  static HostTensor fromBytes(DType d, std::vector<int64_t> shape, const void* src, size_t bytes, const std::string& where);
  template <class T>
  static HostTensor of(DType d, std::vector<int64_t> shape, const std::vector<T>& v, const std::string& where) {
    return fromBytes(d, std::move(shape), v.data(), v.size() * sizeof(T), where);
  }
  int64_t numel() const;
  template <class T> T* as() { return reinterpret_cast<T*>(data.data()); }
  template <class T> const T* as() const { return reinterpret_cast<const T*>(data.data()); }
};

/// Named tensors, ordered by name.
using TensorMap = std::map<std::string, HostTensor>;

/// m[name], which must be dtype d and, unless `shape` is empty, of that shape. Throws
/// InputError(where) naming the tensor, what was expected and what was given.
const HostTensor& requireTensor(const TensorMap& m, const std::string& name, DType d,
                                const std::vector<int64_t>& shape, const std::string& where);

}  // namespace monogen::runtime
