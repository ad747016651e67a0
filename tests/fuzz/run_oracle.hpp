// Runs the real moe-oracle binary as a user does (MOE_ORACLE_BIN), for the suites that
// test the command end to end: its exit code, and its stdout (stderr when asked); and reads
// back the JSON files it writes.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace moe::fuzz::testing {

struct RunResult {
  int exitCode;
  std::string out;
};

// Runs a shell command line: its exit code and stdout.
inline RunResult runShell(const std::string& cmd) {
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return {-1, ""};
  std::string out;
  std::array<char, 4096> buf;
  while (size_t n = fread(buf.data(), 1, buf.size(), p)) out.append(buf.data(), n);
  const int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

// `args` go to the shell as written; stderr is dropped unless `withStderr`.
inline RunResult runOracle(const std::string& args, bool withStderr = false) {
  return runShell(std::string(MOE_ORACLE_BIN) + " " + args +
                  (withStderr ? " 2>&1" : " 2>/dev/null"));
}

// A fresh, empty folder under the temporary directory.
inline std::string freshDir(const std::string& name) {
  auto d = std::filesystem::temp_directory_path() / ("moe-oracle-test-" + name);
  std::filesystem::remove_all(d);
  return d.string();
}

// A JSON file the command wrote (a reproducer, a corpus file).
inline nlohmann::json readJsonFile(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

}  // namespace moe::fuzz::testing
