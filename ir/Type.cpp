#include "ir/Type.h"

#include <fmt/format.h>

namespace monogen::ir {

int Type::elemBits() const {
  switch (scalar) {
    case Scalar::I1: return 1;
    case Scalar::I8: return 8;
    case Scalar::I16: return 16;
    case Scalar::I32: return 32;
    case Scalar::I64: return 64;
    case Scalar::F32: return 32;
    case Scalar::BF16: return 16;
    case Scalar::Ptr: return space == AddrSpace::Lds ? 32 : 64;
  }
  return 0;
}

const char* addrSpaceName(AddrSpace s) {
  switch (s) {
    case AddrSpace::None: return "none";
    case AddrSpace::Global: return "global";
    case AddrSpace::Lds: return "lds";
    case AddrSpace::Peer: return "peer";
  }
  return "?";
}

std::string Type::str() const {
  std::string e;
  switch (scalar) {
    case Scalar::I1: e = "i1"; break;
    case Scalar::I8: e = "i8"; break;
    case Scalar::I16: e = "i16"; break;
    case Scalar::I32: e = "i32"; break;
    case Scalar::I64: e = "i64"; break;
    case Scalar::F32: e = "f32"; break;
    case Scalar::BF16: e = "bf16"; break;
    case Scalar::Ptr: e = fmt::format("ptr<{}>", addrSpaceName(space)); break;
  }
  return lanes > 1 ? fmt::format("<{} x {}>", lanes, e) : e;
}

}  // namespace monogen::ir
