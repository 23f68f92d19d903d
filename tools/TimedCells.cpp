#include "tools/TimedCells.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include "support/Error.h"

namespace monogen::tools {

std::string criticalPathText(const runtime::SimTimedResult& t) {
  return fmt::format("ends: stage '{}' rank {} CTA {}; issue {:.2f}, memory stall {:.2f}, flag wait {:.2f}, barrier "
                     "{:.2f} us",
                     t.stage, t.rank, t.cta, t.issueUs, t.memoryUs, t.flagUs, t.barrierUs);
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
