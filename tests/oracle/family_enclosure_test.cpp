// The certified enclosures of the routing family (certified/family.hpp): they contain a
// 512-bit reference and the exact rationals where the values are rational, their binary64
// values are within a few ulps of the binary64 spec, exact real ties are decided as ties
// (to the lower index), near ties beyond the precision cap abstain, and over the reals the
// family reduces to gatesEnclosure and sigmoid keeps what softmax keeps.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>

#include "family_test_support.hpp"
#include "moe/oracle/certified/family.hpp"
#include "moe/oracle/certified/gates.hpp"
#include "real_reference.hpp"
#include "scores.hpp"

namespace moe::oracle::certified {
namespace {

using oracle::testing::kReferenceBits;

std::vector<BigFloat> scores512(ScoreFn score, std::span<const float> l) {
  if (score == ScoreFn::softmax) return oracle::testing::softmax512(l);
  std::vector<BigFloat> s;
  for (float x : l) {
    s.emplace_back(kReferenceBits);
    mpfr_set_flt(s.back().get(), -x, MPFR_RNDN);
    mpfr_exp(s.back().get(), s.back().get(), MPFR_RNDN);
    mpfr_add_ui(s.back().get(), s.back().get(), 1, MPFR_RNDN);
    mpfr_ui_div(s.back().get(), 1, s.back().get(), MPFR_RNDN);
  }
  return s;
}

std::vector<BigFloat> keys512(ScoreFn score, std::span<const float> l, std::span<const float> b) {
  std::vector<BigFloat> c = scores512(score, l);
  for (std::size_t e = 0; e < b.size(); ++e) {
    mpfr_add_d(c[e].get(), c[e].get(), static_cast<double>(b[e]), MPFR_RNDN);
  }
  return c;
}

std::vector<BigFloat> groups512(const RouteParams<float>& p, const std::vector<BigFloat>& c) {
  std::vector<BigFloat> out;
  const std::size_t size = c.size() / p.groups;
  for (std::size_t g = 0; g < p.groups; ++g) {
    std::vector<const BigFloat*> v;
    for (std::size_t t = 0; t < size; ++t) v.push_back(&c[g * size + t]);
    std::sort(v.begin(), v.end(), [](const BigFloat* a, const BigFloat* b) {
      return mpfr_greater_p(a->get(), b->get());
    });
    out.emplace_back(kReferenceBits);
    mpfr_set(out.back().get(), v[0]->get(), MPFR_RNDN);
    if (p.groupScore == GroupScore::top2Sum && v.size() > 1) {
      mpfr_add(out.back().get(), out.back().get(), v[1]->get(), MPFR_RNDN);
    }
  }
  return out;
}

// Gates of a kept set from 512-bit scores: s_e [/ sum_S s] * scale.
std::vector<BigFloat> gates512(const RouteParams<float>& p, std::span<const float> l,
                               const std::vector<bool>& kept) {
  const std::vector<BigFloat> s = scores512(p.score, l);
  BigFloat total(kReferenceBits);
  for (std::size_t e = 0; e < l.size(); ++e) {
    if (kept[e]) mpfr_add(total.get(), total.get(), s[e].get(), MPFR_RNDN);
  }
  std::vector<BigFloat> g;
  for (std::size_t e = 0; e < l.size(); ++e) {
    g.emplace_back(kReferenceBits);
    if (!kept[e]) continue;
    mpfr_set(g.back().get(), s[e].get(), MPFR_RNDN);
    if (p.renormalize) mpfr_div(g.back().get(), g.back().get(), total.get(), MPFR_RNDN);
    mpfr_mul_d(g.back().get(), g.back().get(), static_cast<double>(p.scale), MPFR_RNDN);
  }
  return g;
}

void expectCertifies(const Certified& c, const BigFloat& ref, const std::string& where) {
  ASSERT_TRUE(oracle::testing::containsApproximation(c.range, ref))
      << where << ": " << c.range.toString() << " misses " << ref.toString();
  ASSERT_EQ(c.f64, mpfr_get_d(ref.get(), MPFR_RNDN)) << where;
  ASSERT_EQ(c.f32, mpfr_get_flt(ref.get(), MPFR_RNDN)) << where;
}

bool containsRational(const Interval& r, const mpq_class& q) {
  return mpfr_cmp_q(r.lower.get(), q.get_mpq_t()) <= 0 &&
         mpfr_cmp_q(r.upper.get(), q.get_mpq_t()) >= 0;
}

// |a - b| <= ulps binary64 ulps of b.
bool withinUlps(double a, double b, int ulps) {
  if (a == b) return true;
  const double ulp = std::nextafter(std::fabs(b), INFINITY) - std::fabs(b);
  return std::fabs(a - b) <= ulps * ulp;
}

// Logits and biases of a family row: normal values, exact duplicates of earlier experts
// (exact real ties), ±inf and 0 logits for sigmoid; scales 1, 2.5 and -0.75.
struct Row {
  std::vector<float> logits, bias;
  RouteParams<float> p;
};

Row drawRow(std::mt19937_64& rng) {
  Row r;
  const std::size_t E = std::max<std::size_t>(1, oracle::testing::pickFamilyE(rng));
  r.p = oracle::testing::drawParams<float>(rng, E);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  const bool withBias = rng() % 3 != 0;
  for (std::size_t e = 0; e < E; ++e) {
    float l = normal(rng), b = withBias ? normal(rng) / 8 : 0.0f;
    const auto dice = rng() % 8;
    if (dice == 0 && e > 0) {  // an exact duplicate: a real tie
      const std::size_t j = rng() % e;
      l = r.logits[j];
      b = withBias ? r.bias[j] : 0.0f;
    } else if (dice == 1) {
      l = r.p.score == ScoreFn::sigmoid && rng() % 2 ? INFINITY : 0.0f;
    } else if (dice == 2 && e > 0) {
      l = -INFINITY;
    }
    r.logits.push_back(l);
    if (withBias) r.bias.push_back(b);
  }
  if (r.p.score == ScoreFn::softmax &&
      std::isinf(*std::max_element(r.logits.begin(), r.logits.end()))) {
    r.logits[0] = 0.0f;
  }
  r.p.bias = r.bias;
  // A negative scale is in the domain (finite): its gates' enclosures swap their ends.
  const float scales[] = {1.0f, 2.5f, -0.75f};
  r.p.scale = scales[rng() % 3];
  return r;
}

TEST(FamilyEnclosure, SigmoidContainsThe512BitValue) {
  auto rng = oracle::testing::makeRng(201);
  for (int n = 0; n < 300; ++n) {
    auto l = oracle::testing::drawFloats(rng, 1 + rng() % 40,
                                         static_cast<oracle::testing::Scenario>(n % 8));
    for (auto& x : l) {
      if (std::isnan(x)) x = 0.0f;
    }
    const auto s = sigmoidEnclosure(l);
    const auto ref = scores512(ScoreFn::sigmoid, l);
    for (std::size_t i = 0; i < l.size(); ++i) {
      expectCertifies(s[i], ref[i], "l=" + std::to_string(l[i]));
      // the binary64 spec (host exp) is within a few ulps of the real value
      const double spec = sigmoidSpec(static_cast<double>(l[i]));
      ASSERT_TRUE(withinUlps(spec, s[i].f64, 4)) << l[i] << ": " << spec << " vs " << s[i].f64;
    }
  }
  // -inf, 0 and +inf are exact: 0, 1/2, 1.
  const std::vector<float> exact{-INFINITY, 0.0f, -0.0f, INFINITY};
  const auto s = sigmoidEnclosure(exact);
  for (std::size_t i = 0; i < exact.size(); ++i) EXPECT_TRUE(s[i].range.isPoint()) << i;
  EXPECT_EQ(s[1].f64, 0.5);
  EXPECT_EQ(s[3].f64, 1.0);
  EXPECT_THROW(sigmoidEnclosure(std::vector<float>{1.0f, NAN}), SpecError);
}

TEST(FamilyEnclosure, KeysAndGroupScoresContainThe512BitValues) {
  auto rng = oracle::testing::makeRng(202);
  for (int n = 0; n < 300; ++n) {
    const Row r = drawRow(rng);
    SCOPED_TRACE(oracle::testing::describeParams(r.p) + " logits " +
                 oracle::testing::describe(r.logits));
    const auto c = biasedKeysEnclosure(r.p.score, r.logits, r.bias);
    const auto ref = keys512(r.p.score, r.logits, r.bias);
    for (std::size_t e = 0; e < c.size(); ++e) {
      expectCertifies(c[e], ref[e], "key " + std::to_string(e));
    }
    const auto g = groupScoresEnclosure(r.p, r.logits);
    const auto gref = groups512(r.p, ref);
    for (std::size_t t = 0; t < g.size(); ++t) {
      expectCertifies(g[t], gref[t], "group " + std::to_string(t));
    }
    if (HasFailure()) return;
  }
}

// Where every score is rational (sigmoid of 0 and ±inf: 1/2, 1, 0) the family is exact over
// Q: the enclosures contain routeGatesFromScores evaluated in mpq_class, and the decision
// is the rational spec's.
TEST(FamilyEnclosure, ContainsTheRationalValuesOfRationalRows) {
  auto rng = oracle::testing::makeRng(203);
  for (int n = 0; n < 400; ++n) {
    const std::size_t E = 2 * (1 + rng() % 8);
    RouteParams<float> p = oracle::testing::drawParams<float>(rng, E);
    p.score = ScoreFn::sigmoid;
    std::vector<float> l(E), b(E);
    const float pool[] = {0.0f, -INFINITY, INFINITY};
    const float biases[] = {0.0f, 0.5f, -0.5f, 0.25f, 1.0f};
    for (std::size_t e = 0; e < E; ++e) {
      l[e] = pool[rng() % 3];
      b[e] = biases[rng() % 5];
    }
    p.bias = b;
    p.scale = 2.5f;
    std::vector<mpq_class> s(E), bq(E);
    for (std::size_t e = 0; e < E; ++e) {
      s[e] = l[e] == 0.0f ? mpq_class(1, 2) : mpq_class(l[e] > 0 ? 1 : 0);
      bq[e] = mpq_class(static_cast<double>(b[e]));
    }
    RouteParams<mpq_class> q;
    q.k = p.k;
    q.score = p.score;
    q.bias = bq;
    q.groups = p.groups;
    q.topkGroups = p.topkGroups;
    q.groupScore = p.groupScore;
    q.renormalize = p.renormalize;
    q.scale = mpq_class(5, 2);
    const std::vector<mpq_class> c = biasedKeys(q.bias, std::span<const mpq_class>(s));
    const auto keys = biasedKeysEnclosure(p.score, l, b);
    for (std::size_t e = 0; e < E; ++e) ASSERT_TRUE(containsRational(keys[e].range, c[e])) << e;
    SCOPED_TRACE(oracle::testing::describeParams(p) + " logits " + oracle::testing::describe(l) +
                 " bias " + oracle::testing::describe(b));
    const auto decision = routeDecisionEnclosure(p, l);
    ASSERT_TRUE(decision.decided) << decision.tooClose;
    ASSERT_EQ(decision.keptExperts, routeKeptExperts(q, std::span<const mpq_class>(c)));
    const bool allZero = [&] {
      for (std::size_t e : decision.keptExperts) {
        if (s[e] != 0) return false;
      }
      return true;
    }();
    if (p.renormalize && allZero && !decision.keptExperts.empty()) {
      EXPECT_THROW(routeGatesEnclosure(p, l), SpecError);  // 0/0: not a real number
      continue;
    }
    const auto result = routeGatesEnclosure(p, l);
    const auto gq =
        routeGatesFromScores(q, std::span<const mpq_class>(s), std::span<const mpq_class>(c));
    for (std::size_t e = 0; e < E; ++e) {
      ASSERT_TRUE(containsRational(result.gates[e].range, gq[e]))
          << "gate " << e << " " << result.gates[e].range.toString() << " vs " << gq[e].get_str();
    }
  }
}

// The real decision equals the binary64 spec wherever binary64 keys and group scores are
// either bit-equal or clearly apart; the gates contain the 512-bit value and the binary64
// spec is within a few ulps.
TEST(FamilyEnclosure, DecisionAndGatesAgreeWithBinary64WhereItIsClear) {
  auto rng = oracle::testing::makeRng(204);
  int compared = 0;
  for (int n = 0; n < 400; ++n) {
    const Row r = drawRow(rng);
    SCOPED_TRACE(oracle::testing::describeParams(r.p) + " logits " +
                 oracle::testing::describe(r.logits) + " bias " +
                 oracle::testing::describe(r.bias));
    const auto d = routeDecisionEnclosure(r.p, r.logits);
    ASSERT_TRUE(d.decided) << d.tooClose;
    ASSERT_EQ(d.keptExperts.size(),
              std::min(r.p.k, static_cast<std::size_t>(
                                  std::count(d.eligible.begin(), d.eligible.end(), true))));
    // binary64 spec on the same row
    RouteParams<double> p64;
    p64.k = r.p.k;
    p64.score = r.p.score;
    const std::vector<double> l64(r.logits.begin(), r.logits.end()),
        b64(r.bias.begin(), r.bias.end());
    p64.bias = b64;
    p64.groups = r.p.groups;
    p64.topkGroups = r.p.topkGroups;
    p64.groupScore = r.p.groupScore;
    p64.renormalize = r.p.renormalize;
    p64.scale = r.p.scale;
    const std::vector<double> s64 = scoresSpec(p64.score, std::span<const double>(l64));
    const std::vector<double> c64 = biasedKeys(p64.bias, std::span<const double>(s64));
    const std::vector<double> g64 =
        groupScores(p64.groupScore, p64.groups, std::span<const double>(c64));
    auto clear = [](const std::vector<double>& v) {
      for (std::size_t i = 0; i < v.size(); ++i) {
        for (std::size_t j = 0; j < i; ++j) {
          if (v[i] != v[j] && std::fabs(v[i] - v[j]) < 1e-9 * (1 + std::fabs(v[i]))) return false;
        }
      }
      return true;
    };
    const bool renormOfZeros = [&] {
      if (!r.p.renormalize || d.keptExperts.empty()) return false;
      for (std::size_t e : d.keptExperts) {
        if (r.logits[e] != -INFINITY) return false;
      }
      return true;
    }();
    if (renormOfZeros) continue;  // 0/0: routeGatesEnclosure refuses it
    const auto result = routeGatesEnclosure(r.p, r.logits);
    ASSERT_EQ(result.decision.keptExperts, d.keptExperts);
    const auto ref = gates512(r.p, r.logits, d.kept);
    for (std::size_t e = 0; e < r.logits.size(); ++e) {
      expectCertifies(result.gates[e], ref[e], "gate " + std::to_string(e));
    }
    if (!clear(c64) || !clear(g64)) continue;
    ++compared;
    ASSERT_EQ(d.keptExperts, routeKeptExperts(p64, std::span<const double>(c64)));
    const std::vector<double> gates64 =
        routeGatesFromScores(p64, std::span<const double>(s64), std::span<const double>(c64));
    for (std::size_t e = 0; e < r.logits.size(); ++e) {
      ASSERT_TRUE(
          withinUlps(gates64[e], result.gates[e].f64, 8 + 2 * static_cast<int>(r.logits.size())))
          << "gate " << e << ": " << gates64[e] << " vs " << result.gates[e].f64;
    }
  }
  EXPECT_GT(compared, 200);
}

// routeGatesWith_eq_gatesVecSpecWith over the reals: the family's enclosure is gatesEnclosure.
TEST(FamilyEnclosure, ReducesToGatesEnclosure) {
  auto rng = oracle::testing::makeRng(205);
  for (int n = 0; n < 300; ++n) {
    auto l = oracle::testing::drawFloats(rng, 1 + oracle::testing::pickE(rng),
                                         static_cast<oracle::testing::Scenario>(n % 8), false);
    for (auto& x : l) {
      if (std::isnan(x)) x = 0.0f;
    }
    if (!isRealRow(l)) continue;
    RouteParams<float> p;
    p.k = oracle::testing::pickK(rng, l.size());
    const auto family = routeGatesEnclosure(p, l);
    ASSERT_TRUE(family.decision.decided);
    const auto seed = gatesEnclosure(p.k, l);
    for (std::size_t e = 0; e < l.size(); ++e) {
      ASSERT_EQ(std::bit_cast<std::uint64_t>(family.gates[e].f64),
                std::bit_cast<std::uint64_t>(seed[e].f64));
      ASSERT_EQ(std::bit_cast<std::uint32_t>(family.gates[e].f32),
                std::bit_cast<std::uint32_t>(seed[e].f32));
    }
  }
}

// Over the reals, without bias and groups, both keep keptExperts(k, logits).
TEST(FamilyEnclosure, SigmoidAndSoftmaxKeepTheSameExperts) {
  auto rng = oracle::testing::makeRng(206);
  for (int n = 0; n < 400; ++n) {
    auto l = oracle::testing::drawFloats(rng, 1 + oracle::testing::pickE(rng),
                                         static_cast<oracle::testing::Scenario>(n % 8), false);
    for (auto& x : l) {
      if (std::isnan(x)) x = 0.0f;
    }
    if (!isRealRow(l)) continue;
    RouteParams<float> p;
    p.k = oracle::testing::pickK(rng, l.size());
    const auto soft = routeDecisionEnclosure(p, l);
    p.score = ScoreFn::sigmoid;
    const auto sig = routeDecisionEnclosure(p, l);
    ASSERT_TRUE(soft.decided && sig.decided);
    ASSERT_EQ(soft.keptExperts, sig.keptExperts) << oracle::testing::describe(l);
    ASSERT_EQ(sig.keptExperts, keptExperts(p.k, std::span<const float>(l)));
    // The same through the general path (enclosures, group selection): two groups, both
    // kept, so every expert is eligible and the kept set must not change.
    if (l.size() % 2 != 0) continue;
    p.groups = 2;
    p.topkGroups = 2;
    for (ScoreFn f : {ScoreFn::softmax, ScoreFn::sigmoid}) {
      p.score = f;
      const auto viaGroups = routeDecisionEnclosure(p, l);
      ASSERT_TRUE(viaGroups.decided) << viaGroups.tooClose;
      ASSERT_GT(viaGroups.precision, 0);
      ASSERT_EQ(viaGroups.keptExperts, soft.keptExperts) << oracle::testing::describe(l);
    }
  }
}

// Exact real ties that need the exact forms: sigmoid(2) + sigmoid(-2) = 1 = 1/2 + 1/2, and
// a -inf softmax logit (probability 0) against a lone finite one (probability 1).
TEST(FamilyEnclosure, ExactTiesGoToTheLowerIndex) {
  RouteParams<float> p;
  p.k = 1;
  p.score = ScoreFn::sigmoid;
  p.groups = 2;
  p.topkGroups = 1;
  p.groupScore = GroupScore::top2Sum;
  for (const auto& l :
       {std::vector<float>{2.0f, -2.0f, 0.0f, 0.0f}, std::vector<float>{0.0f, 0.0f, 2.0f, -2.0f}}) {
    const auto d = routeDecisionEnclosure(p, l);
    ASSERT_TRUE(d.decided) << d.tooClose;
    EXPECT_EQ(d.keptGroups, (std::vector<bool>{true, false})) << oracle::testing::describe(l);
    const auto g = groupScoresEnclosure(p, l);
    EXPECT_TRUE(g[0].range.isPoint() && g[1].range.isPoint());
    EXPECT_EQ(g[0].f64, 1.0);
  }
  // keys 1/2 + 1/2 and 0 + 1: tie, expert 0 kept
  const std::vector<float> l{0.0f, -INFINITY}, b{0.5f, 1.0f};
  RouteParams<float> q;
  q.k = 1;
  q.score = ScoreFn::sigmoid;
  q.bias = b;
  auto d = routeDecisionEnclosure(q, l);
  ASSERT_TRUE(d.decided);
  EXPECT_EQ(d.keptExperts, (std::vector<std::size_t>{0}));
  // softmax: keys 0 + 1 (logit -inf, bias 1) and 1 + 0 (the one finite logit): tie
  const std::vector<float> l2{-INFINITY, 3.0f}, b2{1.0f, 0.0f};
  q.score = ScoreFn::softmax;
  q.bias = b2;
  d = routeDecisionEnclosure(q, l2);
  ASSERT_TRUE(d.decided);
  EXPECT_EQ(d.keptExperts, (std::vector<std::size_t>{0}));
  // softmax of equal logits is exactly 1/4 each: keys 1/4, 1/2, 1/4, 1/2 keep 1 then 3
  const std::vector<float> l3{1.5f, 1.5f, 1.5f, 1.5f}, b3{0.0f, 0.25f, 0.0f, 0.25f};
  q.bias = b3;
  q.k = 2;
  d = routeDecisionEnclosure(q, l3);
  ASSERT_TRUE(d.decided);
  EXPECT_EQ(d.keptExperts, (std::vector<std::size_t>{1, 3}));
}

// Group sums 1 - e^-300 + e^-600 (logits 300, -600) and exactly 1 (logits 0, 0) differ by
// about 2^-433: decided at 512 bits, abstained when the cap is 160 bits.
TEST(FamilyEnclosure, NearTiesBeyondTheCapAbstain) {
  RouteParams<float> p;
  p.k = 1;
  p.score = ScoreFn::sigmoid;
  p.groups = 2;
  p.topkGroups = 1;
  p.groupScore = GroupScore::top2Sum;
  const std::vector<float> l{300.0f, -600.0f, 0.0f, 0.0f};
  EnclosureOptions capped;
  capped.maxPrecision = 160;
  const auto abstain = routeGatesEnclosure(p, l, capped);
  EXPECT_FALSE(abstain.decision.decided);
  EXPECT_NE(abstain.decision.tooClose.find("groups 1 and 0"), std::string::npos)
      << abstain.decision.tooClose;
  EXPECT_TRUE(abstain.gates.empty());
  const auto decided = routeGatesEnclosure(p, l);
  ASSERT_TRUE(decided.decision.decided) << decided.decision.tooClose;
  EXPECT_EQ(decided.decision.keptGroups, (std::vector<bool>{false, true}));
  EXPECT_GE(decided.decision.precision, 640);
}

// Group 0's second key is a near tie (sigmoid(0.25) and sigmoid(0.25) + 2^-149, biases 0
// and 2^-149), which the first working precision cannot order, so its top-2 sum comes from
// order-free bounds: the two largest lower ends and the two largest upper ends, about
// 0.9002 + 0.5622. Group 1's is 2 sigmoid(1.4), about 1.6044, so group 1 is kept; a bound
// that took group 0's best key twice (1.8) would keep group 0 and its expert 0 at that precision.
TEST(FamilyEnclosure, UndecidedSecondKeysStillBoundTheGroupScore) {
  RouteParams<float> p;
  p.k = 1;  // the kept expert needs no order of the near tie: decided at that precision
  p.score = ScoreFn::sigmoid;
  p.groups = 2;
  p.topkGroups = 1;
  p.groupScore = GroupScore::top2Sum;
  const std::vector<float> bias{0.0f, 0.0f, 0x1p-149f, 0.0f, 0.0f, 0.0f};
  p.bias = bias;
  const std::vector<float> l{2.2f, 0.25f, 0.25f, 1.4f, 1.4f, -5.0f};
  const auto d = routeDecisionEnclosure(p, l);
  ASSERT_TRUE(d.decided) << d.tooClose;
  EXPECT_EQ(d.precision, EnclosureOptions{}.startPrecision);  // decided on the bounds
  EXPECT_EQ(d.keptGroups, (std::vector<bool>{false, true}));
  EXPECT_EQ(d.keptExperts, (std::vector<std::size_t>{3}));  // 3 and 4 tie: the lower
}

TEST(FamilyEnclosure, RefusesRowsAndParametersOutsideTheReals) {
  RouteParams<float> p;
  p.k = 1;
  const std::vector<float> l{1.0f, 2.0f, 3.0f};
  EXPECT_THROW(routeGatesEnclosure(p, std::vector<float>{1.0f, INFINITY}), SpecError);
  p.groups = 2;
  EXPECT_THROW(routeDecisionEnclosure(p, l), SpecError);  // 2 does not divide 3
  p.groups = 1;
  const std::vector<float> nanBias{0.0f, NAN, 0.0f};
  p.bias = nanBias;
  EXPECT_FALSE(isRealRouteRow(p, l));
  p.bias = {};
  p.scale = INFINITY;
  EXPECT_THROW(routeGatesEnclosure(p, l), SpecError);
  p.scale = 1.0f;
  const std::vector<std::size_t> twice{0, 0};
  EXPECT_THROW(routeKeptGatesEnclosure(p, l, twice), SpecError);
  p.score = ScoreFn::sigmoid;
  const std::vector<float> minusInf{-INFINITY, -INFINITY};
  const std::vector<std::size_t> both{0, 1};
  EXPECT_THROW(routeKeptGatesEnclosure(p, minusInf, both), SpecError);  // 0/0
  p.renormalize = false;
  EXPECT_EQ(routeKeptGatesEnclosure(p, minusInf, both)[0].f64, 0.0);
}

}  // namespace
}  // namespace moe::oracle::certified
