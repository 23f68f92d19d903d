// The attention launch (spec minimax_m3.attention) through the CLI and on AMD's gfx950 simulator:
// its code object run by gfx950-run against the reference under the executor's numerics profile,
// and monogen check / emit / dump / info with --launch attention, the other launch's options
// refused. The tests that need the tool skip cleanly (a WARN) when it is absent.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "codegen/Compiler.h"
#include "runtime/Gfx950RunDevice.h"
#include "runtime/Safetensors.h"
#include "specs/minimax_m3/kernel/AttentionSpec.h"
#include "specs/minimax_m3/kernel/Generate.h"
#include "specs/minimax_m3/kernel/LaunchArgs.h"
#include "specs/minimax_m3/reference/AttentionReference.h"
#include "specs/minimax_m3/testing/AttentionInputs.h"
#include "specs/minimax_m3/testing/AttentionSim.h"
#include "test_shell.h"

using namespace monogen;
using namespace monogen::specs::minimax_m3;
using runtime::Gfx950RunDevice;

namespace {

const std::string kMonogen = std::string(MONOGEN_BINARY_DIR) + "/tools/monogen";

bool haveTool() {
  if (Gfx950RunDevice::toolAvailable()) return true;
  WARN("gfx950-run not found at '" << Gfx950RunDevice::defaultToolPath()
                                   << "' (set MONOGEN_GFX950_RUN): the executor test is skipped");
  return false;
}

/// Same size and bits (NaN, the caches' unheld scales, equals itself).
template <class T>
bool sameBits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

}  // namespace

TEST_CASE("attention launch on gfx950-run: the code object equals the reference and the Sim", "[gfx950run][attention_cli]") {
  if (!haveTool()) return;
  const ModelConfig cfg = ModelConfig::reduced();
  const AttentionKnobs knobs = GENERATE(AttentionKnobs{CacheMode::Vllm, false}, AttentionKnobs{CacheMode::Atom, true});
  const AttentionVariant v = AttentionVariant::make(cfg, makeAttentionKey(cfg, 8, 4, knobs));
  const ir::Plan plan = verifiedAttentionPlan(cfg, v.key);
  const codegen::CodeObject co = codegen::compile(plan);
  AttentionInputOptions io;
  io.mode = knobs.mode;
  io.fullLayer = knobs.fullLayer;
  io.context = 129;
  const AttentionLaunch in = makeAttentionLaunch(cfg, 8, 4, 3, io);
  const AttentionResult ref = attentionReference(cfg, in, RefNumerics::Gfx950Run);
  Gfx950RunDevice dev;
  const AttentionSimRun run = runAttention(dev, co.bytes, plan, v, in);
  const AttentionSimRun sim = runAttentionOnSim(plan, v, in);
  INFO(v.key.variantName());
  REQUIRE(run.ranks.size() == 4);
  for (int r = 0; r < 4; ++r) {
    INFO("rank " << r);
    CHECK(run.errorWords[r] == 0);
    CHECK(sameBits(run.ranks[r].h, ref.h));
    CHECK(sameBits(run.ranks[r].rstd, ref.rstd));
    CHECK(sameBits(run.ranks[r].xScale, ref.xScale));
    CHECK(sameBits(run.ranks[r].qkv, ref.ranks[r].qkv));
    CHECK(sameBits(run.ranks[r].q, ref.ranks[r].q));
    if (!knobs.fullLayer) CHECK(sameBits(run.ranks[r].iq, ref.ranks[r].iq));
    CHECK(sameBits(run.ranks[r].caches.k, ref.ranks[r].caches.k));
    CHECK(sameBits(run.ranks[r].caches.v, ref.ranks[r].caches.v));
    CHECK(sameBits(run.ranks[r].caches.kScale, ref.ranks[r].caches.kScale));
    CHECK(sameBits(run.ranks[r].caches.vScale, ref.ranks[r].caches.vScale));
    CHECK(sameBits(run.ranks[r].caches.indexKeys, ref.ranks[r].caches.indexKeys));
    CHECK(sameBits(run.ranks[r].x8, sim.ranks[r].x8));
  }
}

TEST_CASE("monogen check --launch attention on sim and gfx950-run exits 0 only when bit-exact", "[gfx950run][attention_cli]") {
  const std::string args = " check --launch attention --config reduced --rows 8 --tp 4 --context 129 --no-cache";
  int code = -1;
  std::string out = runShell(kMonogen + args + " --device sim", code);
  INFO(out);
  CHECK(code == 0);
  CHECK(out.find("minimax_m3.attention-S8-TP4 on the sim device") != std::string::npos);
  CHECK(out.find("verdict: bit-exact") != std::string::npos);
  if (!haveTool()) return;
  out = runShell(kMonogen + args + " --device gfx950-run --cache atom --layer-type full", code);
  INFO(out);
  CHECK(code == 0);
  CHECK(out.find("on the gfx950-run device") != std::string::npos);
  CHECK(out.find("0 B scratch") != std::string::npos);
  CHECK(out.find("verdict: bit-exact") != std::string::npos);
}

TEST_CASE("monogen emit and dump and info --launch attention: the attention variant's code object and resources",
          "[attention_cli]") {
  int code = -1;
  const std::string plan = runShell(kMonogen + " dump --launch attention --config reduced --rows 2 --tp 2 --what plan", code);
  INFO(plan);
  CHECK(code == 0);
  CHECK(plan.find("minimax_m3.attention") != std::string::npos);
  CHECK(plan.find("attn_norm") != std::string::npos);
  const std::string full =
      runShell(kMonogen + " dump --launch attention --config reduced --rows 2 --tp 2 --layer-type full --what plan", code);
  CHECK(code == 0);
  CHECK(full != plan);  // the layer type reaches the key
  const std::string isa = runShell(kMonogen + " dump --launch attention --config reduced --rows 2 --tp 2 --what isa", code);
  CHECK(code == 0);
  CHECK(isa.find("s_endpgm") != std::string::npos);
  const std::string info =
      runShell(kMonogen + " info --launch attention --config reduced --rows 2 --tp 2 --cache atom --no-cache", code);
  INFO(info);
  CHECK(code == 0);
  CHECK(info.find("VGPR") != std::string::npos);
  CHECK(info.find("compiled") != std::string::npos);
  const std::string co = std::string(MONOGEN_BINARY_DIR) + "/attention-cli-test.co";
  const std::string emit =
      runShell(kMonogen + " emit --launch attention --config reduced --rows 2 --tp 2 --no-cache -o " + co, code);
  INFO(emit);
  CHECK(code == 0);
  CHECK(emit.find(" B scratch") != std::string::npos);
  std::remove(co.c_str());
}

TEST_CASE("monogen --launch attention refuses the FFN's options and the reverse, naming the option", "[attention_cli]") {
  struct Case {
    const char* args;
    const char* option;
  };
  const Case cases[] = {
      {"check --launch attention --config reduced --per-rank", "--per-rank"},
      {"check --launch attention --config reduced --scales rowmajor", "--scales"},
      {"dump --launch attention --config reduced --input part", "--input"},
      {"info --launch attention --config reduced --trace", "--trace"},
      {"check --config reduced --cache atom", "--cache"},
      {"dump --config reduced --layer-type full", "--layer-type"},
      {"check --config reduced --context 9", "--context"},
      {"sim --config reduced --layer full", "--layer-type"},
      {"check --launch attention --config reduced --device hip", "--device"},
  };
  for (const Case& c : cases) {
    int code = -1;
    const std::string out = runShell(kMonogen + " " + c.args, code);
    INFO(c.args << "\n" << out);
    CHECK(code == 2);
    CHECK(out.find(std::string("input error at ") + c.option) != std::string::npos);
  }
}

TEST_CASE("monogen trace --launch attention: a span per rank x CTA x stage from the Sim", "[attention_cli]") {
  const std::string out = std::string(MONOGEN_BINARY_DIR) + "/attention-cli-trace.json";
  int code = -1;
  const std::string text = runShell(
      kMonogen + " trace --launch attention --config reduced --rows 8 --tp 2 --context 129 --cache atom -o " + out, code);
  INFO(text);
  CHECK(code == 0);
  CHECK(text.find("verdict: bit-exact") != std::string::npos);
  std::ifstream f(out);
  REQUIRE(f);
  const nlohmann::json j = nlohmann::json::parse(f);
  const ModelConfig cfg = ModelConfig::reduced();
  const ir::Plan plan = verifiedAttentionPlan(cfg, makeAttentionKey(cfg, 8, 2, {CacheMode::Atom, false}));
  std::map<std::string, int> perStage;
  for (const auto& e : j.at("traceEvents"))
    if (e.at("ph") == "X") {
      ++perStage[e.at("name").get<std::string>()];
      CHECK(e.at("dur").get<double>() >= 0);
    }
  REQUIRE(perStage.size() == plan.stages.size());
  for (const ir::Stage& s : plan.stages) CHECK(perStage[s.name] == 2 * cfg.blocks);
  std::remove(out.c_str());
  // --timed: the same spans in modeled microseconds, the last ending just before the launch does
  const std::string timed = runShell(
      kMonogen + " trace --launch attention --config reduced --rows 8 --tp 2 --context 129 --cache atom --timed -o " + out,
      code);
  INFO(timed);
  CHECK(code == 0);
  double us = 0;
  const size_t at = timed.find("timed: ");
  REQUIRE(at != std::string::npos);
  REQUIRE(std::sscanf(timed.c_str() + timed.find(", ", timed.find("stages", at)) + 2, "%lf us modeled", &us) == 1);
  std::ifstream g(out);
  REQUIRE(g);
  const nlohmann::json k = nlohmann::json::parse(g);
  CHECK_THAT(k.at("otherData").at("clock").get<std::string>(), Catch::Contains("modeled"));
  double last = 0;
  int spans = 0;
  for (const auto& e : k.at("traceEvents"))
    if (e.at("ph") == "X") {
      ++spans;
      last = std::max(last, e.at("ts").get<double>() + e.at("dur").get<double>());
    }
  CHECK(spans == static_cast<int>(plan.stages.size()) * 2 * cfg.blocks);
  CHECK(last <= us);  // a span ends at its last op's issue; the launch when that op is done
  CHECK(last > us - 0.5);
  std::remove(out.c_str());
  runShell(kMonogen + " trace --launch attention --config reduced --timing-params x.json -o " + out, code);
  CHECK(code == 2);
}

TEST_CASE("monogen sim --launch attention --save writes the touched blocks and the selections and the rows",
          "[attention_cli]") {
  const std::string dir = std::string(MONOGEN_BINARY_DIR) + "/attention-cli-save";
  std::filesystem::remove_all(dir);
  int code = -1;
  const std::string text = runShell(kMonogen +
                                        " sim --launch attention --config reduced --rows 3 --tp 2 --context 129 "
                                        "--cache atom --padded-rows 1 --seed 4 --save " + dir,
                                    code);
  INFO(text);
  REQUIRE(code == 0);
  // the same launch in this process: the CLI's inputs for seed 4, and its reference
  const ModelConfig cfg = ModelConfig::reduced();
  AttentionInputOptions o;
  o.mode = CacheMode::Atom;
  o.context = 129;
  o.paddedRows = 1;
  const AttentionLaunch in = makeAttentionLaunch(cfg, 3, 2, 4, o);
  const AttentionResult ref = attentionReference(cfg, in);
  const runtime::SafetensorsFile inputs = runtime::readSafetensorsFile(dir + "/inputs.safetensors");
  const runtime::TensorMap outputs = runtime::readSafetensors(dir + "/outputs.safetensors");
  const runtime::TensorMap reference = runtime::readSafetensors(dir + "/reference.safetensors");
  CHECK(inputs.metadata.at("launch") == "attention");
  CHECK(inputs.metadata.at("verdict") == "bit-exact");
  CHECK(inputs.metadata.at("cache") == "atom");
  // the blocks: each the physical block of a live row's table entry, together every block the
  // launch wrote into (the caches differ from the inputs nowhere else)
  const runtime::HostTensor& blocks = inputs.tensors.at("cache_blocks");
  const std::vector<int64_t> listed(blocks.as<int64_t>(), blocks.as<int64_t>() + blocks.numel());
  std::set<int64_t> named;
  for (int t = 0; t < 2; ++t)
    for (int b = 0; b < 2; ++b) named.insert(in.rows.tables[size_t(t) * in.rows.tableWidth + b]);
  CHECK(std::set<int64_t>(listed.begin(), listed.end()) == named);
  const KvCacheGeometry& g = in.caches[0].kv;
  const int64_t blockBytes = int64_t{g.kvHeads} * g.pagesPerBlock() * g.pageBytes();
  for (int r = 0; r < 2; ++r)
    for (size_t i = 0; i < in.caches[r].k.size(); ++i)
      if (in.caches[r].k[i] != ref.ranks[r].caches.k[i]) CHECK(named.count(int64_t(i) / blockBytes) == 1);
  // each saved K and V byte and scale is the cache's at (block, head, page, token, channel),
  // found through the layout's own slot and page arithmetic, before the launch and after it
  const auto checkCaches = [&](const runtime::TensorMap& m, const std::vector<AttentionCaches>& caches) {
    for (int r = 0; r < 2; ++r) {
      const AttentionCaches& c = caches[r];
      const runtime::HostTensor& k = m.at(rankName("k_cache", r));
      const runtime::HostTensor& v = m.at(rankName("v_cache", r));
      const runtime::HostTensor& ks = m.at(rankName("k_scale", r));
      REQUIRE(k.numel() == int64_t(listed.size()) * blockBytes);
      int bad = 0;
      for (size_t i = 0; i < listed.size(); ++i)
        for (int h = 0; h < g.kvHeads; ++h)
          for (int tok = 0; tok < g.block; tok += 7)
            for (int d = 0; d < g.headDim; d += 5) {
              const KvCacheGeometry::PageToken pt = g.pageOfSlot(g.slotOf(listed[i], tok), h);
              const int64_t at = ((int64_t(i) * g.kvHeads + h) * g.pagesPerBlock() + tok / 16) * g.pageBytes();
              bad += k.data[at + g.kByte(pt.page, pt.token, d) - pt.page * g.pageBytes()] !=
                     c.kView()[g.kByte(pt.page, pt.token, d)];
              bad += v.data[at + g.vByte(pt.page, pt.token, d) - pt.page * g.pageBytes()] !=
                     c.vView()[g.vByte(pt.page, pt.token, d)];
              const int64_t si = ((int64_t(i) * g.kvHeads + h) * g.pagesPerBlock() + tok / 16) * 16 + tok % 16;
              bad += std::memcmp(ks.as<float>() + si, &c.kScale[g.scaleIndex(pt.page, pt.token)], 4) != 0;
            }
      CHECK(bad == 0);
    }
  };
  checkCaches(inputs.tensors, in.caches);
  std::vector<AttentionCaches> after;
  for (const AttentionRankResult& r : ref.ranks) after.push_back(r.caches);
  checkCaches(reference, after);
  checkCaches(outputs, after);  // the Sim's: bit-exact
  // the selections (a padded row's -1) and the attention rows, the Sim's and the reference's
  for (int r = 0; r < 2; ++r) {
    INFO("rank " << r);
    const runtime::HostTensor& sel = outputs.at(rankName("selection", r));
    const int kv = static_cast<int>(sel.shape.at(1));
    for (int t = 0; t < 3; ++t)
      for (int h = 0; h < kv; ++h) {
        const int32_t* s = sel.as<int32_t>() + (size_t(t) * kv + h) * 17;
        const Selection& want = ref.ranks[r].selections[size_t(t) * kv + h];
        CHECK(std::vector<int>(s, s + 16) == (t < 2 ? want.blocks : std::vector<int>(16, -1)));
        CHECK(s[16] == (t < 2 ? want.nCtx : -1));
      }
    for (const runtime::TensorMap* m : {&outputs, &reference}) {
      const runtime::HostTensor& a = m->at(rankName("attn", r));
      CHECK(sameBits(std::vector<uint16_t>(a.as<uint16_t>(), a.as<uint16_t>() + a.numel()), ref.ranks[r].attn));
    }
  }
  // an FFN replay of it is refused, naming what it holds
  const std::string replay = runShell(kMonogen + " sim --config reduced --rows 3 --tp 2 --inputs " + dir, code);
  CHECK(code == 2);
  CHECK(replay.find("holds an attention launch") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("monogen sim --launch attention --timed: the modeled timeline, as bench models it", "[attention_cli]") {
  const std::string cell = " --launch attention --config reduced --rows 2 --tp 4 --context 129";
  int code = -1;
  const std::string out = runShell(kMonogen + " sim" + cell + " --timed", code);
  INFO(out);
  CHECK(code == 0);
  CHECK(out.find("verdict: bit-exact under 1 seed") != std::string::npos);
  double us = 0;
  const size_t at = out.find("modeled launch time: ");
  REQUIRE(at != std::string::npos);
  REQUIRE(std::sscanf(out.c_str() + at, "modeled launch time: %lf us", &us) == 1);
  // the launch ends when its last stage's last wave leaves it
  const size_t ends = out.find("modeled stage ends");
  REQUIRE(ends != std::string::npos);
  const std::string endLine = out.substr(ends, out.find('\n', ends) - ends);
  for (const char* stage : {"attn_norm", "attn_gemv", "attn_heads", "attn_index", "attn_split"})
    CHECK(endLine.find(stage) != std::string::npos);
  const size_t merge = endLine.find("attn_merge ");
  REQUIRE(merge != std::string::npos);
  CHECK(std::stod(endLine.substr(merge + 11)) == Approx(us).epsilon(1e-3));
  // bench's timed cell of the same launch and seed models the same time
  const std::string json = std::string(MONOGEN_BINARY_DIR) + "/attention-cli-timed.json";
  runShell(kMonogen + " bench" + cell + " --timed --json " + json, code);
  REQUIRE(code == 0);
  std::ifstream f(json);
  const nlohmann::json cells = nlohmann::json::parse(f);
  REQUIRE(cells.size() == 1);
  CHECK(cells[0]["modeled_us"].get<double>() == Approx(us).epsilon(1e-3));
  std::filesystem::remove(json);
  runShell(kMonogen + " sim" + cell + " --timing-params x.json", code);
  CHECK(code == 2);  // needs --timed
}
