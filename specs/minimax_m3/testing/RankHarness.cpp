#include "specs/minimax_m3/testing/RankHarness.h"

#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>

#include "ir/Error.h"
#include "runtime/HipApi.h"
#include "runtime/HipRankDevice.h"
#include "runtime/sim/SimRankDevice.h"
#include "specs/minimax_m3/kernel/Generate.h"
#include "specs/minimax_m3/kernel/KernelContext.h"
#include "specs/minimax_m3/kernel/Layout.h"
#include "specs/minimax_m3/testing/MoeInputs.h"
#include "specs/minimax_m3/testing/SimHarness.h"
#include "specs/minimax_m3/kernel/Sites.h"
#include "specs/minimax_m3/kernel/Spec.h"

namespace monogen::specs::minimax_m3 {

using runtime::DType;
using runtime::HostTensor;
using runtime::TensorMap;

namespace {

bool callerArg(const ir::KernelArg& a) {
  return a.isPointer && (a.role == ir::ArgRole::Input || a.role == ir::ArgRole::Output || a.role == ir::ArgRole::Weight);
}

}  // namespace

runtime::RankRuntimeOptions rankRuntimeOptions(const ModelConfig& cfg, int rank, int tp, std::vector<int> rows,
                                               const FfnKnobs& knobs) {
  runtime::RankRuntimeOptions o;
  o.rank = rank;
  o.tp = tp;
  o.rows = std::move(rows);
  o.key = [cfg, tp, knobs](int s) { return makeKey(cfg, s, tp, knobs); };
  o.symmetricArg = arg::kSym;
  o.rankArg = arg::kRank;
  return o;
}

RankIo allocRankIo(runtime::RankDevice& dev, const ir::Plan& plan) {
  RankIo io;
  io.rows = rowsOf(plan.key);
  for (const ir::KernelArg& a : plan.args)
    if (callerArg(a)) io.addr[a.name] = dev.alloc(std::max<int64_t>(a.bytes(), 1), rankName(a.name.c_str(), dev.rank()), 256);
  return io;
}

void uploadRankInputs(runtime::RankDevice& dev, const FfnVariant& v, const ir::Plan& plan, const RankIo& io, int rank,
                      const TensorMap& inputs) {
  for (const ir::KernelArg& a : plan.args) {
    if (!callerArg(a)) continue;
    const uint64_t at = io.addr.at(a.name);
    if (a.role == ir::ArgRole::Output) {
      dev.zero(at, a.bytes());
      continue;
    }
    const std::string key = launchTensorName(a.name, rank);
    auto it = inputs.find(key);
    if (it == inputs.end()) {
      if (a.name == arg::kPart || a.name == arg::kAttn || a.name == arg::kResIn)
        throw InputError("rank inputs", fmt::format("rank {}: no '{}' among the inputs", rank, key));
      if (a.name == arg::kWo || a.name == arg::kWoScale)
        throw InputError("rank inputs", fmt::format("rank {}: no '{}' among the inputs: the input=attn variant reads "
                                                    "o_proj's rowwise-FP8 copy (SGLang's _ptpc_weight / _ptpc_scale)",
                                                    rank, key));
      dev.zero(at, a.bytes());  // no MoE inputs: zero weights, every row valid (slot 0)
      continue;
    }
    const HostTensor& t = runtime::requireTensor(inputs, key, *runtime::dtypeFor(a.elem), a.shape,
                                                 fmt::format("rank {} inputs", rank));
    if (a.name == arg::kS13 || a.name == arg::kS2) checkDeclaredScales(t, key, v.knobs.scales);
    dev.upload(at, t.data.data(), a.bytes());
  }
}

runtime::RankArgs rankArgs(const ir::Plan& plan, const RankIo& io, int64_t waitTicks, bool handshake) {
  return rankArgs(plan, io, waitTicks, handshake, argLayouts(plan));
}

runtime::RankArgs rankArgs(const ir::Plan& plan, const RankIo& io, int64_t waitTicks, bool handshake,
                           const runtime::ArgLayouts& layouts) {
  runtime::RankArgs args;
  for (const ir::KernelArg& a : plan.args)
    if (callerArg(a)) args[a.name] = runtime::LaunchArg::tensor(io.addr.at(a.name), *runtime::dtypeFor(a.elem), a.shape);
  for (const auto& [name, layout] : layouts) args.at(name).layout = layout;  // as uploadRankInputs checked
  args[arg::kWaitTicks] = runtime::LaunchArg::scalar(waitTicks);
  args[arg::kHandshake] = runtime::LaunchArg::scalar(handshake ? 1 : 0);
  return args;
}

TensorMap readRankOutputs(const FfnVariant& v, runtime::RankRuntime& rt, const RankIo& io, int32_t tag) {
  runtime::RankDevice& dev = rt.device();
  const int r = rt.rank();
  const Layout& L = v.layout;
  const int rows = L.rows;
  auto read = [&](uint64_t addr, int64_t bytes) {
    std::vector<uint8_t> v(static_cast<size_t>(bytes));
    dev.download(v.data(), addr, bytes);
    return v;
  };
  auto copy = [&](uint64_t addr, DType d, std::vector<int64_t> shape) {
    HostTensor t = HostTensor::zeros(d, std::move(shape));
    dev.download(t.data.data(), addr, static_cast<int64_t>(t.data.size()));
    return t;
  };
  TensorMap o;
  const uint64_t scratch = rt.buffer(rows, arg::kScratch), sym = rt.buffer(rows, arg::kSym);
  const std::vector<int64_t> shape{L.rows, L.hidden};
  o[rankName("res_out", r)] = copy(io.addr.at(arg::kResOut), DType::BF16, shape);
  o[rankName("sres", r)] = copy(scratch + L.sres.offset, DType::F32, shape);
  const int tasks = static_cast<int>(L.reduce.tasks);
  HostTensor ssq = HostTensor::zeros(DType::F32, {L.rows, tasks}), ssqTag = HostTensor::zeros(DType::I32, {L.rows, tasks});
  const std::vector<uint8_t> pairs = read(scratch + L.ssq.offset, L.ssq.bytes);
  for (int64_t i = 0; i < int64_t{L.rows} * tasks; ++i) {
    std::memcpy(ssq.as<float>() + i, pairs.data() + 8 * i, 4);
    std::memcpy(ssqTag.as<int32_t>() + i, pairs.data() + 8 * i + 4, 4);
  }
  o[rankName("ssq", r)] = std::move(ssq);
  o[rankName("ssq_tag", r)] = std::move(ssqTag);
  if (L.oproj) {  // o_proj in the launch: the quant's scales and the partial push sent
    o[rankName("xscale", r)] = copy(scratch + L.xscale.offset, DType::F32, {L.rows});
    o[rankName("opart", r)] = copy(scratch + L.opart.offset, DType::BF16, shape);
  }
  o[rankName("err", r)] = copy(rt.buffer(rows, arg::kErr), DType::I32, {2});
  o[rankName("epoch", r)] = copy(rt.buffer(rows, arg::kEpoch), DType::I32, {1});
  readMoeOutputs(L, r, scratch, io.addr.at(arg::kOut), read, o);
  const std::vector<uint8_t> ffn = read(sym + L.ffn.offset, L.ffn.bytes);
  for (int src = 0; src < rt.tp(); ++src) o[rankName("down", src)] = downPartial(L, src, tag, ffn);
  return o;
}

TensorMap rankReference(const TensorMap& all, int rank, int tp) {
  TensorMap out;
  const std::string mine = fmt::format(".r{}", rank);
  for (const auto& [name, t] : all) {
    const bool own = name.size() > mine.size() && name.compare(name.size() - mine.size(), mine.size(), mine) == 0;
    if (own || name.rfind("down.r", 0) == 0) out[name] = t;
  }
  return out;
}

std::string rankError(const TensorMap& outputs, int rank) {
  const int32_t* ew = outputs.at(rankName("err", rank)).as<int32_t>();
  if (ew[0] == 0) return "";
  return fmt::format("rank {}: error word {:#x} (site {}, rank {}, token {}), {} failure{}: {}", rank, ew[0],
                     errorSite(ew[0]), errorRank(ew[0]), errorToken(ew[0]), ew[1], ew[1] == 1 ? "" : "s",
                     errorMeaning(ew[0]));
}

std::string missingPeers(const ModelConfig& cfg, runtime::RankRuntime& rt, int rows, int32_t tag) {
  return missingPeers(FfnVariant::make(cfg, rt.plan(rows).key), rt, tag);
}

std::string missingPeers(const FfnVariant& v, runtime::RankRuntime& rt, int32_t tag) {
  const Layout& L = v.layout;
  const int rows = L.rows, me = rt.rank(), tp = rt.tp();
  const int64_t rowPairs = L.hidden / 2;
  // Pushed areas hold [src][S][hidden / 2], reduce-scattered only row t % TP == this rank's; the
  // gathered ones (A_AG, FFN_AG) [S][hidden / 2], row t from its owner rank t % TP.
  struct Owed {
    const Area* area;
    bool scattered, gathered;
  };
  std::vector<Owed> areas = {{&L.attn, L.attnReduceScatter, false}};
  if (L.attnReduceScatter) areas.push_back({&L.attnAg, false, true});
  areas.push_back({&L.ffn, L.ffnReduceScatter, false});
  if (L.ffnReduceScatter) areas.push_back({&L.ffnAg, false, true});
  const uint64_t sym = rt.buffer(rows, arg::kSym);
  std::vector<std::vector<uint8_t>> bytes;
  for (const Owed& o : areas) {
    bytes.emplace_back(static_cast<size_t>(o.area->bytes));
    rt.device().download(bytes.back().data(), sym + o.area->offset, o.area->bytes);
  }
  std::string out;
  for (int src = 0; src < tp; ++src) {
    std::string parts;
    for (size_t k = 0; k < areas.size(); ++k) {
      const Area& a = *areas[k].area;
      const int64_t half = a.parity ? (tag & 1) * (a.pairs / 2) : 0;  // this launch's half
      int64_t have = 0, owed = 0;
      for (int t = 0; t < rows; ++t) {
        if ((areas[k].scattered && t % tp != me) || (areas[k].gathered && t % tp != src)) continue;
        const int64_t first = half + ((areas[k].gathered ? 0 : int64_t{src} * rows) + t) * rowPairs;
        for (int64_t i = first; i < first + rowPairs; ++i) {
          int32_t got;
          std::memcpy(&got, bytes[k].data() + kPairBytes * i + 4, 4);
          have += got == tag;
        }
        owed += rowPairs;
      }
      if (have != owed) parts += fmt::format("{}{} {} of {}", parts.empty() ? "" : ", ", a.name, have, owed);
    }
    if (!parts.empty()) out += fmt::format("{}rank {} ({} pairs came)", out.empty() ? "" : "; ", src, parts);
  }
  return out.empty() ? "" : "this launch's pairs never came from " + out;
}

SimRankData makeSimRankData(const ModelConfig& cfg, const SimRankJob& job, int tp) {
  SimRankData d;
  for (int s : job.rows)
    for (int k = 0; k < job.launches; ++k) {
      LaunchInputOptions io;
      io.matchVariant(job.knobs);  // held as the variant reads them: the scales' layout, attn or part
      d.inputs[s].push_back(makeLaunchInputs(cfg, s, tp, job.seed + static_cast<uint64_t>(k), io));
      d.want[s].push_back(launchReferenceOutputs(cfg, s, tp, d.inputs[s].back(), job.knobs.experts));
    }
  return d;
}

std::function<void(const std::string&)> reportProgress(runtime::RankChannel& ch) {
  return [&ch](const std::string& line) {
    ch.report(nlohmann::json{{"event", "progress"}, {"rank", ch.rank()}, {"line", line}}.dump());
  };
}

void setUpRank(runtime::RankRuntime& rt, runtime::RankChannel& ch) {
  rt.allocate();
  rt.openPeers(ch.allGather(rt.exportHandle()));  // the framework's all_gather_object
  ch.barrier();                                   // every rank has opened every handle
  rt.peersOpened();
  rt.warmUp();
}

std::string rankVerdict(const FfnVariant& v, runtime::RankRuntime& rt, const RankIo& io, int32_t tag,
                        const TensorMap& want) {
  const TensorMap got = readRankOutputs(v, rt, io, tag);
  if (const std::string err = rankError(got, rt.rank()); !err.empty()) {
    const std::string m = missingPeers(v, rt, tag);
    return "INVALID: " + err + (m.empty() ? "" : "; " + m);
  }
  if (const auto m = firstMismatch(got, rankReference(want, rt.rank(), rt.tp()))) return "MISMATCH: " + describe(*m);
  return "bit-exact";
}

int32_t nextTag(runtime::RankRuntime& rt, int rows) {
  int32_t epoch = 0;
  rt.device().download(&epoch, rt.buffer(rows, arg::kEpoch), 4);
  return launchTagAfter(epoch);
}

void reportHipDevice(runtime::RankChannel& ch, runtime::HipRankDevice& dev) {
  const runtime::DeviceLimits gpu = dev.limits();
  ch.report(nlohmann::json{{"event", "device"},
                           {"rank", ch.rank()},
                           {"device", dev.name()},
                           {"gpu", gpu.name},
                           {"cus", gpu.computeUnits},
                           {"runtime", dev.api().describe()}}
                .dump());
}

int runRankLaunches(const RankLaunchSteps& steps, const std::vector<int>& rows, int launches, int32_t fixedTag,
                    runtime::RankChannel& ch, runtime::RankDevice& dev, runtime::Generator& gen,
                    std::chrono::steady_clock::time_point started, const std::function<int64_t()>& ops, void* stream) {
  const int r = ch.rank();
  using clock = std::chrono::steady_clock;
  runtime::RankRuntime rt(gen, dev, steps.opts);
  setUpRank(rt, ch);
  std::map<int, runtime::BoundLaunch*> bound;
  for (int s : rows) bound[s] = &steps.bind(rt, s);  // checked and packed once
  ch.report(nlohmann::json{{"event", "ready"},
                           {"rank", r},
                           {"seconds", std::chrono::duration<double>(clock::now() - started).count()}}
                .dump());
  bool allExact = true;
  for (int s : rows)
    for (int k = 0; k < launches; ++k) {
      steps.upload(rt, s, k);
      if (fixedTag) {
        const int32_t e = epochBefore(fixedTag);
        dev.upload(rt.buffer(s, arg::kEpoch), &e, 4);
      }
      const int32_t tag = nextTag(rt, s);
      ch.report(nlohmann::json{{"event", "start"}, {"rank", r}, {"rows", s}, {"launch", k}, {"tag", tag}}.dump());
      const auto l0 = clock::now();
      rt.launch(*bound[s], stream);
      dev.synchronize(stream);
      const double sec = std::chrono::duration<double>(clock::now() - l0).count();
      const std::string verdict = steps.verdict(rt, s, k, tag);
      allExact = allExact && verdict == "bit-exact";
      nlohmann::json done{{"event", "done"}, {"rank", r},
                          {"rows", s},       {"launch", k},
                          {"tag", tag},      {"valid", verdict.rfind("INVALID", 0) != 0},
                          {"verdict", verdict}, {"seconds", sec}};
      if (ops) done["ops"] = ops();
      ch.report(done.dump());
    }
  return allExact ? 0 : 1;
}

int runRank(const ModelConfig& cfg, const SimRankJob& job, const SimRankData& data, runtime::RankChannel& ch,
            runtime::RankDevice& dev, runtime::Generator& gen, std::chrono::steady_clock::time_point started,
            const std::function<int64_t()>& ops, void* stream) {
  const int r = ch.rank(), tp = ch.tp();
  for (int s : job.rows)
    if (!data.inputs.count(s) || data.inputs.at(s).size() < static_cast<size_t>(job.launches) ||
        !data.want.count(s) || data.want.at(s).size() < static_cast<size_t>(job.launches))
      throw InputError("runRank", fmt::format("no inputs or references for S = {} x {} launches", s, job.launches));
  RankLaunchSteps steps;
  steps.opts = rankRuntimeOptions(cfg, r, tp, job.rows, job.knobs);
  steps.opts.progress = reportProgress(ch);
  std::map<int, RankIo> io;
  std::map<int, FfnVariant> variant;  // by S, made once from the key the runtime built the Plan of
  steps.bind = [&](runtime::RankRuntime& rt, int s) -> runtime::BoundLaunch& {
    variant.emplace(s, FfnVariant::make(cfg, steps.opts.key(s)));
    io[s] = allocRankIo(dev, rt.plan(s));
    return rt.bind(s, rankArgs(rt.plan(s), io[s], job.waitTicks));
  };
  steps.upload = [&](runtime::RankRuntime& rt, int s, int k) {
    uploadRankInputs(dev, variant.at(s), rt.plan(s), io[s], r, data.inputs.at(s)[k]);
  };
  steps.verdict = [&](runtime::RankRuntime& rt, int s, int k, int32_t tag) {
    return rankVerdict(variant.at(s), rt, io[s], tag, data.want.at(s)[k]);
  };
  return runRankLaunches(steps, job.rows, job.launches, job.fixedTag, ch, dev, gen, started, ops, stream);
}

int runSimRank(const ModelConfig& cfg, const SimRankJob& job, const SimRankData& data, runtime::RankChannel& ch) {
  const auto started = std::chrono::steady_clock::now();
  runtime::SimRankDevice dev(ch.rank(), ch.tp(), job.sim);
  ch.report(nlohmann::json{{"event", "device"}, {"rank", ch.rank()}, {"device", dev.name()}}.dump());
  runtime::Generator gen = makeGenerator(cfg, nullptr);  // the Sim needs Plans only: no compile, no cache
  return runRank(cfg, job, data, ch, dev, gen, started, [&] { return dev.lastStats().steps; }, nullptr);
}

int runHipRank(const ModelConfig& cfg, const SimRankJob& job, const SimRankData& data, runtime::RankChannel& ch,
               std::shared_ptr<runtime::Cache> cache) {
  const auto started = std::chrono::steady_clock::now();
  runtime::HipRankDevice dev(ch.rank(), ch.tp());  // GPU `rank`; no library / entry point / gfx950: RuntimeError
  reportHipDevice(ch, dev);
  runtime::Generator gen = makeGenerator(cfg, std::move(cache));
  const runtime::HipStream stream(dev);  // a stream of its own, as a serving caller launches on
  return runRank(cfg, job, data, ch, dev, gen, started, {}, stream.get());
}

}  // namespace monogen::specs::minimax_m3
