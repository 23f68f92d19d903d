// monogen bench: per (S, TP, distinct experts), the bytes a launch asks from global memory on the Sim
// device against the minimum a rank must read (specs/minimax_m3/testing/BytesModel.h); with --timed the
// modeled time (docs/timing.md); with --device hip the measured time on the node's GPUs.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "ir/Error.h"
#include "runtime/sim/SimDevice.h"
#include "runtime/sim/timing/TimingParams.h"
#include "tools/TimedCells.h"
#include "tools/TimedIsa.h"
#include "specs/minimax_m3/testing/BytesModel.h"
#include "specs/minimax_m3/testing/MoeInputs.h"
#include "specs/minimax_m3/testing/SimHarness.h"
#include "specs/minimax_m3/kernel/Spec.h"
#include "tools/BenchAttention.h"
#include "tools/BenchLayer.h"
#include "tools/BytesTable.h"
#include "tools/BenchHip.h"
#include "tools/Commands.h"
#include "tools/Variant.h"
#include "tools/NumericFlag.h"

namespace monogen::tools {

namespace mm = specs::minimax_m3;

namespace {

/// "1,4,8" or "1-4,8" -> {1, 2, 3, 4, 8}; "natural" counts as 0 when allowNatural.
std::vector<int> parseList(const std::string& text, const char* option, bool allowNatural) {
  std::vector<int> out;
  std::stringstream ss(text);
  std::string item;
  auto num = [&](const std::string& s) {
    if (allowNatural && s == "natural") return 0;
    std::string why;
    const std::optional<int> v = parseNumeric(s, 0, 4096, &why);
    if (!v)
      throw InputError(option, fmt::format("{}: expected a list of numbers like 1,4,8 or 1-16{}", why,
                                           allowNatural ? " (natural: 0)" : ""));
    return *v;
  };
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    const size_t dash = item.find('-', 1);
    if (dash == std::string::npos) {
      out.push_back(num(item));
    } else {
      const int a = num(item.substr(0, dash)), b = num(item.substr(dash + 1));
      if (b < a) throw InputError(option, fmt::format("range '{}' runs backwards", item));
      for (int v = a; v <= b; ++v) out.push_back(v);
    }
  }
  if (out.empty()) throw InputError(option, fmt::format("'{}': no values", text));
  return out;
}


/// The measured launch times of the FlyDSL FFN launch with o_proj on MI350X (TP4, 8 rows, weights
/// streaming from HBM; median of 5 x 200 launches), by distinct experts; 0: none measured.
double measuredUs(int s, int tp, int n) {
  if (s != 8 || tp != 4) return 0;
  return n == 8 ? 44.8 : n == 14 ? 51.8 : n == 18 ? 58.2 : 0;
}

const char* const kLaunchStages[] = {"push", "reduce", "norm", "router", "route", "table", "up", "down", "final"};

}  // namespace

Run addBench(CLI::App& app) {
  struct Options {
    std::string config = "reduced";
    std::string rows = "1,8,16", tp = "1,4", experts = "4,8,16";
    uint64_t seed = 1;
    bool breakdown = false;
    bool noSim = false;
    std::string input = "attn";
    bool timed = false;        // --timed: the Sim's gfx950 timing model (docs/timing.md)
    std::string timingParams;  // --timing-params FILE
    bool irIssue = false;      // --ir-issue: issue by IR op class
    std::string json;          // --json FILE: the timed or measured cells
    std::string device = "sim";
    mm::RankBenchJob hip;      // --device hip: copies, repeats, launches
    double waitSeconds = 60;
    bool noCache = false;
    std::string launch = "ffn";      // --launch attention: BenchAttention.h
    BenchAttentionOptions attention;  // its --context, --cache, --layer-type, --share-sequence
  };
  auto o = std::make_shared<Options>();
  CLI::App* c = app.add_subcommand(
      "bench", "per rows, TP and distinct experts: bytes a launch reads on the Sim device against the minimum, "
               "its modeled time (--timed) or its measured time on the GPUs (--device hip)");
  c->add_option("--config", o->config, "model dims: reduced, full (MiniMax-M3.1-Flash) or a config.json path")
      ->capture_default_str();
  c->add_option("--rows,-S", o->rows, "rows S: a list like 1,4,8 or 1-16")->capture_default_str();
  c->add_option("--tp,-T", o->tp, "TP sizes: a list of 1, 2, 4, 8")->capture_default_str();
  c->add_option("--experts,-N", o->experts,
                "distinct routed experts the rows pick (router-bias steering); 0 or natural: unsteered. Cells "
                "with N > min(E, S x top-k) are skipped")
      ->capture_default_str();
  c->add_option("--seed", o->seed, "input and scheduler seed")->check(numeric<uint64_t>(0, std::numeric_limits<uint64_t>::max()))->capture_default_str();
  c->add_flag("--breakdown", o->breakdown, "print each cell's minimum by tensor and its stages' bytes");
  c->add_flag("--no-sim", o->noSim, "the minimum alone (no Sim launch: quick at the full config)");
  c->add_option("--input", o->input, "the launch's input: attn (the attention rows, o_proj in the launch) or part (the o_proj partial)")
      ->check(CLI::IsMember({"part", "attn"}))
      ->capture_default_str();
  c->add_flag("--timed", o->timed,
              "run each cell under the gfx950 timing model: modeled us, the measured figure where one exists, the "
              "floor (a rank's minimum bytes / HBM bandwidth) and the ratio, and the critical path");
  c->add_flag("--ir-issue", o->irIssue, "with --timed: charge issue by IR op class, not by the compiled ISA");
  c->add_option("--timing-params", o->timingParams, "with --timed: JSON overrides of the timing parameters")
      ->check(CLI::ExistingFile);
  c->add_option("--json", o->json, "with --timed or --device hip: write the cells as JSON objects "
                                   "{rows, tp, experts, input, modeled_us | measured_us, floor_us, seed_us}");
  c->add_option("--device", o->device,
                "sim: bytes on the Sim device (and --timed: modeled time); hip: the launch timed on this node's "
                "GPUs, one process a rank (weights rotating through --copies sets, hipEvents on the stream, the "
                "median of --repeats runs of --launches launches, after one launch checked against the reference)")
      ->check(CLI::IsMember({"sim", "hip"}))
      ->capture_default_str();
  c->add_option("--copies", o->hip.copies, "--device hip: buffer sets the launches rotate through")
      ->check(numeric<int>(1, 64))
      ->capture_default_str();
  c->add_option("--repeats", o->hip.repeats, "--device hip: timed runs (the figure is their median)")
      ->check(numeric<int>(1, 1000))
      ->capture_default_str();
  c->add_option("--launches", o->hip.launches, "--device hip: back-to-back launches a timed run")
      ->check(numeric<int>(1, 100000))
      ->capture_default_str();
  c->add_option("--wait-seconds", o->waitSeconds, "--device hip: a wait's bound in the kernel, seconds")
      ->check(numeric<double>(0.001, 3600))
      ->capture_default_str();
  c->add_flag("--no-cache", o->noCache, "--device hip: compile every variant, do not use the code-object cache");
  c->add_option("--launch", o->launch,
                "the launch: ffn, attention (its bytes against AttentionBytesModel's minimum) or layer (with --timed: "
                "the one-launch layer's modeled time beside the two launches'; --rows default 1,2,4,8, --tp 4)")
      ->check(CLI::IsMember({"ffn", "attention", "layer"}))
      ->capture_default_str();
  c->add_option("--context", o->attention.context, "--launch attention or layer: keys each sequence holds before the launch")
      ->check(numeric(0, 1 << 20))
      ->capture_default_str();
  c->add_option("--cache", o->attention.cache, "--launch attention or layer: the KV cache mode, vllm or atom")
      ->capture_default_str();
  c->add_option("--layer-type,--layer", o->attention.layer, "--launch attention or layer: the layer type, sparse or full")
      ->capture_default_str();
  c->add_flag("--share-sequence", o->attention.share, "--launch attention or layer: the rows share one sequence");
  c->add_option("--moe", o->attention.moe, "--launch layer: the layer's experts' numerics, a16w4 or a8w4 (its moe "
                                           "knob; the two launches it is set beside stay A16W4)");
  c->add_option("--wide-from", o->attention.wideFrom, "--launch layer: its wide_from knob (A8W4's wide down from this S)")
      ->check(numeric(1, 17));
  c->add_option("--index-cp-from", o->attention.indexCpFrom,
                "--launch layer: its index_cp_from knob (indexer context parallelism past this many blocks; the "
                "attention launch it is set beside runs without)")
      ->check(numeric(0, 1 << 20));
  return [o, c] {
    const bool layer = o->launch == "layer";
    const bool attention = o->launch == "attention" || layer;  // the layer takes the attention launch's options
    const bool hip = o->device == "hip";
    if (!o->json.empty() && !o->timed && !hip)
      throw InputError("--json", attention ? "needs --timed" : "needs --timed or --device hip");
    if (layer && !o->timed)
      throw InputError("--launch", "layer: bench prints the layer's modeled table against the two launches: it needs "
                                   "--timed");
    if (layer && c->count("--rows") == 0) o->rows = "1,2,4,8";
    if (layer && c->count("--tp") == 0) o->tp = "4";
    if (!o->timingParams.empty() && !o->timed) throw InputError("--timing-params", "needs --timed");
    if (o->irIssue && !o->timed) throw InputError("--ir-issue", "sets how the timing model issues: it needs --timed");
    if (o->timed && o->noSim) throw InputError("--timed", "runs the Sim: it cannot go with --no-sim");
    std::shared_ptr<runtime::timing::TimingParams> timing;
    if (o->timed) {
      timing = std::make_shared<runtime::timing::TimingParams>();
      if (!o->timingParams.empty()) timing->load(o->timingParams);
    }
    const mm::ModelConfig cfg = mm::ModelConfig::byName(o->config);
    if (attention) cfg.validateAttention("--config");
    if (!attention || layer) cfg.validate("--config");
    const std::vector<int> rowsList = parseList(o->rows, "--rows", false);
    const std::vector<int> tpList = parseList(o->tp, "--tp", false);
    for (int s : rowsList)
      if (s < 1 || s > cfg.maxRows) throw InputError("--rows", fmt::format("S = {}: expected 1..{}", s, cfg.maxRows));
    for (int t : tpList)
      if (t != 1 && t != 2 && t != 4 && t != 8) throw InputError("--tp", fmt::format("TP = {}: expected 1, 2, 4 or 8", t));
    for (const char* opt : {"--context", "--cache", "--layer-type", "--share-sequence", "--moe", "--wide-from",
                            "--index-cp-from"})
      if (!attention && c->count(opt))
        throw InputError(opt, "is an option of --launch attention or layer: not with the FFN launch");
    if (attention) {
      for (const char* opt : {"--experts", "--input", "--device", "--copies", "--repeats", "--launches",
                              "--wait-seconds", "--no-cache"})
        if (c->count(opt))
          throw InputError(opt, fmt::format("is an option of the FFN launch's bench: not with --launch {}", o->launch));
      for (const char* opt : {"--moe", "--wide-from", "--index-cp-from"})
        if (!layer && c->count(opt))
          throw InputError(opt, "is an option of --launch layer: not with the FFN or attention launch");
      if (layer)
        for (const char* opt : {"--breakdown", "--no-sim"})
          if (c->count(opt)) throw InputError(opt, "is an option of the bytes table: bench --launch layer prints the "
                                                   "modeled one");
      BenchAttentionOptions a = o->attention;
      a.rows = rowsList;
      a.tps = tpList;
      a.seed = o->seed;
      a.breakdown = o->breakdown;
      a.noSim = o->noSim;
      a.timing = timing;
      a.irIssue = o->irIssue;
      a.json = o->json;
      return layer ? benchLayer(cfg, a) : benchAttention(cfg, a);
    }
    if (hip && (o->timed || o->noSim || o->breakdown))
      throw InputError("--device hip", "times the launch on the GPUs: it cannot go with --timed, --no-sim or "
                                       "--breakdown (run those on the Sim device and compare the JSON)");
    if (!hip)
      for (const char* opt : {"--copies", "--repeats", "--launches", "--wait-seconds", "--no-cache"})
        if (c->count(opt)) throw InputError(opt, "takes effect with --device hip only");
    nlohmann::json cellsJson = nlohmann::json::array();
    std::vector<std::string> timedLines;
    const std::vector<int> expList = parseList(o->experts, "--experts", true);

    struct Cell {
      int s, tp, n;
    };
    std::vector<Cell> cells;
    for (int s : rowsList)
      for (int t : tpList)
        for (int n : expList) {
          if (n != 0 && (n < cfg.topk || n > std::min(cfg.experts, s * cfg.topk))) {
            std::fprintf(stderr, "bench: skipping S=%d N=%d: needs top-k %d <= N <= min(E %d, S x top-k %d)\n", s, n,
                         cfg.topk, cfg.experts, s * cfg.topk);
            continue;
          }
          cells.push_back({s, t, n});
        }
    if (cells.empty()) throw InputError("bench", "no (rows, TP, experts) cell is valid");

    const bool full = cfg.canonical() == mm::ModelConfig::byName("full").canonical();
    const double hbmTbs = runtime::timing::TimingParams{}.hbmBandwidth;  // the floor's bandwidth, TB/s
    if (hip) {
      fmt::print("monogen bench --device hip: the launch timed on this node's GPUs (measured), one process a rank\n");
      fmt::print("config: {}\n", cfg.canonical());
      fmt::print("per cell: {} buffer sets rotating (weights stream from HBM), 1 launch checked against the reference, "
                 "then the median of {} x {} launches timed by hipEvents on the stream; a cell's figure is its slowest "
                 "rank's\n",
                 o->hip.copies, o->hip.repeats, o->hip.launches);
    }
    int bad = 0;
    std::vector<std::string> hipLines;
    if (hip) {
      for (size_t i = 0; i < cells.size(); ++i) {
        const Cell& cl = cells[i];
        fmt::print("[{}/{}] S={} TP={} N={}\n", i + 1, cells.size(), cl.s, cl.tp, cl.n ? std::to_string(cl.n) : "natural");
        std::fflush(stdout);
        mm::LaunchInputOptions io;
        io.distinctExperts = cl.n;
        mm::FfnKnobs knobs;
        knobs.input = mm::ffnInputOf(o->input, "--input");
        io.matchVariant(knobs);
        const runtime::TensorMap inputs = mm::makeLaunchInputs(cfg, cl.s, cl.tp, o->seed, io);
        const runtime::TensorMap want = mm::launchReferenceOutputs(cfg, cl.s, cl.tp, inputs, knobs.experts);
        const runtime::TensorMap routing = mm::moeRouting(cfg, cl.s, cl.tp, inputs);
        const int picked = static_cast<int>(mm::distinctPicked(routing.at("picks")).size());
        mm::RankBenchJob job = o->hip;
        job.rows = cl.s;
        job.knobs = knobs;
        job.waitTicks = static_cast<int64_t>(o->waitSeconds * 1e8);  // wait_ticks run at 100 MHz
        const HipBenchCell r = benchHipCell(cfg, cl.tp, job, inputs, want, o->noCache);
        if (!r.error.empty()) throw RuntimeError("bench --device hip", r.error);
        if (r.verdict != "bit-exact") ++bad;
        const double floorUs =
            static_cast<double>(mm::minimumBytes(cfg, cl.s, cl.tp, picked, knobs.input).total()) / (hbmTbs * 1e12) * 1e6;
        const double seedUs = full ? measuredUs(cl.s, cl.tp, cl.n) : 0;
        std::string ranks;
        for (double u : r.rankUs) ranks += fmt::format("{}{:.2f}", ranks.empty() ? "" : " ", u);
        hipLines.push_back(fmt::format("{:>3} {:>3} {:>4} {:>12.2f} {:>12} {:>10.2f} {:>7.2f}  {}; ranks {}", cl.s,
                                       cl.tp, cl.n ? std::to_string(cl.n) : "nat", r.us,
                                       seedUs > 0 ? fmt::format("{:.1f}", seedUs) : std::string("-"), floorUs,
                                       r.us / floorUs, r.verdict, ranks));
        nlohmann::json j = {{"rows", cl.s},      {"tp", cl.tp},          {"experts", cl.n},   {"input", o->input},
                            {"measured_us", r.us}, {"floor_us", floorUs}, {"rank_us", r.rankUs},
                            {"verdict", r.verdict}, {"device", "hip"}};
        j["seed_us"] = seedUs > 0 ? nlohmann::json(seedUs) : nlohmann::json(nullptr);
        cellsJson.push_back(j);
      }
      fmt::print("\nmeasured on this node (us a launch; 'seed us': MI350X, the FlyDSL launch with o_proj; floor = a "
                 "rank's minimum bytes / {} TB/s HBM)\n",
                 hbmTbs);
      fmt::print("{:>3} {:>3} {:>4} {:>12} {:>12} {:>10} {:>7}  checked launch; each rank's median\n", "S", "TP", "N",
                 "measured us", "seed us", "floor us", "ratio");
      for (const std::string& l : hipLines) fmt::print("{}\n", l);
      writeCellsJson(o->json, cellsJson);
      flushStdout();
      return bad ? 1 : 0;
    }

    fmt::print("monogen bench: global-memory bytes a rank's launch reads on the Sim device vs the minimum\n");
    fmt::print("config: {}\n", cfg.canonical());
    fmt::print("a rank's bytes = SimStats::globalBytesLoaded / TP (all ranks run at once); KiB = 1024 bytes\n");
    fmt::print("minimum: BytesModel (each weight / scale byte of the shared + picked experts once, router, bias,\n"
               "norm weight, partial, residual, slots, the peers' (value, tag) pairs of both all-reduces)\n");

    std::set<std::string> reported;  // kernel stage lists already printed
    std::vector<std::string> lines;
    const std::string head = fmt::format("{:>3} {:>3} {:>4} {:>6} {:>12} {:>12} {:>7} {:>12} {:>7}  {}", "S", "TP",
                                         "N", "picked", "sim KiB", "min KiB", "ratio", "have-min KiB", "ratio",
                                         "top stages (share of sim bytes)");
    for (size_t i = 0; i < cells.size(); ++i) {
      const Cell& cl = cells[i];
      const auto t0 = std::chrono::steady_clock::now();
      std::fprintf(stderr, "[%zu/%zu] S=%d TP=%d N=%s ...", i + 1, cells.size(), cl.s, cl.tp,
                   cl.n ? std::to_string(cl.n).c_str() : "natural");
      std::fflush(stderr);
      mm::LaunchInputOptions io;
      io.distinctExperts = cl.n;
      io.expertWeights = !o->noSim;  // the routing needs no expert weights
      mm::FfnKnobs knobs;
      knobs.input = mm::ffnInputOf(o->input, "--input");
      const ir::Key key = mm::makeKey(cfg, cl.s, cl.tp, knobs);
      const mm::FfnInput input = knobs.input;
      io.oproj = input == mm::FfnInput::Attn;
      const runtime::TensorMap inputs = mm::makeLaunchInputs(cfg, cl.s, cl.tp, o->seed, io);
      const runtime::TensorMap routing = mm::moeRouting(cfg, cl.s, cl.tp, inputs);
      const int picked = static_cast<int>(mm::distinctPicked(routing.at("picks")).size());
      if (cl.n != 0 && picked != cl.n) {
        ++bad;
        std::fprintf(stderr, " steering missed: %d distinct experts picked, %d asked\n", picked, cl.n);
      }
      const mm::MinimumBytes minB = mm::minimumBytes(cfg, cl.s, cl.tp, picked, input);
      if (o->noSim) {
        std::string row;
        row = fmt::format("{:>3} {:>3} {:>4} {:>6} {:>12} {:>12}", cl.s, cl.tp, cl.n ? std::to_string(cl.n) : "nat",
                          picked, "-", kib(minB.total()));
        if (o->breakdown) {
          std::istringstream d(minB.describe());
          for (std::string l; std::getline(d, l);) row += "\n        " + l;
        }
        lines.push_back(row);
        std::fprintf(stderr, " done\n");
        continue;
      }

      const mm::FfnVariant v = mm::FfnVariant::make(cfg, key);
      mm::SimSession session(v);
      std::vector<std::string> have;
      for (const auto& st : session.plan().stages) have.push_back(st.name);
      std::vector<std::string> missing;
      for (const char* st : kLaunchStages)
        if (std::find(have.begin(), have.end(), st) == have.end()) missing.push_back(st);
      const std::string haveText = fmt::format("{}", fmt::join(have, ", "));
      if (!reported.count(haveText)) {
        reported.insert(haveText);
        lines.push_back(fmt::format("kernel stages ({}): {}{}", key.variantName(), haveText,
                                    missing.empty() ? ""
                                                    : fmt::format("; NOT in the kernel yet: {} (the sim counts only "
                                                                  "the stages above; see have-min)",
                                                                  fmt::join(missing, ", "))));
      }
      runtime::SimOptions so;
      so.seed = o->seed;
      so.timing = timingFor(timing, o->irIssue, session.plan());
      std::string row;
      try {
        const mm::SimRun run = session.launch(inputs, so);
        if (!run.valid) {  // an error word is set: the counts are not a clean launch's
          ++bad;
          lines.push_back(fmt::format("  S={} TP={} N={}: launch INVALID ({}); its bytes below are not a clean "
                                      "launch's",
                                      cl.s, cl.tp, cl.n, run.error));
        }
        const runtime::HostTensor& want = routing.at("picks");
        if (auto it = run.outputs.find("picks.r0"); it != run.outputs.end() && it->second.dtype == want.dtype &&
                                                    it->second.shape == want.shape && it->second.data != want.data) {
          ++bad;
          lines.push_back(fmt::format("  S={} TP={} N={}: the kernel's picks.r0 differ from the reference routing",
                                      cl.s, cl.tp, cl.n));
        }
        const int64_t perRank = run.stats.globalBytesLoaded / cl.tp;
        const int64_t haveMin = minB.totalOf(have);
        const std::string top = topStagesByBytes(run.stats);
        row = fmt::format("{:>3} {:>3} {:>4} {:>6} {:>12} {:>12} {:>7.2f} {:>12} {:>7.2f}  {}", cl.s, cl.tp,
                          cl.n ? std::to_string(cl.n) : "nat", picked, kib(perRank), kib(minB.total()),
                          static_cast<double>(perRank) / static_cast<double>(minB.total()), kib(haveMin),
                          haveMin ? static_cast<double>(perRank) / static_cast<double>(haveMin) : 0.0, top);
        if (run.stats.timed.on) {
          const runtime::SimTimedResult& t = run.stats.timed;
          const double floorUs = static_cast<double>(minB.total()) / (timing->hbmBandwidth * 1e12) * 1e6;
          const double seedUs = full ? measuredUs(cl.s, cl.tp, cl.n) : 0;  // measured at full dims only
          timedLines.push_back(fmt::format(
              "{:>3} {:>3} {:>4} {:>12.2f} {:>12} {:>10.2f} {:>7.2f}  {}", cl.s, cl.tp,
              cl.n ? std::to_string(cl.n) : "nat", t.us, seedUs > 0 ? fmt::format("{:.1f}", seedUs) : std::string("-"),
              floorUs, t.us / floorUs, criticalPathText(t)));
          nlohmann::json j = {{"rows", cl.s},        {"tp", cl.tp},          {"experts", cl.n},
                              {"input", o->input},   {"modeled_us", t.us},   {"floor_us", floorUs}};
          j["seed_us"] = seedUs > 0 ? nlohmann::json(seedUs) : nlohmann::json(nullptr);
          cellsJson.push_back(j);
        }
        if (o->breakdown) {
          row += "\n      minimum a rank:\n";
          std::istringstream d(minB.describe());
          for (std::string l; std::getline(d, l);) row += "        " + l + "\n";
          row += "      sim bytes a rank by stage:";
          for (const auto& [b, name] : stagesByBytes(run.stats)) row += fmt::format(" {} {}", name, b / cl.tp);
        }
      } catch (const monogen::Error& e) {
        ++bad;
        row = fmt::format("{:>3} {:>3} {:>4} {:>6}  launch failed: {}", cl.s, cl.tp, cl.n ? std::to_string(cl.n) : "nat",
                          picked, e.what());
      }
      lines.push_back(row);
      const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::fprintf(stderr, " %.2f s\n", sec);
    }
    // the stage lists first, then the table
    for (const std::string& l : lines)
      if (l.rfind("kernel stages", 0) == 0) fmt::print("{}\n", l);
    fmt::print("{}\n", head);
    for (const std::string& l : lines)
      if (l.rfind("kernel stages", 0) != 0) fmt::print("{}\n", l);
    if (o->timed) {
      fmt::print("\ntimed (every us figure modeled by the Sim's gfx950 timing model, docs/timing.md, but 'measured': "
                 "MI350X, the FlyDSL launch with o_proj; floor = a rank's minimum bytes / {} TB/s HBM)\n",
                 timing->hbmBandwidth);
      fmt::print("{:>3} {:>3} {:>4} {:>12} {:>12} {:>10} {:>7}  critical path (modeled)\n", "S", "TP", "N",
                 "modeled us", "measured us", "floor us", "ratio");
      for (const std::string& l : timedLines) fmt::print("{}\n", l);
      writeCellsJson(o->json, cellsJson);
    }
    flushStdout();
    return bad ? 1 : 0;
  };
}

}  // namespace monogen::tools
