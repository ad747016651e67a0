// The routing kernel's cases, written once and run on two backends: the GPU through the
// moe_route_v1 ABI (cuda_route_test.cpp) and the same kernel source emulated on CPU threads
// (kernel_emulation_test.cpp). Each case compares against a CPU reference written here.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace route_cases {

constexpr float kInf = std::numeric_limits<float>::infinity();

struct Routed {
  std::vector<std::int32_t> ids;
  std::vector<float> gates;
};

struct Backend {
  std::string name;
  /// Routes tokens x experts logits with the kernel; returns {} ids on a failed call.
  Routed (*route)(std::int32_t tokens, std::int32_t experts, std::int32_t k,
                  const std::vector<float>& logits);
  /// Empty when the backend can run here, else why not (the case is skipped).
  std::string (*unavailable)();
  /// Tokens per sweep case: the emulation costs milliseconds per token.
  std::int32_t sweep_tokens;
  bool runs_large_cases;
};

inline std::ostream& operator<<(std::ostream& os, const Backend& b) {
  return os << b.name;
}

// Mixtral's rule in double on one finite row: softmax, top-k by (probability desc, index
// asc), gates renormalised by the kept sum. Exact ties in binary32 logits stay exact ties of
// the double probabilities, so tie-breaking is checked exactly.
inline Routed reference(std::int32_t experts, std::int32_t k, const float* row) {
  const double m = *std::max_element(row, row + experts);
  std::vector<double> p(static_cast<std::size_t>(experts));
  double sum = 0;
  for (int i = 0; i < experts; ++i) sum += p[i] = std::exp(static_cast<double>(row[i]) - m);
  for (double& x : p) x /= sum;
  std::vector<std::int32_t> order(static_cast<std::size_t>(experts));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return p[a] > p[b]; });
  const int kept = std::min(k, experts);
  double kept_sum = 0;
  for (int s = 0; s < kept; ++s) kept_sum += p[order[s]];
  Routed r;
  for (int s = 0; s < k; ++s) {
    r.ids.push_back(s < kept ? order[s] : -1);
    r.gates.push_back(s < kept ? static_cast<float>(p[order[s]] / kept_sum) : 0.0f);
  }
  return r;
}

inline void expectMatchesReference(std::int32_t tokens, std::int32_t experts, std::int32_t k,
                                   const std::vector<float>& logits, const Routed& got) {
  ASSERT_EQ(got.ids.size(), static_cast<std::size_t>(tokens) * k);
  for (std::int32_t t = 0; t < tokens; ++t) {
    const Routed want =
        reference(experts, k, logits.data() + static_cast<std::size_t>(t) * experts);
    for (std::int32_t s = 0; s < k; ++s) {
      const std::size_t slot = static_cast<std::size_t>(t) * k + s;
      ASSERT_EQ(got.ids[slot], want.ids[s])
          << "E=" << experts << " k=" << k << " token " << t << " slot " << s;
      // CUDA's expf is within 2 ulp; sums of <= 1024 terms add ~10 ulp: 1e-5 relative is
      // loose for rounding and tight for any real error (a wrong expert, a missing term).
      ASSERT_NEAR(got.gates[slot], want.gates[s], 1e-5 * want.gates[s] + 1e-37f)
          << "E=" << experts << " k=" << k << " token " << t << " slot " << s;
    }
  }
}

// Logits on a grid of 0.5 in [-8, 8]: many exact ties, and distinct values far apart.
inline std::vector<float> gridLogits(std::int32_t tokens, std::int32_t experts,
                                     std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> grid(-16, 16);
  std::vector<float> logits(static_cast<std::size_t>(tokens) * experts);
  for (float& x : logits) x = 0.5f * static_cast<float>(grid(rng));
  return logits;
}

class KernelCases : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    const std::string why = GetParam().unavailable();
    if (!why.empty()) GTEST_SKIP() << GetParam().name << " cannot run here: " << why;
  }
  Routed route(std::int32_t tokens, std::int32_t experts, std::int32_t k,
               const std::vector<float>& logits) const {
    return GetParam().route(tokens, experts, k, logits);
  }
};

TEST_P(KernelCases, EveryWarpLayoutAndKAgainstTheCpuReference) {
  // Warp layout boundaries (32 * V and one either side) and non-powers of two.
  for (std::int32_t experts :
       {1,   2,   3,   7,   31,  32,  33,  63,  64,  65,  100,  127,  128,
        129, 200, 255, 256, 257, 500, 511, 512, 513, 777, 1000, 1023, 1024}) {
    for (std::int32_t k : {1, 2, 8, 33, experts, experts + 3}) {
      if (!GetParam().runs_large_cases && k > 40) continue;
      const std::int32_t tokens = GetParam().sweep_tokens;
      const std::vector<float> logits = gridLogits(tokens, experts, experts * 131 + k);
      expectMatchesReference(tokens, experts, k, logits, route(tokens, experts, k, logits));
    }
  }
}

TEST_P(KernelCases, ExactTiesGoToTheLowerIndex) {
  const std::vector<float> logits(300, 1.25f);
  const Routed got = route(1, 300, 40, logits);
  ASSERT_EQ(got.ids.size(), 40u);
  for (int s = 0; s < 40; ++s) {
    EXPECT_EQ(got.ids[static_cast<std::size_t>(s)], s);
    // 40 equal probabilities renormalised: rounding of the kept sum only.
    EXPECT_NEAR(got.gates[static_cast<std::size_t>(s)], 1.0f / 40.0f, 1e-5 / 40);
  }
}

TEST_P(KernelCases, NegativeZeroTiesPositiveZero) {
  // Rows: [-0, +0, -1], [+0, -0, -1], [-1, -0, +0]; k = 1.
  const std::vector<float> logits{-0.0f, 0.0f, -1.0f, 0.0f, -0.0f, -1.0f, -1.0f, -0.0f, 0.0f};
  EXPECT_EQ(route(3, 3, 1, logits).ids, (std::vector<std::int32_t>{0, 0, 1}));
}

TEST_P(KernelCases, NegativeInfinityMasksAnExpert) {
  const std::vector<float> logits{-kInf, 1.0f, -kInf, 0.5f, 0.5f};
  const Routed got = route(1, 5, 5, logits);
  EXPECT_EQ(got.ids, (std::vector<std::int32_t>{1, 3, 4, 0, 2}));
  ASSERT_EQ(got.gates.size(), 5u);
  EXPECT_EQ(got.gates[3], 0.0f);
  EXPECT_EQ(got.gates[4], 0.0f);
  expectMatchesReference(1, 5, 3, logits, route(1, 5, 3, logits));
}

TEST_P(KernelCases, NonFiniteRowsGiveLowIdsAndNanGates) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // NaN row, +inf row, all -inf row; E = 4, k = 6 (two empty slots each).
  const std::vector<float> logits{0, nan, 1, 2, 0, kInf, 1, 2, -kInf, -kInf, -kInf, -kInf};
  const Routed got = route(3, 4, 6, logits);
  ASSERT_EQ(got.ids.size(), 18u);
  for (int t = 0; t < 3; ++t) {
    for (int s = 0; s < 6; ++s) {
      const std::size_t slot = static_cast<std::size_t>(t) * 6 + static_cast<std::size_t>(s);
      EXPECT_EQ(got.ids[slot], s < 4 ? s : -1) << "row " << t << " slot " << s;
      if (s < 4) {
        EXPECT_TRUE(std::isnan(got.gates[slot])) << "row " << t << " slot " << s;
      } else {
        EXPECT_EQ(got.gates[slot], 0.0f) << "row " << t << " slot " << s;
      }
    }
  }
}

TEST_P(KernelCases, ATokenIsRoutedBitwiseTheSameInAnyBatch) {
  const std::int32_t tokens = GetParam().runs_large_cases ? 1000 : 9, experts = 200, k = 8;
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> logits(static_cast<std::size_t>(tokens) * experts);
  for (float& x : logits) x = normal(rng);
  const Routed full = route(tokens, experts, k, logits);
  ASSERT_EQ(full.ids.size(), static_cast<std::size_t>(tokens) * k);
  for (std::int32_t t : {0, 1, 3, 4, 5, tokens / 2, tokens - 2, tokens - 1}) {
    const std::vector<float> row(logits.begin() + static_cast<std::ptrdiff_t>(t) * experts,
                                 logits.begin() + static_cast<std::ptrdiff_t>(t + 1) * experts);
    const Routed alone = route(1, experts, k, row);
    ASSERT_EQ(alone.ids.size(), static_cast<std::size_t>(k));
    for (std::int32_t s = 0; s < k; ++s) {
      const std::size_t slot = static_cast<std::size_t>(t) * k + s;
      EXPECT_EQ(alone.ids[static_cast<std::size_t>(s)], full.ids[slot]) << "token " << t;
      EXPECT_EQ(std::bit_cast<std::uint32_t>(alone.gates[static_cast<std::size_t>(s)]),
                std::bit_cast<std::uint32_t>(full.gates[slot]))
          << "token " << t;
    }
  }
}

TEST_P(KernelCases, ManyTokensAtTheBenchmarkShape) {
  if (!GetParam().runs_large_cases) GTEST_SKIP() << "65,536 tokens: too slow to emulate";
  const std::int32_t tokens = 65536, experts = 256, k = 8;
  const std::vector<float> logits = gridLogits(tokens, experts, 77);
  const Routed got = route(tokens, experts, k, logits);
  ASSERT_EQ(got.ids.size(), static_cast<std::size_t>(tokens) * k);
  // A spread of tokens against the reference (all of them would take seconds on the CPU).
  for (std::int32_t t = 0; t < tokens; t += 257) {
    const std::vector<float> row(logits.begin() + static_cast<std::ptrdiff_t>(t) * experts,
                                 logits.begin() + static_cast<std::ptrdiff_t>(t + 1) * experts);
    const Routed one{
        std::vector<std::int32_t>(got.ids.begin() + static_cast<std::ptrdiff_t>(t) * k,
                                  got.ids.begin() + static_cast<std::ptrdiff_t>(t + 1) * k),
        std::vector<float>(got.gates.begin() + static_cast<std::ptrdiff_t>(t) * k,
                           got.gates.begin() + static_cast<std::ptrdiff_t>(t + 1) * k)};
    expectMatchesReference(1, experts, k, row, one);
  }
}

}  // namespace route_cases
