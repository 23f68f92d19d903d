// monogen info: a resource table per variant (registers, LDS, scratch, spills, size).
#include <fmt/format.h>

#include "tools/Commands.h"
#include "tools/Variant.h"
#include "tools/NumericFlag.h"

namespace monogen::tools {

Run addInfo(CLI::App& app) {
  struct Options {
    VariantOptions v;
    std::vector<int> rows, tps;
  };
  auto o = std::make_shared<Options>();
  CLI::App* c = app.add_subcommand("info", "the resource table of every variant (or the ones given)");
  addVariantOptions(c, o->v, false);
  c->add_option("--rows,-S", o->rows, "rows to list (default 1..16)")->check(numeric(1, 16));
  c->add_option("--tp,-T", o->tps, "TP sizes to list (default 1 2 4 8)")->check(numeric(1, 8))->check(CLI::IsMember({1, 2, 4, 8}));
  return [o] {
    const auto cfg = configOf(o->v);
    auto gen = generatorOf(o->v, cfg);
    std::vector<int> rows = o->rows, tps = o->tps;
    if (rows.empty())
      for (int s = 1; s <= cfg.maxRows; ++s) rows.push_back(s);
    if (tps.empty()) tps = {1, 2, 4, 8};
    fmt::print("{:>3} {:>3} {:>5} {:>5} {:>5} {:>8} {:>8} {:>7} {:>7} {:>9} {:>8}  {}\n", "S", "TP", "VGPR", "AGPR",
               "SGPR", "LDS B", "scratch", "vspill", "sspill", "code B", "kernarg", "source");
    for (int tp : tps)
      for (int s : rows) {
        BuiltVariant b = buildVariant(gen, keyOf(o->v, cfg, s, tp));
        fmt::print("{:>3} {:>3} {:>5} {:>5} {:>5} {:>8} {:>8} {:>7} {:>7} {:>9} {:>8}  {} {:.2f} s\n", s, tp,
                   b.info.vgprs, b.info.agprs, b.info.sgprs, b.info.ldsBytes, b.info.scratchBytes, b.info.vgprSpills,
                   b.info.sgprSpills, b.bytes().size(), b.info.kernargBytes, runtime::cacheSourceName(b.variant->source),
                   b.seconds);
        flushStdout();
      }
    return 0;
  };
}

}  // namespace monogen::tools
