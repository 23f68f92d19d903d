// Cache keys: the canonical text of a variant (ir::Key::canonical() plus the generator version
// and the toolchain id) and its SHA-256, the name a code object is cached under.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "ir/Plan.h"

namespace monogen::runtime {

using Sha256 = std::array<uint8_t, 32>;

/// SHA-256 of `bytes` (OpenSSL EVP). Throws RuntimeError if OpenSSL fails.
Sha256 sha256(const void* data, size_t bytes);
inline Sha256 sha256(std::string_view s) { return sha256(s.data(), s.size()); }
/// Lower-case hex of a digest (64 characters).
std::string hexDigest(const Sha256& d);

/// The generator version every key carries (MONOGEN_VERSION, set by CMake).
const char* generatorVersion();

/// The generator's build id: a SHA-256 over every source file under ir/, codegen/ and specs/ (the
/// IR, the lowering and pass pipeline, the stages), made by cmake/GeneratorBuildId.cmake at build
/// time. It is what makes a key content-addressed: a change to any stage constant, lowering rule
/// or pipeline option gives new keys, so the disk cache never serves a kernel an older build made.
/// Costs nothing at run time (a constant).
const char* generatorBuildId();

/// The text a key is hashed over:
///   "<key.canonical()>\ngenerator=<MONOGEN_VERSION> build=<generatorBuildId()>\ntoolchain=<toolchainId>"
/// toolchainId names the compiler that produces the code object (the caller passes the LLVM
/// version, e.g. "llvm-22.1.0"). It must not contain a newline.
std::string keyText(const ir::Key& key, const std::string& toolchainId);

/// hexDigest(sha256(keyText(key, toolchainId))).
std::string keyDigest(const ir::Key& key, const std::string& toolchainId);

}  // namespace monogen::runtime
