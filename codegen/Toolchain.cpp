#include "codegen/Toolchain.h"

#include <llvm/Config/llvm-config.h>

namespace monogen::codegen {

std::string toolchainId() { return std::string("llvm-") + LLVM_VERSION_STRING; }

}  // namespace monogen::codegen
