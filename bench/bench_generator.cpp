// bench_generator: one cold build of a variant (the FFN, attention or layer launch's),
// phase by phase, for every codegen::Pipeline side by side, with each kernel's ISA size,
// registers, spills and LDS; repetitions interleaved at random, medians printed. Usage and what
// the columns mean: docs/verification.md, "Benchmarks".
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "codegen/Compiler.h"
#include "ir/Verifier.h"
#include "specs/minimax_m3/kernel/AttentionSpec.h"
#include "specs/minimax_m3/kernel/AttentionVariant.h"
#include "specs/minimax_m3/kernel/LayerSpec.h"
#include "specs/minimax_m3/kernel/LayerVariant.h"
#include "specs/minimax_m3/kernel/ModelConfig.h"
#include "specs/minimax_m3/kernel/Spec.h"

namespace {

using namespace monogen;
namespace mm = specs::minimax_m3;

/// The launches (their default knobs: the vllm cache, a sparse layer).
enum class Launch { Ffn, Attention, Layer };
constexpr const char* launchName(Launch l) {
  return l == Launch::Ffn ? "" : l == Launch::Attention ? "attention " : "layer ";
}

struct VariantClass {
  const char* name;  // in the benchmark name: no spaces
  const char* config;
  int rows, tp;
  Launch launch = Launch::Ffn;
};
constexpr VariantClass kClasses[] = {
    {"full_S1_TP1", "full", 1, 1},
    {"full_S8_TP4", "full", 8, 4},
    {"full_S16_TP8", "full", 16, 8},
    {"reduced_S8_TP4", "reduced", 8, 4},
    {"attention_full_S8_TP4", "full", 8, 4, Launch::Attention},
    {"attention_full_S16_TP1", "full", 16, 1, Launch::Attention},
    {"layer_reduced_S1_TP4", "reduced", 1, 4, Launch::Layer},
    {"layer_reduced_S4_TP4", "reduced", 4, 4, Launch::Layer},
    {"layer_full_S1_TP4", "full", 1, 4, Launch::Layer},
    {"layer_full_S2_TP4", "full", 2, 4, Launch::Layer},
    {"layer_full_S16_TP1", "full", 16, 1, Launch::Layer},
};
/// The goal for a layer variant's cold build (plan to code object), wall ms on an idle core.
constexpr double kLayerGoalMs = 500;

/// The class's Plan, built from its key (the timed phase "plan build").
ir::Plan planOf(const VariantClass& vc, const mm::ModelConfig& cfg) {
  switch (vc.launch) {
    case Launch::Attention: return mm::buildAttentionPlan(cfg, mm::makeAttentionKey(cfg, vc.rows, vc.tp));
    case Launch::Layer: return mm::buildLayerPlan(cfg, mm::makeLayerKey(cfg, vc.rows, vc.tp));
    case Launch::Ffn: break;
  }
  return mm::buildPlan(cfg, mm::makeKey(cfg, vc.rows, vc.tp));
}

double threadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

/// ISA instructions in the kernel's body: the assembly lines between the kernel's label and
/// the end of its text that are neither directives, labels nor comments.
int countInstructions(const std::string& isa, const std::string& symbol) {
  std::istringstream in(isa);
  std::string line;
  bool inBody = false;
  int n = 0;
  while (std::getline(in, line)) {
    if (!inBody) {
      inBody = line == symbol + ":";
      continue;
    }
    const size_t at = line.find_first_not_of(" \t");
    if (at == std::string::npos) continue;
    if (line.compare(at, 8, ".section") == 0 || line.compare(at, 10, ".Lfunc_end") == 0) break;
    const char c = line[at];
    if (c == '.' || c == ';' || line.back() == ':') continue;
    ++n;
  }
  return n;
}

/// What the kernel a pipeline builds looks like; computed once per (class, pipeline).
struct Quality {
  int isaInstructions = 0;
  size_t codeObjectBytes = 0;
  codegen::CodeObjectInfo info;
};

const Quality& qualityOf(const VariantClass& vc, codegen::Pipeline pl) {
  static std::mutex mu;
  static std::map<std::pair<std::string, int>, Quality> done;
  std::lock_guard<std::mutex> g(mu);
  auto [it, fresh] = done.try_emplace({vc.name, static_cast<int>(pl)});
  if (fresh) {
    const mm::ModelConfig cfg = mm::ModelConfig::byName(vc.config);
    ir::Plan plan = planOf(vc, cfg);
    ir::verify(plan);
    const codegen::CompileOptions opts{pl};
    const codegen::CodeObject co = codegen::compile(plan, opts);
    it->second.info = co.info;
    it->second.codeObjectBytes = co.bytes.size();
    it->second.isaInstructions = countInstructions(codegen::isaText(plan, opts), codegen::kernelSymbol(plan));
  }
  return it->second;
}

// The phases in the order a build runs them: name in the counters, name in the table.
struct PhaseName {
  const char* counter;
  const char* label;
};
constexpr PhaseName kPhases[] = {{"plan", "plan build"}, {"verify", "verify"},     {"lower", "lowering"},
                                 {"opt", "LLVM opt"},    {"cg", "codegen (MC)"}, {"link", "link (lld)"},
                                 {"meta", "metadata"},   {"total", "total"}};

void coldBuild(benchmark::State& st, VariantClass vc, codegen::Pipeline pl) {
  const mm::ModelConfig cfg = mm::ModelConfig::byName(vc.config);
  const codegen::CompileOptions opts{pl};
  const Quality& q = qualityOf(vc, pl);  // before the timed loop: an untimed warm-up build too

  std::map<std::string, double> cpu, wall;  // seconds, summed over the iterations
  for (auto _ : st) {
    using Clock = std::chrono::steady_clock;
    const auto w0 = Clock::now();
    const double c0 = threadCpuSeconds();
    ir::Plan plan = planOf(vc, cfg);
    const auto w1 = Clock::now();
    const double c1 = threadCpuSeconds();
    ir::verify(plan);
    const auto w2 = Clock::now();
    const double c2 = threadCpuSeconds();
    const codegen::CodeObject co = codegen::compile(plan, opts);
    benchmark::DoNotOptimize(co.bytes.data());
    const auto secs = [](Clock::time_point a, Clock::time_point b) {
      return std::chrono::duration<double>(b - a).count();
    };
    const codegen::PhaseTimes& cw = co.times.wall;
    const codegen::PhaseTimes& cc = co.times.cpu;
    const double ws[] = {secs(w0, w1), secs(w1, w2), cw.lower, cw.optimize, cw.codegen, cw.link, cw.metadata};
    const double cs[] = {c1 - c0, c2 - c1, cc.lower, cc.optimize, cc.codegen, cc.link, cc.metadata};
    for (size_t i = 0; i < std::size(ws); ++i) {
      wall[kPhases[i].counter] += ws[i];
      cpu[kPhases[i].counter] += cs[i];
      wall["total"] += ws[i];
      cpu["total"] += cs[i];
    }
  }
  for (const auto& [name, s] : cpu)
    st.counters["cpu_" + name] = benchmark::Counter(1e3 * s, benchmark::Counter::kAvgIterations);
  for (const auto& [name, s] : wall)
    st.counters["wall_" + name] = benchmark::Counter(1e3 * s, benchmark::Counter::kAvgIterations);
  st.counters["isa"] = q.isaInstructions;
  st.counters["bytes"] = static_cast<double>(q.codeObjectBytes);
  st.counters["vgpr"] = q.info.vgprs;
  st.counters["agpr"] = q.info.agprs;
  st.counters["sgpr"] = q.info.sgprs;
  st.counters["spills"] = q.info.vgprSpills + q.info.sgprSpills;
  st.counters["lds"] = static_cast<double>(q.info.ldsBytes);
  st.counters["scratch"] = static_cast<double>(q.info.scratchBytes);
  st.SetLabel(fmt::format("{}{} S={} TP={} {}", launchName(vc.launch), vc.config, vc.rows, vc.tp,
                          codegen::pipelineName(pl)));
}

/// Prints a line per finished benchmark, then one table per variant class: every phase's
/// median for each pipeline side by side (cpu and wall, ms) with the ratio to the first
/// pipeline, then the kernel's figures.
class PhaseTable : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context& ctx) override {
    fmt::print("{} CPUs at {:.0f} MHz; load average {:.2f} {:.2f} {:.2f}\n", ctx.cpu_info.num_cpus,
               ctx.cpu_info.cycles_per_second / 1e6, ctx.cpu_info.load_avg.size() > 0 ? ctx.cpu_info.load_avg[0] : 0.,
               ctx.cpu_info.load_avg.size() > 1 ? ctx.cpu_info.load_avg[1] : 0.,
               ctx.cpu_info.load_avg.size() > 2 ? ctx.cpu_info.load_avg[2] : 0.);
    std::fflush(stdout);
    return true;
  }
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      if (r.error_occurred) {
        fmt::print("{}: ERROR {}\n", r.benchmark_name(), r.error_message);
        failed_ = true;
        continue;
      }
      if (r.run_type == Run::RT_Iteration) {
        auto get = [&](const char* c) { return r.counters.at(c).value; };
        fmt::print("  {:<34} cpu {:7.1f} ms  wall {:7.1f} ms (opt {:6.1f} codegen {:6.1f} cpu)\n", r.benchmark_name(),
                   get("cpu_total"), get("wall_total"), get("cpu_opt"), get("cpu_cg"));
        std::fflush(stdout);
      }
      if (r.run_type == Run::RT_Aggregate && r.aggregate_name == "median") {
        const std::string name = r.run_name.function_name;  // cold_build/<class>/<pipeline>
        const size_t a = name.find('/'), b = name.rfind('/');
        if (a == std::string::npos || a == b) continue;
        const std::string cls = name.substr(a + 1, b - a - 1), pl = name.substr(b + 1);
        if (std::find(classes_.begin(), classes_.end(), cls) == classes_.end()) classes_.push_back(cls);
        if (std::find(pipelines_.begin(), pipelines_.end(), pl) == pipelines_.end()) pipelines_.push_back(pl);
        Medians& m = medians_[{cls, pl}];
        m.repetitions = static_cast<int>(r.repetitions);
        for (const auto& [k, c] : r.counters) m.v[k] = c.value;
      }
    }
  }
  void Finalize() override {
    auto order = [](const std::string& c) {
      for (size_t i = 0; i < std::size(kClasses); ++i)
        if (c == kClasses[i].name) return i;
      return std::size(kClasses);
    };
    std::stable_sort(classes_.begin(), classes_.end(),
                     [&](const std::string& a, const std::string& b) { return order(a) < order(b); });
    auto plOrder = [](const std::string& p) {
      for (size_t i = 0; i < std::size(codegen::kPipelines); ++i)
        if (p == codegen::pipelineName(codegen::kPipelines[i])) return i;
      return std::size(codegen::kPipelines);
    };
    std::stable_sort(pipelines_.begin(), pipelines_.end(),
                     [&](const std::string& a, const std::string& b) { return plOrder(a) < plOrder(b); });
    for (const std::string& cls : classes_) {
      std::vector<std::string> pls;
      for (const std::string& p : pipelines_)
        if (medians_.count({cls, p})) pls.push_back(p);
      if (pls.empty()) continue;
      fmt::print("\n{} (medians of {} cold builds, ms)\n", cls, medians_[{cls, pls[0]}].repetitions);
      if (cls.rfind("layer_", 0) == 0) {
        const Medians& m = medians_[{cls, pls[0]}];
        // The goal is wall time on an idle core: CPU time stands for it on a loaded machine.
        fmt::print("  goal: a cold build within {:.0f} ms: {} pipeline {:.0f} ms cpu, {:.0f} ms wall ({})\n", kLayerGoalMs,
                   pls[0], m.v.at("cpu_total"), m.v.at("wall_total"),
                   m.v.at("cpu_total") <= kLayerGoalMs ? "met on an idle core" : "NOT met");
      }
      std::string head = fmt::format("  {:<14}", "phase");
      for (const char* kind : {"cpu", "wall"})
        for (size_t i = 0; i < pls.size(); ++i)
          head += fmt::format(" {:>9}", fmt::format("{} {}", pls[i], kind)) + (i ? fmt::format(" {:>6}", "ratio") : "");
      fmt::print("{}\n", head);
      for (const PhaseName& ph : kPhases) {
        std::string line = fmt::format("  {:<14}", ph.label);
        for (const char* kind : {"cpu_", "wall_"}) {
          const double base = medians_[{cls, pls[0]}].v[std::string(kind) + ph.counter];
          for (size_t i = 0; i < pls.size(); ++i) {
            const double x = medians_[{cls, pls[i]}].v[std::string(kind) + ph.counter];
            line += fmt::format(" {:9.1f}", x);
            if (i) line += base > 0 ? fmt::format(" {:6.2f}", x / base) : fmt::format(" {:>6}", "-");
          }
        }
        fmt::print("{}\n", line);
      }
      std::string kh = fmt::format("  {:<14}", "kernel");
      for (const std::string& p : pls) kh += fmt::format(" {:>9}", p);
      fmt::print("{}\n", kh);
      for (const auto& [label, counter] : std::vector<std::pair<const char*, const char*>>{
               {"ISA instrs", "isa"},
               {"VGPR", "vgpr"},
               {"AGPR", "agpr"},
               {"SGPR", "sgpr"},
               {"spills", "spills"},
               {"scratch B", "scratch"},
               {"LDS B", "lds"},
               {"object B", "bytes"}}) {
        std::string line = fmt::format("  {:<14}", label);
        for (const std::string& p : pls) line += fmt::format(" {:9.0f}", medians_[{cls, p}].v[counter]);
        fmt::print("{}\n", line);
      }
    }
    std::fflush(stdout);
  }
  bool failed() const { return failed_; }

 private:
  struct Medians {
    int repetitions = 0;
    std::map<std::string, double> v;
  };
  std::vector<std::string> classes_, pipelines_;
  std::map<std::pair<std::string, std::string>, Medians> medians_;
  bool failed_ = false;
};

}  // namespace

int main(int argc, char** argv) {
  // Defaults that make the figures medians of interleaved cold builds; any given flag wins.
  std::vector<char*> args(argv, argv + argc);
  auto given = [&](const char* flag) {
    for (int i = 1; i < argc; ++i)
      if (std::strncmp(argv[i], flag, std::strlen(flag)) == 0) return true;
    return false;
  };
  static char reps[] = "--benchmark_repetitions=7";
  static char interleave[] = "--benchmark_enable_random_interleaving=true";
  if (!given("--benchmark_repetitions")) args.insert(args.begin() + 1, reps);
  if (!given("--benchmark_enable_random_interleaving")) args.insert(args.begin() + 1, interleave);
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 2;

  for (const VariantClass& vc : kClasses)
    for (codegen::Pipeline pl : codegen::kPipelines)
      benchmark::RegisterBenchmark(fmt::format("cold_build/{}/{}", vc.name, codegen::pipelineName(pl)).c_str(),
                                   coldBuild, vc, pl)
          ->Iterations(1)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
  PhaseTable table;
  benchmark::RunSpecifiedBenchmarks(&table);
  benchmark::Shutdown();
  return table.failed() ? 1 : 0;
}
