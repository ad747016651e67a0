// The routing family (family.hpp) as property tests, in every context where each holds:
// the reduction to gatesVecSpec (bit for bit in binary32/binary64, exactly over Q), kept
// experts lie in kept groups, exactly min(k, eligible) kept, a constant bias shift keeps
// the same experts (Q), renormalised gates sum to the scale (Q), paramsValid's domain, and
// the literal Lean definitions equal the fast paths.
#include <gtest/gtest.h>

#include <bit>
#include <cstring>

#include "family_test_support.hpp"
#include "moe/oracle/family.hpp"
#include "scores.hpp"

namespace moe::oracle {
namespace {

using testing::drawScores;
using testing::Scenario;

template <class A>
class FamilyProperties : public ::testing::Test {};
TYPED_TEST_SUITE(FamilyProperties, testing::Contexts);

constexpr int kCases = 1500;

// Runs check(p, c) over kCases random valid parameters and adversarial keys (no NaN).
template <class A, class Check>
void forEachCase(std::uint64_t salt, Check&& check) {
  auto rng = testing::makeRng(salt);
  for (int n = 0; n < kCases; ++n) {
    const auto sc = static_cast<Scenario>(n % testing::kScenarios);
    const std::size_t E = testing::pickFamilyE(rng);
    const std::vector<A> c = drawScores<A>(rng, E, sc);
    const RouteParams<A> p = testing::drawParams<A>(rng, E);
    SCOPED_TRACE(std::string("scenario ") + testing::scenarioName(sc) + " " +
                 testing::describeParams(p) + " keys " + testing::describe(c));
    check(p, std::span<const A>(c), rng);
    if (::testing::Test::HasFailure()) return;
  }
}

// Bit for bit in IEEE (so -0 and +0 differ, and NaN equals its own bits); == over Q.
template <class A>
bool sameBits(const std::vector<A>& a, const std::vector<A>& b) {
  if constexpr (std::is_same_v<A, mpq_class>) {
    return a == b;
  } else {
    if (a.size() != b.size()) return false;
    return a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(A)) == 0;
  }
}

// The group-level properties hold where the group scores satisfy StrictWeak: a top-2 sum
// of +inf and -inf keys is NaN, and then (as in Lean) fewer than topkGroups are kept.
template <class A>
bool groupScoresAreNumbers(const RouteParams<A>& p, std::span<const A> c) {
  for (const A& v : groupScores(p.groupScore, p.groups, c)) {
    if (Context<A>::isNaN(v)) return false;
  }
  return true;
}

// routeGatesWith_eq_gatesVecSpecWith: softmax, no bias, G = 1, renormalise, scale 1 is
// gatesVecSpec, whatever topkGroups and groupScore say; bit for bit (x * 1 = x in IEEE, NaN
// included).
template <class A>
void expectReductionBitExact(std::uint64_t salt) {
  auto rng = testing::makeRng(salt);
  for (int n = 0; n < kCases; ++n) {
    const auto sc = static_cast<Scenario>(n % testing::kScenarios);
    const std::vector<A> l = drawScores<A>(rng, testing::pickFamilyE(rng), sc);
    RouteParams<A> p;
    p.k = testing::pickK(rng, l.size());
    p.groupScore = rng() % 2 ? GroupScore::max : GroupScore::top2Sum;
    const std::vector<A> family = routeGates(p, std::span<const A>(l));
    const std::vector<A> seed = gatesVecSpec(p.k, std::span<const A>(l));
    ASSERT_TRUE(sameBits(family, seed))
        << testing::scenarioName(sc) << " k=" << p.k << " logits " << testing::describe(l)
        << "\nfamily " << testing::describe(family) << "\nseed   " << testing::describe(seed);
  }
}

TEST(FamilyReduction, BitExactInBinary32) {
  expectReductionBitExact<float>(101);
}
TEST(FamilyReduction, BitExactInBinary64) {
  expectReductionBitExact<double>(102);
}

// Over Q there is no exp: the reduction is routeGatesFromScores(p, s, s) = gatesFromProbs.
TEST(FamilyReduction, ExactOverRationals) {
  auto rng = testing::makeRng(103);
  for (int n = 0; n < kCases; ++n) {
    const auto sc = static_cast<Scenario>(n % testing::kScenarios);
    const std::vector<mpq_class> s = drawScores<mpq_class>(rng, testing::pickFamilyE(rng), sc);
    RouteParams<mpq_class> p;
    p.k = testing::pickK(rng, s.size());
    const std::span<const mpq_class> ss(s);
    ASSERT_EQ(routeGatesFromScores(p, ss, ss), gatesFromProbs(p.k, ss))
        << "k=" << p.k << " " << testing::describe(s);
  }
}

TYPED_TEST(FamilyProperties, KeptExpertsLieInKeptGroups) {
  forEachCase<TypeParam>(104, [](const auto& p, std::span<const TypeParam> c, auto&) {
    if (!groupScoresAreNumbers(p, c)) return;
    const std::vector<std::size_t> groups = keptGroups(p, c);
    std::vector<bool> groupKept(p.groups, false);
    for (std::size_t g : groups) groupKept[g] = true;
    ASSERT_EQ(groups.size(), std::min(p.topkGroups, p.groups));
    for (std::size_t e : routeKeptExperts(p, c)) {
      ASSERT_TRUE(p.groups == 1 || groupKept[groupOf(c.size(), p.groups, e)]) << "expert " << e;
      ASSERT_TRUE(eligible(p, c, e)) << "expert " << e;
    }
  });
}

TYPED_TEST(FamilyProperties, ExactlyMinKEligibleKept) {  // exactly min(k, eligible)
  forEachCase<TypeParam>(105, [](const auto& p, std::span<const TypeParam> c, auto&) {
    if (!groupScoresAreNumbers(p, c)) return;
    const std::vector<bool> elig = eligibleMask(p, c);
    const std::size_t nEl = static_cast<std::size_t>(std::count(elig.begin(), elig.end(), true));
    const std::size_t expected = std::min(p.k, nEl);
    ASSERT_EQ(routeKeptExperts(p, c).size(), expected);
    const std::vector<bool> mask = routeKeptMaskLiteral(p, c);
    ASSERT_EQ(static_cast<std::size_t>(std::count(mask.begin(), mask.end(), true)), expected);
    // With groups, the eligible experts are exactly the kept groups' experts.
    if (p.groups > 1) {
      ASSERT_EQ(nEl, std::min(p.topkGroups, p.groups) * (c.size() / p.groups));
    }
  });
}

TYPED_TEST(FamilyProperties, LiteralEqualsFast) {
  forEachCase<TypeParam>(106, [](const auto& p, std::span<const TypeParam> c, auto&) {
    const std::vector<std::size_t> r = routeRanks(p, c);
    const std::vector<bool> mask = routeKeptMask(p, c), elig = eligibleMask(p, c);
    const bool small = c.size() <= 24;  // the per-expert literal forms are O(E^2) each
    for (std::size_t e = 0; e < c.size(); ++e) {
      if (small) {
        ASSERT_EQ(r[e], routeRank(p, c, e)) << "e=" << e;
        ASSERT_EQ(mask[e], routeKept(p, c, e)) << "e=" << e;
        ASSERT_EQ(elig[e], eligible(p, c, e)) << "e=" << e;
      }
      ASSERT_EQ(mask[e], elig[e] && r[e] < p.k) << "e=" << e;
    }
    ASSERT_EQ(routeKeptMaskLiteral(p, c), mask);
    ASSERT_EQ(routeKeptExpertsLiteral(p, c), routeKeptExperts(p, c));
    const std::vector<TypeParam> gsc = groupScores(p.groupScore, p.groups, c);
    ASSERT_EQ(keptGroups(p, c), keptExpertsLiteral(p.topkGroups, std::span<const TypeParam>(gsc)));
    for (std::size_t t = 0; t < routeKeptExperts(p, c).size(); ++t) {
      ASSERT_EQ(r[routeKeptExperts(p, c)[t]], t) << "slot " << t;
    }
  });
}

// groupTop2Sum is the best two by beats summed best first: (0 + best) + second.
TYPED_TEST(FamilyProperties, GroupScoresByDefinition) {
  forEachCase<TypeParam>(107, [](const auto& p, std::span<const TypeParam> c, auto&) {
    using C = Context<TypeParam>;
    if (p.groups == 0 || c.empty()) return;
    const std::size_t size = c.size() / p.groups;
    for (std::size_t g = 0; g < p.groups; ++g) {
      const std::span<const TypeParam> keys = c.subspan(g * size, size);
      TypeParam m = keys[0];
      for (const auto& x : keys) m = C::max(m, x);
      ASSERT_TRUE(
          sameBits(std::vector<TypeParam>{groupMax(c, p.groups, g)}, std::vector<TypeParam>{m}));
      if (size < 2) continue;
      std::size_t best = 0, second = 0;
      const std::vector<std::size_t> r = ranks(keys);
      for (std::size_t i = 0; i < size; ++i) {
        if (r[i] == 0) best = i;
        if (r[i] == 1) second = i;
      }
      const TypeParam expected = C::add(C::add(C::zero(), keys[best]), keys[second]);
      ASSERT_TRUE(sameBits(std::vector<TypeParam>{groupTop2Sum(c, p.groups, g)},
                           std::vector<TypeParam>{expected}))
          << "group " << g;
    }
  });
}

// Over Q: c + t for one constant t keeps the same experts, groups
// included (each group score shifts by t or 2t alike).
TEST(FamilyRationals, ConstantBiasShiftKeepsTheSameExperts) {
  forEachCase<mpq_class>(108, [](auto p, std::span<const mpq_class> s, auto& rng) {
    std::vector<mpq_class> b = drawScores<mpq_class>(rng, s.size(), Scenario::kMixed);
    mpq_class t(static_cast<long>(rng() % 2001) - 1000, 1 + rng() % 97);
    t.canonicalize();
    std::vector<mpq_class> shifted = b;
    for (auto& x : shifted) x += t;
    p.bias = b;
    const std::vector<mpq_class> c = biasedKeys(p.bias, s);
    auto q = p;
    q.bias = shifted;
    const std::vector<mpq_class> c2 = biasedKeys(q.bias, s);
    ASSERT_EQ(routeKeptExperts(p, std::span<const mpq_class>(c)),
              routeKeptExperts(q, std::span<const mpq_class>(c2)))
        << "shift " << t.get_str();
    ASSERT_EQ(routeGatesFromScores(p, s, std::span<const mpq_class>(c)),
              routeGatesFromScores(q, s, std::span<const mpq_class>(c2)));
  });
}

// Over Q: positive scores, renormalised, sum of the gates = scale exactly.
TEST(FamilyRationals, RenormalisedGatesSumToTheScale) {
  forEachCase<mpq_class>(109, [](auto p, std::span<const mpq_class> c, auto& rng) {
    std::vector<mpq_class> s(c.size());
    for (auto& x : s) {
      x = mpq_class(1 + static_cast<long>(rng() % 1000), 1 + rng() % 1000);
      x.canonicalize();
    }
    p.renormalize = true;
    p.scale = mpq_class(static_cast<long>(rng() % 41) - 20, 1 + rng() % 8);
    p.scale.canonicalize();
    const std::vector<mpq_class> g = routeGatesFromScores(p, std::span<const mpq_class>(s), c);
    const mpq_class total = sumSpec(std::span<const mpq_class>(g));
    const bool anyKept = !routeKeptExperts(p, c).empty();
    ASSERT_EQ(total, anyKept ? p.scale : mpq_class(0)) << testing::describe(s);
    for (std::size_t e = 0; e < g.size(); ++e) {
      if (!routeKeptMask(p, c)[e]) {
        ASSERT_EQ(g[e], 0) << "e=" << e;
      }
    }
  });
}

// Raw gates are the unbiased scores of the kept experts times the scale, exactly.
TEST(FamilyRationals, RawGatesAreTheUnbiasedScoresTimesScale) {
  forEachCase<mpq_class>(110, [](auto p, std::span<const mpq_class> s, auto& rng) {
    std::vector<mpq_class> b = drawScores<mpq_class>(rng, s.size(), Scenario::kMixed);
    p.bias = b;
    p.renormalize = false;
    p.scale = mpq_class(5, 2);
    const std::vector<mpq_class> c = biasedKeys(p.bias, s);
    const std::vector<mpq_class> g = routeGatesFromScores(p, s, std::span<const mpq_class>(c));
    const std::vector<bool> kept = routeKeptMask(p, std::span<const mpq_class>(c));
    for (std::size_t e = 0; e < s.size(); ++e) {
      ASSERT_EQ(g[e], kept[e] ? mpq_class(s[e] * p.scale) : mpq_class(0)) << "e=" << e;
    }
  });
}

// paramsValid against an independent statement of the domain, on every small combination.
TEST(FamilyParams, ParamsValidDomain) {
  std::vector<float> bias(20, 0.0f);
  for (std::size_t E = 0; E <= 12; ++E) {
    for (std::size_t G = 0; G <= 14; ++G) {
      for (std::size_t t = 0; t <= G + 1; ++t) {
        for (GroupScore gs : {GroupScore::max, GroupScore::top2Sum}) {
          for (std::size_t nb : {std::size_t{0}, E, E + 1}) {
            RouteParams<float> p;
            p.groups = G;
            p.topkGroups = t;
            p.groupScore = gs;
            p.bias = std::span<const float>(bias.data(), nb);
            const bool biasOk = nb == 0 || nb == E;
            const bool groupsOk = G >= 1 && E % G == 0 && t >= 1 && t <= G;
            const bool top2Ok = gs == GroupScore::max || G <= 1 || (G >= 1 && E / G >= 2);
            const bool expected = biasOk && groupsOk && top2Ok;
            ASSERT_EQ(paramsValid(E, p), expected)
                << "E=" << E << " G=" << G << " t=" << t << " nb=" << nb << " "
                << paramsInvalidReason(E, p);
            ASSERT_EQ(paramsInvalidReason(E, p).empty(), expected);
          }
        }
      }
    }
  }
  RouteParams<float> p;
  p.groups = 3;
  EXPECT_NE(paramsInvalidReason(8, p).find("does not divide"), std::string::npos);
  EXPECT_THROW(requireParamsValid("test", 8, p), SpecError);
}

// A hand-checked DeepSeek-V3-shaped case over Q: 4 groups of 2, top 2 groups by top-2 sum,
// k = 3, renormalised, scale 5/2. Keys: group sums 3/2, 2, 3, 4 keep groups 3 and 2
// (experts 4..7); keys there 1, 2, 2, 2 keep 5, 6, 7 (the tie 5/6/7 is exact, all kept);
// their unbiased scores 1/8, 1/4, 1/2 over 7/8, times 5/2: 5/14, 5/7, 10/7.
TEST(FamilyRationals, DeepSeekV3ShapedHandExample) {
  const std::vector<mpq_class> s{
      mpq_class(1, 2), 1, 1, 1, mpq_class(1, 2), mpq_class(1, 8), mpq_class(1, 4), mpq_class(1, 2)};
  const std::vector<mpq_class> b{
      0, 0, 0, 0, mpq_class(1, 2), mpq_class(15, 8), mpq_class(7, 4), mpq_class(3, 2)};
  RouteParams<mpq_class> p;
  p.k = 3;
  p.score = ScoreFn::sigmoid;
  p.bias = b;
  p.groups = 4;
  p.topkGroups = 2;
  p.groupScore = GroupScore::top2Sum;
  p.scale = mpq_class(5, 2);
  const std::vector<mpq_class> c = biasedKeys(p.bias, std::span<const mpq_class>(s));
  const std::span<const mpq_class> cs(c);
  EXPECT_EQ(groupScores(p.groupScore, p.groups, cs),
            (std::vector<mpq_class>{mpq_class(3, 2), 2, 3, 4}));
  EXPECT_EQ(keptGroups(p, cs), (std::vector<std::size_t>{3, 2}));
  EXPECT_EQ(routeKeptExperts(p, cs), (std::vector<std::size_t>{5, 6, 7}));
  EXPECT_EQ(
      routeGatesFromScores(p, std::span<const mpq_class>(s), cs),
      (std::vector<mpq_class>{0, 0, 0, 0, 0, mpq_class(5, 14), mpq_class(5, 7), mpq_class(10, 7)}));
}

// Ties between group scores go to the lower group index; ties between keys to the lower
// expert index (beats), the same rule at both levels.
TEST(FamilyRationals, GroupTiesGoToTheLowerGroup) {
  const std::vector<mpq_class> c{1, 3, 3, 1, 2, 2, 0, 4};
  RouteParams<mpq_class> p;
  p.k = 2;
  p.groups = 4;
  p.topkGroups = 1;
  p.groupScore = GroupScore::top2Sum;  // sums 4, 4, 4, 4: group 0 kept
  const std::span<const mpq_class> cs(c);
  EXPECT_EQ(keptGroups(p, cs), (std::vector<std::size_t>{0}));
  EXPECT_EQ(routeKeptExperts(p, cs), (std::vector<std::size_t>{1, 0}));
  p.groupScore = GroupScore::max;  // maxes 3, 3, 2, 4: group 3 kept
  EXPECT_EQ(routeKeptExperts(p, cs), (std::vector<std::size_t>{7, 6}));
  p.topkGroups = 2;  // 3 then the tie 0/1 to group 0
  EXPECT_EQ(keptGroups(p, cs), (std::vector<std::size_t>{3, 0}));
}

// NaN keys: the fast paths refuse (outside StrictWeak), routeGates stays total as in Lean.
TEST(FamilyNaN, FastRefusesLiteralAnswers) {
  const std::vector<float> c{1.0f, NAN, 2.0f, 0.5f};
  RouteParams<float> p;
  p.k = 2;
  EXPECT_THROW(routeKeptExperts(p, std::span<const float>(c)), SpecError);
  EXPECT_THROW(routeRanks(p, std::span<const float>(c)), SpecError);
  EXPECT_EQ(routeKeptMaskLiteral(p, std::span<const float>(c)),
            keptMaskLiteral(2, std::span<const float>(c)));
  const std::vector<float> g = routeGates(p, std::span<const float>(c));
  EXPECT_EQ(g.size(), 4u);
}

// Outside paramsValid the definitions are still Lean's: G = 0 puts every expert in group 0
// (E/G = 0: no group has members, every group score is zero), a short bias reads zeros.
TEST(FamilyParams, TotalOutsideTheDomainAsLean) {
  const std::vector<double> s{0.25, 0.5, 0.125};
  const std::vector<double> shortBias{1.0};
  EXPECT_EQ(biasedKeys(std::span<const double>(shortBias), std::span<const double>(s)),
            (std::vector<double>{1.25, 0.5, 0.125}));
  RouteParams<double> p;
  p.k = 2;
  p.groups = 0;
  EXPECT_EQ(groupMembers(3, 0, 0).size(), 0u);
  EXPECT_EQ(groupOf(3, 0, 2), 0u);
  EXPECT_FALSE(paramsValid(3, p));
  EXPECT_EQ(routeKeptExperts(p, std::span<const double>(s)), (std::vector<std::size_t>{1, 0}));
}

}  // namespace
}  // namespace moe::oracle
