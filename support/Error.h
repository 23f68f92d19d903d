// Typed errors. Every message says what was wrong, what was expected, and where.
#pragma once
#include <stdexcept>
#include <string>

namespace monogen {

/// Base of every monogen error: `where` names the variant, stage, op or argument.
class Error : public std::runtime_error {
 public:
  Error(std::string kind, std::string where, std::string what)
      : std::runtime_error(kind + " error at " + where + ": " + what),
        kind_(std::move(kind)), where_(std::move(where)) {}
  const std::string& kind() const { return kind_; }
  const std::string& where() const { return where_; }

 private:
  std::string kind_, where_;
};

/// A malformed Plan or kernel IR, found by the verifier or the builder.
struct IrError : Error {
  IrError(std::string where, std::string what) : Error("ir", std::move(where), std::move(what)) {}
};
/// Bad user input: an option, a shape, a config file.
struct InputError : Error {
  InputError(std::string where, std::string what) : Error("input", std::move(where), std::move(what)) {}
};
/// LLVM lowering, codegen, linking or a code object over its limits.
struct CodegenError : Error {
  CodegenError(std::string where, std::string what) : Error("codegen", std::move(where), std::move(what)) {}
};
/// The cache, the devices, a launch.
struct RuntimeError : Error {
  RuntimeError(std::string where, std::string what) : Error("runtime", std::move(where), std::move(what)) {}
};
/// The Sim device found the kernel misbehaving: out of bounds, deadlock, double publish.
struct SimError : Error {
  SimError(std::string where, std::string what) : Error("sim", std::move(where), std::move(what)) {}
};

}  // namespace monogen
