// The routing family's certified selection level clears what binary64 cannot: a
// router that kept an expert whose key (softmax or sigmoid score, plus a bias) is below a
// displaced one's by just under the budget is within its rounding, but the difference is so
// near the budget that the binary64 filter's bands straddle it: binary64 alone cannot rule
// out a violation. The verdict must accept the router there, and count the MPFR level as the
// one that decided (not binary64, not "undecided").
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "family_token.hpp"
#include "moe/fuzz/verdict.hpp"

namespace moe::fuzz {
namespace {

using family_test::budgetEdge;
using family_test::judgeAt;
using family_test::Token;

// Just above the edge of acceptance (budgetEdge) the difference is inside the budget by less than
// the binary64 filter's error (its bands straddle the boundary: it cannot exclude a violation) but
// by more than the certified bands' width (MPFR scores, 2^-60 relative, and the bands' binary64
// ends). Walking up from the edge by relative steps 2^-52, 2^-51, ... the first budget the
// verdict places is therefore placed by the certified level; the verdict must accept the
// router there and count that level, neither binary64 nor "undecided".
void expectAcceptedByTheCertifiedLevel(const Token& t) {
  const double edge = budgetEdge(t).acceptance;
  for (int j = 52; j >= 20; --j) {
    const double c = edge * (1 + std::ldexp(1.0, -j));
    LevelCounters levels;
    const Verdict v = judgeAt(t, c, levels);
    ASSERT_NE(v.outcome, Outcome::kViolation) << "exp_max_ulp " << c << ": " << v.certificate;
    if (levels.selectionUndecided == 1) continue;  // within both levels' error: given away
    EXPECT_EQ(v.outcome, Outcome::kAcceptable) << v.certificate;
    EXPECT_EQ(v.reason, "near-tie-keys") << v.certificate;
    EXPECT_EQ(levels.selectionCertified, 1u)
        << "the first placed budget, 2^-" << j << " above the edge, was not the certified level's";
    EXPECT_EQ(levels.selectionDouble, 0u);
    EXPECT_EQ(levels.selectionUndecided, 0u);
    return;
  }
  ADD_FAILURE() << "no budget within 2^-20 of the edge was placed by either level";
}

TEST(FamilyCertifiedAcceptance, SoftmaxScoresAtTheBudget) {
  Token t;  // softmax, k 1: the router keeps expert 0, expert 1's probability is higher
  t.x = {0.0f, 1e-3f, -1.0f};
  t.f.score = ScoreFunction::kSoftmax;
  t.ids = {0};
  t.gates = {1.0f};
  expectAcceptedByTheCertifiedLevel(t);
}

TEST(FamilyCertifiedAcceptance, SigmoidScoresAtTheBudget) {
  Token t;  // sigmoid, k 1: the router keeps expert 0, expert 1 scores higher
  t.x = {0.25f, 0.25f + 5e-5f, -2.0f};
  t.f.score = ScoreFunction::kSigmoid;
  t.ids = {0};
  t.gates = {1.0f};
  expectAcceptedByTheCertifiedLevel(t);
}

TEST(FamilyCertifiedAcceptance, BiasedKeysAtTheBudget) {
  // sigmoid plus a bias that overturns the score order: expert 1's score is lower, its key
  // s1 + b1 higher than expert 0's by ~6e-4; the router keeps expert 0 (and its gate is its
  // unbiased score's, renormalised over itself: 1).
  Token t;
  t.x = {0.5f, 0.25f, -3.0f, 1.0f};
  t.f.score = ScoreFunction::kSigmoid;
  t.f.bias = {0.0f, 0.0625f, 0.0f, -1.0f};
  t.ids = {0};
  t.gates = {1.0f};
  expectAcceptedByTheCertifiedLevel(t);
}

}  // namespace
}  // namespace moe::fuzz
