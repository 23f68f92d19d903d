// The in-process link: `ld.lld -shared` turns the relocatable object into a code object
// (an ET_DYN ELF the HIP runtime loads). lld is not reentrant, so links are serialized; the
// object and the result live in a private temporary directory that is removed afterwards.
#include <fmt/format.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>

#include <lld/Common/Driver.h>
#include <llvm/Support/raw_ostream.h>

#include "codegen/Internal.h"
#include "ir/Error.h"

LLD_HAS_DRIVER(elf)

namespace monogen::codegen::detail {

namespace {
std::mutex gLldMutex;
bool gLldBroken = false;  // lld said it cannot run again in this process

/// A mkdtemp directory, removed with everything in it when this goes out of scope.
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& where) {
    const char* env = std::getenv("TMPDIR");
    std::string tmpl = std::string(env && *env ? env : "/tmp") + "/monogen-link-XXXXXX";
    if (!mkdtemp(tmpl.data())) throw CodegenError(where, "cannot create a temporary directory " + tmpl);
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};
}  // namespace

std::vector<uint8_t> link(const std::vector<uint8_t>& object, const std::string& where) {
  std::lock_guard<std::mutex> lock(gLldMutex);
  if (gLldBroken) throw CodegenError(where, "lld failed earlier in a way that forbids another link in this process");
  TempDir dir(where);
  const std::string in = (dir.path / "kernel.o").string();
  const std::string out = (dir.path / "kernel.hsaco").string();
  {
    std::ofstream f(in, std::ios::binary);
    f.write(reinterpret_cast<const char*>(object.data()), static_cast<std::streamsize>(object.size()));
    if (!f) throw CodegenError(where, "cannot write the object to " + in);
  }
  std::string outText, errText;
  llvm::raw_string_ostream outS(outText), errS(errText);
  const char* args[] = {"ld.lld", "-shared", "--no-undefined", in.c_str(), "-o", out.c_str()};
  const lld::Result r = lld::lldMain(args, outS, errS, {{lld::Gnu, &lld::elf::link}});
  if (!r.canRunAgain) gLldBroken = true;
  if (r.retCode != 0)
    throw CodegenError(where, fmt::format("ld.lld -shared failed ({}): {}{}", r.retCode, errText, outText));
  std::ifstream f(out, std::ios::binary);
  if (!f) throw CodegenError(where, "ld.lld produced no output at " + out);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

}  // namespace monogen::codegen::detail
