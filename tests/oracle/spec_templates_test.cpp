// Property tests of the spec templates themselves, against the seed's statements written out
// here with plain operators (never through another oracle function): over exact rationals
// the statements hold with equality, so any slip in the template (a sum over the wrong set,
// a reversed tie-break, a wrongly seeded fold) shows as a difference, not as rounding.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "moe/oracle/combine.hpp"
#include "moe/oracle/permute.hpp"
#include "moe/oracle/routing.hpp"
#include "moe/oracle/softmax.hpp"
#include "scores.hpp"

namespace moe::oracle {
namespace {

using testing::drawScores;
using testing::Scenario;

mpq_class drawRational(std::mt19937_64& rng, long lo, long hi) {
  mpq_class q(lo + static_cast<long>(rng() % static_cast<unsigned long>(hi - lo + 1)),
              1 + rng() % 6);
  q.canonicalize();
  return q;
}

// Probabilities: non-negative rationals, often tied, normalised to sum 1 on even draws and
// left unnormalised on odd ones ("for any probabilities": the gates must still sum to 1).
std::vector<mpq_class> drawProbabilities(std::mt19937_64& rng, std::size_t E, int n) {
  std::vector<mpq_class> p(E);
  mpq_class total = 0;
  for (auto& v : p) total += (v = drawRational(rng, 0, n % 3 == 0 ? 3 : 20));
  if (n % 2 == 0 && total != 0) {
    for (auto& v : p) v /= total;
  }
  return p;
}

// The seed's `kept` written out: fewer than k experts j have p_j > p_i, or p_j = p_i with
// j < i (rank_lt with beats_eq_true unfolded).
std::vector<bool> keptByStatement(std::size_t k, const std::vector<mpq_class>& p) {
  std::vector<bool> kept(p.size());
  for (std::size_t i = 0; i < p.size(); ++i) {
    std::size_t above = 0;
    for (std::size_t j = 0; j < p.size(); ++j) above += (p[j] > p[i] || (p[j] == p[i] && j < i));
    kept[i] = above < k;
  }
  return kept;
}

// getScalar_gatesVecSpec over ℚ: a kept gate is p_e over the sum of the kept p_j, a
// displaced gate is 0; with a kept probability that is not 0, the gates sum to exactly 1.
TEST(SpecTemplates, GatesFromProbsArePOverTheKeptSumAndSumToOne) {
  auto rng = testing::makeRng(61);
  int summedToOne = 0;
  for (int n = 0; n < 3000; ++n) {
    const auto p = drawProbabilities(rng, testing::pickE(rng), n);
    const std::size_t k = testing::pickK(rng, p.size());
    const auto kept = keptByStatement(k, p);
    mpq_class keptSum = 0;
    for (std::size_t j = 0; j < p.size(); ++j) keptSum += kept[j] ? p[j] : mpq_class(0);
    const auto g = gatesFromProbs(k, std::span<const mpq_class>(p));
    SCOPED_TRACE("k=" + std::to_string(k) + " p=" + testing::describe(p));
    ASSERT_EQ(g.size(), p.size());
    mpq_class sum = 0;
    for (std::size_t e = 0; e < p.size(); ++e) {
      const mpq_class expected = kept[e] && keptSum != 0 ? mpq_class(p[e] / keptSum) : 0;
      ASSERT_EQ(g[e], expected) << "e=" << e << " kept=" << kept[e];
      sum += g[e];
    }
    if (keptSum != 0) {
      ASSERT_EQ(sum, 1) << "gatesVecSpec_simplex over Q";
      ++summedToOne;
    }
  }
  EXPECT_GT(summedToOne, 1500);
}

// forwardSpec and sparseForwardSpec from the probabilities over ℚ: both equal the sum over
// the kept experts of (p_e / kept sum) * out_e, computed here directly.
TEST(SpecTemplates, ForwardFromProbsIsTheKeptGateWeightedSumOfOutputs) {
  auto rng = testing::makeRng(62);
  for (int n = 0; n < 1500; ++n) {
    const std::size_t E = 1 + rng() % 12, dIn = 1 + rng() % 3, dOut = 1 + rng() % 3;
    const auto p = drawProbabilities(rng, E, n);
    const std::size_t k = testing::pickK(rng, E);
    std::vector<mpq_class> x(dIn), W(E * dOut * dIn);
    for (auto& v : x) v = drawRational(rng, -9, 9);
    for (auto& v : W) v = drawRational(rng, -9, 9);
    auto experts = [&](std::size_t e, std::span<const mpq_class> in) {
      std::vector<mpq_class> out(dOut, 0);
      for (std::size_t c = 0; c < dOut; ++c) {
        for (std::size_t i = 0; i < dIn; ++i) out[c] += W[(e * dOut + c) * dIn + i] * in[i];
      }
      return out;
    };
    const auto kept = keptByStatement(k, p);
    mpq_class keptSum = 0;
    for (std::size_t j = 0; j < E; ++j) keptSum += kept[j] ? p[j] : mpq_class(0);
    std::vector<mpq_class> expected(dOut, 0);
    for (std::size_t e = 0; e < E; ++e) {
      if (!kept[e] || keptSum == 0) continue;
      const auto out = experts(e, std::span<const mpq_class>(x));
      for (std::size_t c = 0; c < dOut; ++c) expected[c] += p[e] / keptSum * out[c];
    }
    SCOPED_TRACE("k=" + std::to_string(k) + " p=" + testing::describe(p));
    const std::span<const mpq_class> ps(p), xs(x);
    ASSERT_EQ(forwardSpecFromProbs(k, ps, experts, xs), expected) << "dense";
    ASSERT_EQ(sparseForwardSpecFromProbs(k, ps, experts, xs), expected) << "sparse";
  }
}

template <class A>
class BeatsStatement : public ::testing::Test {};
TYPED_TEST_SUITE(BeatsStatement, testing::Contexts);

// beats_eq_true, both directions, over every ordered pair: beats s j i is exactly
// s_j > s_i ∨ (j < i ∧ ¬ s_i > s_j). NaN included in binary32/64: the definition is total.
TYPED_TEST(BeatsStatement, BeatsEqTrueOverAllPairs) {
  auto rng = testing::makeRng(63);
  for (int n = 0; n < 1500; ++n) {
    auto s = drawScores<TypeParam>(rng, testing::pickE(rng) % 40,
                                   static_cast<Scenario>(n % testing::kScenarios));
    if constexpr (!std::is_same_v<TypeParam, mpq_class>) {
      if (n % 5 == 0 && !s.empty())
        s[rng() % s.size()] = std::numeric_limits<TypeParam>::quiet_NaN();
    }
    const std::span<const TypeParam> v(s);
    for (std::size_t j = 0; j < s.size(); ++j) {
      for (std::size_t i = 0; i < s.size(); ++i) {
        const bool statement = s[j] > s[i] || (j < i && !(s[i] > s[j]));
        ASSERT_EQ(beats(v, j, i), statement) << "j=" << j << " i=" << i << testing::describe(s);
      }
    }
  }
}

// The fast ranking's comparator is the same statement: the sorted order (ranks) puts j
// before i exactly when the statement says j beats i.
TYPED_TEST(BeatsStatement, FastRanksOrderByTheStatement) {
  auto rng = testing::makeRng(64);
  for (int n = 0; n < 1500; ++n) {
    const auto s = drawScores<TypeParam>(rng, testing::pickE(rng) % 40,
                                         static_cast<Scenario>(n % testing::kScenarios));
    const auto r = ranks(std::span<const TypeParam>(s));
    for (std::size_t j = 0; j < s.size(); ++j) {
      for (std::size_t i = 0; i < s.size(); ++i) {
        if (i == j) continue;
        const bool statement = s[j] > s[i] || (j < i && !(s[i] > s[j]));
        ASSERT_EQ(r[j] < r[i], statement) << "j=" << j << " i=" << i << testing::describe(s);
      }
    }
  }
}

// A rational stand-in for exp on x <= 0 (positive, increasing, 1 at 0): 1 / (1 - x + x^2/2).
mpq_class expStandIn(const mpq_class& x) {
  const mpq_class d = 1 - x + x * x / 2;
  return d == 0 ? mpq_class(0) : mpq_class(1 / d);
}

template <class A>
A exactMax(const std::vector<A>& x) {
  A m = x[0];
  for (const A& v : x) m = v > m ? v : m;
  return m;
}

// softmaxVecSpec's max is a fold seeded with x0, not with 0: on a row of negative logits
// every exp argument is x_i - max x, so the largest argument is exactly 0 and none is
// above 0. A fold seeded with 0 would pass x_i itself (all negative).
template <class A>
void expectArgumentsAreXMinusMax(const std::vector<A>& x, const std::vector<A>& arguments) {
  ASSERT_EQ(arguments.size(), x.size());
  const A m = exactMax(x);
  for (std::size_t i = 0; i < x.size(); ++i) {
    ASSERT_TRUE(arguments[i] == x[i] - m) << "i=" << i << testing::describe(x);
  }
  ASSERT_TRUE(exactMax(arguments) == A(0)) << testing::describe(x);
}

TEST(SpecTemplates, SoftmaxOnAllNegativeLogitsPinsTheSeedOfTheMaxFold) {
  auto rng = testing::makeRng(65);
  for (int n = 0; n < 2000; ++n) {
    const std::size_t E = 1 + rng() % 17;
    std::vector<float> f(E);
    for (auto& v : f) {
      v = -std::fabs(testing::drawFloat(rng, static_cast<Scenario>(n % 3)));
      if (!(v < 0.0f) || std::isinf(v)) v = -0.5f - static_cast<float>(rng() % 8);
    }
    std::vector<float> args32;
    softmaxVecSpecWith(std::span<const float>(f), [&](float a) {
      args32.push_back(a);
      return std::exp(a);
    });
    expectArgumentsAreXMinusMax(f, args32);
    const std::vector<double> d = testing::toDoubles(f);
    std::vector<double> args64;
    softmaxVecSpecWith(std::span<const double>(d), [&](double a) {
      args64.push_back(a);
      return std::exp(a);
    });
    expectArgumentsAreXMinusMax(d, args64);
    std::vector<mpq_class> q(E), argsQ;
    for (auto& v : q) v = drawRational(rng, -40, -1);
    const auto p = softmaxVecSpecWith(std::span<const mpq_class>(q), [&](const mpq_class& a) {
      argsQ.push_back(a);
      return expStandIn(a);
    });
    expectArgumentsAreXMinusMax(q, argsQ);
    // The stand-in is not shift-invariant, so the output itself pins the seed too.
    mpq_class denom = 0;
    for (const auto& v : q) denom += expStandIn(v - exactMax(q));
    for (std::size_t i = 0; i < E; ++i) ASSERT_EQ(p[i], expStandIn(q[i] - exactMax(q)) / denom);
    if (HasFailure()) return;
  }
}

// moe-gate-permute for the softmax alone: over ℚ it always relabels, ties or not, for any
// exponential (here the stand-in): the max of the values and an exact sum ignore order.
TEST(SpecTemplates, RelabellingTheSoftmaxAlwaysPermutesOverRationals) {
  auto rng = testing::makeRng(66);
  int tied = 0;
  for (int n = 0; n < 2000; ++n) {
    const std::size_t E = 1 + rng() % 12;
    std::vector<mpq_class> x(E);
    for (auto& v : x) v = drawRational(rng, n % 2 ? -2 : -12, n % 2 ? 2 : 12);
    std::vector<std::size_t> perm(E);
    std::iota(perm.begin(), perm.end(), std::size_t{0});
    std::shuffle(perm.begin(), perm.end(), rng);
    const auto xe = relabel(std::span<const mpq_class>(x), std::span<const std::size_t>(perm));
    const auto p = softmaxVecSpecWith(std::span<const mpq_class>(x), expStandIn);
    const auto pe = softmaxVecSpecWith(std::span<const mpq_class>(xe), expStandIn);
    for (std::size_t i = 0; i < E; ++i) {
      ASSERT_EQ(pe[i], p[perm[i]]) << "i=" << i << testing::describe(x);
    }
    for (std::size_t i = 1; i < E; ++i) tied += x[i] == x[0] ? 1 : 0;
  }
  EXPECT_GT(tied, 100) << "the rows must include ties";
}

}  // namespace
}  // namespace moe::oracle
