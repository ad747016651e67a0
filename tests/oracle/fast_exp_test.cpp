// The fixed-point exponential of the first Ziv level: its enclosure must contain exp(l - m)
// (checked against MPFR at 512 bits) over its whole domain, with the special points
// (l == m, subnormal differences, the -88 edge, values 1 ulp apart) swept on purpose.
#include "moe/oracle/certified/fast_exp.hpp"

#include <gtest/gtest.h>

#include "moe/oracle/certified/big_float.hpp"
#include "test_support.hpp"

namespace moe::oracle::certified {
namespace {

// exp(l - m) at 512 bits, for comparison with the fast enclosure.
BigFloat exp512(float l, float m) {
  BigFloat v(512);
  mpfr_set_flt(v.get(), l, MPFR_RNDN);
  mpfr_sub_d(v.get(), v.get(), m, MPFR_RNDN);  // exact at 512 bits
  mpfr_exp(v.get(), v.get(), MPFR_RNDN);
  return v;
}

// Checks containment and that the enclosure is at most 2^-97 wide (relative).
void expectEncloses(float l, float m) {
  BigFloat lo(128), hi(128);  // wide enough to see the intrinsic width, not a rounding
  ASSERT_TRUE(detail::fastExpEnclosure(l, m, lo.get(), hi.get())) << l << " " << m;
  const BigFloat ref = exp512(l, m);
  EXPECT_TRUE(mpfr_lessequal_p(lo.get(), ref.get()) && mpfr_lessequal_p(ref.get(), hi.get()))
      << "l=" << l << " (" << std::hexfloat << l << ") m=" << m << " [" << lo.toString() << ", "
      << hi.toString() << "] vs " << ref.toString();
  BigFloat width(64);
  mpfr_sub(width.get(), hi.get(), lo.get(), MPFR_RNDU);
  mpfr_div(width.get(), width.get(), lo.get(), MPFR_RNDU);
  EXPECT_LE(mpfr_get_d(width.get(), MPFR_RNDU), std::ldexp(1.0, -97)) << l << " " << m;
}

TEST(FastExp, RandomArgumentsOverTheWholeDomain) {
  auto rng = oracle::testing::makeRng(81);
  std::uniform_real_distribution<float> mDist(-63.0f, 63.0f), dDist(-88.0f, 0.0f);
  for (int n = 0; n < 20000; ++n) {
    const float m = mDist(rng);
    const float l = std::max(m + dDist(rng), -63.9f);
    if (!(l <= m) || m - l > 88.0f) continue;
    expectEncloses(l, m);
    if (HasFailure()) return;
  }
}

TEST(FastExp, SpecialPoints) {
  // l == m, +0 and -0: exactly 1.
  BigFloat lo(80), hi(80);
  ASSERT_TRUE(detail::fastExpEnclosure(-0.0f, 0.0f, lo.get(), hi.get()));
  EXPECT_EQ(mpfr_cmp_ui(lo.get(), 1), 0);
  EXPECT_EQ(mpfr_cmp_ui(hi.get(), 1), 0);
  // Differences of one ulp, subnormal differences, the domain's edges.
  expectEncloses(std::nextafter(1.0f, 0.0f), 1.0f);
  expectEncloses(0.0f, 0x1p-149f);
  expectEncloses(-0x1p-149f, 0x1p-149f);
  expectEncloses(0.0f, 0x1p-30f);
  expectEncloses(-44.0f, 44.0f);
  expectEncloses(-63.99f, 24.0f);
  expectEncloses(-1.0f, 63.99f - 63.99f);
  for (int j = 0; j < 256; ++j) {  // every table entry, with r near 0 and near ±C/2
    const float d = -static_cast<float>(j) * 0.693147182f / 256.0f;
    expectEncloses(d, 0.0f);
    expectEncloses(d - 0.0013f, 0.0f);
    expectEncloses(d + 0.0013f > 0 ? d : d + 0.0013f, 0.0f);
  }
}

TEST(FastExp, DeclinesOutsideItsDomain) {
  BigFloat lo(80), hi(80);
  EXPECT_FALSE(detail::fastExpEnclosure(-100.0f, 0.0f, lo.get(), hi.get()));  // d < -88
  EXPECT_FALSE(detail::fastExpEnclosure(1.0f, 0.0f, lo.get(), hi.get()));     // l > m
  EXPECT_FALSE(detail::fastExpEnclosure(0.0f, 64.0f, lo.get(), hi.get()));    // |m| >= 64
  EXPECT_FALSE(detail::fastExpEnclosure(-INFINITY, 0.0f, lo.get(), hi.get()));
  EXPECT_FALSE(detail::fastExpEnclosure(NAN, 0.0f, lo.get(), hi.get()));
}

}  // namespace
}  // namespace moe::oracle::certified
