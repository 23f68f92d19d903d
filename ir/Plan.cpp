#include "ir/Plan.h"

#include <fmt/format.h>

#include "ir/Error.h"

namespace monogen::ir {

int Target::regBudgetPerWave(int threads) const {
  // 4 SIMDs a CU, 512 VGPRs + AGPRs a lane per SIMD (gfx90a+ unified file).
  const int waves = (threads + waveSize - 1) / waveSize;
  const int wavesPerSimd = (waves + 3) / 4;
  return 512 / wavesPerSimd;
}

Target gfx950() {
  return Target{.arch = "gfx950",
                .features = "sramecc+:xnack-",
                .waveSize = 64,
                .computeUnits = 256,
                .ldsBytes = 160 * 1024,
                .maxThreads = 512,
                .clockHz = 100'000'000};
}

Target targetNamed(const std::string& name, const std::string& option) {
  const Target t = gfx950();
  if (name == t.arch || name == t.targetId()) return t;
  throw InputError(option, fmt::format("unknown arch '{}': monogen generates gfx950 (MI350X/MI355X) code "
                                       "objects, target id {}",
                                       name, t.targetId()));
}

const char* argRoleName(ArgRole r) {
  static const char* n[] = {"input", "output", "weight", "scratch", "peers", "control"};
  return n[static_cast<int>(r)];
}

std::string KeyParam::valueText() const {
  if (const auto* i = std::get_if<int64_t>(&value)) return std::to_string(*i);
  return std::get<std::string>(value);
}

const KeyParam::Value& Key::param(const std::string& name) const {
  for (const KeyParam& p : params)
    if (p.name == name) return p.value;
  std::string known;
  for (const KeyParam& p : params) known += (known.empty() ? "" : ", ") + p.name;
  throw IrError(variantName(), fmt::format("the key of spec '{}' has no parameter '{}' (it has: {})", spec, name,
                                           known.empty() ? "none" : known));
}

int64_t Key::intParam(const std::string& name) const {
  const KeyParam::Value& v = param(name);
  if (const auto* i = std::get_if<int64_t>(&v)) return *i;
  throw IrError(variantName(), fmt::format("parameter '{}' of spec '{}' is text '{}', expected an integer", name,
                                           spec, std::get<std::string>(v)));
}

void Key::setParam(const std::string& name, KeyParam::Value value) {
  for (KeyParam& p : params)
    if (p.name == name) {
      p.value = std::move(value);
      return;
    }
  params.push_back(KeyParam{name, std::move(value)});
}

std::string Key::canonical() const {
  std::string ps;
  for (const KeyParam& p : params) ps += fmt::format(" {}={}", p.name, p.valueText());
  return fmt::format("{} v{}{} knobs=[{}] target={} wave{} cus={} lds={} threads={} clock={} config={}", spec,
                     specVersion, ps, knobs, target.targetId(), target.waveSize, target.computeUnits,
                     target.ldsBytes, target.maxThreads, target.clockHz, config);
}

std::string Key::variantName() const {
  std::string n = spec;
  for (const KeyParam& p : params) n += fmt::format("-{}{}", p.name, p.valueText());
  for (size_t at = 0; at < knobs.size();) {
    size_t end = knobs.find(' ', at);
    if (end == std::string::npos) end = knobs.size();
    if (end > at) n += "-" + knobs.substr(at, end - at);
    at = end + 1;
  }
  return n;
}

static int scalarBytes(Scalar s) {
  Type t{s};
  if (s == Scalar::Ptr) t.space = AddrSpace::Global;
  return t.elemBytes();
}

int64_t KernelArg::bytes() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n * scalarBytes(elem);
}

int KernelArg::kernargSize() const { return isPointer ? 8 : scalarBytes(elem); }

int Plan::argIndex(const std::string& name) const {
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i].name == name) return static_cast<int>(i);
  return -1;
}

template <class T>
static const T& byName(const std::vector<T>& xs, const std::string& name, const char* what, const Key& key) {
  for (const T& x : xs)
    if (x.name == name) return x;
  throw IrError(key.variantName(), fmt::format("no {} named '{}'", what, name));
}

const KernelArg& Plan::arg(const std::string& name) const { return byName(args, name, "kernel argument", key); }
const MemRegion& Plan::region(const std::string& name) const { return byName(regions, name, "region", key); }
const FlagArray& Plan::flag(const std::string& name) const { return byName(flags, name, "flag array", key); }
const LdsPool& Plan::pool(const std::string& name) const { return byName(pools, name, "LDS pool", key); }

int Plan::stageIndex(const std::string& name) const {
  for (size_t i = 0; i < stages.size(); ++i)
    if (stages[i].name == name) return static_cast<int>(i);
  return -1;
}

std::vector<int> Plan::kernargOffsets() const {
  std::vector<int> out;
  int off = 0;
  for (const KernelArg& a : args) {
    const int sz = a.kernargSize();
    off = (off + sz - 1) / sz * sz;
    out.push_back(off);
    off += sz;
  }
  return out;
}

int Plan::kernargBytes() const {
  if (args.empty()) return 0;
  const auto offs = kernargOffsets();
  return offs.back() + args.back().kernargSize();
}

}  // namespace monogen::ir
