#include "runtime/KeyHash.h"

#include <openssl/evp.h>

#include <memory>

#include "ir/Error.h"

#ifndef MONOGEN_VERSION
#error "MONOGEN_VERSION must be defined by the build (CMake add_compile_definitions)"
#endif

namespace monogen::runtime {

Sha256 sha256(const void* data, size_t bytes) {
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  Sha256 out{};
  unsigned int len = 0;
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1 ||
      EVP_DigestUpdate(ctx.get(), data, bytes) != 1 || EVP_DigestFinal_ex(ctx.get(), out.data(), &len) != 1 ||
      len != out.size())
    throw RuntimeError("sha256", "OpenSSL EVP SHA-256 failed");
  return out;
}

std::string hexDigest(const Sha256& d) {
  static const char* hex = "0123456789abcdef";
  std::string s;
  s.reserve(d.size() * 2);
  for (uint8_t b : d) {
    s.push_back(hex[b >> 4]);
    s.push_back(hex[b & 15]);
  }
  return s;
}

const char* generatorVersion() { return MONOGEN_VERSION; }

std::string keyText(const ir::Key& key, const std::string& toolchainId) {
  if (toolchainId.empty() || toolchainId.find('\n') != std::string::npos)
    throw InputError("cache key " + key.variantName(),
                     "toolchain id '" + toolchainId + "' must be non-empty and one line (e.g. \"llvm-22.1.0\")");
  std::string canon = key.canonical();
  if (canon.find('\n') != std::string::npos)
    throw InputError("cache key " + key.variantName(), "canonical key text must be one line");
  return canon + "\ngenerator=" + MONOGEN_VERSION + " build=" + generatorBuildId() + "\ntoolchain=" + toolchainId;
}

std::string keyDigest(const ir::Key& key, const std::string& toolchainId) {
  return hexDigest(sha256(keyText(key, toolchainId)));
}

}  // namespace monogen::runtime
