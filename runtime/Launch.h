// The launch API's argument check and packing. A caller names every kernel argument of a Plan
// on every rank; before anything runs, each one is checked against the Plan (presence, dtype,
// shape, alignment, rank and peer counts) and then packed two ways: the raw 64-bit values
// SimDevice::run takes, and the kernarg segment bytes hipModuleLaunchKernel takes.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/Plan.h"
#include "runtime/Tensor.h"

namespace monogen::runtime {

/// One argument value given for one rank.
struct LaunchArg {
  enum class Kind : uint8_t { Tensor, Scalar, PeerTable };
  Kind kind = Kind::Tensor;
  uint64_t addr = 0;              // Tensor, PeerTable: device address (of the tensor / of the table)
  DType dtype = DType::U8;        // Tensor
  std::vector<int64_t> shape;     // Tensor
  int64_t value = 0;              // Scalar: the value, or the raw bits of a float scalar
  std::vector<uint64_t> peers;    // PeerTable: entry p = rank p's symmetric buffer
  std::string layout;             // Tensor: the storage layout the caller declares its bytes in ("" none;
                                  // HostTensor::layout); checked against the variant's ArgLayouts

  /// A device tensor at `addr`, its bytes in `layout` (none by default).
  static LaunchArg tensor(uint64_t addr, DType dtype, std::vector<int64_t> shape, std::string layout = {});
  /// A scalar. It must fit the argument's width, as a signed or an unsigned number.
  static LaunchArg scalar(int64_t value);
  /// A Peers argument: the device address of a table of TP addresses (already uploaded by the
  /// caller) and its entries. A Peers argument may also be given as tensor(addr, U64, {TP}).
  static LaunchArg peerTable(uint64_t tableAddr, std::vector<uint64_t> peers);
};

/// One rank's arguments, by kernel argument name.
using RankArgs = std::map<std::string, LaunchArg>;

/// The storage layout each named tensor argument of a variant must declare (LaunchArg::layout),
/// by argument name; a spec says which (the MiniMax-M3 scales': specs/minimax_m3/kernel/Spec.h
/// argLayouts). Shapes cannot always tell two layouts of the same bytes apart, so the caller
/// declares the one it holds. Arguments not named are not checked.
using ArgLayouts = std::map<std::string, std::string>;

/// A checked launch, packed for both devices.
struct PackedLaunch {
  /// values[r][i]: the raw 64-bit value of kernel argument i on rank r (SimDevice::run).
  std::vector<std::vector<uint64_t>> values;
  /// kernargs[r]: the kernarg segment of rank r, plan.kernargBytes() bytes laid out per
  /// plan.kernargOffsets(), little-endian (hipModuleLaunchKernel's HIP_LAUNCH_PARAM_BUFFER).
  std::vector<std::vector<uint8_t>> kernargs;
};

/// The host dtype a kernel argument's element type is given as: BF16, F32, I32, I64, I8 -> U8,
/// Ptr -> U64. Empty for element types a launch cannot pass (I1, I16).
std::optional<DType> dtypeFor(ir::Scalar s);

/// Checks `ranks` against `plan` and packs it. Throws InputError, before anything runs, naming
/// the argument and rank with what was expected and what was given, for: a rank count other
/// than plan.ranks, a missing or unknown argument, a tensor where a scalar is expected or
/// the reverse, a wrong dtype or shape, a null or misaligned pointer, a scalar out of range,
/// a peer table without exactly TP entries (or with a null or misaligned entry), and a tensor
/// named in `layouts` that declares another layout or none (naming the expected and the given).
PackedLaunch packLaunch(const ir::Plan& plan, const std::vector<RankArgs>& ranks, const ArgLayouts& layouts = {});

/// One rank's arguments checked against `plan` (the same checks as packLaunch, for rank `rank`
/// alone: one process a rank) and packed: its raw values and its kernarg segment.
struct PackedRank {
  std::vector<uint64_t> values;
  std::vector<uint8_t> kernargs;
};
PackedRank packRank(const ir::Plan& plan, int rank, const RankArgs& args, const ArgLayouts& layouts = {});

/// The kernarg segment for one rank's raw values (exposed for tests and devices).
std::vector<uint8_t> packKernargs(const ir::Plan& plan, const std::vector<uint64_t>& values);

}  // namespace monogen::runtime
