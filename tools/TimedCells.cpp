#include "tools/TimedCells.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "support/Error.h"

namespace monogen::tools {

std::string criticalPathText(const runtime::SimTimedResult& t) {
  return fmt::format("ends: stage '{}' rank {} CTA {}; issue {:.2f}, memory stall {:.2f}, flag wait {:.2f}, barrier "
                     "{:.2f} us",
                     t.stage, t.rank, t.cta, t.issueUs, t.memoryUs, t.flagUs, t.barrierUs);
}

void printTimed(const runtime::SimTimedResult& t) {
  fmt::print("    modeled launch time: {:.2f} us ({:.0f} cycles at the model's clock; {} machine instructions "
             "issued, modeled)\n", t.us, t.cycles, t.instructions);
  if (t.isaInstructions >= 0)
    fmt::print("    issue by the compiled ISA: {} ISA instructions executed (modeled: the ops' attributed ones, {} "
               "unowned a wave counted once each)\n", t.isaInstructions, t.isaUnowned);
  fmt::print("    modeled critical path: ends in stage '{}' on rank {} CTA {} wave {}; its {:.2f} us: issue {:.2f}, "
             "memory stall {:.2f}, flag wait {:.2f}, barrier {:.2f} us\n",
             t.stage, t.rank, t.cta, t.wave, t.us, t.issueUs, t.memoryUs, t.flagUs, t.barrierUs);
  for (const runtime::SimTimedStage& s : t.stages)
    fmt::print("      {:<12} {:7.2f} .. {:7.2f} us: issue {:6.2f}, memory {:6.2f}, flag wait {:6.2f}, barrier {:6.2f}\n",
               s.stage, s.startUs, s.endUs, s.issueUs, s.memoryUs, s.flagUs, s.barrierUs);
  std::string ends;
  std::vector<std::pair<double, std::string>> byEnd;
  for (const auto& [name, us] : t.stageEndUs) byEnd.emplace_back(us, name);
  std::sort(byEnd.begin(), byEnd.end());
  for (const auto& [us, name] : byEnd) ends += fmt::format(" {} {:.2f}", name, us);
  fmt::print("    modeled stage ends (us, the last wave to leave each):{}\n", ends);
}

void writeCellsJson(const std::string& path, const nlohmann::json& cells) {
  if (path.empty()) return;
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp);
    f << cells.dump(2) << "\n";
    f.close();
    if (!f) {
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      throw RuntimeError(path, "cannot write the --json file (its temporary " + tmp + ")");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    throw RuntimeError(path, "cannot write the --json file: " + ec.message());
  }
}

}  // namespace monogen::tools
