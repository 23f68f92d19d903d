#include "runtime/Launch.h"

#include <fmt/format.h>

#include <bit>
#include <cstring>

#include "ir/Error.h"

namespace monogen::runtime {

static_assert(std::endian::native == std::endian::little, "kernarg packing assumes a little-endian host");

LaunchArg LaunchArg::tensor(uint64_t addr, DType dtype, std::vector<int64_t> shape, std::string layout) {
  LaunchArg a;
  a.kind = Kind::Tensor;
  a.addr = addr;
  a.dtype = dtype;
  a.shape = std::move(shape);
  a.layout = std::move(layout);
  return a;
}

LaunchArg LaunchArg::scalar(int64_t value) {
  LaunchArg a;
  a.kind = Kind::Scalar;
  a.value = value;
  return a;
}

LaunchArg LaunchArg::peerTable(uint64_t tableAddr, std::vector<uint64_t> peers) {
  LaunchArg a;
  a.kind = Kind::PeerTable;
  a.addr = tableAddr;
  a.peers = std::move(peers);
  return a;
}

std::optional<DType> dtypeFor(ir::Scalar s) {
  switch (s) {
    case ir::Scalar::BF16: return DType::BF16;
    case ir::Scalar::F32: return DType::F32;
    case ir::Scalar::I32: return DType::I32;
    case ir::Scalar::I64: return DType::I64;
    case ir::Scalar::I8: return DType::U8;
    case ir::Scalar::Ptr: return DType::U64;
    default: return std::nullopt;
  }
}

namespace {

std::string shapeText(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

const char* kindName(LaunchArg::Kind k) {
  switch (k) {
    case LaunchArg::Kind::Tensor: return "a tensor";
    case LaunchArg::Kind::Scalar: return "a scalar";
    case LaunchArg::Kind::PeerTable: return "a peer table";
  }
  return "?";
}

std::string describe(const ir::KernelArg& a) {
  const auto dt = dtypeFor(a.elem);
  const std::string t = dt ? dtypeName(*dt) : "unsupported";
  if (!a.isPointer) return fmt::format("{} scalar", t);
  return fmt::format("{} {} tensor ({}, align {})", t, shapeText(a.shape), ir::argRoleName(a.role), a.align);
}

struct Checker {
  const ir::Plan& plan;
  int rank = 0;
  std::string where(const std::string& arg) const {
    return fmt::format("launch of {}, rank {}, argument '{}'", plan.key.variantName(), rank, arg);
  }
  [[noreturn]] void fail(const std::string& arg, const std::string& what) const { throw InputError(where(arg), what); }

  void checkPointer(const ir::KernelArg& k, uint64_t addr, const char* what) const {
    if (addr == 0) fail(k.name, fmt::format("{} is null; expected a device address", what));
    if (k.align > 0 && addr % static_cast<uint64_t>(k.align) != 0)
      fail(k.name, fmt::format("{} 0x{:x} is misaligned: expected a multiple of {} bytes, it is {} past one", what,
                               addr, k.align, addr % static_cast<uint64_t>(k.align)));
  }

  uint64_t check(const ir::KernelArg& k, const LaunchArg& v) const {
    const auto want = dtypeFor(k.elem);
    if (!want) fail(k.name, fmt::format("the Plan gives it an element type a launch cannot pass ({})", describe(k)));
    if (!k.isPointer) {
      if (v.kind != LaunchArg::Kind::Scalar)
        fail(k.name, fmt::format("expected a {}, given {}", describe(k), kindName(v.kind)));
      const int bits = k.kernargSize() * 8;
      if (bits < 64) {
        const int64_t lo = -(int64_t{1} << (bits - 1));
        const int64_t hi = static_cast<int64_t>((uint64_t{1} << bits) - 1);
        if (v.value < lo || v.value > hi)
          fail(k.name, fmt::format("scalar {} does not fit the {}-bit {} argument (expected {}..{})", v.value, bits,
                                   dtypeName(*want), lo, hi));
      }
      return static_cast<uint64_t>(v.value);
    }
    if (v.kind == LaunchArg::Kind::Scalar)
      fail(k.name, fmt::format("expected a {}, given a scalar ({})", describe(k), v.value));
    const int tp = plan.ranks;
    if (k.role == ir::ArgRole::Peers) {
      size_t entries = 0;
      if (v.kind == LaunchArg::Kind::PeerTable) {
        entries = v.peers.size();
      } else {
        int64_t n = 1;
        for (int64_t d : v.shape) n *= d;
        entries = v.shape.empty() ? 0 : static_cast<size_t>(n);
      }
      if (entries != static_cast<size_t>(tp))
        fail(k.name, fmt::format("peer table has {} entries; expected exactly TP = {} (one per rank)", entries, tp));
      if (v.kind == LaunchArg::Kind::PeerTable) {
        for (size_t p = 0; p < v.peers.size(); ++p) {
          if (v.peers[p] == 0) fail(k.name, fmt::format("peer table entry {} (rank {}'s buffer) is null", p, p));
          if (k.align > 0 && v.peers[p] % static_cast<uint64_t>(k.align) != 0)
            fail(k.name, fmt::format("peer table entry {} (rank {}'s buffer) 0x{:x} is misaligned: expected a "
                                     "multiple of {} bytes",
                                     p, p, v.peers[p], k.align));
        }
        checkPointer(k, v.addr, "peer table address");
        return v.addr;
      }
    } else if (v.kind == LaunchArg::Kind::PeerTable) {
      fail(k.name, fmt::format("expected a {}, given a peer table (only a Peers argument takes one)", describe(k)));
    }
    if (v.dtype != *want)
      fail(k.name, fmt::format("dtype is {}, expected {} (the argument is a {})", dtypeName(v.dtype), dtypeName(*want),
                               describe(k)));
    if (v.shape != k.shape)
      fail(k.name, fmt::format("shape is {}, expected {} (the argument is a {})", shapeText(v.shape),
                               shapeText(k.shape), describe(k)));
    checkPointer(k, v.addr, "address");
    return v.addr;
  }
};

}  // namespace

std::vector<uint8_t> packKernargs(const ir::Plan& plan, const std::vector<uint64_t>& values) {
  if (values.size() != plan.args.size())
    throw InputError("launch of " + plan.key.variantName(),
                     fmt::format("{} kernarg values for {} kernel arguments", values.size(), plan.args.size()));
  std::vector<uint8_t> buf(static_cast<size_t>(plan.kernargBytes()), 0);
  const std::vector<int> offs = plan.kernargOffsets();
  for (size_t i = 0; i < plan.args.size(); ++i) {
    const int sz = plan.args[i].kernargSize();
    std::memcpy(buf.data() + offs[i], &values[i], static_cast<size_t>(sz));  // low bytes (little-endian)
  }
  return buf;
}

PackedRank packRank(const ir::Plan& plan, int rank, const RankArgs& given, const ArgLayouts& layouts) {
  if (rank < 0 || rank >= plan.ranks)
    throw InputError("launch of " + plan.key.variantName(),
                     fmt::format("rank {}; expected 0..{} (TP = {})", rank, plan.ranks - 1, plan.ranks));
  Checker c{plan, rank};
  for (const auto& [name, v] : given)
    if (plan.argIndex(name) < 0) {
      std::string known;
      for (const auto& a : plan.args) known += (known.empty() ? "" : ", ") + a.name;
      c.fail(name, fmt::format("unknown argument; the kernel takes: {}", known));
    }
  PackedRank out;
  out.values.reserve(plan.args.size());
  for (const ir::KernelArg& k : plan.args) {
    auto it = given.find(k.name);
    if (it == given.end()) c.fail(k.name, fmt::format("missing; expected a {}", describe(k)));
    out.values.push_back(c.check(k, it->second));
    if (auto l = layouts.find(k.name); l != layouts.end() && it->second.layout != l->second)
      c.fail(k.name, fmt::format("declares layout {}, expected '{}' (the variant reads its bytes in that layout; "
                                 "the shape alone cannot tell them apart, so the caller declares the one it holds)",
                                 it->second.layout.empty() ? std::string("none (undeclared)")
                                                           : "'" + it->second.layout + "'",
                                 l->second));
  }
  out.kernargs = packKernargs(plan, out.values);
  return out;
}

PackedLaunch packLaunch(const ir::Plan& plan, const std::vector<RankArgs>& ranks, const ArgLayouts& layouts) {
  const int tp = plan.ranks;
  if (ranks.size() != static_cast<size_t>(tp))
    throw InputError("launch of " + plan.key.variantName(),
                     fmt::format("arguments given for {} ranks; expected TP = {} ranks", ranks.size(), tp));
  PackedLaunch out;
  out.values.resize(ranks.size());
  out.kernargs.resize(ranks.size());
  for (int r = 0; r < tp; ++r) {
    PackedRank p = packRank(plan, r, ranks[r], layouts);
    out.values[r] = std::move(p.values);
    out.kernargs[r] = std::move(p.kernargs);
  }
  return out;
}

}  // namespace monogen::runtime
