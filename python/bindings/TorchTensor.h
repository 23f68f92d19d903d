// Reading a torch tensor without linking libtorch: the attributes a framework's tensor has
// (data_ptr(), dtype, shape, stride(), device), read through Python, and the check of one against
// a kernel argument of the Plan. Every refusal is an InputError naming the argument, what was
// expected and what was given.
#pragma once
#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>
#include <vector>

#include "ir/Plan.h"
#include "runtime/Tensor.h"

namespace monogen::python {

namespace py = pybind11;

/// What a torch tensor is, as read from Python.
struct TensorView {
  uint64_t ptr = 0;            // data_ptr(): the first element (the storage offset included)
  std::string dtype;           // str(t.dtype): "torch.bfloat16"
  int elemBytes = 0;           // t.element_size()
  std::vector<int64_t> shape;  // t.shape
  std::vector<int64_t> strides;  // t.stride(), in elements
  std::string device;          // t.device.type: "cpu", "cuda" (a ROCm torch says cuda too), "meta"
  int deviceIndex = -1;        // t.device.index, -1 when None
  int64_t numel() const;
  int64_t bytes() const { return numel() * elemBytes; }
  /// Row-major with no gaps (strides of size-1 dimensions are not looked at).
  bool contiguous() const;
  /// "torch.float32 [2, 1536] on cpu", with the strides when not contiguous.
  std::string describe() const;
};

/// Reads `t`; InputError(where) if it is not a tensor (no data_ptr / dtype / shape / stride / device).
TensorView readTensor(py::handle t, const std::string& where);

/// The torch dtypes a kernel argument's element type is taken as: bf16 -> torch.bfloat16, f32 ->
/// torch.float32, i32 -> torch.int32, i64 -> torch.int64, i8 (bytes: fp4x2, e8m0) -> torch.uint8,
/// torch.int8, torch.float8_e8m0fnu or torch.float4_e2m1fn_x2 (the names newer torch gives MXFP4's
/// bytes). The first is the one messages name.
std::vector<std::string> torchDtypesFor(ir::Scalar s);
/// The torch dtype of a host dtype (runtime/Tensor.h), for tensors monogen makes.
std::string torchDtypeOf(runtime::DType d);
/// The host dtype of a torch dtype name (InputError naming it when there is none).
runtime::DType hostDtypeOf(const std::string& torchDtype, const std::string& where);

/// Checks `v` against kernel argument `a`: device type `device`, dtype, shape (a's shape
/// exactly), contiguous, a non-null pointer. InputError(where) naming a's name, expected, given.
void checkTensor(const TensorView& v, const ir::KernelArg& a, const std::string& device, const std::string& where);
/// The same against `dtypes` and `shape` (-1: any length >= 1), the expectation's shape named as
/// `shapeDescription` ("[blocks, 2, 256, 64] (vLLM's packed cache ...)").
void checkTensor(const TensorView& v, const std::vector<std::string>& dtypes, const std::vector<int64_t>& shape,
                 const std::string& shapeDescription, const std::string& device, const std::string& where);

/// Host tensors as {name: (torch dtype name, shape, bytes)}: how monogen's own tensors cross to
/// Python (python/monogen/minimax_m3.py makes torch tensors of them).
py::dict toPython(const runtime::TensorMap& m);

/// "[2, 1536]".
std::string shapeText(const std::vector<int64_t>& shape);

}  // namespace monogen::python
