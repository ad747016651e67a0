// How wide the family verdict's undecided band is above the bisected edge of acceptance: on
// the three tokens of FamilyCertifiedAcceptance (kept softmax scores, sigmoid scores and
// biased keys just inside the budget), exp_max_ulp walks up from the edge one binary64 step
// at a time; the band is the number of steps before the verdict places the token (no longer
// "selection undecided"). The certified level compares the keys and group scores near the
// kept boundary from their MPFR enclosures, with the budgets bounded at 192 bits from the
// enclosures' ends, so nothing coarser than exp_max_ulp's own binary64 resolution is left
// (docs/fuzz.md gives the figures before and after).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "family_token.hpp"
#include "moe/fuzz/verdict.hpp"

namespace moe::fuzz {
namespace {

using family_test::budgetEdge;
using family_test::judgeAt;
using family_test::Token;

// How many binary64 steps above the bisected edge's acceptance side exp_max_ulp must go
// before the verdict places the token (no longer "selection undecided"): 0 when the edge's
// first accepted value is already placed; -1 when 64 steps are not enough.
int undecidedSteps(const Token& t) {
  double c = budgetEdge(t).acceptance;
  for (int n = 0; n < 64; ++n, c = std::nextafter(c, INFINITY)) {
    LevelCounters levels;
    const Verdict v = judgeAt(t, c, levels);
    EXPECT_NE(v.outcome, Outcome::kViolation) << "exp_max_ulp " << c << ": " << v.certificate;
    if (levels.selectionUndecided == 0) return n;
  }
  return -1;
}

Token softmaxToken() {
  Token t;  // softmax, k 1: the router keeps expert 0, expert 1's probability is higher
  t.x = {0.0f, 1e-3f, -1.0f};
  t.f.score = ScoreFunction::kSoftmax;
  t.ids = {0};
  t.gates = {1.0f};
  return t;
}

Token sigmoidToken() {
  Token t;  // sigmoid, k 1: the router keeps expert 0, expert 1 scores higher
  t.x = {0.25f, 0.25f + 5e-5f, -2.0f};
  t.f.score = ScoreFunction::kSigmoid;
  t.ids = {0};
  t.gates = {1.0f};
  return t;
}

Token biasedToken() {
  Token t;  // sigmoid plus a bias that overturns the score order
  t.x = {0.5f, 0.25f, -3.0f, 1.0f};
  t.f.score = ScoreFunction::kSigmoid;
  t.f.bias = {0.0f, 0.0625f, 0.0f, -1.0f};
  t.ids = {0};
  t.gates = {1.0f};
  return t;
}

TEST(FamilyCertifiedBand, UndecidedBandAboveTheEdgeIsNarrow) {
  const struct {
    const char* name;
    Token token;
  } cases[] = {{"softmax scores", softmaxToken()},
               {"sigmoid scores", sigmoidToken()},
               {"biased keys", biasedToken()}};
  for (const auto& c : cases) {
    const int n = undecidedSteps(c.token);
    std::printf("%s: placed %d binary64 steps above the edge\n", c.name, n);
    // Binary64 band ends at the key's size left thousands of steps (2^-34..2^-40 relative),
    // binary64 budgets with a 2^-50 allowance 10 to 21: now the edge's first accepted value
    // may be undecided, the next must be placed.
    EXPECT_TRUE(n >= 0 && n <= 1) << c.name << ": " << n << " steps";
  }
}

}  // namespace
}  // namespace moe::fuzz
