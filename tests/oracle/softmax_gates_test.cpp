// Softmax and gates: TorchLean's order of operations, and over the reals (through the
// certified enclosures) kept_softmax, getScalar_gatesVecSpec_softmax, gatesVecSpec_simplex
// and smx-congr.
#include <gtest/gtest.h>

#include <bit>

#include "moe/oracle/certified/gates.hpp"
#include "moe/oracle/softmax.hpp"
#include "real_reference.hpp"
#include "scores.hpp"

namespace moe::oracle {
namespace {

using testing::Scenario;

// Logits whose real softmax MPFR can separate: finite and moderate, with ties, ±0,
// subnormals, values 1 ulp apart and -inf.
std::vector<float> drawRealRow(std::mt19937_64& rng, int n) {
  static const Scenario finite[] = {Scenario::kNormal, Scenario::kTies, Scenario::kSignedZeros,
                                    Scenario::kSubnormals, Scenario::kUlpApart};
  std::vector<float> l = testing::drawFloats(rng, 1 + testing::pickE(rng), finite[n % 5]);
  if (n % 7 == 0) l[rng() % l.size()] = -INFINITY;
  if (n % 11 == 0 && l.size() > 1) l[0] = -INFINITY;
  if (std::all_of(l.begin(), l.end(), [](float x) { return std::isinf(x); })) l.back() = 0.5f;
  return l;
}

TEST(SoftmaxVecSpec, EmptyRowIsReturnedUnchanged) {
  const std::vector<float> empty;
  EXPECT_TRUE(softmaxVecSpec(std::span<const float>(empty)).empty());
}

TEST(SoftmaxVecSpec, ExpSeesXMinusFoldedMaxInIndexOrder) {
  const std::vector<double> x{1.5, -2.0, 4.0, 4.0, -0.0};
  std::vector<double> seen;
  softmaxVecSpecWith(std::span<const double>(x), [&](double v) {
    seen.push_back(v);
    return 1.0;
  });
  EXPECT_EQ(seen, (std::vector<double>{-2.5, -6.0, 0.0, 0.0, -4.0}));
}

TEST(SoftmaxVecSpec, DenominatorIsALeftFoldSeededWithZero) {
  // e = [1, 2^-24, 2^-24]: ((0 + 1) + 2^-24) + 2^-24 = 1 in binary32 (two ties to even),
  // whereas summing the small terms first would give 1 + 2^-23.
  const std::vector<float> x{0.0f, -1.0f, -2.0f};
  const float e[] = {1.0f, 0x1p-24f, 0x1p-24f};
  std::size_t call = 0;
  const auto p = softmaxVecSpecWith(std::span<const float>(x), [&](float) { return e[call++]; });
  EXPECT_EQ(p[0], 1.0f);
  EXPECT_EQ(p[1], 0x1p-24f);
}

TEST(SoftmaxVecSpec, FloatEvaluationIsTheHostsExpOverTheFoldedDenominator) {
  const std::vector<float> x{0.25f, -1.0f, 3.0f};
  const auto p = softmaxVecSpec(std::span<const float>(x));
  const float e0 = std::exp(0.25f - 3.0f), e1 = std::exp(-1.0f - 3.0f), e2 = std::exp(0.0f);
  const float d = ((0.0f + e0) + e1) + e2;
  EXPECT_EQ(p, (std::vector<float>{e0 / d, e1 / d, e2 / d}));
}

// kept_softmax: over ℝ, routing on the probabilities keeps the top logits. The real
// probabilities are compared through their certified bounds (tight enough to separate
// logits 2^-149 apart); equal logits give exactly equal probabilities.
TEST(GatesOverTheReals, KeptSoftmax) {
  auto rng = testing::makeRng(31);
  certified::EnclosureOptions tight;
  tight.relativeWidthLog2 = -200;
  for (int n = 0; n < 400; ++n) {
    const auto l = drawRealRow(rng, n);
    const auto p = certified::softmaxEnclosure(l, tight);
    const std::size_t k = testing::pickK(rng, l.size());
    // Order of the real probabilities, decided by the bounds.
    for (std::size_t i = 0; i < l.size(); ++i) {
      for (std::size_t j = 0; j < l.size(); ++j) {
        if (l[i] > l[j]) {
          ASSERT_TRUE(mpfr_greater_p(p[i].range.lower.get(), p[j].range.upper.get()))
              << "i=" << i << " j=" << j << " " << testing::describe(l);
        }
      }
    }
    // Routing on the real probabilities (compared through their bounds) keeps the same
    // experts as routing on the logits.
    std::vector<BoundedReal> probs;
    for (std::size_t i = 0; i < l.size(); ++i) {
      probs.push_back({&p[i].range.lower, &p[i].range.upper, l[i]});
    }
    ASSERT_EQ(keptMaskLiteral(k, std::span<const BoundedReal>(probs)),
              keptMask(k, std::span<const float>(l)))
        << testing::describe(l);
  }
}

// getScalar_gatesVecSpec_softmax: the gates of gatesVecSpec over ℝ (kept on the
// probabilities, p_e / sum over the kept set) equal the softmax of the kept logits, which
// is what gatesEnclosure computes with k exponentials.
TEST(GatesOverTheReals, GetScalarGatesVecSpecSoftmax) {
  auto rng = testing::makeRng(32);
  for (int n = 0; n < 600; ++n) {
    const auto l = drawRealRow(rng, n);
    const std::size_t k = testing::pickK(rng, l.size());
    const auto g = certified::gatesEnclosure(k, l);
    const auto ref = testing::gates512(k, l);
    ASSERT_EQ(g.size(), l.size());
    for (std::size_t e = 0; e < l.size(); ++e) {
      ASSERT_TRUE(testing::containsApproximation(g[e].range, ref[e]))
          << "e=" << e << " k=" << k << " " << g[e].range.toString() << " vs " << ref[e].toString()
          << " " << testing::describe(l);
      EXPECT_EQ(g[e].f64, mpfr_get_d(ref[e].get(), MPFR_RNDN)) << "e=" << e;
      EXPECT_LE(g[e].range.relativeWidth(), std::ldexp(1.0, -60)) << "e=" << e;
    }
  }
}

// gatesVecSpec_simplex: with k > 0 and E > 0 the gates are >= 0 and sum to 1 over ℝ:
// the sum of the lower bounds is <= 1 <= the sum of the upper bounds.
TEST(GatesOverTheReals, GatesVecSpecSimplex) {
  auto rng = testing::makeRng(33);
  for (int n = 0; n < 1000; ++n) {
    const auto l = drawRealRow(rng, n);
    const std::size_t k = 1 + rng() % (l.size() + 1);
    const auto g = certified::gatesEnclosure(k, l);
    certified::BigFloat lo(256), hi(256);
    for (const auto& c : g) {
      ASSERT_GE(mpfr_sgn(c.range.lower.get()), 0);
      mpfr_add(lo.get(), lo.get(), c.range.lower.get(), MPFR_RNDD);
      mpfr_add(hi.get(), hi.get(), c.range.upper.get(), MPFR_RNDU);
    }
    ASSERT_LE(mpfr_cmp_ui(lo.get(), 1), 0) << testing::describe(l);
    ASSERT_GE(mpfr_cmp_ui(hi.get(), 1), 0) << testing::describe(l);
  }
  // k = 0 keeps nothing: every gate is exactly 0 (the theorem needs 0 < k).
  const std::vector<float> l{1.0f, 2.0f};
  for (const auto& c : certified::gatesEnclosure(0, l)) {
    EXPECT_TRUE(c.range.isPoint());
    EXPECT_EQ(c.f32, 0.0f);
  }
}

// smx-congr: logits that agree everywhere give the same softmax, also when they agree as
// reals but differ as bit patterns (+0 and -0).
TEST(GatesOverTheReals, SmxCongr) {
  auto rng = testing::makeRng(34);
  for (int n = 0; n < 500; ++n) {
    auto w = drawRealRow(rng, n);
    auto w2 = w;
    for (auto& x : w2) {
      if (x == 0.0f) x = std::signbit(x) ? 0.0f : -0.0f;  // same real, other bit pattern
    }
    const auto pf = softmaxVecSpec(std::span<const float>(w));
    const auto pf2 = softmaxVecSpec(std::span<const float>(w2));
    for (std::size_t i = 0; i < w.size(); ++i) {
      EXPECT_EQ(std::bit_cast<std::uint32_t>(pf[i]), std::bit_cast<std::uint32_t>(pf2[i]));
    }
    const auto p = certified::softmaxEnclosure(w), p2 = certified::softmaxEnclosure(w2);
    for (std::size_t i = 0; i < w.size(); ++i) {
      EXPECT_EQ(p[i].f64, p2[i].f64);
      EXPECT_TRUE(mpfr_equal_p(p[i].range.lower.get(), p2[i].range.lower.get()));
    }
  }
}

}  // namespace
}  // namespace moe::oracle
