#include "runtime/RankProcesses.h"

#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <map>

#include "ir/Error.h"

namespace monogen::runtime {

namespace {

// Frames on a pipe: u8 type, u32 length, bytes. Child -> parent: AllGather (its bytes), Report (a
// line). Parent -> child: the gather's result, every rank's bytes in rank order (none: broken).
enum : uint8_t { kAllGather = 1, kReport = 2 };

void writeAll(int fd, const void* p, size_t n, const char* what) {
  const auto* c = static_cast<const uint8_t*>(p);
  while (n > 0) {
    const ssize_t w = ::write(fd, c, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) throw RuntimeError(what, fmt::format("write to the pipe failed: {}", std::strerror(errno)));
    c += w;
    n -= static_cast<size_t>(w);
  }
}

bool readAll(int fd, void* p, size_t n) {
  auto* c = static_cast<uint8_t*>(p);
  while (n > 0) {
    const ssize_t r = ::read(fd, c, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    c += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

void writeFrame(int fd, uint8_t type, const std::string& bytes, const char* what) {
  std::string f(5 + bytes.size(), '\0');
  f[0] = static_cast<char>(type);
  const uint32_t n = static_cast<uint32_t>(bytes.size());
  std::memcpy(f.data() + 1, &n, 4);
  std::memcpy(f.data() + 5, bytes.data(), bytes.size());
  writeAll(fd, f.data(), f.size(), what);
}

}  // namespace

std::vector<std::vector<uint8_t>> RankChannel::allGather(const std::vector<uint8_t>& mine) {
  const std::string where = fmt::format("rank {}: all-gather", rank_);
  writeFrame(out_, kAllGather, std::string(mine.begin(), mine.end()), where.c_str());
  uint32_t n = 0;
  if (!readAll(in_, &n, 4)) throw RuntimeError(where, "the parent closed the channel");
  if (n == 0)
    throw RuntimeError(where, "a rank's process exited before it took part: the gather cannot complete");
  std::vector<std::vector<uint8_t>> all(n);
  for (auto& v : all) {
    uint32_t len = 0;
    if (!readAll(in_, &len, 4)) throw RuntimeError(where, "the parent closed the channel");
    v.resize(len);
    if (len && !readAll(in_, v.data(), len)) throw RuntimeError(where, "the parent closed the channel");
  }
  return all;
}

void RankChannel::report(const std::string& line) {
  writeFrame(out_, kReport, line, fmt::format("rank {}: report", rank_).c_str());
}

RankProcesses::RankProcesses(int tp, const Body& body) {
  if (tp < 1) throw InputError("rank processes", fmt::format("TP {}", tp));
  std::fflush(stdout);
  std::fflush(stderr);
  kids_.resize(tp);
  for (int r = 0; r < tp; ++r) {
    int up[2], down[2];
    if (pipe(up) != 0 || pipe(down) != 0)
      throw RuntimeError("rank processes", fmt::format("pipe failed: {}", std::strerror(errno)));
    const pid_t pid = fork();
    if (pid < 0) throw RuntimeError("rank processes", fmt::format("fork failed: {}", std::strerror(errno)));
    if (pid == 0) {
      close(up[0]);
      close(down[1]);
      for (int q = 0; q < r; ++q) {  // the earlier children's parent ends
        close(kids_[q].fromKid);
        close(kids_[q].toKid);
      }
      int rc = 2;
      RankChannel ch(r, tp, up[1], down[0]);
      try {
        rc = body(ch);
      } catch (const std::exception& e) {
        try {
          ch.report(std::string("error: ") + e.what());
        } catch (...) {
        }
      }
      std::fflush(stdout);
      std::fflush(stderr);
      _exit(rc);
    }
    close(up[1]);
    close(down[0]);
    kids_[r].pid = pid;
    kids_[r].fromKid = up[0];
    kids_[r].toKid = down[1];
  }
  signal(SIGPIPE, SIG_IGN);  // a dead child's pipe: EPIPE, not death
}

RankProcesses::~RankProcesses() {
  for (Kid& k : kids_) {
    if (k.pid > 0 && !k.exited) {
      ::kill(k.pid, SIGKILL);
      waitpid(k.pid, nullptr, 0);
    }
    if (k.fromKid >= 0) close(k.fromKid);
    if (k.toKid >= 0) close(k.toKid);
  }
}

void RankProcesses::kill(int rank) {
  if (rank >= 0 && rank < tp() && kids_[rank].pid > 0 && !kids_[rank].exited) ::kill(kids_[rank].pid, SIGKILL);
}

std::vector<int> RankProcesses::run(const std::function<void(int, const std::string&)>& onReport, double timeoutSec) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeoutSec);
  std::map<int, std::string> gather;  // rank -> bytes of the gather under way
  std::vector<bool> open(kids_.size(), true);
  auto answerGather = [&](bool broken) {
    std::string msg;
    const uint32_t n = broken ? 0 : static_cast<uint32_t>(kids_.size());
    msg.append(reinterpret_cast<const char*>(&n), 4);
    if (!broken)
      for (auto& [r, b] : gather) {
        const uint32_t len = static_cast<uint32_t>(b.size());
        msg.append(reinterpret_cast<const char*>(&len), 4);
        msg += b;
      }
    for (auto& [r, b] : gather)
      if (open[r]) {
        try {
          writeAll(kids_[r].toKid, msg.data(), msg.size(), "rank processes");
        } catch (const RuntimeError&) {
        }
      }
    gather.clear();
  };
  int live = tp();
  bool anyGone = false;
  while (live > 0) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      for (Kid& k : kids_)
        if (!k.exited) {
          ::kill(k.pid, SIGKILL);
          waitpid(k.pid, nullptr, 0);
          k.exited = true;
          k.status = -1;
        }
      break;
    }
    std::vector<pollfd> fds;
    std::vector<int> who;
    for (int r = 0; r < tp(); ++r)
      if (open[r]) {
        fds.push_back({kids_[r].fromKid, POLLIN, 0});
        who.push_back(r);
      }
    if (fds.empty()) {
      // every pipe closed: reap
      for (Kid& k : kids_)
        if (!k.exited) {
          int st = 0;
          waitpid(k.pid, &st, 0);
          k.exited = true;
          k.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
          --live;
        }
      break;
    }
    const int ms = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count()) + 1;
    const int n = poll(fds.data(), fds.size(), std::min(ms, 200));
    if (n < 0 && errno != EINTR) throw RuntimeError("rank processes", fmt::format("poll: {}", std::strerror(errno)));
    for (size_t i = 0; i < fds.size(); ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const int r = who[i];
      Kid& k = kids_[r];
      char buf[65536];
      const ssize_t got = ::read(k.fromKid, buf, sizeof buf);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        open[r] = false;
        anyGone = true;
        int st = 0;
        waitpid(k.pid, &st, 0);
        k.exited = true;
        k.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        --live;
        if (!gather.empty()) answerGather(true);
        continue;
      }
      k.buf.append(buf, static_cast<size_t>(got));
      while (k.buf.size() >= 5) {
        uint32_t len = 0;
        std::memcpy(&len, k.buf.data() + 1, 4);
        if (k.buf.size() < 5 + len) break;
        const uint8_t type = static_cast<uint8_t>(k.buf[0]);
        std::string body = k.buf.substr(5, len);
        k.buf.erase(0, 5 + len);
        if (type == kReport) {
          if (onReport) onReport(r, body);
        } else if (type == kAllGather) {
          gather[r] = std::move(body);
          if (anyGone) answerGather(true);
          else if (static_cast<int>(gather.size()) == tp()) answerGather(false);
        }
      }
    }
  }
  std::vector<int> out;
  for (const Kid& k : kids_) out.push_back(k.status);
  return out;
}

}  // namespace monogen::runtime
