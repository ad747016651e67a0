// combineSpec_apply and forwardSpec_eq_sparseForwardSpec over exact rationals (the theorems
// are stated over ℝ; ℚ is exact, so they hold there bit for bit), with linear experts and
// rational router probabilities.
#include <gtest/gtest.h>

#include "moe/oracle/combine.hpp"
#include "scores.hpp"

namespace moe::oracle {
namespace {

mpq_class drawRational(std::mt19937_64& rng) {
  mpq_class q(static_cast<long>(rng() % 41) - 20, 1 + rng() % 9);
  q.canonicalize();
  return q;
}

TEST(CombineSpec, ApplyIsTheSumOverExpertsOfGateTimesOutput) {  // combineSpec_apply
  auto rng = testing::makeRng(41);
  for (int n = 0; n < 1000; ++n) {
    const std::size_t E = testing::pickE(rng), width = rng() % 6;
    std::vector<mpq_class> g(E);
    for (auto& x : g) x = drawRational(rng);
    std::vector<std::vector<mpq_class>> outs(E, std::vector<mpq_class>(width));
    for (auto& o : outs) {
      for (auto& x : o) x = drawRational(rng);
    }
    const auto y =
        combineSpec(std::span<const mpq_class>(g), std::span<const std::vector<mpq_class>>(outs));
    ASSERT_EQ(y.size(), E == 0 ? 0 : width);
    for (std::size_t c = 0; c < y.size(); ++c) {
      mpq_class expected = 0;
      for (std::size_t e = E; e-- > 0;) expected += g[e] * outs[e][c];  // any order: exact
      ASSERT_EQ(y[c], expected) << "c=" << c;
    }
  }
}

TEST(CombineSpec, MismatchedSizesThrowWithBothSizes) {
  const std::vector<double> g{0.5, 0.5};
  const std::vector<std::vector<double>> outs{{1.0}};
  try {
    combineSpec(std::span<const double>(g), std::span<const std::vector<double>>(outs));
    FAIL();
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("2 vs 1"), std::string::npos) << e.what();
  }
  const std::vector<std::vector<double>> ragged{{1.0}, {1.0, 2.0}};
  EXPECT_THROW(
      combineSpec(std::span<const double>(g), std::span<const std::vector<double>>(ragged)),
      SpecError);
}

// forwardSpec_eq_sparseForwardSpec over ℚ: random linear experts W_e x, random rational
// router probabilities (positive, summing to 1, with ties), every k.
TEST(ForwardSpec, DenseEqualsSparseOverRationals) {
  auto rng = testing::makeRng(42);
  for (int n = 0; n < 800; ++n) {
    const std::size_t E = 1 + rng() % 12, dIn = 1 + rng() % 4, dOut = 1 + rng() % 4;
    std::vector<mpq_class> x(dIn);
    for (auto& v : x) v = drawRational(rng);
    std::vector<mpq_class> W(E * dOut * dIn);
    for (auto& v : W) v = drawRational(rng);
    std::vector<mpq_class> p(E);
    mpq_class total = 0;
    for (auto& v : p) total += (v = mpq_class(1 + rng() % 4));  // small range: many ties
    for (auto& v : p) v /= total;
    auto experts = [&](std::size_t e, std::span<const mpq_class> in) {
      std::vector<mpq_class> out(dOut, 0);
      for (std::size_t c = 0; c < dOut; ++c) {
        for (std::size_t i = 0; i < dIn; ++i) out[c] += W[(e * dOut + c) * dIn + i] * in[i];
      }
      return out;
    };
    const std::size_t k = testing::pickK(rng, E);
    const auto dense = forwardSpecFromProbs(k, std::span<const mpq_class>(p), experts,
                                            std::span<const mpq_class>(x));
    const auto sparse = sparseForwardSpecFromProbs(k, std::span<const mpq_class>(p), experts,
                                                   std::span<const mpq_class>(x));
    ASSERT_EQ(dense, sparse) << "k=" << k << " probs " << testing::describe(p);
  }
}

// The sparse block runs only the kept experts; the dense layer runs every expert.
TEST(ForwardSpec, SparseRunsOnlyTheKeptExperts) {
  const std::vector<mpq_class> p{mpq_class(1, 2), mpq_class(1, 3), mpq_class(1, 6)};
  const std::vector<mpq_class> x{mpq_class(1)};
  std::vector<std::size_t> ran;
  auto experts = [&](std::size_t e, std::span<const mpq_class>) {
    ran.push_back(e);
    return std::vector<mpq_class>{mpq_class(static_cast<long>(e))};
  };
  const auto y = sparseForwardSpecFromProbs(2, std::span<const mpq_class>(p), experts,
                                            std::span<const mpq_class>(x));
  EXPECT_EQ(ran, (std::vector<std::size_t>{0, 1}));
  EXPECT_EQ(y[0], mpq_class(2, 5));  // gates 3/5, 2/5 on outputs 0, 1
  ran.clear();
  forwardSpecFromProbs(2, std::span<const mpq_class>(p), experts, std::span<const mpq_class>(x));
  EXPECT_EQ(ran, (std::vector<std::size_t>{0, 1, 2}));
}

}  // namespace
}  // namespace moe::oracle
