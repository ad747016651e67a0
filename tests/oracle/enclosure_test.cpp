// The certified enclosures themselves: they contain a 512-bit reference, are at most 2^-60
// wide, their binary32/binary64 values are the correct roundings, exactly representable
// results come out exact, and bad rows are refused.
#include <gtest/gtest.h>

#include <bit>

#include "../../oracle/src/certified/ziv.hpp"  // detail::roundsUniquely (compiled into moe_oracle)
#include "moe/oracle/certified/gates.hpp"
#include "real_reference.hpp"
#include "scores.hpp"

namespace moe::oracle::certified {
namespace {

using oracle::testing::Scenario;

void expectCertifies(const Certified& c, const BigFloat& ref, const std::string& where) {
  EXPECT_TRUE(oracle::testing::containsApproximation(c.range, ref))
      << where << ": " << c.range.toString() << " misses " << ref.toString();
  EXPECT_EQ(std::bit_cast<std::uint32_t>(c.f32),
            std::bit_cast<std::uint32_t>(mpfr_get_flt(ref.get(), MPFR_RNDN)))
      << where;
  EXPECT_EQ(c.f64, mpfr_get_d(ref.get(), MPFR_RNDN)) << where;
  EXPECT_LE(c.range.relativeWidth(), std::ldexp(1.0, -60)) << where;
  EXPECT_TRUE(c.range.contains(c.f64) || !c.range.isPoint()) << where;
}

TEST(SoftmaxEnclosure, ContainsThe512BitValueOnRandomRows) {
  auto rng = oracle::testing::makeRng(61);
  for (int n = 0; n < 300; ++n) {
    auto l = oracle::testing::drawFloats(rng, 1 + oracle::testing::pickE(rng),
                                         static_cast<Scenario>(n % 3));
    if (n % 5 == 0) l[0] = -INFINITY;
    if (std::all_of(l.begin(), l.end(), [](float x) { return std::isinf(x); })) l.back() = 1.0f;
    const auto p = softmaxEnclosure(l);
    const auto ref = oracle::testing::softmax512(l);
    for (std::size_t i = 0; i < l.size(); ++i) {
      expectCertifies(p[i], ref[i], "i=" + std::to_string(i));
    }
    if (HasFailure()) return;
  }
}

// Outside the fixed-point filter's domain (|logit| >= 64, or l - m < -88) every exponential
// is MPFR's, rounded down, with the next number up as its upper bound. Rows that live
// there: two or three logits, far apart or large, so that a one-ulp slip of a bound at the
// working precision shows against the 512-bit value in about half of them.
TEST(SoftmaxEnclosure, ContainsThe512BitValueWhereMpfrTakesTheExponentials) {
  resetZivStats();
  for (int t = 0; t < 200; ++t) {
    const float step = static_cast<float>(t) / 7.0f;
    const std::vector<std::vector<float>> rows = {{0.0f, -90.0f - step},
                                                  {70.0f + step, 69.0f, 70.5f - step / 3},
                                                  {-65.0f - step, -64.5f, 1.0f}};
    for (const auto& l : rows) {
      const auto p = softmaxEnclosure(l);
      const auto ref = oracle::testing::softmax512(l);
      for (std::size_t i = 0; i < l.size(); ++i) {
        expectCertifies(p[i], ref[i], "t=" + std::to_string(t) + " i=" + std::to_string(i));
      }
    }
    if (HasFailure()) return;
  }
  EXPECT_GT(zivStats().mpfrExps, 600u) << "the rows must take MPFR's exponential";
}

TEST(SoftmaxEnclosure, LargeRowOf4096) {
  auto rng = oracle::testing::makeRng(62);
  const auto l = oracle::testing::drawFloats(rng, 4096, Scenario::kNormal);
  const auto p = softmaxEnclosure(l);
  const auto ref = oracle::testing::softmax512(l);
  for (std::size_t i = 0; i < l.size(); i += 97) {
    expectCertifies(p[i], ref[i], "i=" + std::to_string(i));
  }
}

TEST(KeptGatesEnclosure, ContainsThe512BitValueForAnyKeptSet) {
  auto rng = oracle::testing::makeRng(63);
  for (int n = 0; n < 500; ++n) {
    const auto l = oracle::testing::drawFloats(rng, 1 + rng() % 70, Scenario::kNormal);
    std::vector<std::size_t> set(l.size());
    std::iota(set.begin(), set.end(), std::size_t{0});
    std::shuffle(set.begin(), set.end(), rng);
    set.resize(1 + rng() % l.size());
    const auto g = keptGatesEnclosure(l, set);
    std::vector<float> sub;
    sub.reserve(set.size());
    for (std::size_t j : set) sub.push_back(l[j]);
    const auto ref = oracle::testing::softmax512(sub);  // the gates of S: softmax over S
    for (std::size_t t = 0; t < set.size(); ++t) {
      expectCertifies(g[t], ref[t], "t=" + std::to_string(t));
    }
    if (HasFailure()) return;
  }
}

TEST(KnownValues, EqualLogitsGiveExactFractions) {
  const std::vector<float> two{0.0f, 0.0f};
  for (const auto& c : softmaxEnclosure(two)) {
    EXPECT_TRUE(c.range.isPoint());
    EXPECT_EQ(c.f32, 0.5f);
    EXPECT_EQ(c.f64, 0.5);
  }
  const std::vector<float> four{-0.0f, 0.0f, -0.0f, 0.0f};
  for (const auto& c : softmaxEnclosure(four)) EXPECT_EQ(c.f64, 0.25);
  const std::vector<float> three{7.5f, 7.5f, 7.5f};
  for (const auto& c : softmaxEnclosure(three)) {
    EXPECT_EQ(c.f32, 1.0f / 3.0f);
    EXPECT_EQ(c.f64, 1.0 / 3.0);
  }
}

TEST(KnownValues, ASingleKeptExpertHasGateExactlyOne) {
  const std::vector<float> l{-3.0f, 42.0f, 1e-30f, -INFINITY};
  const auto g = gatesEnclosure(1, l);
  EXPECT_TRUE(g[1].range.isPoint());
  EXPECT_EQ(g[1].f32, 1.0f);
  for (std::size_t e : {0u, 2u, 3u}) EXPECT_EQ(g[e].f64, 0.0);
  const std::vector<std::size_t> only{3};
  EXPECT_THROW(keptGatesEnclosure(l, only), SpecError);  // exp(-inf) / exp(-inf)
}

// softmax [1, 0] = 1 / (1 + e^-1), the logistic function at 1, whose decimal expansion is
// 0.73105857863000487925115924182183627436514464016505651927636590..., and
// softmax [0, -inf] = [1, 0] exactly.
TEST(KnownValues, LogisticAtOne) {
  const std::vector<float> l{1.0f, 0.0f};
  const auto p = softmaxEnclosure(l);
  BigFloat known(200);
  mpfr_set_str(known.get(), "0.73105857863000487925115924182183627436514464016505651927636590", 10,
               MPFR_RNDN);
  EXPECT_TRUE(p[0].range.contains(known)) << p[0].range.toString();
  EXPECT_EQ(p[0].f64, 0.7310585786300049);
  EXPECT_EQ(p[0].f32, 0.731058598f);
  const std::vector<float> minusInf{0.0f, -INFINITY};
  const auto q = softmaxEnclosure(minusInf);
  EXPECT_TRUE(q[0].range.isPoint());
  EXPECT_EQ(q[0].f64, 1.0);
  EXPECT_TRUE(q[1].range.isPoint());
  EXPECT_EQ(q[1].f64, 0.0);
}

// A logit so far below the maximum that MPFR underflows: the bounds stay valid ([0, tiny])
// and both round to 0.
TEST(KnownValues, ExtremeRangeUnderflowsSafely) {
  const std::vector<float> l{3e38f, -3e38f};
  const auto p = softmaxEnclosure(l);
  EXPECT_EQ(p[0].f64, 1.0);
  EXPECT_EQ(p[1].f64, 0.0);
  EXPECT_EQ(mpfr_sgn(p[1].range.lower.get()), 0);
}

TEST(Interval, DoubleBoundsAreRoundedOutward) {
  const std::vector<float> l{0.3f, -1.7f, 2.2f};
  const auto p = softmaxEnclosure(l);
  const auto ref = oracle::testing::softmax512(l);
  for (std::size_t i = 0; i < l.size(); ++i) {
    EXPECT_GE(mpfr_cmp_d(ref[i].get(), p[i].range.lowerDouble()), 0);
    EXPECT_LE(mpfr_cmp_d(ref[i].get(), p[i].range.upperDouble()), 0);
    EXPECT_GE(mpfr_cmp_d(p[i].range.lower.get(), p[i].range.lowerDouble()), 0);
    EXPECT_LE(mpfr_cmp_d(p[i].range.upper.get(), p[i].range.upperDouble()), 0);
    EXPECT_LE(p[i].range.lowerDouble(), p[i].f64);
    EXPECT_GE(p[i].range.upperDouble(), p[i].f64);
    EXPECT_LE(p[i].range.upperDouble() - p[i].range.lowerDouble(), 2 * std::ldexp(p[i].f64, -52));
  }
  const Interval half = Interval::point(0.5);
  EXPECT_TRUE(half.isPoint());
  EXPECT_TRUE(half.contains(0.5));
  EXPECT_FALSE(half.contains(std::nextafter(0.5, 1.0)));
  EXPECT_FALSE(half.contains(NAN));
  EXPECT_EQ(half.relativeWidth(), 0.0);
}

TEST(GatesEnclosure, KBeyondEKeepsEveryExpertAndKZeroNone) {
  const std::vector<float> l{1.0f, -2.0f, 0.5f};
  const auto all = gatesEnclosure(7, l);
  const auto soft = softmaxEnclosure(l);
  for (std::size_t e = 0; e < l.size(); ++e) EXPECT_EQ(all[e].f64, soft[e].f64);
  for (const auto& g : gatesEnclosure(0, l)) EXPECT_EQ(g.f64, 0.0);
  EXPECT_TRUE(gatesEnclosure(3, std::vector<float>{}).empty());
}

TEST(ZivLoop, RefinesFromALowStartPrecisionAndCountsLevels) {
  resetZivStats();
  EnclosureOptions low;
  low.startPrecision = 20;  // too coarse for 2^-60: forces at least two refinements
  const std::vector<float> l{0.1f, 0.2f, -0.3f};
  const auto p = softmaxEnclosure(l, low);
  const auto ref = oracle::testing::softmax512(l);
  for (std::size_t i = 0; i < l.size(); ++i) {
    expectCertifies(p[i], ref[i], "i=" + std::to_string(i));
  }
  const ZivStats stats = zivStats();
  EXPECT_EQ(stats.total(), 1u);
  EXPECT_EQ(stats.decidedAtLevel[0], 0u);
  softmaxEnclosure(l);
  EXPECT_EQ(zivStats().decidedAtLevel[0], 1u);
}

// The Ziv loop's acceptance test on hand-made intervals: an enclosure is decided only when it
// is narrow enough AND both ends round to the same binary32 AND the same binary64; a
// straddled zero only when both ends are below every zero threshold.
// [c - 2^belowLog2, c + 2^aboveLog2] for the centre c = base + 2^extraLog2 (exact at 256 bits;
// extraLog2 = 0 adds nothing).
Interval around(double base, int belowLog2, int aboveLog2, int extraLog2 = 0) {
  Interval r{BigFloat(256), BigFloat(256)};
  BigFloat d(256);
  mpfr_set_d(r.lower.get(), base, MPFR_RNDN);
  if (extraLog2 != 0) {
    mpfr_set_ui_2exp(d.get(), 1, extraLog2, MPFR_RNDN);
    mpfr_add(r.lower.get(), r.lower.get(), d.get(), MPFR_RNDN);
  }
  mpfr_set(r.upper.get(), r.lower.get(), MPFR_RNDN);
  mpfr_set_ui_2exp(d.get(), 1, belowLog2, MPFR_RNDN);
  mpfr_sub(r.lower.get(), r.lower.get(), d.get(), MPFR_RNDD);
  mpfr_set_ui_2exp(d.get(), 1, aboveLog2, MPFR_RNDN);
  mpfr_add(r.upper.get(), r.upper.get(), d.get(), MPFR_RNDU);
  return r;
}

TEST(ZivLoop, RoundsUniquelyDecidesOnlyWhenBothEndsAgreeInBothFormats) {
  float f32 = -1.0f;
  double f64 = -1.0;
  // Around 1 + 2^-24, a binary32 midpoint and a binary64 number: both ends round to it in
  // binary64, but to 1 and 1 + 2^-23 in binary32. Undecided.
  EXPECT_FALSE(detail::roundsUniquely(around(1.0, -70, -70, -24), -60, f32, f64));
  // Around 1 + 2^-53 (a binary64 midpoint, far from any binary32 one): undecided in binary64.
  EXPECT_FALSE(detail::roundsUniquely(around(1.0, -90, -90, -53), -60, f32, f64));
  // Rounding alike in both formats but wider than 2^-60 relative: undecided.
  EXPECT_FALSE(detail::roundsUniquely(around(1.0, -58, -58), -60, f32, f64));
  // Narrow and rounding alike: decided, to the common values.
  ASSERT_TRUE(detail::roundsUniquely(around(0.75, -70, -70), -60, f32, f64));
  EXPECT_EQ(f32, 0.75f);
  EXPECT_EQ(f64, 0.75);
  // A straddled zero is +0 only below 2^-1076 at both ends.
  ASSERT_TRUE(detail::roundsUniquely(around(0.0, -1100, -1100), -60, f32, f64));
  EXPECT_EQ(std::bit_cast<std::uint64_t>(f64), 0u);
  EXPECT_FALSE(detail::roundsUniquely(around(0.0, -1000, -1100), -60, f32, f64));
}

TEST(BadInput, RowsThatAreNotRealAndBadKeptSets) {
  const std::vector<float> nan{0.0f, NAN};
  try {
    softmaxEnclosure(nan);
    FAIL();
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("logit 1 is NaN"), std::string::npos) << e.what();
  }
  const std::vector<float> l{0.0f, 1.0f, 2.0f};
  EXPECT_THROW(keptGatesEnclosure(l, std::vector<std::size_t>{0, 0}), SpecError);
  EXPECT_THROW(keptGatesEnclosure(l, std::vector<std::size_t>{3}), SpecError);
  EXPECT_TRUE(keptGatesEnclosure(l, std::vector<std::size_t>{}).empty());
  EXPECT_TRUE(softmaxEnclosure(std::vector<float>{}).empty());
  EXPECT_TRUE(isRealRow(std::vector<float>{}));
}

}  // namespace
}  // namespace moe::oracle::certified
