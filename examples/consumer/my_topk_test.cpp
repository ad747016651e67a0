// The kernel's suite: its outputs judged against the spec by moe-oracle's judge
// (EXPECT_ROUTE_MATCH, from find_package(MoeOracle)), on hand-picked rows and on rows drawn
// from the one test seed (MOE_TEST_SEED; a failing test prints the seed it ran with).
#include "my_topk.hpp"

#include <gtest/gtest.h>

#include <moe/test/kernel_router.hpp>
#include <moe/test/route_match.hpp>
#include <moe/test/seed.hpp>
#include <random>
#include <vector>

namespace {

using moe::test::routeCase;

const moe::fuzz::Router& kernel() {
  static const auto router = moe::test::kernelRouter("my_topk", &my_topk_route, kMyTopkContract);
  return *router;
}

TEST(MyTopk, HandPickedRows) {
  EXPECT_ROUTE_MATCH(kernel(), routeCase(1, 4, 2, {0.5f, -1.0f, 2.0f, 0.0f}));
  // Two tokens, k = 3 of 8, clear of near-ties: the spec's decision exactly.
  EXPECT_ROUTE_MATCH_EXACTLY(
      kernel(), routeCase(2, 8, 3,
                          {0.0f, -1.0f, 2.0f, -3.0f, 0.5f, 4.0f, -2.0f, 1.0f, 1.0f, 3.0f, -1.0f,
                           0.0f, 2.0f, -2.0f, 5.0f, -4.0f}));
}

TEST(MyTopk, ExactTiesGoToTheLowerIndex) {
  EXPECT_ROUTE_MATCH_EXACTLY(kernel(), routeCase(1, 6, 2, {1.0f, 3.0f, 0.0f, 3.0f, 3.0f, -1.0f}));
}

TEST(MyTopk, MoreSlotsThanExperts) {
  EXPECT_ROUTE_MATCH(kernel(), routeCase(1, 3, 5, {0.25f, 0.5f, -0.5f}));
}

TEST(MyTopk, RowsDrawnFromTheTestSeed) {
  std::mt19937 rng = moe::test::testRng();
  std::normal_distribution<float> logit(0.0f, 4.0f);
  for (int round = 0; round < 50; ++round) {
    const int32_t experts = std::uniform_int_distribution<int32_t>(1, 128)(rng);
    const int32_t k = std::uniform_int_distribution<int32_t>(1, 8)(rng);
    const int32_t tokens = std::uniform_int_distribution<int32_t>(1, 16)(rng);
    std::vector<float> x(static_cast<size_t>(tokens) * experts);
    for (float& v : x) v = logit(rng);
    ASSERT_ROUTE_MATCH(kernel(), routeCase(tokens, experts, k, x)) << "round " << round;
  }
}

}  // namespace
