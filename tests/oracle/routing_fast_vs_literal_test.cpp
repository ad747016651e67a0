// The O(E log E) ranking (ranks, keptExperts, keptMask) equals Lean's literal O(E^2) rank
// and kept, on every context and on E up to 4096.
#include <gtest/gtest.h>

#include "moe/oracle/routing.hpp"
#include "scores.hpp"

namespace moe::oracle {
namespace {

using testing::drawScores;
using testing::Scenario;

template <class A>
class FastVsLiteral : public ::testing::Test {};
TYPED_TEST_SUITE(FastVsLiteral, testing::Contexts);

template <class A>
void expectFastEqualsLiteral(std::span<const A> s, std::size_t k) {
  const std::vector<std::size_t> fast = ranks(s);
  for (std::size_t i = 0; i < s.size(); ++i) ASSERT_EQ(fast[i], rank(s, i)) << "i=" << i;
  const std::vector<bool> mask = keptMask(k, s);
  for (std::size_t i = 0; i < s.size(); ++i) ASSERT_EQ(mask[i], fast[i] < k) << "i=" << i;
  const std::vector<std::size_t> list = keptExperts(k, s);
  for (std::size_t t = 0; t < list.size(); ++t) ASSERT_EQ(fast[list[t]], t) << "slot " << t;
  ASSERT_EQ(keptMaskLiteral(k, s), mask);
  ASSERT_EQ(keptExpertsLiteral(k, s), list);
}

TYPED_TEST(FastVsLiteral, RandomAndAdversarialVectors) {
  auto rng = testing::makeRng(11);
  for (int n = 0; n < 2000; ++n) {
    const auto sc = static_cast<Scenario>(n % testing::kScenarios);
    const std::vector<TypeParam> s = drawScores<TypeParam>(rng, testing::pickE(rng), sc);
    const std::size_t k = testing::pickK(rng, s.size());
    SCOPED_TRACE(std::string(testing::scenarioName(sc)) + " k=" + std::to_string(k) + " " +
                 testing::describe(s));
    expectFastEqualsLiteral(std::span<const TypeParam>(s), k);
    if (this->HasFatalFailure()) return;
  }
}

// The largest E the issue asks for; ties and ±0 make the index tie-break matter.
TEST(FastVsLiteralLarge, E4096) {
  auto rng = testing::makeRng(12);
  for (Scenario sc : {Scenario::kTies, Scenario::kMixed, Scenario::kNormal}) {
    const std::vector<float> s = testing::drawFloats(rng, 4096, sc);
    SCOPED_TRACE(testing::scenarioName(sc));
    expectFastEqualsLiteral(std::span<const float>(s), 1 + rng() % 4096);
  }
}

// Outside StrictWeak the literal Lean ranking still answers (it never throws) where the
// fast one refuses: [NaN, 1, 2] ranks NaN first (nothing beats it: it is below nobody, and
// only lower indices could tie-break past it).
TEST(FastVsLiteralNaN, LiteralIsTotalFastThrows) {
  const std::vector<float> s{NAN, 1.0f, 2.0f};
  EXPECT_THROW(keptExperts(1, std::span<const float>(s)), SpecError);
  EXPECT_EQ(rank(std::span<const float>(s), 0), 0u);
  EXPECT_EQ(keptExpertsLiteral(2, std::span<const float>(s)), (std::vector<std::size_t>{0, 2}));
}

// keptExpertsLiteral is Lean's keptExperts on rows outside StrictWeak too: position r holds
// the first expert of rank r, and a rank nobody has leaves its position out. Scores
// [0, NaN, 1]: 0 beats NaN (index), NaN beats 1 (index), 1 beats 0 (score), so every rank
// is 1 and Lean's keptExperts 2 is [0] (the #guard in Spec.lean), not [0, 1, 2].
TEST(FastVsLiteralNaN, KeptExpertsLiteralIsLeansOnNaNRows) {
  const std::vector<float> cyclic{0.0f, NAN, 1.0f};
  const std::span<const float> c(cyclic);
  EXPECT_EQ(rank(c, 0), 1u);
  EXPECT_EQ(rank(c, 1), 1u);
  EXPECT_EQ(rank(c, 2), 1u);
  EXPECT_EQ(keptExpertsLiteral(1, c), (std::vector<std::size_t>{}));
  EXPECT_EQ(keptExpertsLiteral(2, c), (std::vector<std::size_t>{0}));
  EXPECT_EQ(keptExpertsLiteral(3, c), (std::vector<std::size_t>{0}));
  EXPECT_EQ(keptMaskLiteral(2, c), (std::vector<bool>{true, true, true}));
}

}  // namespace
}  // namespace moe::oracle
