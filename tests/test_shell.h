// Shared by the tests that run the monogen binary: a shell command's exit code and output.
#pragma once
#include <sys/wait.h>

#include <array>
#include <catch2/catch.hpp>
#include <cstdio>
#include <string>
#include <utility>

/// Runs `cmd` through the shell; returns its stdout and stderr together, sets `code` to its exit
/// status (-1 when it did not exit normally).
inline std::string runShell(const std::string& cmd, int& code) {
  std::string out;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  REQUIRE(p);
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  const int status = pclose(p);
  code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

/// `runShell` as a value: {exit status, stdout and stderr}.
inline std::pair<int, std::string> shell(const std::string& cmd) {
  int code = 0;
  std::string out = runShell(cmd, code);
  return {code, std::move(out)};
}
