// The one seed of the test suites: MOE_TEST_SEED (decimal) or kDefaultTestSeed, and the
// generators drawn from it. A failing test prints the seed it ran with (a gtest listener
// this header installs), so `MOE_TEST_SEED=N ctest -R NAME` reruns the same inputs.
// Header-only so that any suite can include it without linking anything.
#pragma once

#include <gtest/gtest.h>

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>

namespace moe::test {

// The seed when MOE_TEST_SEED is unset: the date of the first suite, as tests/oracle had it.
inline constexpr std::uint64_t kDefaultTestSeed = 20261129;

// Parses MOE_TEST_SEED's text: decimal digits only, within 64 bits. Throws
// std::invalid_argument otherwise (a test that draws then fails, naming the variable).
inline std::uint64_t parseTestSeed(std::string_view text) {
  std::uint64_t seed = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seed, 10);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
    throw std::invalid_argument("MOE_TEST_SEED=\"" + std::string(text) +
                                "\" is not a decimal number below 2^64");
  }
  return seed;
}

// Read once per program: every test of a run sees the same seed.
inline std::uint64_t testSeed() {
  static const std::uint64_t seed = [] {
    const char* env = std::getenv("MOE_TEST_SEED");
    return env != nullptr ? parseTestSeed(env) : kDefaultTestSeed;
  }();
  return seed;
}

// A salt of the running test's full name ("Suite/Instance.Test/Param"): each test draws its
// own stream, the same whatever else runs (ctest runs one test per process) or in which order.
inline std::uint64_t currentTestSalt() {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
  auto mix = [&](const char* s) {
    for (; s != nullptr && *s != '\0'; ++s) {
      h = (h ^ static_cast<unsigned char>(*s)) * 0x100000001b3ull;
    }
    h = (h ^ '.') * 0x100000001b3ull;
  };
  if (info != nullptr) {
    mix(info->test_suite_name());
    mix(info->name());
  }
  return h;
}

// The running test's generator: the test seed and the test's name, through seed_seq so that
// nearby seeds give unrelated streams.
inline std::mt19937 testRng() {
  const std::uint64_t s = testSeed(), salt = currentTestSalt();
  std::seed_seq seq{static_cast<std::uint32_t>(s), static_cast<std::uint32_t>(s >> 32),
                    static_cast<std::uint32_t>(salt), static_cast<std::uint32_t>(salt >> 32)};
  return std::mt19937(seq);
}

namespace detail {

// Prints the seed after each failed test, next to gtest's own failure lines.
class SeedPrinter final : public ::testing::EmptyTestEventListener {
  void OnTestEnd(const ::testing::TestInfo& info) override {
    if (!info.result()->Failed()) return;
    const char* env = std::getenv("MOE_TEST_SEED");
    std::string seed;
    try {
      seed = std::to_string(testSeed());
    } catch (const std::invalid_argument&) {
      seed = "(invalid: " + std::string(env) + ")";
    }
    std::printf("[   SEED   ] %s.%s ran with MOE_TEST_SEED=%s%s; rerun with the same value\n",
                info.test_suite_name(), info.name(), seed.c_str(),
                env == nullptr ? " (the default)" : "");
    std::fflush(stdout);
  }
};

inline bool installSeedPrinter() {
  ::testing::UnitTest::GetInstance()->listeners().Append(new SeedPrinter);  // gtest owns it
  return true;
}

// One listener per program however many files include this header (an inline variable is
// initialised once), installed before main() runs the tests.
inline const bool kSeedPrinterInstalled = installSeedPrinter();

}  // namespace detail
}  // namespace moe::test
