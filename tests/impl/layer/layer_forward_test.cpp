// moe::Layer forward paths: dense vs sparse vs a double-precision reference, routing against
// double-precision logits, bitwise batch invariance, and rejected inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <stdexcept>

#include "layer_reference.hpp"
#include "moe/layer.hpp"

namespace moe {
namespace {

using test::randomTokens;
using test::referenceForward;

bool sameBits(const float* a, const float* b, std::int64_t n) {
  return std::memcmp(a, b, static_cast<std::size_t>(n) * sizeof(float)) == 0;
}

// Float tolerance against the double reference. Every output is a sum over k slots of
// g * (W2 h), h = silu(W1 x) * W3 x, each dot product of length <= max(d, h) in binary32:
// relative error per term a few (d + h) * 2^-24 of the sum of |products|. With |x| <= 1 and
// weights <= 1/sqrt(fan_in) those sums stay below 4, so (d + h) * 2^-24 * 64 is generous
// and still ~1000x smaller than any real bug (a wrong gate, expert or token).
double floatTolerance(const Layer& layer) {
  return static_cast<double>(layer.modelDim() + layer.hiddenDim()) * 64.0 * std::ldexp(1.0, -24);
}

struct Shape {
  std::int64_t d, h, experts, k, tokens;
};

class DenseSparseAgree : public ::testing::TestWithParam<Shape> {};

TEST_P(DenseSparseAgree, ExactlyAndWithinFloatToleranceOfDoubleReference) {
  const Shape s = GetParam();
  const Layer layer = Layer::random({s.d, s.h, s.experts, s.k}, /*seed=*/s.experts * 31 + s.k);
  const RowMatrix x = randomTokens(s.tokens, s.d, /*seed=*/s.tokens);
  const Routing routing = layer.route(x);
  const RowMatrix dense = layer.forwardDense(x, routing);
  const RowMatrix sparse = layer.forwardSparse(x, routing);
  // The routing-taking overloads must be what the one-argument ones do.
  ASSERT_TRUE(sameBits(dense.data(), layer.forwardDense(x).data(), dense.size()));
  ASSERT_TRUE(sameBits(sparse.data(), layer.forwardSparse(x).data(), sparse.size()));
  const std::vector<double> reference = referenceForward(layer, x, routing);
  const double tolerance = floatTolerance(layer);
  for (std::int64_t i = 0; i < dense.size(); ++i) {
    // Same per-token expert outputs, same order of addition: equal, not merely close.
    ASSERT_EQ(dense.data()[i], sparse.data()[i]) << "element " << i;
    ASSERT_NEAR(dense.data()[i], reference[static_cast<std::size_t>(i)], tolerance)
        << "element " << i << " (token " << i / s.d << ")";
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, DenseSparseAgree,
                         ::testing::Values(Shape{16, 24, 8, 2, 37}, Shape{8, 16, 5, 1, 9},
                                           Shape{12, 8, 3, 3, 13}, Shape{4, 4, 4, 6, 7},
                                           Shape{10, 6, 1, 1, 5}, Shape{6, 5, 16, 4, 1}));

TEST(LayerRouting, GatesAreTheRenormalisedSoftmaxOfTheTopKDoubleLogits) {
  const Layer layer = Layer::random({16, 8, 12, 3}, /*seed=*/7);
  const RowMatrix x = randomTokens(50, 16, /*seed=*/11);
  const Routing routing = layer.route(x);
  const std::vector<double> logits = test::referenceLogits(layer, x);
  const std::int64_t experts = layer.expertCount(), k = layer.k();
  for (std::int64_t t = 0; t < x.rows(); ++t) {
    const double* row = logits.data() + t * experts;
    std::vector<std::int32_t> order(static_cast<std::size_t>(experts));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return row[a] > row[b]; });
    // Only judge tokens whose kept boundary is well clear of rounding (1e-4 vs ~1e-6 error).
    if (row[order[k - 1]] - row[order[k]] < 1e-4) continue;
    double kept_sum = 0;
    for (std::int64_t s = 0; s < k; ++s) kept_sum += std::exp(row[order[s]] - row[order[0]]);
    for (std::int64_t s = 0; s < k; ++s) {
      const std::size_t slot = static_cast<std::size_t>(t * k + s);
      ASSERT_EQ(routing.ids[slot], order[static_cast<std::size_t>(s)])
          << "token " << t << " slot " << s;
      ASSERT_NEAR(routing.gates[slot], std::exp(row[order[s]] - row[order[0]]) / kept_sum, 1e-5)
          << "token " << t << " slot " << s;
    }
  }
}

TEST(LayerRouting, EveryBuiltInRouterGivesAgreeingDenseAndSparse) {
  for (const BuiltinRouter& router : builtinRouters()) {
    if (!router.available()) continue;
    const RowMatrix x = randomTokens(20, 8, /*seed=*/3);
    Layer base = Layer::random({8, 8, 6, 2}, /*seed=*/5);
    const Layer layer(
        base.routerWeights(),
        [&] {
          std::vector<SwiGluExpert> experts;
          for (std::int64_t e = 0; e < base.expertCount(); ++e) experts.push_back(base.expert(e));
          return experts;
        }(),
        2, router.name);
    const Routing routing = layer.route(x);
    const RowMatrix dense = layer.forwardDense(x, routing);
    const RowMatrix sparse = layer.forwardSparse(x, routing);
    for (std::int64_t i = 0; i < dense.size(); ++i) {
      ASSERT_EQ(dense.data()[i], sparse.data()[i]) << router.name << " element " << i;
    }
  }
}

TEST(LayerBatchInvariance, SparseOutputOfATokenIsBitwiseTheSameInAnyBatch) {
  const Layer layer = Layer::random({12, 20, 8, 2}, /*seed=*/21);
  const std::int64_t tokens = 23, d = layer.modelDim();
  const RowMatrix x = randomTokens(tokens, d, /*seed=*/99);
  const RowMatrix full = layer.forwardSparse(x);
  // Each token alone (a batch of 1 takes the unblocked row path of the products).
  for (std::int64_t t = 0; t < tokens; ++t) {
    const RowMatrix alone = layer.forwardSparse(RowMatrix(x.row(t)));
    ASSERT_TRUE(sameBits(alone.data(), full.data() + t * d, d)) << "token " << t << " alone";
  }
  // The batch reversed: every token moves to another position and another row block.
  RowMatrix reversed(tokens, d);
  for (std::int64_t t = 0; t < tokens; ++t) reversed.row(t) = x.row(tokens - 1 - t);
  const RowMatrix reversed_out = layer.forwardSparse(reversed);
  for (std::int64_t t = 0; t < tokens; ++t) {
    ASSERT_TRUE(sameBits(reversed_out.data() + (tokens - 1 - t) * d, full.data() + t * d, d))
        << "token " << t << " reversed";
  }
  // The batch split at several places, each part on its own.
  for (std::int64_t split : {1, 3, 4, 5, 11, 22}) {
    const RowMatrix head = layer.forwardSparse(RowMatrix(x.topRows(split)));
    const RowMatrix tail = layer.forwardSparse(RowMatrix(x.bottomRows(tokens - split)));
    ASSERT_TRUE(sameBits(head.data(), full.data(), split * d)) << "split " << split;
    ASSERT_TRUE(sameBits(tail.data(), full.data() + split * d, (tokens - split) * d))
        << "split " << split;
  }
}

TEST(LayerBatchInvariance, DuplicatedTokensGetIdenticalOutputs) {
  const Layer layer = Layer::random({8, 8, 4, 2}, /*seed=*/1);
  RowMatrix x(9, 8);
  const RowMatrix one = randomTokens(1, 8, /*seed=*/5);
  for (std::int64_t t = 0; t < 9; ++t) x.row(t) = one.row(0);
  const RowMatrix out = layer.forwardSparse(x);
  for (std::int64_t t = 1; t < 9; ++t) ASSERT_TRUE(sameBits(out.data(), out.data() + t * 8, 8));
}

TEST(LayerEdgeShapes, NoTokensNoExpertsAndKZero) {
  const Layer layer = Layer::random({4, 4, 3, 2}, 1);
  EXPECT_EQ(layer.forwardSparse(RowMatrix(0, 4)).rows(), 0);
  const Layer no_slots = Layer::random({4, 4, 3, 0}, 1);
  const RowMatrix x = randomTokens(3, 4, 2);
  EXPECT_TRUE(no_slots.forwardDense(x).isZero(0));
  EXPECT_TRUE(no_slots.forwardSparse(x).isZero(0));
  // k > E fills min(k, E) slots; the rest are empty and contribute nothing.
  const Layer wide = Layer::random({4, 4, 3, 5}, 1);
  const Routing routing = wide.route(x);
  for (std::int64_t t = 0; t < 3; ++t) {
    EXPECT_EQ(routing.ids[static_cast<std::size_t>(t * 5 + 3)], -1);
    EXPECT_EQ(routing.ids[static_cast<std::size_t>(t * 5 + 4)], -1);
  }
  const RowMatrix dense = wide.forwardDense(x, routing), sparse = wide.forwardSparse(x, routing);
  for (std::int64_t i = 0; i < dense.size(); ++i) EXPECT_EQ(dense.data()[i], sparse.data()[i]);
}

TEST(LayerRejects, BadShapesRoutersAndRoutings) {
  const Layer layer = Layer::random({4, 4, 3, 2}, 1);
  EXPECT_THROW(layer.forwardSparse(RowMatrix(2, 5)), std::invalid_argument);
  EXPECT_THROW(layer.forwardDense(RowMatrix(2, 3)), std::invalid_argument);
  EXPECT_THROW(Layer::random({4, 4, 3, 2}, 1, "no-such-router"), std::invalid_argument);
  EXPECT_THROW(Layer::random({-1, 4, 3, 2}, 1), std::invalid_argument);
  EXPECT_THROW(Layer(RowMatrix(4, 2), {}, 1), std::invalid_argument);       // 2 columns, 0 experts
  EXPECT_THROW(layer.routeLogits(RowMatrix(2, 4)), std::invalid_argument);  // E is 3
  const RowMatrix x = randomTokens(2, 4, 1);
  Routing routing = layer.route(x);
  routing.ids[1] = routing.ids[0];  // a repeated expert
  EXPECT_THROW(layer.forwardSparse(x, routing), std::runtime_error);
  routing.ids[1] = 3;  // out of range for E = 3
  EXPECT_THROW(layer.forwardDense(x, routing), std::runtime_error);
  routing = layer.route(x);
  const std::vector<std::uint8_t> short_keep(1, 1);
  EXPECT_THROW(layer.forwardSparse(x, routing, short_keep), std::invalid_argument);
}

// A router that breaks the ABI: the layer must refuse its output, not index with it.
int brokenRouter(std::int32_t tokens, std::int32_t, std::int32_t k, const float*, std::int32_t* ids,
                 float* gates, std::int32_t) {
  for (std::int32_t i = 0; i < tokens * k; ++i) {
    ids[i] = 1000;
    gates[i] = 1.0f;
  }
  return 0;
}
int failingRouter(std::int32_t, std::int32_t, std::int32_t, const float*, std::int32_t*, float*,
                  std::int32_t) {
  return 5;
}

TEST(LayerRejects, RouterOutputOutOfRangeOrAFailureStatus) {
  const Layer base = Layer::random({4, 4, 3, 2}, 1);
  std::vector<SwiGluExpert> experts;
  for (std::int64_t e = 0; e < 3; ++e) experts.push_back(base.expert(e));
  const RowMatrix x = randomTokens(2, 4, 1);
  const Layer broken(base.routerWeights(), experts, 2, &brokenRouter, "broken");
  EXPECT_THROW(broken.forwardSparse(x), std::runtime_error);
  const Layer failing(base.routerWeights(), experts, 2, &failingRouter, "failing");
  EXPECT_THROW(failing.forwardDense(x), std::runtime_error);
}

}  // namespace
}  // namespace moe
