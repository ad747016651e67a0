// How wide the family verdict's undecided band is above the bisected edge of acceptance: on
// the three tokens of FamilyCertifiedAcceptance (kept softmax scores, sigmoid scores and
// biased keys just inside the budget), exp_max_ulp walks up from the edge by relative steps
// 2^-60, 2^-59, ...; the band is the first step at which the verdict places the token (no
// longer "selection undecided"). The certified level compares the keys and group scores
// near the kept boundary from their MPFR enclosures, so the band is what the enclosures'
// width and the budgets' own rounding force, far below binary64's resolution at the key's
// size (docs/fuzz.md gives the figures before and after).
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

// The smallest j such that exp_max_ulp = edge (1 + 2^-j) is placed (not undecided), or 0.
int undecidedBandLog2(const Token& t) {
  const double edge = budgetEdge(t).acceptance;
  for (int j = 60; j >= 16; --j) {
    const double c = edge * (1 + std::ldexp(1.0, -j));
    LevelCounters levels;
    const Verdict v = judgeAt(t, c, levels);
    EXPECT_NE(v.outcome, Outcome::kViolation) << "exp_max_ulp " << c << ": " << v.certificate;
    if (levels.selectionUndecided == 0) return j;
  }
  return 0;
}

Token softmaxToken() {
  Token t;  // softmax, k 1: the router keeps expert 0, expert 1's probability is higher
  t.x = {0.0f, 1e-3f, -1.0f};
  t.f.score = 0;
  t.ids = {0};
  t.gates = {1.0f};
  return t;
}

Token sigmoidToken() {
  Token t;  // sigmoid, k 1: the router keeps expert 0, expert 1 scores higher
  t.x = {0.25f, 0.25f + 5e-5f, -2.0f};
  t.f.score = 1;
  t.ids = {0};
  t.gates = {1.0f};
  return t;
}

Token biasedToken() {
  Token t;  // sigmoid plus a bias that overturns the score order
  t.x = {0.5f, 0.25f, -3.0f, 1.0f};
  t.f.score = 1;
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
    const int j = undecidedBandLog2(c.token);
    std::printf("%s: placed from 2^-%d relative above the edge\n", c.name, j);
    // Binary64 band ends at the key's size left 2^-34..2^-40; the MPFR comparison near the
    // kept boundary must do far better.
    EXPECT_GE(j, 46) << c.name;
  }
}

}  // namespace
}  // namespace moe::fuzz
