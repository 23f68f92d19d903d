// The generate-and-launch API: Plans built once, code objects compiled once and only for
// devices that run them, arguments checked before anything runs.
#include <catch2/catch.hpp>
#include <thread>

#include "ir/Error.h"
#include "runtime/sim/SimDeviceAdapter.h"
#include "specs/minimax_m3/kernel/AttentionVariant.h"
#include "specs/minimax_m3/kernel/FfnVariant.h"
#include "specs/minimax_m3/kernel/Generate.h"
#include "specs/minimax_m3/kernel/LayerVariant.h"
#include "specs/minimax_m3/kernel/Spec.h"

using namespace monogen;
namespace mm = monogen::specs::minimax_m3;

namespace {

// Every argument of the Plan on every rank, as fresh device buffers the host zeroes (device
// memory starts uninitialized: poisoned on the Sim; the peers table lists every rank's "sym"
// buffer), s13 / s2 declaring the variant's layout. Zero inputs: the point is the API path, not
// the numerics.
std::vector<runtime::RankArgs> zeroArgs(runtime::Device& dev, const ir::Plan& plan) {
  const int tp = plan.ranks;
  std::vector<runtime::RankArgs> ranks(tp);
  std::vector<uint64_t> sym(tp);
  for (int r = 0; r < tp; ++r)
    for (const ir::KernelArg& a : plan.args)
      if (a.isPointer && a.role != ir::ArgRole::Peers) {
        const auto dt = *runtime::dtypeFor(a.elem);
        const int64_t bytes = std::max<int64_t>(a.bytes(), 8);
        const uint64_t addr = dev.alloc(r, bytes, a.name, std::max(a.align, 256));
        const std::vector<uint8_t> zeros(static_cast<size_t>(bytes), 0);
        dev.upload(r, addr, zeros.data(), bytes);
        ranks[r][a.name] = runtime::LaunchArg::tensor(addr, dt, a.shape);
        if (a.name == "sym") sym[r] = addr;
      }
  for (int r = 0; r < tp; ++r)
    for (const auto& [name, layout] : mm::argLayouts(plan)) ranks[r].at(name).layout = layout;
  for (int r = 0; r < tp; ++r)
    for (const ir::KernelArg& a : plan.args) {
      if (a.role == ir::ArgRole::Peers) {
        const uint64_t table = dev.alloc(r, 8 * tp, "peers", 256);
        dev.upload(r, table, sym.data(), 8 * tp);
        ranks[r][a.name] = runtime::LaunchArg::peerTable(table, sym);
      } else if (!a.isPointer) {
        int64_t v = a.name == "rank" ? r : a.name == "wait_ticks" ? 100'000 : a.name == "tag" ? 7 : 0;
        ranks[r][a.name] = runtime::LaunchArg::scalar(v);
      }
    }
  return ranks;
}

}  // namespace

TEST_CASE("a variant's Plan is built once and its code object compiled once", "[generator]") {
  const auto cfg = mm::ModelConfig::reduced();
  runtime::Generator gen = mm::makeGenerator(cfg, nullptr);
  const ir::Key key = mm::makeKey(cfg, 3, 2);
  auto v = gen.variant(key, false);
  CHECK(gen.plansBuilt() == 1);
  CHECK(gen.compiles() == 0);
  CHECK(v->code == nullptr);
  CHECK(mm::rowsOf(v->plan.key) == 3);

  std::vector<std::thread> ts;
  for (int i = 0; i < 4; ++i) ts.emplace_back([&] { gen.variant(key, true); });
  for (auto& t : ts) t.join();
  CHECK(gen.plansBuilt() == 1);
  CHECK(gen.compiles() == 1);
  REQUIRE(gen.variant(key)->code);
  CHECK(gen.variant(key)->code->bytes.size() > 1000);
  gen.variant(mm::makeKey(cfg, 4, 2));
  CHECK(gen.plansBuilt() == 2);
  CHECK(gen.compiles() == 2);
}

TEST_CASE("a bad key is refused when its Plan is built", "[generator]") {
  const auto cfg = mm::ModelConfig::reduced();
  runtime::Generator gen = mm::makeGenerator(cfg, nullptr);
  ir::Key key = mm::makeKey(cfg, 3, 2);
  key.setParam(mm::kParamTp, 3);
  CHECK_THROWS_AS(gen.variant(key), InputError);
  key.setParam(mm::kParamTp, 2);
  key.setParam(mm::kParamRows, 17);
  CHECK_THROWS_AS(gen.variant(key), InputError);
}

TEST_CASE("launching on the Sim device checks the arguments and compiles nothing", "[generator]") {
  const auto cfg = mm::ModelConfig::reduced();
  runtime::Generator gen = mm::makeGenerator(cfg, nullptr);
  const ir::Key key = mm::makeKey(cfg, 2, 2);
  runtime::SimDeviceAdapter dev;
  auto ranks = zeroArgs(dev, gen.variant(key, false)->plan);
  gen.launch(dev, key, ranks);
  CHECK(gen.compiles() == 0);
  CHECK(dev.lastStats().steps > 0);
  CHECK(dev.lastStats().waitTimeouts == 0);

  // A missing argument, a wrong shape and a missing rank are refused before anything runs.
  const int64_t stepsBefore = dev.lastStats().steps;
  auto bad = ranks;
  bad[1].erase("res_in");
  CHECK_THROWS_WITH(gen.launch(dev, key, bad), Catch::Contains("res_in") && Catch::Contains("rank 1"));
  bad = ranks;
  bad[0]["part"].shape = {3, cfg.hidden};
  CHECK_THROWS_WITH(gen.launch(dev, key, bad), Catch::Contains("part"));
  bad = ranks;
  bad.pop_back();
  CHECK_THROWS_AS(gen.launch(dev, key, bad), InputError);
  // s13 / s2 must declare the variant's scale layout: the shape cannot tell (TP 2: s13 is
  // [17, 768, 48] in both), so one undeclared, or declared in the other layout, is refused
  bad = ranks;
  bad[1]["s13"].layout.clear();
  CHECK_THROWS_WITH(gen.launch(dev, key, bad), Catch::Contains("rank 1, argument 's13'") &&
                                                   Catch::Contains("none (undeclared)") &&
                                                   Catch::Contains("expected 'e8m0_shuffle'"));
  bad = ranks;
  bad[0]["s13"].layout = "rowmajor";
  CHECK_THROWS_WITH(gen.launch(dev, key, bad), Catch::Contains("rank 0, argument 's13'") &&
                                                   Catch::Contains("declares layout 'rowmajor'") &&
                                                   Catch::Contains("expected 'e8m0_shuffle'"));
  CHECK(dev.lastStats().steps == stepsBefore);
  CHECK(gen.compiles() == 0);
  // the row-major variant wants "rowmajor" (its s13 has the same shape here)
  mm::FfnKnobs rm;
  rm.scales = mm::ScaleLayout::RowMajor;
  const ir::Key rowKey = mm::makeKey(cfg, 2, 2, rm);
  auto rowArgs = zeroArgs(dev, gen.variant(rowKey, false)->plan);
  CHECK(rowArgs[0].at("s2").layout == "rowmajor");
  auto wrong = rowArgs;
  wrong[0]["s13"].layout = "e8m0_shuffle";
  CHECK_THROWS_WITH(gen.launch(dev, rowKey, wrong), Catch::Contains("expected 'rowmajor'"));
  gen.launch(dev, rowKey, rowArgs);
  CHECK(dev.lastStats().waitTimeouts == 0);
}

TEST_CASE("argLayouts reads a key as the spec it names: FFN and layer s13 / s2 and attention none", "[generator]") {
  const auto cfg = mm::ModelConfig::reduced();
  const auto of = [](const ir::Key& key) {
    ir::Plan p;  // argLayouts reads the Plan's key alone
    p.key = key;
    return mm::argLayouts(p);
  };
  const runtime::ArgLayouts shuffled{{"s13", "e8m0_shuffle"}, {"s2", "e8m0_shuffle"}};
  CHECK(of(mm::makeKey(cfg, 2, 2)) == shuffled);
  mm::FfnKnobs rowMajor;
  rowMajor.scales = mm::ScaleLayout::RowMajor;
  CHECK(of(mm::makeKey(cfg, 2, 2, rowMajor)) == runtime::ArgLayouts{{"s13", "rowmajor"}, {"s2", "rowmajor"}});
  // the layer's knobs are not the FFN launch's: cache=, layer=, moe=, ag_rs_from= read as the layer's
  mm::AttentionKnobs atomFull;
  atomFull.mode = mm::CacheMode::Atom;
  atomFull.fullLayer = true;
  CHECK(of(mm::makeLayerKey(cfg, 2, 2)) == shuffled);
  CHECK(of(mm::makeLayerKey(cfg, 2, 2, atomFull, {.agRsFrom = 1}, mm::MoeQuant::A8w4)) == shuffled);
  CHECK(of(mm::makeAttentionKey(cfg, 2, 2)).empty());  // the attention launch reads no MXFP4 scales
  CHECK(of(mm::makeAttentionKey(cfg, 2, 2, atomFull)).empty());
  ir::Key other = mm::makeKey(cfg, 2, 2);
  other.spec = "minimax_m3.other";
  CHECK_THROWS_WITH(of(other), Catch::Contains("spec 'minimax_m3.other': expected minimax_m3.ffn, "
                                               "minimax_m3.attention or minimax_m3.layer"));
}

TEST_CASE("an A8W4 layer's FFN variant has a key of its own that the FFN launch refuses", "[generator]") {
  const auto cfg = mm::ModelConfig::reduced();
  const mm::LayerVariant a16 = mm::LayerVariant::make(cfg, mm::makeLayerKey(cfg, 2, 2));
  const mm::LayerVariant a8 = mm::LayerVariant::make(cfg, mm::makeLayerKey(cfg, 2, 2, {}, {}, mm::MoeQuant::A8w4));
  CHECK(a16.ffn.key.variantName() == mm::makeKey(cfg, 2, 2).variantName());
  CHECK(a8.ffn.key.variantName() != a16.ffn.key.variantName());
  CHECK(a8.ffn.key.knobs == "moe=a8w4");
  CHECK(mm::knobsOf(a8.ffn.key).moe == mm::MoeQuant::A8w4);
  CHECK(a8.ffn.layout.moe == mm::MoeQuant::A8w4);
  CHECK_THROWS_WITH(mm::FfnVariant::make(cfg, a8.ffn.key),
                    Catch::Contains("knob moe=a8w4: the FFN launch runs A16W4; moe= is the layer launch's knob"));
}
