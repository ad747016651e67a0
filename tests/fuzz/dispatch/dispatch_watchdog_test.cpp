// The dispatch door's watchdog tells a slow kernel from a hung one: a correct dispatcher
// written as the spec reads (one pass over the slots per expert) stays far inside it on the
// case where a fixed 10 s once called it a hang (E = 3,324, T k = 261,763, a loaded host).
// And the shrinker keeps to its time on a case past 2^22 slots, and ends at once on a signal.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <memory>
#include <random>

#include "moe/fuzz/dispatch_shrink.hpp"
#include "moe/fuzz/dispatcher.hpp"
#include "moe/fuzz/run_loop.hpp"

namespace {

using moe::fuzz::DispatchCase;

// Each expert's slots counted by a pass over every slot: O(T k E), what a naive kernel does.
int64_t naivePasses(const DispatchCase& c) {
  int64_t kept = 0;
  for (int32_t e = 0; e < c.experts; ++e) {
    for (const int32_t id : c.ids) kept += id == e ? 1 : 0;
  }
  return kept;
}

DispatchCase caseOf(int32_t tokens, int32_t k, int32_t experts) {
  DispatchCase c;
  c.tokens = tokens, c.k = k, c.experts = experts, c.block = 215;
  std::mt19937 rng(7);
  std::uniform_int_distribution<int32_t> id(0, experts - 1);
  c.ids.resize(static_cast<size_t>(c.slots()));
  for (int32_t& v : c.ids) v = id(rng);
  c.maxRows = static_cast<int32_t>(c.slots() + int64_t{experts} * (c.block - 1));
  return c;
}

TEST(DispatchWatchdog, ANaiveCorrectKernelIsSlowNotHung) {
  // The naive pass timed on a tenth of the slots, scaled to the drawn case: the watchdog
  // leaves it a factor of 20 (a loaded host, a slower machine).
  const DispatchCase tenth = caseOf(60, 437, 3324);
  const auto start = std::chrono::steady_clock::now();
  const int64_t kept = naivePasses(tenth);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(kept, tenth.slots());
  const DispatchCase drawn = caseOf(599, 437, 3324);
  const double scaled = seconds * static_cast<double>(drawn.slots()) / tenth.slots();
  EXPECT_GT(moe::fuzz::dispatchWatchdogSeconds(drawn), 20 * scaled)
      << "the naive pass takes " << scaled << " s on the drawn case";
}

TEST(DispatchWatchdog, ItGrowsWithTheNaiveWork) {
  const double small = moe::fuzz::dispatchWatchdogSeconds(caseOf(16, 8, 64));
  const double wide = moe::fuzz::dispatchWatchdogSeconds(caseOf(16, 8, 65536));
  EXPECT_GE(small, 60.0);
  EXPECT_GT(wide - 60.0, 500 * (small - 60.0));
}

// A dispatcher that answers 0 and writes nothing, on a case of 2^22 slots: every case with a
// slot is a violation, so every range the shrinker empties keeps it and the sweep would run
// to its end.
struct HugeViolation {
  std::unique_ptr<moe::fuzz::Dispatcher> d = moe::fuzz::makeFunctionDispatcher(
      "writes-nothing", {}, [](const DispatchCase&, int32_t*, int32_t*, int32_t*) { return 0; });
  DispatchCase c = caseOf(1 << 16, 64, 8);
  moe::fuzz::DispatchOutput out;
  moe::fuzz::DispatchVerdict v;
  HugeViolation() {
    c.block = 1;
    c.maxRows = static_cast<int32_t>(c.slots());
    v = moe::fuzz::runAndJudgeDispatch(*d, c, &out);
  }
  // Seconds that shrinking took.
  double shrink(double seconds, const volatile std::sig_atomic_t* stop = nullptr) {
    const auto start = std::chrono::steady_clock::now();
    moe::fuzz::shrinkDispatch(*d, c, out, v, seconds, stop);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
};

TEST(DispatchShrink, AHugeCaseShrinksWithinItsTime) {
  HugeViolation h;
  ASSERT_TRUE(h.v.violation());
  // Not a speed target: the sweep went on copying the case (2^22 ids) for every range past
  // its deadline, hours here; one step past the deadline is a fraction of a second.
  EXPECT_LT(h.shrink(0.5), 60.0);
  EXPECT_TRUE(h.v.violation());
}

// A signal (SIGINT, SIGTERM) during a shrink ends it at once: the run then reports the
// finding as far as it shrank, instead of after the rest of --shrink-seconds.
TEST(DispatchShrink, ASignalEndsTheShrinkAtOnce) {
  HugeViolation h;
  ASSERT_TRUE(h.v.violation());
  volatile std::sig_atomic_t stop = 1;
  EXPECT_LT(h.shrink(120, &stop), 5.0) << "the shrink ran on after the signal";
  EXPECT_EQ(h.c.slots(), int64_t{1} << 22) << "nothing is tried after the signal";
  EXPECT_TRUE(h.v.violation());
}

TEST(ShrinkDeadline, PassesWhenItsTimeIsSpentOrAStopIsAsked) {
  volatile std::sig_atomic_t stop = 0;
  const moe::fuzz::ShrinkDeadline later(3600, &stop), now(0, &stop), huge(1e300, nullptr);
  EXPECT_FALSE(later.passed());
  EXPECT_TRUE(now.passed());
  EXPECT_FALSE(huge.passed()) << "a --shrink-seconds past the clock's range is not spent";
  stop = 1;
  EXPECT_TRUE(later.passed());
}

}  // namespace
