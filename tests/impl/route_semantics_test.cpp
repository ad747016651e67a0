// Every built-in router against the double-precision reference of route_reference.hpp,
// and the spec's discrete rules: exact ties to the lower index (+0 == -0), -inf masking,
// k = 0, k = E, k > E, rank-ordered slots, the defined output for non-finite rows.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "moe/routers.hpp"
#include "route_reference.hpp"
#include "router_params.hpp"

namespace moe::test {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

class RouterSemantics : public RouterTest {
 protected:
  Routed route(int32_t tokens, int32_t experts, int32_t k, const std::vector<float>& x) {
    return routeOrDie(*router_, tokens, experts, k, x);
  }

  // Rows drawn from six levels (-inf, and small values of both signs), so exact ties are
  // everywhere; ids (and, when asked, gates) must match the reference slot by slot.
  void expectTieHeavyRowsMatch(uint32_t seed, std::initializer_list<int32_t> expertCounts,
                               std::initializer_list<int32_t> ks, int32_t tokens, bool checkGates) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> level(0, 5);
    for (const int32_t experts : expertCounts) {
      for (const int32_t k : ks) {
        std::vector<float> x(static_cast<size_t>(tokens) * experts);
        for (auto& v : x) {
          const int l = level(rng);
          v = l == 0 ? -kInf : float(l) * (l % 2 == 0 ? 1.0f : -0.5f);
        }
        const Routed out = route(tokens, experts, k, x);
        for (int32_t t = 0; t < tokens; ++t) {
          const RowReference ref = referenceRow(&x[size_t(t) * experts], experts, k, probsMode());
          for (int32_t s = 0; s < std::min(k, experts); ++s) {
            ASSERT_EQ(out.ids[size_t(t) * k + s], ref.ids[s])
                << "E=" << experts << " k=" << k << " t=" << t << " s=" << s;
            if (checkGates) {
              ASSERT_NEAR(out.gates[size_t(t) * k + s], ref.gates[s], 1e-6 * ref.gates[s] + 1e-30);
            }
          }
        }
      }
    }
  }
};

// Sweeps E over 1..130 (every tail length for 4-, 8- and 16-lane vectors, one and
// several blocks) and a few large E, with k = 1, 2, 3, 8, E and E + 3.
TEST_P(RouterSemantics, KeepsReferenceSetOnSeparatedRowsForEveryE) {
  std::mt19937 rng(20261129);
  std::vector<int32_t> es;
  for (int32_t e = 1; e <= 130; ++e) es.push_back(e);
  for (int32_t e : {255, 256, 257, 1000, 4096, 65536}) es.push_back(e);
  for (const int32_t experts : es) {
    for (const int32_t k : {1, 2, 3, 8, experts, experts + 3}) {
      if (experts > 1000 && k > 8 && k < experts) continue;
      const int32_t tokens = 2;
      std::vector<float> x;
      for (int32_t t = 0; t < tokens; ++t) {
        const auto row = separatedRow(rng, experts);
        x.insert(x.end(), row.begin(), row.end());
      }
      const Routed out = route(tokens, experts, k, x);
      const int32_t kk = std::min(k, experts);
      for (int32_t t = 0; t < tokens; ++t) {
        const RowReference ref = referenceRow(&x[size_t(t) * experts], experts, k, probsMode());
        // Kept logits span at most 60 (separatedRow): x - m rounding costs up to ~60 u
        // per exponential; exp, sum and divisions add (kk + a few) u.
        const double relTol = (24.0 + kk + 2 * 60.0) * 0x1p-24;
        for (int32_t s = 0; s < k; ++s) {
          const size_t at = size_t(t) * k + s;
          SCOPED_TRACE(testing::Message()
                       << "E=" << experts << " k=" << k << " t=" << t << " s=" << s);
          if (s < kk) {
            ASSERT_EQ(out.ids[at], ref.ids[s]);
            ASSERT_NEAR(out.gates[at], ref.gates[s], relTol * ref.gates[s] + 0x1p-140);
          } else {
            ASSERT_EQ(out.ids[at], -1);
            ASSERT_EQ(out.gates[at], 0.0f);
          }
        }
      }
    }
  }
}

// Rows drawn from a few integer values (plus masked experts): many exact ties inside and
// across vector blocks, so both the SIMD fast selection (few candidates above the
// threshold) and its fallback (more candidates than lanes) meet ties at the boundary.
TEST_P(RouterSemantics, TieHeavyRowsMatchTheReference) {
  expectTieHeavyRowsMatch(99, {9, 17, 64, 100, 256}, {1, 2, 3, 4, 5, 6, 7, 8, 9}, 40, true);
}

// The same with k above the routers' insertion limit (32 kept experts), where selection is a
// partial sort: its comparator must break exact ties to the lower index too.
TEST_P(RouterSemantics, TieHeavyRowsMatchTheReferenceAboveTheInsertionLimit) {
  expectTieHeavyRowsMatch(98, {64, 100}, {33, 40, 63}, 8, false);
}

TEST_P(RouterSemantics, ExactTiesGoToTheLowerIndex) {
  const std::vector<float> x{1, 2, 2, 0, 2};
  const Routed out = route(1, 5, 4, x);
  EXPECT_EQ(out.ids, (std::vector<int32_t>{1, 2, 4, 0}));
  EXPECT_EQ(out.gates[0], out.gates[1]);
  EXPECT_EQ(out.gates[1], out.gates[2]);
}

TEST_P(RouterSemantics, PlusAndMinusZeroTie) {
  EXPECT_EQ(route(1, 3, 2, {-0.0f, 0.0f, -1.0f}).ids, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(route(1, 3, 2, {-1.0f, 0.0f, -0.0f}).ids, (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(route(1, 3, 1, {-1.0f, -0.0f, 0.0f}).ids, (std::vector<int32_t>{1}));
}

// Equal scores across vector blocks and in the tail: the lowest indices win.
TEST_P(RouterSemantics, AllEqualRowKeepsTheFirstK) {
  for (const int32_t experts : {5, 17, 37, 64, 100}) {
    const std::vector<float> x(size_t(experts), 0.25f);
    const Routed out = route(1, experts, 5, x);
    for (int32_t s = 0; s < 5; ++s) EXPECT_EQ(out.ids[s], s) << "E=" << experts;
    EXPECT_FLOAT_EQ(out.gates[0], 0.2f);
  }
}

// docs/design.md §1: in binary32 the logits 0 and 2^-30 have the same probability, so routing
// on probabilities keeps expert 0 and routing on logits keeps expert 1.
TEST_P(RouterSemantics, NearTieFollowsTheSelectedScore) {
  const Routed out = route(1, 2, 1, {0.0f, 0x1p-30f});
  EXPECT_EQ(out.ids[0], probsMode() ? 0 : 1);
  EXPECT_EQ(out.gates[0], 1.0f);
}

TEST_P(RouterSemantics, MinusInfinityMasksAnExpert) {
  const Routed out = route(1, 4, 3, {-kInf, 1.0f, -kInf, 0.0f});
  EXPECT_EQ(out.ids, (std::vector<int32_t>{1, 3, 0}));
  EXPECT_NEAR(out.gates[0], 1.0 / (1.0 + std::exp(-1.0)), 1e-6);
  EXPECT_NEAR(out.gates[1], std::exp(-1.0) / (1.0 + std::exp(-1.0)), 1e-6);
  EXPECT_EQ(out.gates[2], 0.0f);
}

TEST_P(RouterSemantics, KZeroWritesNothingAndAcceptsNullOutputs) {
  const std::vector<float> x{1, 2, 3};
  EXPECT_EQ(router_->route(1, 3, 0, x.data(), nullptr, nullptr, 1), MOE_ROUTE_OK);
}

TEST_P(RouterSemantics, KAboveEFillsEmptySlots) {
  const Routed out = route(2, 3, 5, {3, 1, 2, 0, 0, 5});
  EXPECT_EQ(out.ids, (std::vector<int32_t>{0, 2, 1, -1, -1, 2, 0, 1, -1, -1}));
  EXPECT_EQ(out.gates[3], 0.0f);
  EXPECT_EQ(out.gates[9], 0.0f);
  EXPECT_NEAR(out.gates[0] + out.gates[1] + out.gates[2], 1.0, 1e-6);
}

TEST_P(RouterSemantics, ZeroExpertsLeavesEverySlotEmpty) {
  const Routed out = route(2, 0, 2, {});
  EXPECT_EQ(out.ids, (std::vector<int32_t>{-1, -1, -1, -1}));
  EXPECT_EQ(out.gates, (std::vector<float>{0, 0, 0, 0}));
}

// Slots come best first: gates never increase along a row, and k = E lists everyone.
TEST_P(RouterSemantics, SlotsAreInRankOrder) {
  std::mt19937 rng(7);
  std::normal_distribution<float> logit(0.0f, 3.0f);
  for (const int32_t experts : {8, 33, 64, 200}) {
    std::vector<float> x(size_t(experts) * 4);
    for (auto& v : x) v = logit(rng);
    const Routed out = route(4, experts, experts, x);
    for (int32_t t = 0; t < 4; ++t) {
      std::vector<bool> seen(size_t(experts), false);
      for (int32_t s = 0; s < experts; ++s) {
        const int32_t id = out.ids[size_t(t) * experts + s];
        ASSERT_TRUE(id >= 0 && id < experts && !seen[size_t(id)]);
        seen[size_t(id)] = true;
        if (s > 0) {
          EXPECT_LE(out.gates[size_t(t) * experts + s], out.gates[size_t(t) * experts + s - 1]);
        }
      }
    }
  }
}

// The contract's nonfinite_rows: NaN rows keep 0..kk-1 with NaN gates in both modes;
// +inf or all -inf rows do so too in probs mode, and route by the rule in logits mode.
TEST_P(RouterSemantics, NonfiniteRowsGiveTheDocumentedOutput) {
  const std::vector<float> nanRow{1, kNaN, 3, 2};
  const std::vector<float> infRow{1, kInf, 2, kInf};
  const std::vector<float> allMasked{-kInf, -kInf, -kInf, -kInf};
  for (const int32_t k : {1, 3, 6}) {
    const int32_t kk = std::min(k, 4);
    const Routed nan = route(1, 4, k, nanRow);
    for (int32_t s = 0; s < kk; ++s) {
      EXPECT_EQ(nan.ids[s], s);
      EXPECT_TRUE(std::isnan(nan.gates[s]));
    }
    const Routed inf = route(1, 4, k, infRow);
    const std::vector<int32_t> infIds =
        probsMode() ? std::vector<int32_t>{0, 1, 2, 3} : std::vector<int32_t>{1, 3, 2, 0};
    const Routed masked = route(1, 4, k, allMasked);
    for (int32_t s = 0; s < kk; ++s) {
      EXPECT_EQ(inf.ids[s], infIds[s]) << "k=" << k << " s=" << s;
      EXPECT_TRUE(std::isnan(inf.gates[s]));
      EXPECT_EQ(masked.ids[s], s);
      EXPECT_TRUE(std::isnan(masked.gates[s]));
    }
    for (int32_t s = kk; s < k; ++s) {
      EXPECT_EQ(nan.ids[s], -1);
      EXPECT_EQ(inf.gates[s], 0.0f);
    }
  }
}

// A NaN anywhere in a long row (every block position, the tail) is noticed, and ids
// stay in range and distinct.
TEST_P(RouterSemantics, NaNAnywhereInALongRowIsNoticed) {
  const int32_t experts = 70;
  for (int32_t at = 0; at < experts; ++at) {
    std::vector<float> x(static_cast<size_t>(experts));
    for (int32_t i = 0; i < experts; ++i) x[i] = float(i % 7);
    x[size_t(at)] = kNaN;
    const Routed out = route(1, experts, 3, x);
    EXPECT_EQ(out.ids, (std::vector<int32_t>{0, 1, 2})) << "NaN at " << at;
    EXPECT_TRUE(std::isnan(out.gates[0]));
  }
}

INSTANTIATE_TEST_SUITE_P(AllRouters, RouterSemantics, allBuiltinRouters(), routerTestName);

}  // namespace
}  // namespace moe::test
