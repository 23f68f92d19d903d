// gfx950 code objects from a Plan: lowering to LLVM IR, an LLVM IR pipeline (Pipeline) and AMDGPU
// codegen in-process, an in-process lld link, and the read-back of the code object's metadata.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "ir/Error.h"
#include "ir/Plan.h"

namespace monogen::codegen {

/// One kernel argument as the code object's metadata describes it.
struct ArgMeta {
  std::string name;
  int offset = 0;
  int size = 0;
  std::string valueKind;  // "global_buffer", "by_value", ...
};

/// What the code object's AMDGPU metadata (NT_AMDGPU_METADATA) says about the kernel.
struct CodeObjectInfo {
  std::string kernelSymbol;  // e.g. "monogen_ffn.kd"'s kernel name
  std::string target;        // amdhsa.target, e.g. "amdgcn-amd-amdhsa--gfx950:sramecc+:xnack-"
  int vgprs = 0, agprs = 0, sgprs = 0;
  int vgprSpills = 0, sgprSpills = 0;
  int64_t ldsBytes = 0;      // group_segment_fixed_size
  int64_t scratchBytes = 0;  // private_segment_fixed_size
  int kernargBytes = 0;
  int maxFlatWorkgroupSize = 0;
  int wavefrontSize = 0;
  std::vector<ArgMeta> args;
};

/// The optimization pipeline between lowering and AMDGPU codegen.
enum class Pipeline {
  Fast,  // a short function pipeline fit to the lowered IR (codegen/Pipeline.cpp says which passes)
  O3,    // LLVM's default per-module O3 pipeline (the one before Fast; kept to compare against)
};
inline constexpr Pipeline kPipelines[] = {Pipeline::O3, Pipeline::Fast};
const char* pipelineName(Pipeline p);

/// How to compile. The default is what the generator uses.
struct CompileOptions {
  Pipeline pipeline = Pipeline::Fast;
  bool attributeOps = false;  // debug lines = IR op numbers (attributeIsa); the .text stays the same
  bool checkLimits = true;    // false: compile returns a code object over its limits (to report them)
};

/// Seconds spent in each phase of one compile.
struct PhaseTimes {
  double lower = 0;     // kernel IR -> LLVM IR
  double optimize = 0;  // the LLVM IR pipeline (CompileOptions::pipeline)
  double codegen = 0;   // AMDGPU instruction selection .. MC object emission
  double link = 0;      // in-process lld (waiting for the link mutex included)
  double metadata = 0;  // metadata read-back and the limit checks
  double total() const { return lower + optimize + codegen + link + metadata; }
};

/// A compile's phase timings: wall clock, and the compiling thread's CPU time (which, on a
/// machine shared with other work, says what the compile itself cost).
struct CompileTimes {
  PhaseTimes wall, cpu;
};

/// A linked code object and its metadata.
struct CodeObject {
  std::vector<uint8_t> bytes;
  CodeObjectInfo info;
  CompileTimes times;
};

/// The kernel's LLVM IR module as text; `optimized` runs the optimization pipeline first.
std::string llvmIr(const ir::Plan& plan, bool optimized, const CompileOptions& opts = {});
/// The kernel's gfx950 assembly (ISA text) as the backend prints it.
std::string isaText(const ir::Plan& plan, const CompileOptions& opts = {});
/// Lower, optimize, codegen and link; then read back the metadata and check it against the
/// Plan and the target's limits. Throws CodegenError naming the variant on any failure.
/// The phase timings are in the result's `times`.
CodeObject compile(const ir::Plan& plan, const CompileOptions& opts = {});
/// Reads NT_AMDGPU_METADATA from a code object (LLVM's ELF and msgpack readers).
CodeObjectInfo readMetadata(const std::vector<uint8_t>& codeObject);
/// A code object over its limits: the CodegenError of checkLimits, with the refused object's
/// metadata and size (what `monogen info` lists without compiling it again).
struct LimitsError : CodegenError {
  LimitsError(std::string where, std::string what, CodeObjectInfo info, size_t codeBytes)
      : CodegenError(std::move(where), std::move(what)), info(std::move(info)), codeBytes(codeBytes) {}
  CodeObjectInfo info;
  size_t codeBytes = 0;
};
/// Throws LimitsError (naming the variant) on scratch/spills, LDS or registers over the
/// limits for the Plan's CTA size, or a kernarg layout other than the Plan's.
void checkLimits(const CodeObjectInfo& info, const ir::Plan& plan, size_t codeBytes = 0);
/// The class of one gfx950 machine instruction, as the Sim's timing model charges it.
enum class IsaClass : uint8_t { Salu, Smem, Valu, Trans, Cvt, MfmaBf16, MfmaFp8, MfmaF32, Mfma, Vmem, Lds, Branch, Waitcnt, Other };
inline constexpr int kIsaClasses = 14;
const char* isaClassName(IsaClass c);
/// The class of a machine instruction by its LLVM opcode name (e.g. "V_MFMA_F32_16X16X32_BF16_vi").
IsaClass isaClassOf(const std::string& opcodeName);

/// The kernel's ISA instructions, each attributed to the IR op LLVM's debug line gives it.
struct IsaAttribution {
  /// Index: the op's 1-based preorder number (SimInst::opNum); 0: no owner (prologue, line 0).
  std::vector<std::array<int32_t, kIsaClasses>> byOp;
  /// byOp split by loop depth: byDepth[op][d] counts the op's instructions that d natural loops of
  /// the compiled code's control-flow graph enclose (LLVM hoists loop-invariant code out of loops).
  std::vector<std::vector<std::array<int32_t, kIsaClasses>>> byDepth;
  std::vector<uint8_t> text;  // the relocatable object's .text (the instruction stream)
  int64_t instructions = 0;
};
/// Compiles with CompileOptions::attributeOps, reads the object's .debug_line back (LLVM's DWARF
/// library) and disassembles .text: each instruction counts to the op of the row covering it.
IsaAttribution attributeIsa(const ir::Plan& plan, CompileOptions opts = {});
/// The relocatable object's .text bytes of a compile with `opts` (to compare attributed and not).
std::vector<uint8_t> textBytes(const ir::Plan& plan, const CompileOptions& opts = {});

/// The kernel symbol every monogen code object exports.
std::string kernelSymbol(const ir::Plan& plan);

}  // namespace monogen::codegen
