// moe-gate-permute: relabelling the experts relabels the gates, gate (s ∘ e) i = gate s (e i),
// for softmax always and for top-k gates where no exact tie straddles the kept boundary.
#include "moe/oracle/permute.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "moe/oracle/certified/gates.hpp"
#include "moe/oracle/softmax.hpp"
#include "scores.hpp"

namespace moe::oracle {
namespace {

using testing::Scenario;

std::vector<std::size_t> drawPermutation(std::mt19937_64& rng, std::size_t n) {
  std::vector<std::size_t> perm(n);
  std::iota(perm.begin(), perm.end(), std::size_t{0});
  std::shuffle(perm.begin(), perm.end(), rng);
  return perm;
}

// Exact: rational probabilities, gatesFromProbs (Lean's gatesVecSpec after the softmax).
TEST(MoeGatePermute, ExactOverRationalsWhenNoTieStraddlesTheBoundary) {
  auto rng = testing::makeRng(51);
  int checked = 0;
  for (int n = 0; n < 1500; ++n) {
    const auto p =
        testing::drawScores<mpq_class>(rng, 1 + rng() % 20, static_cast<Scenario>(n % 8));
    const std::size_t k = testing::pickK(rng, p.size());
    if (!noTieAtKeptBoundary(k, std::span<const mpq_class>(p))) continue;
    const auto e = drawPermutation(rng, p.size());
    const auto pe = relabel(std::span<const mpq_class>(p), std::span<const std::size_t>(e));
    const auto g = gatesFromProbs(k, std::span<const mpq_class>(p));
    const auto ge = gatesFromProbs(k, std::span<const mpq_class>(pe));
    for (std::size_t i = 0; i < p.size(); ++i) ASSERT_EQ(ge[i], g[e[i]]) << "i=" << i;
    ++checked;
  }
  EXPECT_GT(checked, 500);
}

// Over the reals through the enclosures: the correctly rounded gates relabel exactly.
TEST(MoeGatePermute, OverTheRealsForSoftmaxAndTopKGates) {
  auto rng = testing::makeRng(52);
  for (int n = 0; n < 400; ++n) {
    auto l = testing::drawFloats(rng, 1 + rng() % 40, static_cast<Scenario>(n % 3));
    const auto e = drawPermutation(rng, l.size());
    const auto le = relabel(std::span<const float>(l), std::span<const std::size_t>(e));
    const auto p = certified::softmaxEnclosure(l), pe = certified::softmaxEnclosure(le);
    for (std::size_t i = 0; i < l.size(); ++i) ASSERT_EQ(pe[i].f64, p[e[i]].f64);
    const std::size_t k = testing::pickK(rng, l.size());
    if (!noTieAtKeptBoundary(k, std::span<const float>(l))) continue;
    const auto g = certified::gatesEnclosure(k, l), ge = certified::gatesEnclosure(k, le);
    for (std::size_t i = 0; i < l.size(); ++i) ASSERT_EQ(ge[i].f64, g[e[i]].f64) << "i=" << i;
  }
}

// A tie across the boundary breaks it: the index tie-break does not relabel.
TEST(MoeGatePermute, FailsWhenATieStraddlesTheBoundary) {
  const std::vector<mpq_class> p{mpq_class(1, 2), mpq_class(1, 2)};
  const std::vector<std::size_t> swap{1, 0};
  ASSERT_FALSE(noTieAtKeptBoundary(1, std::span<const mpq_class>(p)));
  const auto g = gatesFromProbs(1, std::span<const mpq_class>(p));
  const auto ge =
      gatesFromProbs(1, std::span<const mpq_class>(relabel(std::span<const mpq_class>(p),
                                                           std::span<const std::size_t>(swap))));
  EXPECT_NE(ge[0], g[swap[0]]);
}

// In binary32 the softmax sums in index order, so relabelling can change the rounding.
TEST(MoeGatePermute, FailsInBinary32ThroughTheSummationOrder) {
  auto rng = testing::makeRng(53);
  bool found = false;
  for (int n = 0; n < 2000 && !found; ++n) {
    const auto l = testing::drawFloats(rng, 3 + rng() % 10, Scenario::kNormal);
    const auto e = drawPermutation(rng, l.size());
    const auto p = softmaxVecSpec(std::span<const float>(l));
    const auto pe = softmaxVecSpec(std::span<const float>(
        relabel(std::span<const float>(l), std::span<const std::size_t>(e))));
    for (std::size_t i = 0; i < l.size(); ++i) found = found || pe[i] != p[e[i]];
  }
  EXPECT_TRUE(found) << "no binary32 rounding difference under relabelling found";
}

TEST(Permutation, RejectsNonPermutations) {
  const std::vector<float> s{1.0f, 2.0f, 3.0f};
  EXPECT_THROW(relabel(std::span<const float>(s), std::vector<std::size_t>{0, 0, 1}), SpecError);
  EXPECT_THROW(relabel(std::span<const float>(s), std::vector<std::size_t>{0, 1, 3}), SpecError);
  EXPECT_THROW(relabel(std::span<const float>(s), std::vector<std::size_t>{0, 1}), SpecError);
  const std::vector<std::size_t> perm{2, 0, 1};
  EXPECT_EQ(inversePermutation(perm), (std::vector<std::size_t>{1, 2, 0}));
}

}  // namespace
}  // namespace moe::oracle
