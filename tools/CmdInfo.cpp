// monogen info: a resource table per variant (registers, LDS, scratch, spills, size); a variant
// over the target's limits is listed with its figures and what is over (exit 1).
#include <fmt/format.h>

#include "support/Error.h"
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
    int over = 0;
    for (int tp : tps)
      for (int s : rows) {
        const ir::Key key = keyOf(o->v, cfg, s, tp);
        codegen::CodeObjectInfo info;
        size_t codeBytes = 0;
        std::string source;
        try {
          BuiltVariant b = buildVariant(gen, key);
          info = b.info;
          codeBytes = b.bytes().size();
          source = fmt::format("{} {:.2f} s", runtime::cacheSourceName(b.variant->source), b.seconds);
        } catch (const codegen::LimitsError& e) {
          // Over the target's limits (a spill, scratch): the refused compile's figures.
          info = e.info;
          codeBytes = e.codeBytes;
          source = fmt::format("OVER LIMITS (emit refuses it): {}", e.what());
          ++over;
        }
        fmt::print("{:>3} {:>3} {:>5} {:>5} {:>5} {:>8} {:>8} {:>7} {:>7} {:>9} {:>8}  {}\n", s, tp, info.vgprs,
                   info.agprs, info.sgprs, info.ldsBytes, info.scratchBytes, info.vgprSpills, info.sgprSpills,
                   codeBytes, info.kernargBytes, source);
        flushStdout();
      }
    if (over) {
      fmt::print("{} of {} variants over the target's limits\n", over, rows.size() * tps.size());
      return 1;
    }
    return 0;
  };
}

}  // namespace monogen::tools
