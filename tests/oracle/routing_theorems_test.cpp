// The routing theorems of Spec.MoE as property tests, in every context where
// they hold (binary32, binary64, exact rationals: all satisfy StrictWeak without NaN).
#include <gtest/gtest.h>

#include "moe/oracle/routing.hpp"
#include "scores.hpp"

namespace moe::oracle {
namespace {

using testing::drawScores;
using testing::Scenario;

template <class A>
class RoutingTheorems : public ::testing::Test {};
TYPED_TEST_SUITE(RoutingTheorems, testing::Contexts);

constexpr int kVectors = 1500;

// Runs `check(s, scenario)` over kVectors random and adversarial score vectors.
template <class A, class Check>
void forEachVector(std::uint64_t salt, Check&& check) {
  auto rng = testing::makeRng(salt);
  for (int n = 0; n < kVectors; ++n) {
    const auto sc = static_cast<Scenario>(n % testing::kScenarios);
    const std::vector<A> s = drawScores<A>(rng, testing::pickE(rng), sc);
    SCOPED_TRACE(std::string("scenario ") + testing::scenarioName(sc) + " scores " +
                 testing::describe(s));
    check(std::span<const A>(s), rng);
    if (::testing::Test::HasFailure()) return;
  }
}

TYPED_TEST(RoutingTheorems, StrictWeakHoldsWithoutNaN) {  // strictWeak_real, IEEE non-NaN
  forEachVector<TypeParam>(1, [](std::span<const TypeParam> s, auto&) {
    const StrictWeakReport r = StrictWeak(s);
    EXPECT_TRUE(r.ok) << r.message();
  });
}

TYPED_TEST(RoutingTheorems, BeatsSelfAndTotal) {  // beats_self, beats_total
  forEachVector<TypeParam>(2, [](std::span<const TypeParam> s, auto&) {
    for (std::size_t i = 0; i < s.size(); ++i) {
      EXPECT_FALSE(beats(s, i, i)) << "i=" << i;
      for (std::size_t j = 0; j < s.size(); ++j) {
        if (i == j) continue;
        EXPECT_TRUE(beats(s, i, j) || beats(s, j, i)) << "i=" << i << " j=" << j;
        // beats_eq_true also gives antisymmetry: never both.
        EXPECT_FALSE(beats(s, i, j) && beats(s, j, i)) << "i=" << i << " j=" << j;
      }
    }
  });
}

TYPED_TEST(RoutingTheorems, BeatsTrans) {  // beats_trans
  forEachVector<TypeParam>(3, [](std::span<const TypeParam> s, auto& rng) {
    const std::size_t n = s.size();
    if (n == 0) return;
    const bool all = n <= 12;  // every triple for small E, 400 random triples otherwise
    const std::size_t count = all ? n * n * n : 400;
    for (std::size_t t = 0; t < count; ++t) {
      const std::size_t a = all ? t / (n * n) : rng() % n, b = all ? (t / n) % n : rng() % n,
                        c = all ? t % n : rng() % n;
      if (beats(s, a, b) && beats(s, b, c)) {
        EXPECT_TRUE(beats(s, a, c)) << "a=" << a << " b=" << b << " c=" << c;
      }
    }
  });
}

TYPED_TEST(RoutingTheorems, RankLtRankLtRankInjective) {  // rank_lt, rank_lt_rank, rank_injective
  forEachVector<TypeParam>(4, [](std::span<const TypeParam> s, auto&) {
    std::vector<bool> seen(s.size(), false);
    for (std::size_t i = 0; i < s.size(); ++i) {
      const std::size_t r = rank(s, i);
      ASSERT_LT(r, s.size()) << "i=" << i;
      EXPECT_FALSE(seen[r]) << "rank " << r << " repeated at i=" << i;
      seen[r] = true;
      for (std::size_t j = 0; j < s.size(); ++j) {
        if (beats(s, i, j)) {
          EXPECT_LT(r, rank(s, j)) << "i=" << i << " j=" << j;
        }
      }
    }
  });
}

TYPED_TEST(RoutingTheorems, CardKeptLengthKeptExpertsBeatsOfKept) {
  // card_kept, length_keptExperts, beats_of_kept
  forEachVector<TypeParam>(5, [](std::span<const TypeParam> s, auto& rng) {
    const std::size_t k = testing::pickK(rng, s.size());
    std::size_t card = 0;
    std::vector<bool> literal(s.size());
    for (std::size_t i = 0; i < s.size(); ++i) card += (literal[i] = kept(k, s, i)) ? 1 : 0;
    EXPECT_EQ(card, std::min(k, s.size())) << "k=" << k;
    const auto list = keptExperts(k, s);
    EXPECT_EQ(list.size(), std::min(k, s.size())) << "k=" << k;
    for (std::size_t i : list) EXPECT_TRUE(literal[i]) << "listed but not kept: " << i;
    for (std::size_t i = 0; i < s.size(); ++i) {
      for (std::size_t j = 0; j < s.size(); ++j) {
        if (literal[i] && !literal[j]) {
          EXPECT_TRUE(beats(s, i, j)) << "i=" << i << " j=" << j;
        }
      }
    }
    // best first: every listed expert beats the next one.
    for (std::size_t t = 1; t < list.size(); ++t) EXPECT_TRUE(beats(s, list[t - 1], list[t]));
  });
}

// kept_dominates is stated over ℝ; binary64 and rationals give exact real comparisons,
// and binary32 numbers are reals too, so it holds in every context here.
TYPED_TEST(RoutingTheorems, KeptDominates) {
  forEachVector<TypeParam>(6, [](std::span<const TypeParam> s, auto& rng) {
    const std::size_t k = testing::pickK(rng, s.size());
    const auto mask = keptMask(k, s);
    for (std::size_t i = 0; i < s.size(); ++i) {
      for (std::size_t j = 0; j < s.size(); ++j) {
        if (mask[i] && !mask[j]) {
          EXPECT_TRUE(s[j] < s[i] || (s[j] == s[i] && i < j)) << "kept " << i << " displaced " << j;
        }
      }
    }
  });
}

// Exact ties go to the lower index; +0 and -0 tie.
TEST(RoutingFacts, TiesGoToLowerIndexAndSignedZerosTie) {
  const std::vector<float> s{-0.0f, 0.0f, 0.0f, -0.0f};
  EXPECT_EQ(keptExperts(2, std::span<const float>(s)), (std::vector<std::size_t>{0, 1}));
  EXPECT_TRUE(beats(std::span<const float>(s), 0, 3));
  EXPECT_FALSE(beats(std::span<const float>(s), 3, 0));
  const std::vector<float> inf{-INFINITY, 1.0f, INFINITY, -INFINITY};
  EXPECT_EQ(keptExperts(4, std::span<const float>(inf)), (std::vector<std::size_t>{2, 1, 0, 3}));
}

TEST(RoutingFacts, NaNScoresThrowNamingTheIndex) {
  const std::vector<float> s{1.0f, NAN, 2.0f};
  try {
    keptExperts(1, std::span<const float>(s));
    FAIL() << "NaN accepted";
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("index 1"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ranks(std::span<const float>(s)), SpecError);
  EXPECT_THROW(keptMask(2, std::span<const float>(s)), SpecError);
  EXPECT_THROW(beats(std::span<const float>(s), 0, 3), SpecError);  // index out of range
}

// NaN breaks StrictWeak's split axiom: a > c but neither a > NaN nor NaN > c.
TEST(RoutingFacts, StrictWeakReportsTheFailedAxiomForNaN) {
  const std::vector<float> s{2.0f, NAN, 1.0f};
  const StrictWeakReport r = StrictWeak(std::span<const float>(s));
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.axiom, "split");
  EXPECT_EQ(r.a, 0u);
  EXPECT_EQ(r.b, 1u);
  EXPECT_EQ(r.c, 2u);
  // With every other score equal, nothing is ever above anything: StrictWeak holds.
  const std::vector<float> flat{1.0f, NAN, 1.0f};
  EXPECT_TRUE(StrictWeak(std::span<const float>(flat)).ok);
}

// A context whose `>` is not a strict weak order: StrictWeak names the axiom it breaks.
struct Weird {
  int v;
};
}  // namespace

template <>
struct Context<Weird> : ContextBase<int> {
  // "x > y" when y = x + 1 (mod 3): a cycle, so transitivity fails.
  static bool gtBool(const Weird& x, const Weird& y) { return (x.v + 1) % 3 == y.v; }
  static bool isNaN(const Weird&) { return false; }
};

namespace {
TEST(RoutingFacts, StrictWeakReportsBrokenTransitivity) {
  const std::vector<Weird> s{{0}, {1}, {2}};
  const StrictWeakReport r = StrictWeak(std::span<const Weird>(s));
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.axiom == "trans" || r.axiom == "split") << r.message();
  const std::vector<Weird> self{{0}, {0}};
  struct Dummy {};
  EXPECT_TRUE(StrictWeak(std::span<const Weird>(self)).ok);
}

}  // namespace
}  // namespace moe::oracle
