// The Plan: what one launch is. Target, key, grid, kernel arguments, scratch and peer regions,
// flag arrays of (value, tag) pairs, LDS pools, and the stages in order with their placement.
// The kernel IR (ir/Op.h) is the body every CTA runs; the Plan says what it means.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "ir/Op.h"

namespace monogen::ir {

/// The machine a Plan is built for: plain data, filled in by a named description (gfx950()).
struct Target {
  std::string arch;      // e.g. "gfx950"
  std::string features;  // e.g. "sramecc+:xnack-"
  int waveSize;
  int computeUnits;
  int ldsBytes;
  int maxThreads;
  int64_t clockHz;  // s_memrealtime
  /// VGPR + AGPR a wave may use when a CTA of `threads` threads must fit on one CU.
  int regBudgetPerWave(int threads) const;
  /// "gfx950:sramecc+:xnack-"
  std::string targetId() const { return arch + ":" + features; }
};

/// MI350X / MI355X: wave64, 256 CUs, 160 KiB LDS, 512-thread CTAs, a 100 MHz realtime clock.
Target gfx950();
/// The target `name` names ("gfx950", or its target id "gfx950:sramecc+:xnack-"); throws
/// InputError at `option` naming the targets there are.
Target targetNamed(const std::string& name, const std::string& option);

/// One specialization parameter of a key: a name and an integer or text value ("S" = 8).
struct KeyParam {
  using Value = std::variant<int64_t, std::string>;
  std::string name;
  Value value;
  /// The value as text: "8", or the text itself.
  std::string valueText() const;
};

/// A variant's identity: the spec, its ordered parameters, the spec's knobs and the machine. Its
/// canonical text (with the generator's build id and the toolchain, runtime/KeyHash.h) is what
/// the cache hashes. The IR knows no spec's parameters or knobs: the spec names and fills them.
struct Key {
  std::string spec;    // e.g. "minimax_m3.ffn"
  int specVersion = 1;
  std::vector<KeyParam> params;  // the spec's specialization, in the spec's order, e.g. {{"S", 8}, {"TP", 4}}
  std::string knobs;   // the spec's non-default knobs as canonical "name=value" tokens ("" when none)
  Target target{};     // the machine, the one source of truth (Plan::target() reads it): empty until set
  std::string config;  // the spec's model/grid config as canonical text (dims change the kernel)
  /// The parameter `name`: throws IrError naming the key and `name` when it is absent.
  const KeyParam::Value& param(const std::string& name) const;
  /// The integer parameter `name`: throws IrError when it is absent or holds text.
  int64_t intParam(const std::string& name) const;
  /// Sets parameter `name` in place, or appends it after the others.
  void setParam(const std::string& name, KeyParam::Value value);
  /// "minimax_m3.ffn v1 S=8 TP=4 knobs=[experts=shared] target=gfx950:sramecc+:xnack- wave64 cus=256
  /// lds=163840 threads=512 clock=100000000 config=..."
  std::string canonical() const;
  /// "minimax_m3.ffn-S8-TP4" plus "-name=value" for each knob: a short name for files and messages.
  std::string variantName() const;
};

/// The launch grid. Persistent: every CTA must be co-resident.
struct Grid {
  int blocks = 256;
  int threads = 512;
};

/// What a kernel argument is for.
enum class ArgRole : uint8_t { Input, Output, Weight, Scratch, Peers, Control };
const char* argRoleName(ArgRole r);

/// One kernel argument: a pointer to a typed tensor, or a scalar.
struct KernelArg {
  std::string name;
  bool isPointer = true;
  Scalar elem = Scalar::BF16;        // element type of the tensor (or the scalar's type)
  std::vector<int64_t> shape;        // tensor shape in elements (empty for scalars)
  ArgRole role = ArgRole::Input;
  int align = 16;                    // required byte alignment of a pointer
  std::string doc;
  int64_t bytes() const;             // the tensor's size in bytes
  /// Bytes and alignment this argument takes in the kernarg segment.
  int kernargSize() const;
};

/// A named byte range inside a buffer argument (per-rank scratch or the symmetric peer buffer).
struct MemRegion {
  std::string name;
  std::string buffer;  // the KernelArg it lives in
  int64_t offset = 0;
  int64_t bytes = 0;
  std::string doc;
};

/// An array of 8-byte (value, tag) pairs inside a region. A pair is valid for a launch when
/// its tag equals the launch's tag; pairs are never reset.
///
/// parityHalves: the array is two halves of pairs / 2 pairs each, and a launch publishes and
/// waits on half (tag & 1) alone, so a fast rank's next launch (the other parity) never
/// overwrites pairs a slow rank has not read yet. A launch covers one half exactly once.
struct FlagArray {
  std::string name;
  std::string region;
  int64_t pairs = 0;  // every pair of the array (both halves when parityHalves)
  bool peer = false;  // written by other ranks (lives in the symmetric buffer)
  std::string doc;
  bool parityHalves = false;
  /// Pairs a launch publishes across every rank when it fills only part of each rank's half (a
  /// reduce-scatter: each row to its owner rank alone); 0: launchPairs() x ranks.
  int64_t publishedPairs = 0;
  /// Pairs one launch publishes (a rank's share for a peer array): one half, or all.
  int64_t launchPairs() const { return parityHalves ? pairs / 2 : pairs; }
};

/// An LDS pool: named, sized for this variant, at a byte offset; may alias another pool.
struct LdsPool {
  std::string name;
  int64_t offset = 0;
  int64_t bytes = 0;
  std::string aliasOf;  // empty: owns its bytes
  std::string doc;
};

/// A stage's use of a flag array: `pairs` pairs per launch, across every rank for peer flags.
struct FlagUse {
  std::string flag;
  int64_t pairs = 0;
};

/// One stage: its tasks, where they run (task t on CTA (base + t) % blocks), and its flags.
struct Stage {
  std::string name;
  int64_t tasks = 0;       // the task count (an upper bound when runtimeTasks)
  bool runtimeTasks = false;  // the count depends on launch data (e.g. the number of slots)
  bool everyCta = false;   // runs once on every CTA (tasks == blocks)
  int base = 0;
  std::vector<FlagUse> waits;
  std::vector<FlagUse> publishes;
  std::string doc;
  /// The CTA task t runs on.
  int ctaOf(int64_t t, int blocks) const { return static_cast<int>((base + t) % blocks); }
};

/// One launch of one variant: everything the verifier, codegen and the devices need.
struct Plan {
  Key key;
  /// The ranks (GPUs) one launch spans: each runs the kernel on its own grid; the spec sets it.
  int ranks = 1;
  /// The machine, which the key holds (Key::target).
  const Target& target() const { return key.target; }
  Grid grid;
  std::vector<KernelArg> args;
  std::vector<MemRegion> regions;
  std::vector<FlagArray> flags;
  std::vector<LdsPool> pools;
  int64_t ldsBytes = 0;  // total LDS the kernel allocates (pools' extent)
  std::vector<Stage> stages;
  Function kernel;
  /// Free-form facts the spec wants in the dump (dims, derived constants), in order.
  std::vector<std::pair<std::string, std::string>> facts;

  int argIndex(const std::string& name) const;  // -1 if absent
  const KernelArg& arg(const std::string& name) const;
  const MemRegion& region(const std::string& name) const;
  const FlagArray& flag(const std::string& name) const;
  const LdsPool& pool(const std::string& name) const;
  int stageIndex(const std::string& name) const;
  /// Byte offset of each argument in the kernarg segment, in argument order.
  std::vector<int> kernargOffsets() const;
  int kernargBytes() const;
};

}  // namespace monogen::ir
