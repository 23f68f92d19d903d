// The layer launch on the CLI: `monogen sim`, `check`, `trace` and `bench --timed` run it against
// the composed references; `emit`, `info` and `cache key` build it from its Generator; `monogen dump
// --what plan --launch layer` prints the layer's placement per S, `--what ir|llvm|isa` its code;
// the options none reads refuse it, naming them (exit 2).
#include <catch2/catch.hpp>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/Gfx950RunDevice.h"
#include "specs/minimax_m3/kernel/LayerPlacement.h"
#include "specs/minimax_m3/kernel/LayerVariant.h"
#include "specs/minimax_m3/kernel/ModelConfig.h"
#include "test_shell.h"

using namespace monogen::specs::minimax_m3;

namespace {

const std::string kMonogen = std::string(MONOGEN_BINARY_DIR) + "/tools/monogen";

std::string runMonogen(const std::string& args, int& code) { return runShell(kMonogen + " " + args, code); }

/// A fresh directory, removed with everything in it at scope end.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::string t = (std::filesystem::temp_directory_path() / "monogen-layer-cli-XXXXXX").string();
    REQUIRE(mkdtemp(t.data()));
    path = t;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

/// The whitespace-separated fields of the line of `out` that starts with `prefix`; empty when none.
std::vector<std::string> fieldsOfLine(const std::string& out, const std::string& prefix) {
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(prefix, 0) == 0) {
      std::istringstream f(line);
      std::vector<std::string> fields;
      for (std::string w; f >> w;) fields.push_back(w);
      return fields;
    }
  return {};
}

}  // namespace

TEST_CASE("dump --launch layer prints the placement of every S, or of --rows, with the knobs given", "[layer_cli]") {
  int code = -1;
  const std::string all = runMonogen("dump --what plan --launch layer --config reduced --tp 2", code);
  INFO(all);
  REQUIRE(code == 0);
  const ModelConfig reduced = ModelConfig::reduced();
  size_t at = all.find("--config reduced, TP 2, wide_from 1, ag_rs_from 17\n");
  CHECK(at != std::string::npos);
  for (int S = 1; S <= reduced.maxRows; ++S) {  // each S once, in order
    const size_t next = all.find(LayerVariant::make(reduced, makeLayerKey(reduced, S, 2)).placement.describe(), at);
    CHECK(next != std::string::npos);
    at = next == std::string::npos ? at : next;
  }

  const std::string one = runMonogen("dump --launch layer --rows 3 --tp 8 --wide-from 3 --ag-rs-from 2", code);
  INFO(one);
  REQUIRE(code == 0);
  const int splitFrom = LayerVariant::make(ModelConfig{}, makeLayerKey(ModelConfig{}, 3, 8)).placement.splitBase;
  const LayerPlacement p = LayerPlacement::make(ModelConfig{}, 3, 8, {3, 2}, splitFrom);
  CHECK(p.wideMoe);
  CHECK(p.reduceScatter);
  CHECK(one.find(p.describe()) != std::string::npos);
  CHECK(one.find("layer placement: S = ") == one.rfind("layer placement: S = "));  // --rows: that S alone
}

TEST_CASE("dump --launch layer --what ir|llvm|isa prints the layer variant's code, its stages named", "[layer_cli]") {
  int code = -1;
  const std::string variant = "dump --launch layer --config reduced --rows 2 --tp 2 --what ";
  const std::string ir = runMonogen(variant + "ir", code);
  INFO(ir);
  REQUIRE(code == 0);
  CHECK(ir.find("minimax_m3.layer-S2-TP2") != std::string::npos);
  CHECK(ir.find("attn_split") != std::string::npos);  // the attention side's stages, then the FFN's
  CHECK(ir.find("push") != std::string::npos);
  CHECK(ir.find("attn_split") < ir.rfind("push"));
  const std::string full = runMonogen(variant + "ir --layer-type full", code);
  CHECK(code == 0);
  CHECK(full != ir);  // the layer type reaches the key
  for (const std::string what : {"llvm", "isa"}) {
    const std::string out = runMonogen(variant + what, code);
    INFO(what << "\n" << out.substr(0, 2000));
    REQUIRE(code == 0);
    CHECK(out.find("attn_split") != std::string::npos);
    CHECK(out.find("push") != std::string::npos);
    if (what == "isa") CHECK(out.find("s_endpgm") != std::string::npos);
  }
}

TEST_CASE("sim --launch layer runs the layer launch and prints the verdict line", "[layer_cli]") {
  int code = -1;
  const std::string out = runMonogen("sim --launch layer --config reduced --rows 2 --tp 2 --context 129 --padded-rows 1", code);
  INFO(out);
  CHECK(code == 0);
  CHECK(out.find("minimax_m3.layer-S2-TP2 on the Sim device") != std::string::npos);
  CHECK(out.find("verdict: bit-exact under 1 seed") != std::string::npos);
}

TEST_CASE("sim --launch layer --timed: one modeled timeline through the attention and FFN stages", "[layer_cli]") {
  int code = -1;
  const std::string out = runMonogen("sim --launch layer --config reduced --rows 2 --tp 2 --context 129 --timed", code);
  INFO(out);
  CHECK(code == 0);
  CHECK(out.find("verdict: bit-exact under 1 seed") != std::string::npos);
  double us = 0;
  const size_t at = out.find("modeled launch time: ");
  REQUIRE(at != std::string::npos);
  REQUIRE(std::sscanf(out.c_str() + at, "modeled launch time: %lf us", &us) == 1);
  const size_t ends = out.find("modeled stage ends");
  REQUIRE(ends != std::string::npos);
  const std::string line = out.substr(ends, out.find('\n', ends) - ends);
  // the attention rows before o_proj's push reads them; the launch ends after both sides
  const size_t merge = line.find(" attn_merge "), push = line.find(" push ");
  REQUIRE(merge != std::string::npos);
  REQUIRE(push != std::string::npos);
  CHECK(merge < push);  // the line lists the stages by their end
  CHECK(std::stod(line.substr(merge + 12)) < us);
}

TEST_CASE("check --launch layer on the Sim: the Generator's Plan, one seeded launch, every output bit-exact",
          "[layer_cli]") {
  int code = -1;
  const std::string out = runMonogen(
      "check --launch layer --device sim --config reduced --rows 2 --tp 2 --cache atom --layer-type full --context 129 "
      "--seed 3",
      code);
  INFO(out);
  CHECK(code == 0);
  CHECK(out.find("minimax_m3.layer-S2-TP2-cache=atom,layer=full on the sim device: 2 ranks x ") != std::string::npos);
  CHECK(out.find("inputs: seed 3, ") != std::string::npos);
  CHECK(out.find("reference numerics: the IR's declared models") != std::string::npos);
  CHECK(out.find("  bit-exact\nverdict: bit-exact\n") != std::string::npos);
}

TEST_CASE("check --launch layer on gfx950-run: the layer Generator's code object, every output bit-exact",
          "[layer_cli][gfx950run]") {
  if (!monogen::runtime::Gfx950RunDevice::toolAvailable()) {
    WARN("gfx950-run not found at '" << monogen::runtime::Gfx950RunDevice::defaultToolPath()
                                     << "' (set MONOGEN_GFX950_RUN): the executor check is skipped");
    return;
  }
  int code = -1;
  const std::string out = runMonogen(
      "check --launch layer --device gfx950-run --config reduced --rows 2 --tp 2 --context 129 --no-cache", code);
  INFO(out);
  CHECK(code == 0);
  CHECK(out.find("minimax_m3.layer-S2-TP2 on the gfx950-run device") != std::string::npos);
  CHECK(out.find(" B LDS, 0 B scratch") != std::string::npos);
  CHECK(out.find("reference numerics: gfx950-run's") != std::string::npos);
  CHECK(out.find("verdict: bit-exact\n") != std::string::npos);
}

TEST_CASE("check --launch layer catches a broken reference: the executor's numerics against the Sim's", "[layer_cli]") {
  // The Sim computes the IR's exp2 and quotients; a reference under gfx950-run's differs in bits.
  int code = -1;
  const std::string out =
      runMonogen("check --launch layer --config reduced --rows 2 --tp 2 --context 129 --numerics gfx950-run", code);
  INFO(out);
  CHECK(code == 1);
  CHECK(out.find("  MISMATCH: ") != std::string::npos);
  CHECK(out.find(" elements differ\n") != std::string::npos);
  CHECK(out.find("verdict: MISMATCH\n") != std::string::npos);
}

TEST_CASE("emit --launch layer writes the layer Generator's code object", "[layer_cli]") {
  const TempDir d;
  const std::string co = (d.path / "layer.co").string();
  int code = -1;
  const std::string out = runMonogen("emit --launch layer --config reduced --rows 2 --tp 2 --cache atom --no-cache -o " + co, code);
  INFO(out);
  CHECK(code == 0);
  CHECK(out.find(co + ": ") == 0);
  CHECK(out.find(" B scratch (compiled in ") != std::string::npos);
  CHECK(std::filesystem::file_size(co) > 0);
  std::ifstream f(co, std::ios::binary);
  std::string magic(4, '\0');
  f.read(magic.data(), 4);
  CHECK(magic == "\x7f" "ELF");
}

TEST_CASE("info --launch layer lists the layer's resources, cache key names its spec", "[layer_cli]") {
  int code = -1;
  const std::string info = runMonogen("info --launch layer --config reduced --rows 2 --tp 2 --no-cache", code);
  INFO(info);
  CHECK(code == 0);
  const std::vector<std::string> head = fieldsOfLine(info, "  S  TP");
  REQUIRE(head.size() >= 12);
  CHECK(head[7] == "scratch");  // "LDS B" is two fields
  CHECK(head[9] == "sspill");
  const std::vector<std::string> row = fieldsOfLine(info, "  2   2 ");
  REQUIRE(row.size() >= 11);
  CHECK(row[6] == "0");  // no scratch
  CHECK(row[8] == "0");  // no SGPR spill

  const std::string key = runMonogen("cache key --launch layer --config reduced --rows 2 --tp 2 --cache atom", code);
  INFO(key);
  CHECK(code == 0);
  CHECK(key.rfind("minimax_m3.layer v", 0) == 0);
  CHECK(key.find("\ndigest ") != std::string::npos);
  const std::string attention = runMonogen("cache key --launch attention --config reduced --rows 2 --tp 2 --cache atom", code);
  CHECK(code == 0);
  CHECK(attention.substr(attention.find("\ndigest ")) != key.substr(key.find("\ndigest ")));
  const std::string bySpec = runMonogen("cache key --spec minimax_m3.layer --config reduced --rows 2 --tp 2 --cache atom", code);
  CHECK(code == 0);
  CHECK(bySpec == key);
}

TEST_CASE("info and emit --launch layer: a variant over the target's limits is shown, and refused", "[layer_cli]") {
  // Reduced S 12 TP 1 sparse has spilled SGPRs: info shows the spill (exit 1), emit refuses the
  // variant naming it. When it fits, both pass.
  int code = -1;
  const std::string info = runMonogen("info --launch layer --config reduced --rows 12 --tp 1 --no-cache", code);
  INFO(info);
  const std::vector<std::string> row = fieldsOfLine(info, " 12   1 ");
  REQUIRE(row.size() >= 11);
  const bool spills = row[8] != "0" || row[7] != "0" || row[6] != "0";
  CHECK(code == (spills ? 1 : 0));
  CHECK((info.find("OVER LIMITS (emit refuses it): ") != std::string::npos) == spills);
  const TempDir d;
  const std::string emit =
      runMonogen("emit --launch layer --config reduced --rows 12 --tp 1 --no-cache -o " + (d.path / "x.co").string(), code);
  INFO(emit);
  CHECK(code == (spills ? 2 : 0));
  if (spills) {
    CHECK(emit.find("minimax_m3.layer-S12-TP1: code object over its limits: ") != std::string::npos);
    CHECK(emit.find(row[8] + " SGPRs spilled; expected 0") != std::string::npos);
    CHECK(!std::filesystem::exists(d.path / "x.co"));
  }
}

TEST_CASE("emit --all --launch layer: every S x TP with progress, a variant over its limits refused", "[layer_cli][.slow]") {
  const TempDir d;
  int code = -1;
  const std::string out = runMonogen("emit --all --launch layer --config reduced -o " + (d.path / "objs").string(), code);
  INFO(out);
  const ModelConfig reduced = ModelConfig::reduced();
  const int variants = 4 * reduced.maxRows;
  int written = 0, refused = 0;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    if (line.find(" REFUSED: ") != std::string::npos) ++refused;
    else if (line.rfind("[", 0) == 0 && line.find(".co") != std::string::npos) ++written;
  }
  CHECK(written + refused == variants);
  CHECK(code == (refused ? 2 : 0));
  size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(d.path / "objs")) files += e.path().extension() == ".co";
  CHECK(files == size_t(written));
}

TEST_CASE("trace --launch layer writes every CTA's stage spans, op-count or modeled", "[layer_cli]") {
  const TempDir d;
  for (const bool timed : {false, true}) {
    const std::string file = (d.path / (timed ? "timed.json" : "trace.json")).string();
    int code = -1;
    const std::string out = runMonogen("trace --launch layer --config reduced --rows 2 --tp 2 --context 129 -o " + file +
                                           (timed ? " --timed" : ""),
                                       code);
    INFO(out);
    CHECK(code == 0);
    CHECK(out.find("minimax_m3.layer-S2-TP2 on the Sim device") == 0);
    CHECK((out.find(" us modeled (timestamps modeled)") != std::string::npos) == timed);
    CHECK(out.find("verdict: bit-exact\n") != std::string::npos);
    std::ifstream f(file);
    const nlohmann::json j = nlohmann::json::parse(f);
    CHECK(j.at("otherData").at("clock").get<std::string>().rfind(timed ? "modeled" : "the Sim's op-count", 0) == 0);
    std::set<std::string> stages;
    std::set<int> ranks;
    for (const auto& e : j.at("traceEvents"))
      if (e.at("ph") == "X") {
        stages.insert(e.at("name").get<std::string>());
        ranks.insert(e.at("pid").get<int>());
      }
    CHECK(stages.count("attn_merge") == 1);  // the attention stages and the FFN's, one launch
    CHECK(stages.count("push") == 1);
    CHECK(stages.count("down") == 1);
    CHECK(ranks.size() == 2);
  }
}

TEST_CASE("bench --launch layer --timed: the layer, the two launches and the floor, modeled, and --json the cells",
          "[layer_cli]") {
  const TempDir d;
  const std::string json = (d.path / "cells.json").string();
  int code = -1;
  const std::string out =
      runMonogen("bench --launch layer --timed --config reduced --rows 2 --tp 2 --context 129 --json " + json, code);
  INFO(out);
  CHECK(code == 0);
  CHECK(out.find("[1/1] S=2 TP=2: inputs ") != std::string::npos);  // progress, by run
  CHECK(out.find(" modeled us   modeled us   modeled us   modeled us") != std::string::npos);
  CHECK(out.find("measured us") != std::string::npos);
  const std::vector<std::string> row = fieldsOfLine(out, "  2   2 ");
  REQUIRE(row.size() == 9);
  const double layer = std::stod(row[2]), attention = std::stod(row[3]), ffn = std::stod(row[4]), two = std::stod(row[5]);
  CHECK(layer > 0);
  CHECK(two == Approx(attention + ffn).margin(0.011));
  CHECK(row[7] == "-");  // the serving stack's figure is at full dims only
  CHECK(row[8] == "bit-exact");
  std::ifstream f(json);
  const nlohmann::json cells = nlohmann::json::parse(f);
  REQUIRE(cells.size() == 1);
  const nlohmann::json& c = cells[0];
  CHECK(c.at("launch") == "layer");
  CHECK(c.at("rows") == 2);
  CHECK(c.at("context") == 129);
  CHECK(c.at("layer_modeled_us").get<double>() == Approx(layer).margin(0.006));
  CHECK(c.at("two_launches_modeled_us").get<double>() ==
        Approx(c.at("attention_modeled_us").get<double>() + c.at("ffn_modeled_us").get<double>()));
  CHECK(c.at("floor_us").get<double>() > 0);
  CHECK(c.at("serving_measured_us").is_null());
  for (const char* v : {"layer_verdict", "attention_verdict", "ffn_verdict"}) CHECK(c.at(v) == "bit-exact");
}

TEST_CASE("the layer launch: --launch layer is refused where there is none, naming the option", "[layer_cli]") {
  struct Case {
    std::string args;
    std::string error;
  };
  const Case cases[] = {
      {"check --launch layer --config reduced --device hip --numerics gfx950-run", "input error at --per-rank: compares "
                                                                                  "under the IR's numerics"},
      {"check --launch layer --config reduced --per-rank --device gfx950-run", "input error at --per-rank: runs the Sim "
                                                                               "device (--device sim) or the GPUs"},
      {"sim --config reduced --rows 2 --tp 2 --ag-rs-from 3", "input error at --ag-rs-from: is a knob of --launch layer"},
      {"check --launch attention --config reduced --ag-rs-from 3", "input error at --ag-rs-from: is a knob of --launch "
                                                                   "layer"},
      {"check --launch layer --config reduced --launches 2", "input error at --launches"},
      {"check --launch layer --config reduced --input part", "input error at --input"},
      {"check --launch layer --config reduced --sum shared", "input error at --sum"},
      {"check --launch layer --config reduced --spec minimax_m3.attention", "input error at --spec"},
      {"check --launch layer --config reduced --layer-type dense", "--layer-type"},
      {"check --launch layer --config reduced --tp 3", "--tp"},
      {"sim --launch layer --config reduced --input part", "input error at --input"},
      {"sim --launch layer --config reduced --experts 4", "input error at --experts"},
      {"sim --launch layer --config reduced --scales rowmajor", "input error at --scales"},
      {"sim --launch layer --config reduced --save /tmp/never", "input error at --save: the layer launch's inputs are "
                                                                "not saved yet"},
      {"sim --launch layer --config reduced --save /tmp/never", "`sim --launch attention --save DIR` writes"},
      {"trace --launch layer --config reduced --experts 4 -o /tmp/never.json", "input error at --experts"},
      {"trace --launch layer --config reduced --handshake -o /tmp/never.json", "input error at --handshake"},
      {"emit --launch layer --config reduced --input part -o /tmp/never.co", "input error at --input"},
      {"emit --launch layer --config reduced --spec minimax_m3.attention -o /tmp/never.co", "input error at --spec"},
      {"emit --launch attention --spec minimax_m3.layer -o /tmp/never.co", "input error at --launch"},
      {"info --launch layer --config reduced --sum shared", "input error at --sum"},
      {"cache key --launch layer --config reduced --trace", "input error at --trace"},
      {"bench --launch layer --config reduced", "input error at --launch: layer: bench prints the layer's modeled"},
      {"bench --launch layer --config reduced --timed --experts 4", "input error at --experts"},
      {"bench --launch layer --config reduced --timed --breakdown", "input error at --breakdown"},
      {"bench --launch layer --config reduced --timed --device hip", "input error at --device"},
      {"dump --launch layer --config reduced --what ir --input part", "input error at --input"},
      {"dump --launch layer --config reduced --what isa --wide-from 3", "input error at --wide-from: is a knob of the "
                                                                        "layer's placement (--what plan)"},
      {"dump --launch layer --config reduced --input part", "input error at --input"},
      {"dump --launch layer --config reduced --cache atom", "input error at --cache"},
      {"dump --launch layer --config reduced --pipeline O3", "input error at --pipeline"},
      {"dump --launch layer --spec minimax_m3.attention", "input error at --spec"},
      {"dump --config reduced --wide-from 3", "input error at --wide-from"},
      {"dump --launch attention --config reduced --ag-rs-from 3", "input error at --ag-rs-from"},
      {"dump --launch layer --config reduced --wide-from 0", "--wide-from"},
      {"dump --launch layer --config reduced --ag-rs-from 18", "ag_rs_from = 18: expected 1..17"},
  };
  for (const Case& c : cases) {
    int code = -1;
    const std::string out = runMonogen(c.args, code);
    INFO(c.args << "\n" << out);
    CHECK(code == 2);
    CHECK(out.find(c.error) != std::string::npos);
  }
}

TEST_CASE("docs/layer.md's quote of dump --launch layer is what the tool prints", "[layer_cli][docs]") {
  std::ifstream f(std::string(MONOGEN_SOURCE_DIR) + "/docs/layer.md");
  std::stringstream doc;
  doc << f.rdbuf();
  const std::string cmd = "$ monogen dump --what plan --launch layer --rows 4 --tp 4\n";
  const size_t at = doc.str().find(cmd);
  REQUIRE(at != std::string::npos);
  const size_t from = at + cmd.size(), to = doc.str().find("```", from);
  int code = -1;
  const std::string out = runMonogen(cmd.substr(10, cmd.size() - 11), code);
  CHECK(code == 0);
  CHECK(doc.str().substr(from, to - from) == out);
}
