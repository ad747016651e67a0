// What every door's fuzzing loop shares (router, moe_dispatch_v1, moe_layer_v1): the run's
// options, the clock that ends it (time limit, case count, a signal) and its progress line.
#pragma once

#include <fmt/format.h>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <string>

namespace moe::fuzz {

// The options of a run that do not depend on the door; each door's options add what it draws.
struct RunOptions {
  double seconds = 10;
  uint64_t seed = 1;
  uint64_t maxCases = 0;  // 0: only the time limit
  std::string outDir = "moe-oracle-out";
  bool keepGoing = false;     // count every finding by kind instead of stopping at the first
  double shrinkSeconds = 10;  // the cap on shrinking one violation (0: no shrinking)
  uint64_t minTokens = 1000;  // fewer judged tokens is insufficient coverage (exit 3)
  bool progress = true;       // progress on stderr: \r on a terminal, a line every 10 s else
  const volatile std::sig_atomic_t* stop = nullptr;  // set by a signal handler: end cleanly
};

// The loop's clock: whether another case may run, the seconds so far, and the progress line
// (on a terminal rewritten every second, else a line every 10 s).
class RunClock {
 public:
  explicit RunClock(const RunOptions& options);
  double elapsed() const;
  // False once the time limit or the case count is reached, or a signal asked to stop (then
  // *interrupted is set).
  bool another(uint64_t casesSoFar, bool* interrupted) const;
  // True (and restarted) when a progress line is due.
  bool progressDue();
  // Writes a progress line (`text` without its end: the clock ends it for the terminal).
  void progress(const std::string& text) const;
  // Ends the last progress line on a terminal.
  void finish() const;

 private:
  using Clock = std::chrono::steady_clock;
  const RunOptions& options_;
  bool terminal_;
  Clock::time_point start_, lastProgress_;
};

// When shrinking a finding must end: its seconds (--shrink-seconds) are spent, or a signal
// asked the run to stop (SIGINT, SIGTERM), so that the run reports the finding shrunk as far
// as it got at once instead of after the rest of its shrink.
class ShrinkDeadline {
 public:
  ShrinkDeadline(double seconds, const volatile std::sig_atomic_t* stop);
  bool passed() const;

 private:
  using Clock = std::chrono::steady_clock;
  Clock::time_point at_;
  const volatile std::sig_atomic_t* stop_;
};

// How one case of a kernel door's loop ended.
enum class CaseEnd {
  kNext,     // judged (or abstained): the next case
  kFinding,  // a violation, kept as a finding: the run stops there unless --keep-going
  kStopped,  // a signal stopped the kernel's call: the run is interrupted
};

// A kernel door's loop: `step(elapsed)` runs one case; it counts its cases with a violation,
// stops at the first unless asked to keep going, and between cases writes the progress line
// (impl, seconds, cases and the door's `counted`, named by `what`). Ends with the loop's
// seconds in the summary.
template <class Summary, class Step>
void runDoorLoop(Summary& s, const RunOptions& options, Step step, const char* what,
                 const uint64_t& counted) {
  RunClock clock(options);
  while (clock.another(s.cases, &s.interrupted)) {
    const CaseEnd end = step(clock.elapsed());
    if (end == CaseEnd::kStopped) {
      s.interrupted = true;
      break;
    }
    if (end == CaseEnd::kFinding) {
      ++s.violationCases;
      if (!options.keepGoing) break;
    }
    if (clock.progressDue()) {
      clock.progress(fmt::format("moe-oracle fuzz {}: {:.0f} s, {} cases, {} {}", s.impl,
                                 clock.elapsed(), s.cases, counted, what));
    }
  }
  clock.finish();
  s.seconds = clock.elapsed();
}

}  // namespace moe::fuzz
