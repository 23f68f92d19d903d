#include "specs/minimax_m3/testing/RankBench.h"

#include <nlohmann/json.hpp>

#include "runtime/HipRankDevice.h"
#include "specs/minimax_m3/kernel/FfnVariant.h"
#include "specs/minimax_m3/kernel/Generate.h"
#include "specs/minimax_m3/testing/RankHarness.h"

namespace monogen::specs::minimax_m3 {

int runHipBenchRank(const ModelConfig& cfg, const RankBenchJob& job, const runtime::TensorMap& inputs,
                    const runtime::TensorMap& want, runtime::RankChannel& ch, std::shared_ptr<runtime::Cache> cache) {
  const int r = ch.rank(), s = job.rows;
  runtime::HipRankDevice dev(r, ch.tp());  // no library / entry point / gfx950: RuntimeError
  reportHipDevice(ch, dev);
  const runtime::HipStream stream(dev);  // launched and timed on a stream of its own, as a caller does
  runtime::Generator gen = makeGenerator(cfg, std::move(cache));
  runtime::RankRuntimeOptions opts = rankRuntimeOptions(cfg, r, ch.tp(), {s}, job.knobs);
  opts.progress = reportProgress(ch);
  runtime::RankRuntime rt(gen, dev, opts);
  setUpRank(rt, ch);
  const FfnVariant v = FfnVariant::make(cfg, opts.key(s));
  std::vector<RankIo> io;
  std::vector<runtime::BoundLaunch*> bound;
  for (int c = 0; c < job.copies; ++c) {
    io.push_back(allocRankIo(dev, rt.plan(s)));
    uploadRankInputs(dev, v, rt.plan(s), io.back(), r, inputs);
    bound.push_back(&rt.bind(s, rankArgs(rt.plan(s), io.back(), job.waitTicks)));
  }
  ch.barrier();  // every rank is bound: the checked launch starts together
  const int32_t tag = nextTag(rt, s);
  rt.launch(*bound[0], stream.get());
  dev.synchronize(stream.get());
  const std::string verdict = rankVerdict(v, rt, io[0], tag, want);
  ch.report(nlohmann::json{{"event", "check"}, {"rank", r}, {"tag", tag}, {"verdict", verdict}}.dump());
  for (int k = 0; k < job.repeats; ++k) {
    ch.barrier();  // the ranks' timed runs overlap, as a serving step's launches do
    const double ms = dev.elapsedMs(stream.get(), [&] {
      for (int i = 0; i < job.launches; ++i) rt.launch(*bound[static_cast<size_t>(i % job.copies)], stream.get());
    });
    ch.report(nlohmann::json{{"event", "timing"}, {"rank", r}, {"repeat", k}, {"us", ms * 1e3 / job.launches}}.dump());
  }
  return verdict == "bit-exact" ? 0 : 1;
}

}  // namespace monogen::specs::minimax_m3
