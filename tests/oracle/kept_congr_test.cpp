// kept_congr: two score vectors that compare alike keep the same experts. Checked under
// several strictly monotone maps, across contexts: binary32 -> binary64 (exact embedding),
// x -> 2x + 1 and x -> x^3 over the rationals, x -> exp(x) over the reals (MPFR bounds).
#include <gtest/gtest.h>
#include <mpfr.h>

#include "moe/oracle/certified/big_float.hpp"
#include "moe/oracle/routing.hpp"
#include "real_reference.hpp"
#include "scores.hpp"

namespace moe::oracle {

namespace {

using testing::Scenario;

constexpr int kVectors = 1500;

TEST(KeptCongr, Binary32ToBinary64) {
  auto rng = testing::makeRng(21);
  for (int n = 0; n < kVectors; ++n) {
    const auto f = testing::drawFloats(rng, testing::pickE(rng), static_cast<Scenario>(n % 8));
    const auto d = testing::toDoubles(f);
    const std::size_t k = testing::pickK(rng, f.size());
    ASSERT_EQ(keptMask(k, std::span<const float>(f)), keptMask(k, std::span<const double>(d)))
        << testing::describe(f);
  }
}

TEST(KeptCongr, AffineAndCubeOverRationals) {
  auto rng = testing::makeRng(22);
  for (int n = 0; n < kVectors; ++n) {
    const auto q =
        testing::drawScores<mpq_class>(rng, testing::pickE(rng), static_cast<Scenario>(n % 8));
    std::vector<mpq_class> affine, cube;
    for (const auto& x : q) {
      affine.push_back(2 * x + 1);
      cube.push_back(x * x * x);
    }
    const std::size_t k = testing::pickK(rng, q.size());
    const auto base = keptMask(k, std::span<const mpq_class>(q));
    ASSERT_EQ(base, keptMask(k, std::span<const mpq_class>(affine))) << testing::describe(q);
    ASSERT_EQ(base, keptMask(k, std::span<const mpq_class>(cube))) << testing::describe(q);
  }
}

// A map that is NOT strictly monotone (x -> x^2) must be able to change the kept set:
// the property test above is not vacuous.
TEST(KeptCongr, NonMonotoneMapChangesKeptSet) {
  const std::vector<mpq_class> q{mpq_class(-3), mpq_class(1)}, sq{mpq_class(9), mpq_class(1)};
  EXPECT_NE(keptMask(1, std::span<const mpq_class>(q)),
            keptMask(1, std::span<const mpq_class>(sq)));
}

TEST(KeptCongr, ExpOverTheRealsViaCertifiedBounds) {
  auto rng = testing::makeRng(23);
  const Scenario finiteScenarios[] = {Scenario::kNormal, Scenario::kTies, Scenario::kSignedZeros,
                                      Scenario::kSubnormals, Scenario::kUlpApart};
  for (int n = 0; n < 600; ++n) {
    const auto f = testing::drawFloats(rng, testing::pickE(rng), finiteScenarios[n % 5]);
    std::vector<certified::BigFloat> lo, hi;
    lo.reserve(f.size());
    hi.reserve(f.size());
    for (float x : f) {
      // 256 bits separate exp of logits 2^-149 apart (relative gap 2^-149 > 2^-255).
      lo.emplace_back(256);
      hi.emplace_back(256);
      mpfr_set_flt(lo.back().get(), x, MPFR_RNDN);
      mpfr_exp(hi.back().get(), lo.back().get(), MPFR_RNDU);
      mpfr_exp(lo.back().get(), lo.back().get(), MPFR_RNDD);
    }
    std::vector<BoundedReal> e;
    for (std::size_t i = 0; i < f.size(); ++i) e.push_back({&lo[i], &hi[i], f[i]});
    const std::size_t k = testing::pickK(rng, f.size());
    ASSERT_EQ(keptMaskLiteral(k, std::span<const BoundedReal>(e)),
              keptMask(k, std::span<const float>(f)))
        << testing::describe(f);
  }
}

}  // namespace
}  // namespace moe::oracle
