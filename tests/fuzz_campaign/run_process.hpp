// Runs a program the way a hostile-input test needs: bounded memory (RLIMIT_AS), bounded
// time (killed after a wall-clock limit), output captured, and how it ended told apart
// (exit code vs the signal that killed it, i.e. a crash).
#pragma once

#include <string>
#include <vector>

namespace moe::fuzz_campaign {

struct ProcessResult {
  bool exited = false;     // true: ended by exit(); false: killed by a signal or timed out
  int exit_code = -1;      // valid when exited
  int signal = 0;          // the signal that ended it when !exited (SIGKILL on timeout)
  bool timed_out = false;  // killed because it ran past the wall-clock limit
  std::string output;      // stdout and stderr together, at most max_output bytes

  std::string describe() const;  // "exit 2" / "killed by signal 11" / "timed out"
};

struct ProcessLimits {
  unsigned long long address_space_bytes = 1ull << 31;  // 2 GiB: "memory bounded"
  int wall_seconds = 60;
  std::size_t max_output = 1 << 20;
};

ProcessResult runProcess(const std::vector<std::string>& argv, const ProcessLimits& limits = {});

}  // namespace moe::fuzz_campaign
