// Kernel IR types: scalars, short vectors of them, and pointers tagged with an address space.
#pragma once
#include <cstdint>
#include <string>

namespace monogen::ir {

/// The scalar element kinds of the kernel IR.
enum class Scalar : uint8_t { I1, I8, I16, I32, I64, F32, BF16, Ptr };

/// Where a pointer points: this rank's device memory, the CTA's LDS, or another rank's
/// symmetric buffer (device memory reached over the fabric; lowered as global).
enum class AddrSpace : uint8_t { None, Global, Lds, Peer };

/// A value's type: a scalar or a vector of 2..16 scalars; pointers carry an address space.
struct Type {
  Scalar scalar = Scalar::I32;
  uint8_t lanes = 1;  // vector width; 1 is a scalar
  AddrSpace space = AddrSpace::None;

  static Type i1() { return {Scalar::I1}; }
  static Type i8() { return {Scalar::I8}; }
  static Type i16() { return {Scalar::I16}; }
  static Type i32() { return {Scalar::I32}; }
  static Type i64() { return {Scalar::I64}; }
  static Type f32() { return {Scalar::F32}; }
  static Type bf16() { return {Scalar::BF16}; }
  static Type ptr(AddrSpace s) { return {Scalar::Ptr, 1, s}; }
  static Type vec(Type elem, int n) { elem.lanes = static_cast<uint8_t>(n); return elem; }

  Type elem() const { Type t = *this; t.lanes = 1; return t; }
  bool isVector() const { return lanes > 1; }
  bool isInt() const { return scalar <= Scalar::I64; }
  bool isFloat() const { return scalar == Scalar::F32 || scalar == Scalar::BF16; }
  bool isPtr() const { return scalar == Scalar::Ptr; }
  bool isBool() const { return scalar == Scalar::I1; }
  /// Bits of one element (i1 counts 1; pointers: 64, LDS pointers 32).
  int elemBits() const;
  /// Bytes one element occupies in memory (i1 takes a byte).
  int elemBytes() const { return scalar == Scalar::I1 ? 1 : elemBits() / 8; }
  int bytes() const { return elemBytes() * lanes; }
  /// "i32", "<4 x f32>", "ptr<lds>".
  std::string str() const;

  bool operator==(const Type& o) const { return scalar == o.scalar && lanes == o.lanes && space == o.space; }
  bool operator!=(const Type& o) const { return !(*this == o); }
};

const char* addrSpaceName(AddrSpace s);

}  // namespace monogen::ir
