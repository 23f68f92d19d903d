// The toolchain id that goes into every cache key: which LLVM built the code object.
#pragma once
#include <string>

namespace monogen::codegen {

/// "llvm-22.1.8" (the LLVM the generator is linked against).
std::string toolchainId();

}  // namespace monogen::codegen
