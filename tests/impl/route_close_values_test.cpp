// Rows of 8..512 experts whose best values are neighbouring floats, exact ties or +-0 at
// the kk-th place: the inputs where a selection that orders cut-down keys, or skips ties,
// would go wrong (the AVX-512 kernels sort keys with 6, 8 or 9 bits of the value given over
// to the expert and hand ties and close values to the general path). Every router, judged by
// EXPECT_ROUTE_MATCH_EXACTLY: the values are close, never near-ties of the router's own
// scores, so each token must be the spec's decision exactly.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "judged_router.hpp"
#include "moe/routers.hpp"
#include "moe/test/seed.hpp"
#include "route_helpers.hpp"

namespace moe::test {
namespace {

class RouterCloseValues : public JudgedRouterTest {};

// The kk + 2 best of a row are 1.5 plus steps of `stepUlps` ulps of 1.5, in a shuffled
// order at random places; the rest are spread below 0.
std::vector<float> closeTopRow(std::mt19937& rng, int32_t experts, int32_t top, int32_t stepUlps) {
  std::uniform_real_distribution<float> low(-8.0f, -1.0f);
  std::vector<float> row(static_cast<size_t>(experts));
  for (auto& v : row) v = low(rng);
  std::vector<int32_t> where(static_cast<size_t>(experts));
  std::iota(where.begin(), where.end(), 0);
  std::shuffle(where.begin(), where.end(), rng);
  for (int32_t i = 0; i < std::min(top, experts); ++i) {
    row[static_cast<size_t>(where[static_cast<size_t>(i)])] =
        1.5f + static_cast<float>(i * stepUlps) * 0x1p-23f;
  }
  return row;
}

TEST_P(RouterCloseValues, NeighbouringBestValuesKeepTheirOrder) {
  std::mt19937 rng = testRng();
  // Logits mode orders the logits themselves: one ulp apart is enough. Probabilities mode
  // orders rounded probabilities; steps of 4 ulps or more keep the binary32 probabilities
  // in the logits' order (exp and division err by about 1.5 ulp).
  const std::vector<int32_t> steps =
      probsMode() ? std::vector<int32_t>{4, 8, 16, 40} : std::vector<int32_t>{1, 2, 8, 16, 40};
  for (const int32_t experts : {8, 13, 16, 17, 31, 33, 48, 50, 64, 100, 256, 300, 384, 512}) {
    for (const int32_t k : {1, 2, 5, 8, 10, 16}) {
      for (const int32_t step : steps) {
        for (int rep = 0; rep < 20; ++rep) {
          SCOPED_TRACE(testing::Message() << "step=" << step << " ulps");
          ASSERT_ROUTE_MATCH_EXACTLY(
              *judged_, routeCase(1, experts, k, closeTopRow(rng, experts, k + 2, step)));
        }
      }
    }
  }
}

TEST_P(RouterCloseValues, TiesAtTheLastKeptPlaceGoToTheLowerIndex) {
  for (const int32_t experts : {8, 16, 17, 40, 64, 129, 256, 384, 512}) {
    for (const int32_t k : {1, 2, 8, 10, 16}) {
      if (2 * k > experts) continue;  // no room for the winners below
      // Everything at -2 except k - 1 clear winners (at E-1, E-3, ...) and two equal values
      // for the last place, in different vectors of the row.
      std::vector<float> row(static_cast<size_t>(experts), -2.0f);
      for (int32_t i = 0; i + 1 < k; ++i) row[static_cast<size_t>(experts - 1 - 2 * i)] = 3.0f + i;
      const int32_t a = 1;
      const int32_t b = experts - 2;
      row[a] = 1.0f;
      row[b] = 1.0f;
      const Routed out = routeOrDie(*router_, 1, experts, k, row);
      SCOPED_TRACE(testing::Message() << "E=" << experts << " k=" << k);
      EXPECT_EQ(out.ids[static_cast<size_t>(k - 1)], a);
      // +0 and -0 tie too.
      row[a] = -0.0f;
      row[b] = 0.0f;
      const Routed zeros = routeOrDie(*router_, 1, experts, k, row);
      EXPECT_EQ(zeros.ids[static_cast<size_t>(k - 1)], a);
      row[a] = 0.0f;
      row[b] = -0.0f;
      const Routed zeros2 = routeOrDie(*router_, 1, experts, k, row);
      EXPECT_EQ(zeros2.ids[static_cast<size_t>(k - 1)], a);
      // Negative ties: the network's keys order one tie zone by index only for positive
      // values, so here it must notice the tie between the last kept and the best left out.
      row[a] = -1.0f;
      row[b] = -1.0f;
      const Routed negative = routeOrDie(*router_, 1, experts, k, row);
      EXPECT_EQ(negative.ids[static_cast<size_t>(k - 1)], a);
    }
  }
}

// Two kept values a few ulps apart, the larger at the higher index, at every alignment
// against the low bits (6 up to 64 experts, 8 up to 256, 9 beyond) the AVX-512 network's
// keys give over to the expert's code: keys in one tie zone order by index, not by value, so the
// kernel must notice and hand over. Probabilities mode needs steps that exp cannot undo (about 1
// ulp of error).
TEST_P(RouterCloseValues, CloseValuesInsideTheKeptSetKeepTheirOrder) {
  const std::vector<int32_t> steps =
      probsMode() ? std::vector<int32_t>{8, 16, 48, 200} : std::vector<int32_t>{1, 3, 16, 48, 200};
  for (const int32_t experts : {8, 16, 17, 33, 64, 100, 256, 384, 512}) {
    const int32_t alignments = experts <= 64 ? 64 : experts <= 256 ? 256 : 512;
    // At E <= 16, k = 2: the small-rows kernel; at E = 512, k = 12: the network that keeps
    // 16 keys a lane.
    const int32_t k = experts <= 16 ? 2 : experts == 512 ? 12 : 3;
    for (const int32_t step : steps) {
      for (int32_t offset = 0; offset < alignments; ++offset) {
        // Both ways round: within a zone, negative keys favour the higher index.
        for (const bool higherIndexLarger : {true, false}) {
          std::vector<float> row(static_cast<size_t>(experts));
          for (int32_t i = 0; i < experts; ++i) row[static_cast<size_t>(i)] = -4.0f - 0.01f * i;
          if (experts > 16) row[16] = 0.0f;
          const size_t smaller = higherIndexLarger ? 3 : 6;
          const size_t larger = higherIndexLarger ? 6 : 3;
          row[smaller] = -0.5f + static_cast<float>(offset) * 0x1p-25f;
          row[larger] = row[smaller] + static_cast<float>(step) * 0x1p-25f;
          SCOPED_TRACE(testing::Message()
                       << "step=" << step << " offset=" << offset << " larger=" << larger);
          ASSERT_ROUTE_MATCH_EXACTLY(*judged_, routeCase(1, experts, k, row));
        }
      }
    }
  }
}

// The small-rows kernel (E <= 16, k <= 2) merges each row's best kk + 1 keys while it moves
// them to lanes; the best left out must be right wherever the kept and the left-out experts
// sit, or a tie zone at the last kept place goes unnoticed. Every placement of the kk - 1
// clear winners and the two close values (steps of 1 and 3 ulps, both ways round), at an
// alignment against the keys' code bits that moves with the placement; one batch per shape,
// so that whole groups of 16 rows are judged too.
TEST_P(RouterCloseValues, CloseValuesAtTheLastKeptPlaceOfSmallRowsAnywhereInTheRow) {
  const int32_t step = probsMode() ? 16 : 1;
  for (const int32_t experts : {8, 16}) {
    for (const int32_t k : {1, 2}) {
      std::vector<float> rows;
      int32_t tokens = 0;
      // k = 1 has no clear winner: one pass, its place unused.
      const int32_t winners = k == 2 ? experts : 1;
      for (int32_t winner = 0; winner < winners; ++winner) {
        for (int32_t a = 0; a < experts; ++a) {
          for (int32_t b = 0; b < experts; ++b) {
            if (a == b || (k == 2 && (winner == a || winner == b))) continue;
            for (const int32_t ulps : {step, 3 * step}) {
              std::vector<float> row(static_cast<size_t>(experts));
              for (int32_t i = 0; i < experts; ++i) row[static_cast<size_t>(i)] = -4.0f - 0.01f * i;
              if (k == 2) row[static_cast<size_t>(winner)] = 2.0f;
              const auto offset = static_cast<float>((winner + 3 * a + 5 * b) % 8);
              row[static_cast<size_t>(a)] = -0.5f + offset * 0x1p-25f;
              row[static_cast<size_t>(b)] =
                  row[static_cast<size_t>(a)] + static_cast<float>(ulps) * 0x1p-25f;
              rows.insert(rows.end(), row.begin(), row.end());
              ++tokens;
            }
          }
        }
      }
      SCOPED_TRACE(testing::Message() << "E=" << experts << " k=" << k);
      ASSERT_ROUTE_MATCH_EXACTLY(*judged_, routeCase(tokens, experts, k, rows));
    }
  }
}

TEST_P(RouterCloseValues, ManyEqualValuesAboveTheThreshold) {
  // Twenty experts share the best value: more candidates than one vector holds, and ties.
  for (const int32_t experts : {33, 64, 200}) {
    std::vector<float> row(static_cast<size_t>(experts), -1.0f);
    for (int32_t i = 0; i < 20; ++i) row[static_cast<size_t>((i * 7) % experts)] = 2.0f;
    EXPECT_ROUTE_MATCH_EXACTLY(*judged_, routeCase(1, experts, 8, row));
  }
}

// fuzz_route's finding of 2026-11-30 (auto-probs, E = 46, k = 1): one value far above a row
// of subnormals and -min_subnormal. The AVX-512 probabilities kernel summed its kept
// probabilities through a widening cast whose upper half is undefined; clang's code left
// stale lanes there and the gate came out NaN (g++'s happened to be zeros, so this test
// pins the case down rather than reproducing the clang failure).
TEST_P(RouterCloseValues, OneValueAboveSubnormalsGetsTheWholeGate) {
  std::vector<float> row(46, std::bit_cast<float>(0x00010080u));
  for (int i = 0; i < 15; ++i) row[static_cast<size_t>(i)] = std::bit_cast<float>(0x80000001u);
  row[15] = std::bit_cast<float>(0x3d100000u);
  row[21] = std::bit_cast<float>(0x00010000u);
  for (const int32_t k : {1, 2, 8}) {
    const Routed out = routeOrDie(*router_, 1, 46, k, row);
    EXPECT_EQ(out.ids[0], 15) << "k=" << k;
    float sum = 0.0f;
    for (int32_t s = 0; s < k; ++s) {
      EXPECT_TRUE(std::isfinite(out.gates[static_cast<size_t>(s)])) << "k=" << k << " s=" << s;
      sum += out.gates[static_cast<size_t>(s)];
    }
    EXPECT_NEAR(sum, 1.0f, 1e-6f) << "k=" << k;
  }
}

INSTANTIATE_TEST_SUITE_P(AllRouters, RouterCloseValues, allBuiltinRouters(), routerTestName);

}  // namespace
}  // namespace moe::test
