// Read-back of a code object's AMDGPU metadata: the ELF header (ET_DYN, EM_AMDGPU, gfx950 in
// e_flags) and the NT_AMDGPU_METADATA note, a msgpack map decoded with llvm::msgpack::Document.
#include <fmt/format.h>

#include <llvm/BinaryFormat/ELF.h>
#include <llvm/BinaryFormat/MsgPackDocument.h>
#include <llvm/Object/ELFObjectFile.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/MemoryBufferRef.h>

#include "codegen/Internal.h"
#include "ir/Error.h"

namespace monogen::codegen {

namespace {
constexpr const char* kWhere = "code object";

[[noreturn]] void fail(const std::string& what) { throw CodegenError(kWhere, what); }

std::string errText(llvm::Error e) { return llvm::toString(std::move(e)); }

/// The map entry `key`, or nullptr.
llvm::msgpack::DocNode* field(llvm::msgpack::MapDocNode& map, const char* key) {
  auto it = map.find(key);
  return it == map.end() ? nullptr : &it->second;
}
int64_t integer(llvm::msgpack::MapDocNode& map, const char* key, bool required = true) {
  llvm::msgpack::DocNode* n = field(map, key);
  if (!n) {
    if (required) fail(fmt::format("the kernel's metadata has no {}", key));
    return 0;
  }
  switch (n->getKind()) {
    case llvm::msgpack::Type::UInt: return static_cast<int64_t>(n->getUInt());
    case llvm::msgpack::Type::Int: return n->getInt();
    default: fail(fmt::format("metadata {} is not an integer", key));
  }
}
std::string string(llvm::msgpack::MapDocNode& map, const char* key) {
  llvm::msgpack::DocNode* n = field(map, key);
  if (!n || n->getKind() != llvm::msgpack::Type::String) return {};
  return n->getString().str();
}
}  // namespace

CodeObjectInfo readMetadata(const std::vector<uint8_t>& codeObject) {
  using namespace llvm;
  MemoryBufferRef ref(StringRef(reinterpret_cast<const char*>(codeObject.data()), codeObject.size()), kWhere);
  Expected<object::ELF64LEObjectFile> obj = object::ELF64LEObjectFile::create(ref);
  if (!obj) fail("not a 64-bit little-endian ELF: " + errText(obj.takeError()));
  const object::ELF64LEFile& elf = obj->getELFFile();
  const auto& h = elf.getHeader();
  if (h.e_type != ELF::ET_DYN) fail(fmt::format("ELF type {}, expected ET_DYN (a linked code object)", h.e_type));
  if (h.e_machine != ELF::EM_AMDGPU) fail(fmt::format("ELF machine {}, expected EM_AMDGPU", h.e_machine));
  if ((h.e_flags & ELF::EF_AMDGPU_MACH) != ELF::EF_AMDGPU_MACH_AMDGCN_GFX950)
    fail(fmt::format("e_flags 0x{:x} name another processor, expected gfx950 (0x{:x})", h.e_flags,
                     static_cast<unsigned>(ELF::EF_AMDGPU_MACH_AMDGCN_GFX950)));

  if ((h.e_flags & ELF::EF_AMDGPU_FEATURE_SRAMECC_V4) != ELF::EF_AMDGPU_FEATURE_SRAMECC_ON_V4 ||
      (h.e_flags & ELF::EF_AMDGPU_FEATURE_XNACK_V4) != ELF::EF_AMDGPU_FEATURE_XNACK_OFF_V4)
    fail(fmt::format("e_flags 0x{:x} do not say sramecc+ xnack- (target id gfx950:sramecc+:xnack-)", h.e_flags));
  auto sections = elf.sections();
  if (!sections) fail("unreadable section table: " + errText(sections.takeError()));
  std::string blob;
  for (const auto& sh : *sections) {
    if (sh.sh_type != ELF::SHT_NOTE) continue;
    llvm::Error err = llvm::Error::success();
    for (const auto& note : elf.notes(sh, err)) {
      if (note.getName() == "AMDGPU" && note.getType() == ELF::NT_AMDGPU_METADATA)
        blob = note.getDescAsStringRef(sh.sh_addralign).str();
    }
    if (err) fail("unreadable note section: " + errText(std::move(err)));
  }
  if (blob.empty()) fail("no NT_AMDGPU_METADATA note");

  msgpack::Document doc;
  if (!doc.readFromBlob(blob, false)) fail("the NT_AMDGPU_METADATA note is not valid msgpack");
  if (doc.getRoot().getKind() != msgpack::Type::Map) fail("the metadata root is not a map");
  msgpack::MapDocNode root = doc.getRoot().getMap();

  CodeObjectInfo info;
  info.target = string(root, "amdhsa.target");
  if (info.target.find("gfx950") == std::string::npos)
    fail(fmt::format("amdhsa.target is '{}', expected a gfx950 target", info.target));
  msgpack::DocNode* kernels = field(root, "amdhsa.kernels");
  if (!kernels || kernels->getKind() != msgpack::Type::Array || kernels->getArray().size() != 1)
    fail("amdhsa.kernels must list exactly one kernel");
  msgpack::DocNode k0 = kernels->getArray()[0];
  if (k0.getKind() != msgpack::Type::Map) fail("a kernel's metadata is not a map");
  msgpack::MapDocNode k = k0.getMap();
  info.kernelSymbol = string(k, ".name");
  info.vgprs = static_cast<int>(integer(k, ".vgpr_count"));
  info.agprs = static_cast<int>(integer(k, ".agpr_count", false));
  info.sgprs = static_cast<int>(integer(k, ".sgpr_count"));
  info.vgprSpills = static_cast<int>(integer(k, ".vgpr_spill_count"));
  info.sgprSpills = static_cast<int>(integer(k, ".sgpr_spill_count"));
  info.ldsBytes = integer(k, ".group_segment_fixed_size");
  info.scratchBytes = integer(k, ".private_segment_fixed_size");
  info.kernargBytes = static_cast<int>(integer(k, ".kernarg_segment_size"));
  info.maxFlatWorkgroupSize = static_cast<int>(integer(k, ".max_flat_workgroup_size"));
  info.wavefrontSize = static_cast<int>(integer(k, ".wavefront_size"));
  if (msgpack::DocNode* args = field(k, ".args")) {
    if (args->getKind() != msgpack::Type::Array) fail(".args is not an array");
    for (msgpack::DocNode a : args->getArray()) {
      if (a.getKind() != msgpack::Type::Map) fail("an .args entry is not a map");
      msgpack::MapDocNode am = a.getMap();
      ArgMeta m;
      m.name = string(am, ".name");
      m.offset = static_cast<int>(integer(am, ".offset"));
      m.size = static_cast<int>(integer(am, ".size"));
      m.valueKind = string(am, ".value_kind");
      info.args.push_back(std::move(m));
    }
  }
  return info;
}

}  // namespace monogen::codegen
