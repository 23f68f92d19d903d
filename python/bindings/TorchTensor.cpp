#include "bindings/TorchTensor.h"

#include <pybind11/stl.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "ir/Error.h"

namespace monogen::python {

int64_t TensorView::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

bool TensorView::contiguous() const {
  int64_t want = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] != 1 && strides[i] != want) return false;
    want *= shape[i];
  }
  return true;
}

std::string shapeText(const std::vector<int64_t>& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

std::string TensorView::describe() const {
  std::string s = fmt::format("{} {} on {}", dtype, shapeText(shape), device);
  if (deviceIndex >= 0) s += fmt::format(":{}", deviceIndex);
  if (!contiguous()) s += fmt::format(", strides {} (not contiguous)", shapeText(strides));
  return s;
}

TensorView readTensor(py::handle t, const std::string& where) {
  for (const char* attr : {"data_ptr", "dtype", "shape", "stride", "device", "element_size"})
    if (!py::hasattr(t, attr))
      throw InputError(where, fmt::format("a {} was given: expected a torch.Tensor (it has no '{}')",
                                          py::str(py::type::handle_of(t).attr("__name__")).cast<std::string>(), attr));
  TensorView v;
  v.dtype = py::str(t.attr("dtype")).cast<std::string>();
  v.elemBytes = t.attr("element_size")().cast<int>();
  for (py::handle d : t.attr("shape")) v.shape.push_back(d.cast<int64_t>());
  for (py::handle d : t.attr("stride")()) v.strides.push_back(d.cast<int64_t>());
  py::object dev = t.attr("device");
  v.device = dev.attr("type").cast<std::string>();
  py::object index = dev.attr("index");
  v.deviceIndex = index.is_none() ? -1 : index.cast<int>();
  v.ptr = t.attr("data_ptr")().cast<uint64_t>();
  return v;
}

std::vector<std::string> torchDtypesFor(ir::Scalar s) {
  switch (s) {
    case ir::Scalar::BF16: return {"torch.bfloat16"};
    case ir::Scalar::F32: return {"torch.float32"};
    case ir::Scalar::I32: return {"torch.int32"};
    case ir::Scalar::I64: return {"torch.int64"};
    case ir::Scalar::I8:  // byte views, and torch's own names for what the bytes hold (FP8 e4m3 is SGLang's wo)
      return {"torch.uint8",         "torch.int8",           "torch.float8_e4m3fn",
              "torch.float8_e4m3fnuz", "torch.float8_e8m0fnu", "torch.float4_e2m1fn_x2"};
    default: return {};
  }
}

std::string torchDtypeOf(runtime::DType d) {
  switch (d) {
    case runtime::DType::BF16: return "torch.bfloat16";
    case runtime::DType::F32: return "torch.float32";
    case runtime::DType::F64: return "torch.float64";
    case runtime::DType::I32: return "torch.int32";
    case runtime::DType::I64: return "torch.int64";
    case runtime::DType::U8: return "torch.uint8";
    case runtime::DType::U64: return "torch.int64";  // torch 1.13 has no uint64: the same bits
  }
  return "?";
}

runtime::DType hostDtypeOf(const std::string& torchDtype, const std::string& where) {
  using runtime::DType;
  if (torchDtype == "torch.bfloat16") return DType::BF16;
  if (torchDtype == "torch.float32") return DType::F32;
  if (torchDtype == "torch.float64") return DType::F64;
  if (torchDtype == "torch.int32") return DType::I32;
  if (torchDtype == "torch.int64") return DType::I64;
  if (torchDtype == "torch.uint8" || torchDtype == "torch.int8") return DType::U8;
  throw InputError(where, fmt::format("dtype {}: expected one of torch.bfloat16, float32, float64, int32, int64, uint8, int8",
                                      torchDtype));
}

void checkTensor(const TensorView& v, const ir::KernelArg& a, const std::string& device, const std::string& where) {
  checkTensor(v, torchDtypesFor(a.elem), a.shape, shapeText(a.shape), device, where);
}

void checkTensor(const TensorView& v, const std::vector<std::string>& dtypes, const std::vector<int64_t>& shape,
                 const std::string& shapeDescription, const std::string& device, const std::string& where) {
  const std::string want = fmt::format("{} {} on {}, contiguous", dtypes.empty() ? "?" : dtypes[0], shapeDescription,
                                       device);
  auto refuse = [&](const std::string& what) {
    throw InputError(where, fmt::format("{}: expected {}; given {}", what, want, v.describe()));
  };
  if (v.device != device) refuse(fmt::format("on device '{}'", v.device));
  if (std::find(dtypes.begin(), dtypes.end(), v.dtype) == dtypes.end()) refuse(fmt::format("dtype {}", v.dtype));
  bool fits = v.shape.size() == shape.size();
  for (size_t i = 0; fits && i < shape.size(); ++i) fits = shape[i] < 0 ? v.shape[i] >= 1 : v.shape[i] == shape[i];
  if (!fits) refuse(fmt::format("shape {}", shapeText(v.shape)));
  if (!v.contiguous()) refuse(fmt::format("strides {}", shapeText(v.strides)));
  if (v.ptr == 0 && v.bytes() > 0) refuse("a null data_ptr()");
}

py::dict toPython(const runtime::TensorMap& m) {
  py::dict out;
  for (const auto& [name, t] : m)
    out[py::str(name)] = py::make_tuple(torchDtypeOf(t.dtype), py::tuple(py::cast(t.shape)),
                                        py::bytes(reinterpret_cast<const char*>(t.data.data()), t.data.size()));
  return out;
}

}  // namespace monogen::python
