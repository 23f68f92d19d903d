#include "runtime/CoResidency.h"

#include <elf.h>
#include <fmt/format.h>

#include <cstring>

#include "ir/Error.h"

namespace monogen::runtime {

namespace {

constexpr const char* kWhere = "code object";
[[noreturn]] void bad(const std::string& what) { throw RuntimeError(kWhere, what); }

template <class T>
T at(const std::vector<uint8_t>& b, uint64_t off, const char* what) {
  if (off > b.size() || b.size() - off < sizeof(T))
    bad(fmt::format("{} at byte {} lies outside the {}-byte file", what, off, b.size()));
  T v;
  std::memcpy(&v, b.data() + off, sizeof(T));
  return v;
}

// Kernel descriptor fields (AMDGPUUsage, "Kernel Descriptor for GFX6-GFX12"): byte offsets.
constexpr uint64_t kKdGroupSegment = 0, kKdPrivateSegment = 4, kKdRsrc3 = 44, kKdRsrc1 = 48, kKdProperties = 56;
constexpr uint64_t kKdBytes = 64;

}  // namespace

KernelResources readKernelResources(const std::vector<uint8_t>& b) {
  const auto eh = at<Elf64_Ehdr>(b, 0, "the ELF header");
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_ident[EI_DATA] != ELFDATA2LSB)
    bad("not a 64-bit little-endian ELF file");
  constexpr uint16_t kEmAmdgpu = 224;  // EM_AMDGPU
  if (eh.e_machine != kEmAmdgpu) bad(fmt::format("ELF machine {}, expected EM_AMDGPU (224)", eh.e_machine));
  if (eh.e_shentsize != sizeof(Elf64_Shdr)) bad(fmt::format("section header size {}, expected 64", eh.e_shentsize));
  std::vector<Elf64_Shdr> sh(eh.e_shnum);
  for (unsigned i = 0; i < eh.e_shnum; ++i) sh[i] = at<Elf64_Shdr>(b, eh.e_shoff + i * sizeof(Elf64_Shdr), "a section header");

  // The kernel descriptor: the one symbol named "<kernel>.kd" (in .symtab or .dynsym).
  std::vector<std::pair<std::string, uint64_t>> kds;
  for (const Elf64_Shdr& s : sh) {
    if (s.sh_type != SHT_SYMTAB && s.sh_type != SHT_DYNSYM) continue;
    if (s.sh_link >= sh.size()) bad("a symbol table links to no string table");
    const Elf64_Shdr& str = sh[s.sh_link];
    for (uint64_t off = 0; off + sizeof(Elf64_Sym) <= s.sh_size; off += sizeof(Elf64_Sym)) {
      const auto sym = at<Elf64_Sym>(b, s.sh_offset + off, "a symbol");
      if (sym.st_name >= str.sh_size) continue;
      const uint64_t n0 = str.sh_offset + sym.st_name;
      if (n0 >= b.size()) bad("a symbol name lies outside the file");
      const char* p = reinterpret_cast<const char*>(b.data() + n0);
      const std::string name(p, strnlen(p, b.size() - n0));
      if (name.size() > 3 && name.compare(name.size() - 3, 3, ".kd") == 0) {
        bool seen = false;
        for (auto& k : kds) seen |= k.first == name;
        if (!seen) kds.emplace_back(name, sym.st_value);
      }
    }
  }
  if (kds.size() != 1)
    bad(fmt::format("{} kernel descriptor symbols (*.kd), expected exactly one kernel", kds.size()));
  // The descriptor's file offset: the section holding its address.
  const uint64_t addr = kds[0].second;
  uint64_t off = UINT64_MAX;
  for (const Elf64_Shdr& s : sh)
    if (s.sh_type != SHT_NOBITS && (s.sh_flags & SHF_ALLOC) && addr >= s.sh_addr && addr + kKdBytes <= s.sh_addr + s.sh_size)
      off = s.sh_offset + (addr - s.sh_addr);
  if (off == UINT64_MAX) bad(fmt::format("the kernel descriptor {} at 0x{:x} is in no section", kds[0].first, addr));

  KernelResources k;
  k.symbol = kds[0].first.substr(0, kds[0].first.size() - 3);
  k.ldsBytes = at<uint32_t>(b, off + kKdGroupSegment, "the descriptor's group segment size");
  k.scratchBytes = at<uint32_t>(b, off + kKdPrivateSegment, "the descriptor's private segment size");
  const auto rsrc1 = at<uint32_t>(b, off + kKdRsrc1, "COMPUTE_PGM_RSRC1");
  const auto rsrc3 = at<uint32_t>(b, off + kKdRsrc3, "COMPUTE_PGM_RSRC3");
  const auto props = at<uint16_t>(b, off + kKdProperties, "the kernel code properties");
  // gfx90a+ (wave64): GRANULATED_WORKITEM_VGPR_COUNT = VGPRs + AGPRs / 8 - 1; ACCUM_OFFSET =
  // the first AGPR / 4 - 1; GRANULATED_WAVEFRONT_SGPR_COUNT (gfx9) = SGPRs / 16 - 1.
  k.vgprsPerWave = static_cast<int>((rsrc1 & 0x3f) + 1) * 8;
  k.sgprsPerWave = static_cast<int>(((rsrc1 >> 6) & 0xf) + 1) * 16;
  k.archVgprs = static_cast<int>((rsrc3 & 0x3f) + 1) * 4;
  k.wavefrontSize = (props & (1u << 10)) ? 32 : 64;  // ENABLE_WAVEFRONT_SIZE32
  return k;
}

void checkCoResidency(const KernelResources& k, int blocks, int threads, const DeviceLimits& d,
                      const std::string& where) {
  std::vector<std::string> bad;
  const int wave = k.wavefrontSize > 0 ? k.wavefrontSize : 64;
  const int waves = (threads + wave - 1) / wave;
  if (d.warpSize != wave)
    bad.push_back(fmt::format("the kernel runs {}-lane waves, the device's wavefront is {} lanes", wave, d.warpSize));
  if (blocks > d.computeUnits)
    bad.push_back(fmt::format("the grid is {} CTAs, one a CU, but the device has {} CUs (need at least {})", blocks,
                              d.computeUnits, blocks));
  if (threads > d.maxThreadsPerBlock)
    bad.push_back(fmt::format("a CTA is {} threads, the device allows {} a block", threads, d.maxThreadsPerBlock));
  if (threads > d.maxThreadsPerCu)
    bad.push_back(fmt::format("a CTA is {} threads, a CU holds {} threads", threads, d.maxThreadsPerCu));
  const int simds = d.simdsPerCu > 0 ? d.simdsPerCu : 4;
  const int wavesPerSimd = (waves + simds - 1) / simds;
  if (wavesPerSimd > d.maxWavesPerSimd)
    bad.push_back(fmt::format("a CTA is {} waves, {} a SIMD, a SIMD holds {} waves", waves, wavesPerSimd,
                              d.maxWavesPerSimd));
  const int64_t ldsLimit = std::min(d.ldsPerCu, d.ldsPerBlock);
  if (k.ldsBytes > ldsLimit)
    bad.push_back(fmt::format("a CTA takes {} bytes of LDS, the device has {} a CU and {} a block", k.ldsBytes,
                              d.ldsPerCu, d.ldsPerBlock));
  // Registers: the CTA's waves spread over the CU's SIMDs; each SIMD's file holds
  // registersPerCu / (simds x 64) VGPRs of 64 lanes.
  const int64_t vgprsPerSimd = d.registersPerCu / (static_cast<int64_t>(simds) * 64);
  if (static_cast<int64_t>(wavesPerSimd) * k.vgprsPerWave > vgprsPerSimd)
    bad.push_back(fmt::format("a wave takes {} VGPRs + AGPRs and {} waves share a SIMD ({} VGPRs), but a SIMD has {} "
                              "(hipDeviceAttributeMaxRegistersPerMultiprocessor {} / ({} SIMDs x 64 lanes))",
                              k.vgprsPerWave, wavesPerSimd, wavesPerSimd * k.vgprsPerWave, vgprsPerSimd,
                              d.registersPerCu, simds));
  if (wavesPerSimd * k.sgprsPerWave > d.sgprsPerSimd)
    bad.push_back(fmt::format("a wave takes {} SGPRs and {} waves share a SIMD, but a SIMD has {}", k.sgprsPerWave,
                              wavesPerSimd, d.sgprsPerSimd));
  if (k.scratchBytes > 0)
    bad.push_back(fmt::format("the kernel uses {} bytes of scratch a lane: the runtime may not give every wave "
                              "scratch at once; expected none",
                              k.scratchBytes));
  if (bad.empty()) return;
  std::string msg = fmt::format(
      "kernel {} ({} CTAs x {} threads, {} LDS bytes, {} VGPRs + AGPRs and {} SGPRs a wave) cannot have every CTA "
      "resident at once on {}, one CTA a CU; a persistent launch would spin forever:",
      k.symbol, blocks, threads, k.ldsBytes, k.vgprsPerWave, k.sgprsPerWave, d.name);
  for (const auto& s : bad) msg += "\n  - " + s;
  throw RuntimeError(where, msg);
}

DeviceLimits readDeviceLimits(int device, const std::function<int(HipAttribute, const char*)>& attribute) {
  DeviceLimits l;
  const int major = attribute(HipAttribute::ComputeCapabilityMajor, "hipDeviceAttributeComputeCapabilityMajor");
  const int minor = attribute(HipAttribute::ComputeCapabilityMinor, "hipDeviceAttributeComputeCapabilityMinor");
  // HIP reports a gfx9xy ISA as major 9, minor x: gfx950 is 9.5, gfx942 9.4, gfx90a 9.0.
  l.gfx950 = major == 9 && minor == 5;
  l.name = l.gfx950 ? fmt::format("HIP device {} (gfx950)", device)
                                    : fmt::format("HIP device {} (compute capability {}.{}, not gfx950)", device, major,
                                                  minor);
  l.computeUnits = attribute(HipAttribute::MultiprocessorCount, "hipDeviceAttributeMultiprocessorCount");
  l.ldsPerCu = attribute(HipAttribute::MaxSharedMemoryPerMultiprocessor,
                         "hipDeviceAttributeMaxSharedMemoryPerMultiprocessor");
  l.ldsPerBlock = attribute(HipAttribute::MaxSharedMemoryPerBlock, "hipDeviceAttributeMaxSharedMemoryPerBlock");
  l.registersPerCu = attribute(HipAttribute::MaxRegistersPerMultiprocessor,
                               "hipDeviceAttributeMaxRegistersPerMultiprocessor");
  l.maxThreadsPerCu = attribute(HipAttribute::MaxThreadsPerMultiProcessor,
                                "hipDeviceAttributeMaxThreadsPerMultiProcessor");
  l.maxThreadsPerBlock = attribute(HipAttribute::MaxThreadsPerBlock, "hipDeviceAttributeMaxThreadsPerBlock");
  l.warpSize = attribute(HipAttribute::WarpSize, "hipDeviceAttributeWarpSize");
  return l;
}

}  // namespace monogen::runtime
