#include "moe/fuzz/run_loop.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace moe::fuzz {

RunClock::RunClock(const RunOptions& options)
    : options_(options),
      terminal_(isatty(STDERR_FILENO) != 0),
      start_(Clock::now()),
      lastProgress_(start_) {}

double RunClock::elapsed() const {
  return std::chrono::duration<double>(Clock::now() - start_).count();
}

bool RunClock::another(uint64_t casesSoFar, bool* interrupted) const {
  if (elapsed() >= options_.seconds) return false;
  if (options_.maxCases != 0 && casesSoFar >= options_.maxCases) return false;
  if (options_.stop && *options_.stop) {
    *interrupted = true;
    return false;
  }
  return true;
}

ShrinkDeadline::ShrinkDeadline(double seconds, const volatile std::sig_atomic_t* stop)
    // At most a year: a larger --shrink-seconds would overflow the clock's nanoseconds.
    : at_(Clock::now() + std::chrono::duration_cast<Clock::duration>(
                             std::chrono::duration<double>(std::min(seconds, 3.2e7)))),
      stop_(stop) {}

bool ShrinkDeadline::passed() const {
  return (stop_ != nullptr && *stop_ != 0) || Clock::now() >= at_;
}

bool RunClock::progressDue() {
  if (!options_.progress) return false;
  const auto every = terminal_ ? std::chrono::seconds(1) : std::chrono::seconds(10);
  if (Clock::now() - lastProgress_ <= every) return false;
  lastProgress_ = Clock::now();
  return true;
}

void RunClock::progress(const std::string& text) const {
  std::fprintf(stderr, "%s%s%s", terminal_ ? "\r" : "", text.c_str(), terminal_ ? " " : "\n");
}

void RunClock::finish() const {
  if (options_.progress && terminal_) std::fprintf(stderr, "\n");
}

}  // namespace moe::fuzz
