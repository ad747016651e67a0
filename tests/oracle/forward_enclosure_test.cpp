// Certified router logits, combine and dense/sparse forward passes (linear and SwiGLU
// experts) against an independent reference: exact rationals for everything without exp,
// MPFR at 512 bits for the exponentials. Over ℝ dense = sparse
// (forwardSpec_eq_sparseForwardSpec), so their correctly rounded values must agree.
#include <gtest/gtest.h>

#include <bit>

#include "moe/oracle/certified/forward.hpp"
#include "moe/oracle/routing.hpp"
#include "real_reference.hpp"
#include "scores.hpp"

namespace moe::oracle::certified {
namespace {

using oracle::testing::kReferenceBits;

float smallFloat(std::mt19937_64& rng) {
  // Few distinct values so router logits often tie exactly.
  return static_cast<float>(static_cast<int>(rng() % 9) - 4) * 0.375f;
}

std::vector<float> drawVector(std::mt19937_64& rng, std::size_t n) {
  std::vector<float> v(n);
  for (auto& x : v) x = rng() % 3 ? smallFloat(rng) : std::normal_distribution<float>(0, 1)(rng);
  return v;
}

mpq_class dotQ(std::size_t n, const float* a, std::size_t as, const float* b, std::size_t bs) {
  mpq_class s = 0;
  for (std::size_t i = 0; i < n; ++i) s += mpq_class(a[i * as]) * mpq_class(b[i * bs]);
  return s;
}

BigFloat toBig(const mpq_class& q) {
  BigFloat r(kReferenceBits);
  mpfr_set_q(r.get(), q.get_mpq_t(), MPFR_RNDN);
  return r;
}

// Gates over ℝ from exact rational logits: kept by exact comparison, softmax of the kept
// logits at 512 bits.
std::vector<BigFloat> referenceGates(std::size_t k, const std::vector<mpq_class>& logits) {
  const auto kept = keptExperts(k, std::span<const mpq_class>(logits));
  std::vector<BigFloat> g;
  for (std::size_t e = 0; e < logits.size(); ++e) g.emplace_back(kReferenceBits);
  if (kept.empty()) return g;
  BigFloat sum(kReferenceBits);
  std::vector<BigFloat> ex;
  for (std::size_t e : kept) {
    ex.push_back(toBig(logits[e] - logits[kept[0]]));
    mpfr_exp(ex.back().get(), ex.back().get(), MPFR_RNDN);
    mpfr_add(sum.get(), sum.get(), ex.back().get(), MPFR_RNDN);
  }
  for (std::size_t t = 0; t < kept.size(); ++t) {
    mpfr_div(g[kept[t]].get(), ex[t].get(), sum.get(), MPFR_RNDN);
  }
  return g;
}

struct Instance {
  std::vector<float> x;
  RouterWeights router;
  std::vector<mpq_class> logits;
};

Instance drawInstance(std::mt19937_64& rng, std::size_t E, std::size_t dIn) {
  Instance in;
  in.x = drawVector(rng, dIn);
  in.router = {dIn, E, drawVector(rng, dIn * E)};
  for (std::size_t e = 0; e < E; ++e) {
    in.logits.push_back(dotQ(dIn, in.x.data(), 1, in.router.W.data() + e, E));
  }
  return in;
}

void expectCertifies(const Certified& c, const BigFloat& ref, const std::string& where) {
  EXPECT_TRUE(oracle::testing::containsApproximation(c.range, ref))
      << where << ": " << c.range.toString() << " misses " << ref.toString();
  EXPECT_EQ(c.f64, mpfr_get_d(ref.get(), MPFR_RNDN)) << where;
  EXPECT_EQ(c.f32, mpfr_get_flt(ref.get(), MPFR_RNDN)) << where;
}

TEST(RouterLogits, ExactPointsCorrectlyRounded) {
  auto rng = oracle::testing::makeRng(71);
  for (int n = 0; n < 200; ++n) {
    const Instance in = drawInstance(rng, 1 + rng() % 9, 1 + rng() % 7);
    const auto l = routerLogitsEnclosure(in.x, in.router);
    for (std::size_t e = 0; e < l.size(); ++e) {
      EXPECT_TRUE(l[e].range.isPoint());
      expectCertifies(l[e], toBig(in.logits[e]), "e=" + std::to_string(e));
    }
  }
}

TEST(CombineEnclosure, ExactSumOfGateTimesOutput) {
  auto rng = oracle::testing::makeRng(72);
  for (int n = 0; n < 200; ++n) {
    const std::size_t E = 1 + rng() % 8, width = 1 + rng() % 4;
    const auto g = drawVector(rng, E);
    std::vector<std::vector<float>> outs;
    for (std::size_t e = 0; e < E; ++e) outs.push_back(drawVector(rng, width));
    const auto y = combineEnclosure(g, outs);
    for (std::size_t c = 0; c < width; ++c) {
      mpq_class exact = 0;
      for (std::size_t e = 0; e < E; ++e) exact += mpq_class(g[e]) * mpq_class(outs[e][c]);
      EXPECT_TRUE(y[c].range.isPoint());
      expectCertifies(y[c], toBig(exact), "c=" + std::to_string(c));
    }
  }
  EXPECT_THROW(
      combineEnclosure(std::vector<float>{0.0f}, std::vector<std::vector<float>>{{INFINITY}}),
      SpecError);
}

TEST(ForwardEnclosure, LinearExpertsDenseEqualsSparseAndContainsReference) {
  auto rng = oracle::testing::makeRng(73);
  for (int n = 0; n < 150; ++n) {
    const std::size_t E = 1 + rng() % 9, dIn = 1 + rng() % 5, dOut = 1 + rng() % 4;
    const Instance in = drawInstance(rng, E, dIn);
    const LinearExperts ex{E, dIn, dOut, drawVector(rng, E * dOut * dIn)};
    const std::size_t k = oracle::testing::pickK(rng, E);
    const auto dense = denseForwardEnclosure(k, in.x, in.router, ex);
    const auto sparse = sparseForwardEnclosure(k, in.x, in.router, ex);
    const auto g = referenceGates(k, in.logits);
    for (std::size_t c = 0; c < dOut; ++c) {
      BigFloat ref(kReferenceBits), term(kReferenceBits);
      for (std::size_t e = 0; e < E; ++e) {
        const BigFloat out =
            toBig(dotQ(dIn, ex.W.data() + (e * dOut + c) * dIn, 1, in.x.data(), 1));
        mpfr_mul(term.get(), g[e].get(), out.get(), MPFR_RNDN);
        mpfr_add(ref.get(), ref.get(), term.get(), MPFR_RNDN);
      }
      const std::string where = "k=" + std::to_string(k) + " c=" + std::to_string(c);
      expectCertifies(dense[c], ref, "dense " + where);
      expectCertifies(sparse[c], ref, "sparse " + where);
      EXPECT_EQ(dense[c].f64, sparse[c].f64) << where;
    }
    if (HasFailure()) return;
  }
}

TEST(ForwardEnclosure, SwiGluExpertsDenseEqualsSparseAndContainsReference) {
  auto rng = oracle::testing::makeRng(74);
  for (int n = 0; n < 100; ++n) {
    const std::size_t E = 1 + rng() % 6, dIn = 1 + rng() % 4, dH = 1 + rng() % 4,
                      dOut = 1 + rng() % 3;
    const Instance in = drawInstance(rng, E, dIn);
    const SwiGluExperts ex{E,
                           dIn,
                           dH,
                           dOut,
                           drawVector(rng, E * dH * dIn),
                           drawVector(rng, E * dH * dIn),
                           drawVector(rng, E * dOut * dH)};
    const std::size_t k = oracle::testing::pickK(rng, E);
    const auto dense = denseForwardEnclosure(k, in.x, in.router, ex);
    const auto sparse = sparseForwardEnclosure(k, in.x, in.router, ex);
    const auto g = referenceGates(k, in.logits);
    for (std::size_t c = 0; c < dOut; ++c) {
      BigFloat ref(kReferenceBits), term(kReferenceBits), den(kReferenceBits);
      for (std::size_t e = 0; e < E; ++e) {
        BigFloat out(kReferenceBits);
        for (std::size_t h = 0; h < dH; ++h) {
          const std::size_t row = (e * dH + h) * dIn;
          const BigFloat a = toBig(dotQ(dIn, ex.W1.data() + row, 1, in.x.data(), 1));
          const BigFloat b = toBig(dotQ(dIn, ex.W3.data() + row, 1, in.x.data(), 1));
          mpfr_neg(den.get(), a.get(), MPFR_RNDN);
          mpfr_exp(den.get(), den.get(), MPFR_RNDN);
          mpfr_add_ui(den.get(), den.get(), 1, MPFR_RNDN);
          mpfr_div(term.get(), a.get(), den.get(), MPFR_RNDN);  // silu(a)
          mpfr_mul(term.get(), term.get(), b.get(), MPFR_RNDN);
          mpfr_mul_d(term.get(), term.get(), ex.W2[(e * dOut + c) * dH + h], MPFR_RNDN);
          mpfr_add(out.get(), out.get(), term.get(), MPFR_RNDN);
        }
        mpfr_mul(term.get(), g[e].get(), out.get(), MPFR_RNDN);
        mpfr_add(ref.get(), ref.get(), term.get(), MPFR_RNDN);
      }
      const std::string where = "k=" + std::to_string(k) + " c=" + std::to_string(c);
      expectCertifies(dense[c], ref, "dense " + where);
      expectCertifies(sparse[c], ref, "sparse " + where);
      EXPECT_EQ(dense[c].f64, sparse[c].f64) << where;
    }
    if (HasFailure()) return;
  }
}

TEST(ForwardEnclosure, BadInputIsRefused) {
  const RouterWeights router{2, 2, {1.0f, 0.0f, 0.0f, 1.0f}};
  const LinearExperts ex{2, 2, 1, {1.0f, 1.0f, 2.0f, 2.0f}};
  EXPECT_THROW(denseForwardEnclosure(1, std::vector<float>{NAN, 0.0f}, router, ex), SpecError);
  EXPECT_THROW(denseForwardEnclosure(1, std::vector<float>{1.0f}, router, ex), SpecError);
  const LinearExperts wrong{3, 2, 1, {1.0f, 1.0f, 2.0f, 2.0f, 0.0f, 0.0f}};
  EXPECT_THROW(sparseForwardEnclosure(1, std::vector<float>{1.0f, 0.0f}, router, wrong), SpecError);
  // k = 0 keeps nothing: the output is exactly 0.
  const auto y = sparseForwardEnclosure(0, std::vector<float>{1.0f, 0.0f}, router, ex);
  EXPECT_TRUE(y[0].range.isPoint());
  EXPECT_EQ(y[0].f64, 0.0);
}

}  // namespace
}  // namespace moe::oracle::certified
