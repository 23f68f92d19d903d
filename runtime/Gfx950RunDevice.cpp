#include "runtime/Gfx950RunDevice.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>

#include "ir/Error.h"

extern char** environ;

namespace monogen::runtime {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr uint64_t kPage = 4096;
constexpr uint64_t kTop = 0x7000'0000'0000ull;  // buffers must end below the tool's reserved range
const char* const kWhere = "gfx950-run device";

uint64_t alignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

std::string readText(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

void writeBytes(const fs::path& p, const void* data, size_t n) {
  std::ofstream f(p, std::ios::binary);
  f.write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
  if (!f) throw RuntimeError(kWhere, fmt::format("cannot write '{}'", p.string()));
}

/// The last `n` lines of a text, for messages.
std::string tailLines(const std::string& s, int n) {
  size_t pos = s.size();
  while (pos > 0 && (s[pos - 1] == '\n' || s[pos - 1] == ' ')) --pos;
  const size_t end = pos;
  for (int k = 0; k < n && pos > 0; ++k) {
    pos = s.rfind('\n', pos - 1);
    if (pos == std::string::npos) { pos = 0; break; }
  }
  std::string t = s.substr(pos, end - pos);
  while (!t.empty() && t.front() == '\n') t.erase(t.begin());
  return t;
}

/// A buffer name the tool accepts: 1-200 of A-Z a-z 0-9 . _ -
std::string fileName(size_t index, const std::string& name) {
  std::string s = fmt::format("b{}_", index);
  for (char c : name) s += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-') ? c : '_';
  return s.substr(0, 200);
}

bool keepDirs() {
  const char* k = std::getenv("MONOGEN_GFX950_KEEP");
  return k && *k && std::string(k) != "0";
}

/// The launch directory, removed on scope exit unless kept.
struct TempDir {
  fs::path path;
  bool keep = keepDirs();
  TempDir() {
    const char* t = std::getenv("TMPDIR");
    std::string tmpl = (fs::path(t && *t ? t : "/tmp") / "monogen-gfx950-XXXXXX").string();
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (!::mkdtemp(buf.data()))
      throw RuntimeError(kWhere, fmt::format("mkdtemp('{}') failed: {}", tmpl, std::strerror(errno)));
    path = buf.data();
  }
  ~TempDir() {
    if (keep) return;
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string note() const {
    return keep ? fmt::format(" (launch directory kept: {})", path.string())
                : " (set MONOGEN_GFX950_KEEP=1 to keep the launch directory)";
  }
};

/// Runs argv (in a process group of its own) with stdout / stderr to files; returns the exit code
/// (128 + signal if killed). With timeoutSeconds > 0, kills the group then and returns -1.
int runTool(const std::vector<std::string>& argv, const fs::path& out, const fs::path& err,
            double timeoutSeconds = 0) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, args[0], &fa, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) throw RuntimeError(kWhere, fmt::format("cannot run '{}': {}", argv[0], std::strerror(rc)));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeoutSeconds);
  int st = 0;
  for (;;) {
    const pid_t w = ::waitpid(pid, &st, timeoutSeconds > 0 ? WNOHANG : 0);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) throw RuntimeError(kWhere, fmt::format("waitpid: {}", std::strerror(errno)));
    if (w == 0 && std::chrono::steady_clock::now() > deadline) {
      ::kill(-pid, SIGKILL);
      while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
      return -1;
    }
    if (w == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (WIFEXITED(st)) return WEXITSTATUS(st);
  return 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

/// result.json's live waves as message lines: one line per (gpu, state, pc) with its count and
/// the first workgroup / wave ids, the groups of waves not at a barrier first, at most `most`.
std::string hangText(const json& hang, size_t most) {
  struct Group {
    int64_t count = 0;
    std::vector<std::string> ids;
  };
  std::map<std::tuple<bool, int, std::string, std::string>, Group> groups;
  for (const json& w : hang) {
    const std::string state = w.value("state", std::string("?"));
    Group& g = groups[{state == "barrier", w.value("gpu", -1), state, w.value("pc", std::string("?"))}];
    if (++g.count <= 6) g.ids.push_back(fmt::format("{}.{}", w.value("workgroup", -1), w.value("wave", -1)));
  }
  std::string s;
  size_t n = 0;
  for (const auto& [k, g] : groups) {
    if (n++ == most) {
      s += fmt::format("\n  ... and {} more groups", groups.size() - most);
      break;
    }
    s += fmt::format("\n  gpu {}: {} wave{} {} at pc {} (workgroup.wave {}{})", std::get<1>(k), g.count,
                     g.count == 1 ? "" : "s", std::get<2>(k), std::get<3>(k), fmt::join(g.ids, " "),
                     g.count > static_cast<int64_t>(g.ids.size()) ? " ..." : "");
  }
  return s;
}

}  // namespace

std::string Gfx950RunDevice::defaultToolPath() {
  if (const char* e = std::getenv("MONOGEN_GFX950_RUN"); e && *e) return e;
#ifdef MONOGEN_SOURCE_DIR
  return (fs::path(MONOGEN_SOURCE_DIR) / ".." / "shared" / "tools" / "gfx950-run").lexically_normal().string();
#else
  return "gfx950-run";
#endif
}

bool Gfx950RunDevice::toolAvailable(const std::string& path) {
  const std::string p = path.empty() ? defaultToolPath() : path;
  return ::access(p.c_str(), X_OK) == 0 && fs::is_regular_file(p);
}

void Gfx950RunDevice::checkTool(const std::string& path, double seconds) {
  static std::mutex mu;
  static std::set<std::string> passed;  // the tools that answered, once a process each
  std::lock_guard<std::mutex> g(mu);
  if (passed.count(path)) return;
  TempDir dir;
  dir.keep = false;
  const int rc = runTool({path, "--version"}, dir.path / "version.txt", dir.path / "stderr.txt", seconds);
  const std::string text = readText(dir.path / "version.txt");
  const std::string first = text.substr(0, text.find('\n'));
  if (rc == 0 && first.rfind("gfx950-run ", 0) == 0) {
    passed.insert(path);
    return;
  }
  const std::string got = rc < 0 ? fmt::format("did not exit within {} s", seconds)
                          : first.empty() ? fmt::format("exited with code {} and printed no line", rc)
                                          : fmt::format("exited with code {} and printed '{}'", rc, first.substr(0, 80));
  throw RuntimeError(kWhere, fmt::format("'{}' is not the gfx950-run simulator: `{} --version` {}; expected exit 0 and "
                                         "a first line 'gfx950-run <version>' (shared/tools/gfx950-run.md). Set "
                                         "MONOGEN_GFX950_RUN to the gfx950-run binary",
                                         path, path, got));
}

Gfx950RunDevice::Gfx950RunDevice(Gfx950RunOptions opts) : opts_(std::move(opts)) {}

uint64_t Gfx950RunDevice::alloc(int rank, int64_t bytes, const std::string& name, int64_t align) {
  const std::string where = fmt::format("{} alloc '{}'", kWhere, name);
  if (rank < 0 || rank >= opts_.maxRanks)
    throw RuntimeError(where, fmt::format("rank {} out of range 0..{}", rank, opts_.maxRanks - 1));
  if (bytes < 0) throw RuntimeError(where, fmt::format("{} bytes: expected >= 0", bytes));
  if (align <= 0 || (align & (align - 1)))
    throw RuntimeError(where, fmt::format("alignment {}: expected a power of two", align));
  // Its own pages, then one free page: the tool's guard page lies right after every buffer.
  const uint64_t base = alignUp(next_, std::max<uint64_t>(kPage, static_cast<uint64_t>(align)));
  const uint64_t size = std::max<uint64_t>(256, alignUp(static_cast<uint64_t>(bytes), 256));
  if (base + size + kPage > kTop)
    throw RuntimeError(where, fmt::format("{} bytes do not fit below {:#x}", bytes, kTop));
  next_ = alignUp(base + size, kPage) + kPage;
  Allocation& a = allocs_[base];
  a.rank = rank;
  a.name = name;
  a.data.assign(static_cast<size_t>(size), 0);
  return base;
}

void Gfx950RunDevice::free(int, uint64_t addr) { allocs_.erase(addr); }

uint8_t* Gfx950RunDevice::find(uint64_t addr, int64_t bytes, const char* what) {
  auto it = allocs_.upper_bound(addr);
  if (it != allocs_.begin()) {
    --it;
    if (addr >= it->first && addr + static_cast<uint64_t>(bytes) <= it->first + it->second.data.size())
      return it->second.data.data() + (addr - it->first);
  }
  throw RuntimeError(fmt::format("{} {}", kWhere, what),
                     fmt::format("[{:#x}, +{}) is not inside one allocation", addr, bytes));
}

void Gfx950RunDevice::upload(int, uint64_t dst, const void* src, int64_t bytes) {
  if (bytes <= 0) return;
  std::memcpy(find(dst, bytes, "upload"), src, static_cast<size_t>(bytes));
}

void Gfx950RunDevice::download(int, void* dst, uint64_t src, int64_t bytes) {
  if (bytes <= 0) return;
  std::memcpy(dst, find(src, bytes, "download"), static_cast<size_t>(bytes));
}

void Gfx950RunDevice::launchPacked(const ir::Plan& plan, const CodeObjectBytes& code, const PackedLaunch& args) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::string where = fmt::format("{}: {}", kWhere, plan.key.variantName());
  const std::string tool = opts_.tool.empty() ? defaultToolPath() : opts_.tool;
  if (!toolAvailable(tool))
    throw RuntimeError(where, fmt::format("the simulator '{}' does not exist or is not executable: set "
                                          "MONOGEN_GFX950_RUN to the gfx950-run binary (default: "
                                          "<source dir>/../shared/tools/gfx950-run)",
                                          tool));
  if (code.empty())
    throw RuntimeError(where, "no code object: this device runs the machine code (compile the variant first)");
  checkTool(tool);  // a wrong tool fails here in seconds, not as a hang after --timeout
  const int tp = static_cast<int>(args.kernargs.size());
  if (tp < 1 || tp > 16) throw RuntimeError(where, fmt::format("{} ranks: the tool runs 1..16 GPUs", tp));

  // Allocations only Weight arguments point at are never written: no read-back for them.
  std::set<uint64_t> written, weights;
  for (const auto& rankValues : args.values)
    for (size_t i = 0; i < plan.args.size() && i < rankValues.size(); ++i)
      if (plan.args[i].isPointer) (plan.args[i].role == ir::ArgRole::Weight ? weights : written).insert(rankValues[i]);

  TempDir dir;
  last_ = {};
  last_.dir = dir.path.string();
  writeBytes(dir.path / "code.co", code.data(), code.size());
  json launch;
  launch["code_object"] = "code.co";
  // No "kernel": the tool takes the object's only kernel. (Its symbol is codegen's
  // kernelSymbol(plan), "monogen_<variant>", not plan.kernel.name; runtime has no codegen.)
  launch["gpus"] = tp;
  json launches = json::array();
  for (int r = 0; r < tp; ++r) {
    const std::string k = fmt::format("kernarg.r{}.bin", r);
    writeBytes(dir.path / k, args.kernargs[r].data(), args.kernargs[r].size());
    launches.push_back({{"gpu", r},
                        {"grid", {plan.grid.blocks, 1, 1}},
                        {"block", {plan.grid.threads, 1, 1}},
                        {"kernarg", k},
                        {"dynamic_lds", 0}});
  }
  launch["launches"] = launches;
  json buffers = json::array();
  std::vector<std::pair<uint64_t, std::string>> readBack;
  size_t index = 0;
  for (auto& [addr, a] : allocs_) {
    const std::string name = fileName(index++, a.name);
    json b = {{"name", name},
              {"gpu", std::min(a.rank, tp - 1)},
              {"address", fmt::format("{:#x}", addr)},
              {"bytes", a.data.size()}};
    const bool zero = std::all_of(a.data.begin(), a.data.end(), [](uint8_t v) { return v == 0; });
    if (zero) {
      b["init"] = "zero";
    } else {
      writeBytes(dir.path / (name + ".init"), a.data.data(), a.data.size());
      b["init"] = name + ".init";
    }
    const bool back = !weights.count(addr) || written.count(addr);
    b["read_back"] = back;
    if (back) readBack.emplace_back(addr, name);
    buffers.push_back(b);
  }
  launch["buffers"] = buffers;
  std::ofstream(dir.path / "LAUNCH.json") << launch.dump(1);

  const fs::path out = dir.path / "out";
  const int rc = runTool({tool, (dir.path / "LAUNCH.json").string(), "--timeout",
                          fmt::format("{}", opts_.timeoutSeconds), "--quiet", "--out", out.string()},
                         dir.path / "stdout.txt", dir.path / "stderr.txt");
  // A tool that died before writing result.json (or wrote a broken one) leaves an empty object:
  // the checks below then report its exit code and stderr, never a JSON error.
  json result = json::object();
  std::string resultNote;
  if (!fs::exists(out / "result.json")) {
    resultNote = "; it wrote no result.json";
  } else {
    try {
      result = json::parse(readText(out / "result.json"));
      if (!result.is_object()) throw std::runtime_error("not a JSON object");
    } catch (const std::exception& e) {
      result = json::object();
      resultNote = std::string("; its result.json is unreadable: ") + e.what();
    }
  }
  last_.status = result.value("status", std::string());
  last_.seconds = result.value("seconds", 0.0);
  last_.totalSeconds = result.value("total_seconds", 0.0);
  last_.waveInstructions = result.value("wave_instructions", int64_t{0});
  const std::string stderrTail = tailLines(readText(dir.path / "stderr.txt"), 12);
  if (rc == 1 || last_.status == "hang") {
    const json hang = result.value("hang", json::array());
    throw RuntimeError(where, fmt::format("hang: the launch did not complete within --timeout {} s; {} live "
                                          "wave{} (pc: offset in the code object, as llvm-objdump prints it):{}{}",
                                          opts_.timeoutSeconds, hang.size(), hang.size() == 1 ? "" : "s",
                                          hangText(hang, 24), dir.note()));
  }
  if (rc != 0 || last_.status != "completed") {
    const char* kind = rc == 2 ? "bad input (exit 2)" : rc == 3 ? "simulator error (exit 3)"
                                                               : "unexpected exit";
    const std::string msg = result.value("error", std::string());
    throw RuntimeError(where, fmt::format("{}: exit code {}, status '{}'{}{}{}{}", kind, rc, last_.status, resultNote,
                                          msg.empty() ? "" : "; result.json: " + msg,
                                          stderrTail.empty() ? "" : "; stderr:\n" + stderrTail, dir.note()));
  }
  for (const auto& [addr, name] : readBack) {
    Allocation& a = allocs_.at(addr);
    std::ifstream f(out / (name + ".bin"), std::ios::binary);
    f.read(reinterpret_cast<char*>(a.data.data()), static_cast<std::streamsize>(a.data.size()));
    if (!f || f.gcount() != static_cast<std::streamsize>(a.data.size()))
      throw RuntimeError(where, fmt::format("read-back '{}' missing or short{}", name, dir.note()));
  }
  last_.wallSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace monogen::runtime
