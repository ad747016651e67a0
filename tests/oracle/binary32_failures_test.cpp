// Which theorems fail when the spec is evaluated in binary32, and why. Each test pins a
// concrete counterexample, so a fast kernel that differs from the real-number spec there
// is recognised as rounding, not as a bug.
#include <gtest/gtest.h>

#include <bit>

#include "moe/oracle/certified/gates.hpp"
#include "moe/oracle/combine.hpp"
#include "moe/oracle/softmax.hpp"

namespace moe::oracle {
namespace {

// The seed's counterexample: logits 0 and 2^-30. exp(-2^-30) rounds to 1 in binary32, so
// both probabilities are 1/2 and routing on probabilities keeps expert 0 (tie to the lower
// index), while routing on the logits keeps expert 1.
TEST(Binary32Failures, KeptSoftmaxFailsForLogitsZeroAndTwoToMinus30) {
  const std::vector<float> logits{0.0f, 0x1p-30f};
  const std::vector<float> p = softmaxVecSpec(std::span<const float>(logits));
  EXPECT_EQ(p[0], 0.5f);
  EXPECT_EQ(p[1], 0.5f);
  EXPECT_EQ(keptExperts(1, std::span<const float>(p)), std::vector<std::size_t>{0});
  EXPECT_EQ(keptExperts(1, std::span<const float>(logits)), std::vector<std::size_t>{1});
  // Over the reals (the enclosures) expert 1 has the strictly larger probability.
  const auto real = certified::softmaxEnclosure(logits);
  EXPECT_GT(mpfr_cmp(real[1].range.lower.get(), real[0].range.upper.get()), 0);
  // gatesVecSpec in binary32 routes on the probabilities: gate 1 goes to expert 0.
  const std::vector<float> g = gatesVecSpec(1, std::span<const float>(logits));
  EXPECT_EQ(g, (std::vector<float>{1.0f, 0.0f}));
  EXPECT_EQ(certified::gatesEnclosure(1, logits)[1].f32, 1.0f);
}

// gatesVecSpec_simplex fails in binary32: the gates need not sum to exactly 1.
TEST(Binary32Failures, GatesNeedNotSumToExactlyOne) {
  const std::vector<float> logits{0.0f, 0.25f, 0.0f};
  const std::vector<float> g = gatesVecSpec(3, std::span<const float>(logits));
  const float sum = (g[0] + g[1]) + g[2];
  EXPECT_EQ(sum, 0x1.fffffep-1f) << "sum " << sum;  // one ulp below 1
  // Over the reals the gates sum to 1: the enclosures' bounds bracket 1.
  const auto real = certified::gatesEnclosure(3, logits);
  certified::BigFloat lo(256), hi(256);
  for (const auto& c : real) {
    mpfr_add(lo.get(), lo.get(), c.range.lower.get(), MPFR_RNDD);
    mpfr_add(hi.get(), hi.get(), c.range.upper.get(), MPFR_RNDU);
  }
  EXPECT_LE(mpfr_cmp_ui(lo.get(), 1), 0);
  EXPECT_GE(mpfr_cmp_ui(hi.get(), 1), 0);
}

// forwardSpec_eq_sparseForwardSpec fails in binary32 when a displaced expert outputs inf:
// the dense layer multiplies it by its gate 0, and 0 * inf = NaN.
TEST(Binary32Failures, DenseDiffersFromSparseWhenADisplacedExpertIsInfinite) {
  const std::vector<float> x{1.0f};
  auto router = [](std::span<const float>) { return std::vector<float>{2.0f, 0.0f}; };
  auto experts = [](std::size_t e, std::span<const float>) {
    return std::vector<float>{e == 0 ? 3.0f : INFINITY};
  };
  const auto dense = forwardSpec(1, router, experts, std::span<const float>(x));
  const auto sparse = sparseForwardSpec(1, router, experts, std::span<const float>(x));
  EXPECT_TRUE(std::isnan(dense[0]));
  EXPECT_EQ(sparse[0], 3.0f);
}

// ... yet with finite outputs dense and sparse agree bit for bit in binary32 as well:
// the dense sum only adds exact zeros for the displaced experts.
TEST(Binary32Failures, DenseEqualsSparseBitForBitWithFiniteOutputs) {
  const std::vector<float> x{0.5f, -1.25f};
  auto router = [](std::span<const float> v) {
    return std::vector<float>{v[0], v[1], v[0] - v[1], 0.1f, -3.0f};
  };
  auto experts = [](std::size_t e, std::span<const float> v) {
    return std::vector<float>{v[0] * (1.0f + e), v[1] - static_cast<float>(e), -0.0f};
  };
  for (std::size_t k = 0; k <= 6; ++k) {
    const auto dense = forwardSpec(k, router, experts, std::span<const float>(x));
    const auto sparse = sparseForwardSpec(k, router, experts, std::span<const float>(x));
    ASSERT_EQ(dense.size(), sparse.size());
    for (std::size_t c = 0; c < dense.size(); ++c) {
      EXPECT_EQ(std::bit_cast<std::uint32_t>(dense[c]), std::bit_cast<std::uint32_t>(sparse[c]))
          << "k=" << k << " c=" << c;
    }
  }
}

// Rows that are not real numbers: a +inf logit gives NaN probabilities in binary32 (the
// spec is total and still routes, by Lean's literal rank), and the enclosures refuse them.
TEST(Binary32Failures, NonRealRowsGiveNaNInBinary32AndAreRefusedOverTheReals) {
  const std::vector<float> plusInf{1.0f, INFINITY, 0.0f};
  const auto p = softmaxVecSpec(std::span<const float>(plusInf));
  EXPECT_TRUE(std::isnan(p[1]));
  const auto g = gatesVecSpec(1, std::span<const float>(plusInf));  // does not throw
  EXPECT_EQ(g.size(), 3u);
  EXPECT_FALSE(certified::isRealRow(plusInf));
  EXPECT_THROW(certified::softmaxEnclosure(plusInf), SpecError);
  const std::vector<float> allMinusInf{-INFINITY, -INFINITY};
  EXPECT_FALSE(certified::isRealRow(allMinusInf));
  try {
    certified::gatesEnclosure(1, allMinusInf);
    FAIL() << "all -inf row accepted";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("not a real-number row"), std::string::npos);
  }
  const std::vector<float> someMinusInf{-INFINITY, 0.0f};
  EXPECT_TRUE(certified::isRealRow(someMinusInf));
  EXPECT_EQ(certified::softmaxEnclosure(someMinusInf)[0].f32, 0.0f);
  EXPECT_EQ(certified::softmaxEnclosure(someMinusInf)[1].f32, 1.0f);
}

}  // namespace
}  // namespace moe::oracle
