// The MiniMax-M3 spec's knobs (specs/minimax_m3/kernel/Knobs.h): canonical text in the key, parsed back,
// bad text refused; a knob, the target and the config each give another key text.
#include <catch2/catch.hpp>

#include "ir/Error.h"
#include "runtime/KeyHash.h"
#include "specs/minimax_m3/kernel/Spec.h"

using namespace monogen;
using namespace monogen::specs::minimax_m3;

TEST_CASE("knobs: the default key has none, each knob round-trips through the key's text", "[spec][knobs]") {
  const ModelConfig cfg = ModelConfig::reduced();
  CHECK(makeKey(cfg, 8, 4).knobs.empty());
  CHECK(makeKey(cfg, 8, 4).variantName() == "minimax_m3.ffn-S8-TP4");
  const FfnKnobs k{MoeExperts::Routed, true, 3};
  const ir::Key key = makeKey(cfg, 8, 4, k);
  CHECK(key.knobs == "experts=routed trace=1 drop_mark=3");
  CHECK(key.variantName() == "minimax_m3.ffn-S8-TP4-experts=routed-trace=1-drop_mark=3");
  const FfnKnobs back = knobsOf(key);
  CHECK(back.experts == MoeExperts::Routed);
  CHECK(back.trace);
  CHECK(back.dropMark == 3);
  CHECK(buildPlan(cfg, key).key.knobs == key.knobs);
  const ir::Key rm = makeKey(cfg, 8, 4, FfnKnobs{.scales = ScaleLayout::RowMajor});
  CHECK(rm.knobs == "scales=rowmajor");
  CHECK(rm.variantName() == "minimax_m3.ffn-S8-TP4-scales=rowmajor");
  CHECK(knobsOf(rm).scales == ScaleLayout::RowMajor);
  CHECK(knobsOf(makeKey(cfg, 8, 4)).scales == ScaleLayout::E8m0Shuffle);
  CHECK(buildPlan(cfg, rm).key.knobs == rm.knobs);
}

TEST_CASE("knobs: an unknown, repeated or bad knob is refused naming it", "[spec][knobs]") {
  const ModelConfig cfg = ModelConfig::reduced();
  for (auto [text, expect] : {std::pair{"expert=all", "unknown knob 'expert=all'"},
                              std::pair{"trace=1 trace=1", "given twice"},
                              std::pair{"experts=some", "expected all, shared or routed"},
                              std::pair{"trace=yes", "expected 0 or 1"},
                              std::pair{"drop_mark=x", "expected a CTA index"},
                              std::pair{"scales=aiter", "expected e8m0_shuffle or rowmajor"}}) {
    ir::Key key = makeKey(cfg, 2, 2);
    key.knobs = text;
    INFO(text);
    CHECK_THROWS_WITH(buildPlan(cfg, key), Catch::Contains(expect));
  }
  CHECK_THROWS_WITH(buildPlan(cfg, makeKey(cfg, 2, 2, FfnKnobs{.dropMark = cfg.blocks})),
                    Catch::Contains("drop mark CTA"));
}

TEST_CASE("knobs: a knob, the config and the target each change the key text", "[spec][knobs]") {
  const ModelConfig cfg = ModelConfig::reduced();
  const std::string tc = "llvm-22.test";
  const std::string base = runtime::keyText(makeKey(cfg, 8, 4), tc);
  CHECK(runtime::keyText(makeKey(cfg, 8, 4, FfnKnobs{.experts = MoeExperts::Shared}), tc) != base);
  CHECK(runtime::keyDigest(makeKey(cfg, 8, 4, FfnKnobs{.scales = ScaleLayout::RowMajor}), tc) !=
        runtime::keyDigest(makeKey(cfg, 8, 4), tc));
  CHECK(runtime::keyText(makeKey(ModelConfig::byName("full"), 8, 4), tc) != base);
  ir::Key t = makeKey(cfg, 8, 4);
  t.target.features = "sramecc-:xnack-";
  CHECK(runtime::keyText(t, tc) != base);
  CHECK(runtime::keyText(makeKey(cfg, 8, 4), "llvm-22.other") != base);
  CHECK(runtime::keyText(makeKey(cfg, 8, 4), tc) == base);  // the same inputs, the same text
}
