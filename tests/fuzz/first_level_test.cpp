// The verdict's first level (fuzz/judge/first_level*): its exp within the bound it claims,
// and every verdict the same with the first level on and off, over hundreds of thousands of
// drawn cases of every family (moe_route_v1 and moe_route_v2), routed by the built-in
// routers, the binary32 spec, the broken routers, and outputs perturbed on purpose (gates a
// few ulps to far off, slots swapped, a kept expert replaced) so that violations and gates
// near their budget are compared too.
#include "moe/fuzz/first_level.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "moe/fuzz/broken_routers.hpp"
#include "moe/fuzz/first_level_simd.hpp"
#include "moe/fuzz/router.hpp"
#include "moe/fuzz/router_case.hpp"
#include "moe/fuzz/verdict.hpp"
#include "moe/oracle/certified/family.hpp"
#include "moe/test/seed.hpp"

namespace moe::fuzz {
namespace {

TEST(FirstLevelExp, StaysWithinItsBound) {
  std::mt19937_64 rng(test::testSeed());
  std::uniform_real_distribution<double> wide(-700, 720), narrow(-2, 2);
  std::vector<double> t(400003);
  for (size_t i = 0; i < t.size(); ++i) t[i] = i % 2 ? wide(rng) : narrow(rng);
  t[0] = 0;
  t[1] = INFINITY;
  t[2] = 700;
  t[3] = -700;
  t[4] = 0x1p-1074;
  std::vector<double> out(t.size());
  first::expNeg(t, out);
  EXPECT_EQ(out[0], 1.0);
  EXPECT_EQ(out[1], 0.0);
  for (size_t i = 0; i < t.size(); ++i) {
    const long double exact = std::exp(-static_cast<long double>(t[i]));
    const long double err = std::fabs(static_cast<long double>(out[i]) - exact);
    ASSERT_LE(err, first::kExpRel * exact + first::kExpAbs)
        << "t = " << t[i] << " (" << std::hexfloat << t[i] << "): " << out[i];
  }
  // Below -700 the result is +inf, which the sigmoid turns into 0 (within kExpAbs).
  const std::vector<double> big = {-701, -1e30, -INFINITY};
  std::vector<double> bigOut(big.size());
  first::expNeg(big, bigOut);
  for (double v : bigOut) EXPECT_TRUE(std::isinf(v) && v > 0);
}

TEST(FirstLevelScan, CountsBeatersAndRealRows) {
  const std::vector<float> x = {1, 3, 3, -INFINITY, 0.0f, -0.0f, 7, 3, 2, 1, 5, 3, 8, 9, 3, 3, 3};
  EXPECT_TRUE(first::scanRow(x).real);
  EXPECT_EQ(first::scanRow(x).max, 9.0f);
  // Expert 7 (x = 3): beaten by 7, 5, 8, 9 and the 3s at 1 and 2.
  EXPECT_EQ(first::countBeating(x, 7), 6);
  EXPECT_EQ(first::countBeating(x, 5), first::countBeating(x, 4) + 1);  // -0 after +0
  for (size_t at = 0; at < x.size(); ++at) {
    std::vector<float> y = x;
    y[at] = NAN;
    EXPECT_FALSE(first::scanRow(y).real) << at;
    y[at] = INFINITY;
    EXPECT_FALSE(first::scanRow(y).real) << at;
  }
  EXPECT_FALSE(first::scanRow(std::vector<float>(19, -INFINITY)).real);
}

// The scores' error bounds enclose the exact scores (MPFR enclosures of the oracle): rows of
// logits from tiny to far apart, sigmoid and softmax.
TEST(FirstLevelScores, EncloseTheExactScores) {
  std::mt19937_64 rng(test::testSeed());
  std::uniform_real_distribution<float> unit(-1, 1);
  std::vector<double> s, serr;
  for (int row = 0; row < 400; ++row) {
    const size_t E = 1 + rng() % 64;
    const float spread = std::ldexp(1.0f, static_cast<int>(rng() % 16) - 6);
    std::vector<float> x(E);
    for (float& v : x) v = unit(rng) * spread;
    if (row % 7 == 0) x[rng() % E] = -INFINITY;
    for (ScoreFunction score : {ScoreFunction::kSoftmax, ScoreFunction::kSigmoid}) {
      Family f;
      f.score = score;
      first::familyScores(x, f, s, serr);
      const auto exact = oracle::certified::scoresEnclosure(
          score == ScoreFunction::kSigmoid ? oracle::ScoreFn::sigmoid : oracle::ScoreFn::softmax,
          x);
      for (size_t i = 0; i < E; ++i) {
        const double lo = exact[i].range.lowerDouble(), hi = exact[i].range.upperDouble();
        ASSERT_LE(s[i] - serr[i], hi)
            << "row " << row << " score " << static_cast<int>(score) << " expert " << i;
        ASSERT_GE(s[i] + serr[i], lo)
            << "row " << row << " score " << static_cast<int>(score) << " expert " << i;
        // Tight enough to decide: far below every binary32 budget.
        EXPECT_LE(serr[i], s[i] * 0x1p-36 + 0x1p-999);
      }
    }
  }
}

// Perturbs one token of the output (one case in three): the kinds of mistake a kernel
// makes, at every distance from the budget.
void perturb(RouteOutput& out, const Case& c, std::mt19937_64& rng) {
  if (c.tokens == 0 || c.k == 0 || c.experts == 0 || rng() % 3 != 0) return;
  const size_t t = rng() % static_cast<size_t>(c.tokens);
  const size_t k = static_cast<size_t>(c.k);
  const size_t s = t * k + rng() % k;
  switch (rng() % 5) {
    case 0: {
      static const double kUlps[] = {1, 2, 4, 8, 16, 64, 1024, 1 << 20};
      const double ulps = kUlps[rng() % 8] * (rng() % 2 ? 1 : -1);
      out.gates[s] = static_cast<float>(out.gates[s] * (1 + ulps * 0x1p-24));
      break;
    }
    case 1:
      out.gates[s] = std::nextafter(out.gates[s], rng() % 2 ? INFINITY : -INFINITY);
      break;
    case 2: {
      const size_t other = t * k + rng() % k;
      std::swap(out.ids[s], out.ids[other]);
      std::swap(out.gates[s], out.gates[other]);
      break;
    }
    case 3:
      out.ids[s] = static_cast<int32_t>(rng() % static_cast<uint64_t>(c.experts));
      break;
    default:
      out.gates[s] *= 1.5f;
      break;
  }
}

struct Tally {
  uint64_t cases = 0, tokens = 0, firstLevel = 0, violations = 0, acceptable = 0;
};

// Judges the recorded output with and without the first level and requires the same
// verdicts, field by field (the margin to the bit).
void judgeBothWays(const Case& c, const RouteOutput& out, const Contract& contract,
                   const std::string& who, Tally& tally) {
  VerdictConfig on, off;
  off.firstLevel = false;
  LevelCounters onLevels, offLevels;
  const CaseResult a = judgeRecorded(c, out.ids, out.gates, contract, on, onLevels);
  const CaseResult b = judgeRecorded(c, out.ids, out.gates, contract, off, offLevels);
  const std::string where = who + ": case " + std::to_string(tally.cases) + " E " +
                            std::to_string(c.experts) + " k " + std::to_string(c.k) + " T " +
                            std::to_string(c.tokens) +
                            (c.family ? " family " + familyText(*c.family) : "");
  ASSERT_EQ(a.tokens.size(), b.tokens.size()) << where;
  ASSERT_EQ(a.violation.has_value(), b.violation.has_value()) << where;
  for (size_t t = 0; t < a.tokens.size(); ++t) {
    const Verdict &x = a.tokens[t], &y = b.tokens[t];
    const std::string at = where + " token " + std::to_string(t) + ": " + y.reason + " " +
                           std::string(kindName(y.kind)) + " " + y.certificate;
    ASSERT_EQ(x.outcome, y.outcome) << at;
    ASSERT_EQ(x.reason, y.reason) << at;
    ASSERT_EQ(x.kind, y.kind) << at;
    ASSERT_EQ(x.tag, y.tag) << at;
    ASSERT_EQ(x.certificate, y.certificate) << at;
    ASSERT_EQ(x.token, y.token) << at;
    ASSERT_EQ(std::bit_cast<uint64_t>(x.margin), std::bit_cast<uint64_t>(y.margin)) << at;
    ASSERT_EQ(x.cause, y.cause) << at;
    ASSERT_EQ(x.causeText, y.causeText) << at;
    tally.violations += y.outcome == Outcome::kViolation;
    tally.acceptable += y.outcome == Outcome::kAcceptable;
  }
  EXPECT_EQ(offLevels.firstLevel, 0u);
  ++tally.cases;
  tally.tokens += a.tokens.size();
  tally.firstLevel += onLevels.firstLevel;
}

// contract: the router's, or (when given) one that draws other families (a recipe's).
void compareOn(const Router& router, int cases, uint64_t seed, const ShapeSpace& shapes,
               Tally& tally, const Contract* contract = nullptr) {
  SeededSource source(seed);
  std::mt19937_64 rng(seed);
  const Contract& drawn = contract ? *contract : router.contract();
  for (int i = 0; i < cases; ++i) {
    const Case c = routerCase(source, drawn, shapes);
    if (c.family && !familyInvalidReason(*c.family, c.experts).empty()) continue;
    RouteOutput out = router.route(c.tokens, c.experts, c.k, c.logits, c.threads,
                                   c.family ? &*c.family : nullptr);
    if (out.fault || out.abstained) continue;
    perturb(out, c, rng);
    judgeBothWays(c, out, drawn, router.name(), tally);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

ShapeSpace smallShapes() {
  ShapeSpace s;
  s.experts = IntSet::range(0, 300);
  s.tokens = IntSet::range(0, 6);
  s.tokensGiven = true;
  return s;
}

void report(const char* what, const Tally& t) {
  std::printf(
      "%s: %llu cases, %llu tokens, %llu decided by the first level, %llu acceptable, "
      "%llu violations\n",
      what, static_cast<unsigned long long>(t.cases), static_cast<unsigned long long>(t.tokens),
      static_cast<unsigned long long>(t.firstLevel), static_cast<unsigned long long>(t.acceptable),
      static_cast<unsigned long long>(t.violations));
}

TEST(FirstLevel, SameVerdictsAsTheLadderOnV1) {
  registerBrokenRouters();
  std::vector<std::unique_ptr<Router>> routers;
  routers.push_back(makeSpec32Router(false));
  for (const std::string& name : builtinRouterNames()) {
    if (builtinRouterAvailable(name)) routers.push_back(openRouter(name));
  }
  int bugs = 0;
  const BugInfo* info = brokenRouterBugs(&bugs);
  for (int b = 0; b < bugs; ++b) {
    routers.push_back(openRouter("broken-" + std::string(info[b].name)));
  }
  Tally tally;
  uint64_t seed = test::testSeed();
  for (const auto& r : routers) {
    compareOn(*r, 12000, seed++, smallShapes(), tally);
    if (HasFatalFailure()) return;
  }
  report("v1", tally);
  EXPECT_GT(tally.cases, 100000u);
  // The comparison means something only when both sides of every decision are reached.
  EXPECT_GT(tally.firstLevel, tally.tokens / 4);
  EXPECT_GT(tally.violations, 1000u);
  EXPECT_GT(tally.acceptable, 1000u);
}

// The batched first level at small rows decides exactly the tokens of finite rows that
// decideToken decides `exact` (the same checks and bounds, a lane per token), and the verdicts
// through judgeRecorded (which takes the batch first there) are the ladder's.
TEST(FirstLevel, BatchDecidesAsTheTokenLevel) {
  registerBrokenRouters();
  std::vector<std::unique_ptr<Router>> routers;
  routers.push_back(makeSpec32Router(false));
  for (const std::string& name : builtinRouterNames()) {
    if (builtinRouterAvailable(name)) routers.push_back(openRouter(name));
  }
  int bugs = 0;
  const BugInfo* info = brokenRouterBugs(&bugs);
  for (int b = 0; b < bugs; ++b) {
    routers.push_back(openRouter("broken-" + std::string(info[b].name)));
  }
  ShapeSpace shapes;
  shapes.experts = IntSet::range(1, first::kBatchExperts);
  shapes.tokens = IntSet::range(1, 150);
  shapes.tokensGiven = true;
  Tally tally;
  uint64_t seed = test::testSeed() + 2000, batchTokens = 0, batchDecided = 0;
  VerdictConfig config;
  std::vector<uint8_t> decided;
  for (const auto& r : routers) {
    SeededSource source(seed);
    std::mt19937_64 rng(seed++);
    for (int i = 0; i < 1500; ++i) {
      const Case c = routerCase(source, r->contract(), shapes);
      RouteOutput out = r->route(c.tokens, c.experts, c.k, c.logits, c.threads, nullptr);
      if (out.fault || out.abstained) continue;
      for (int p = 0; p < 4; ++p) perturb(out, c, rng);
      decided.assign(static_cast<size_t>(c.tokens), 0);
      first::decideTokensBatch(c, 0, c.tokens, out.ids, out.gates, r->contract(), config, decided);
      const size_t k = static_cast<size_t>(c.k);
      for (int32_t t = 0; t < c.tokens; ++t) {
        const first::Decided one =
            first::decideToken(c.row(t), c.k, std::span(out.ids).subspan(t * k, k),
                               std::span(out.gates).subspan(t * k, k), r->contract(), config);
        // Rows with an infinite logit, k = 0 and k > E are left to decideToken; the rest the same.
        bool finite = true;
        for (float v : c.row(t)) finite = finite && std::isfinite(v);
        const bool batch = decided[static_cast<size_t>(t)] != 0;
        ASSERT_EQ(batch, finite && c.k >= 1 && c.k <= c.experts && one == first::Decided::kExact)
            << r->name() << " E " << c.experts << " k " << c.k << " token " << t;
        batchDecided += decided[static_cast<size_t>(t)];
      }
      batchTokens += static_cast<uint64_t>(c.tokens);
      judgeBothWays(c, out, r->contract(), r->name(), tally);
      if (HasFatalFailure()) return;
    }
  }
  report("v1 small rows", tally);
  std::printf("batch: %llu of %llu tokens decided\n", static_cast<unsigned long long>(batchDecided),
              static_cast<unsigned long long>(batchTokens));
  EXPECT_GT(batchDecided, batchTokens / 4);
  EXPECT_LT(batchDecided, batchTokens);
  EXPECT_GT(tally.violations, 1000u);
}

// The binary32 spec of the family and every built-in moe_route_v2 router this CPU runs.
std::vector<std::unique_ptr<Router>> v2Routers() {
  std::vector<std::unique_ptr<Router>> routers;
  routers.push_back(makeSpec32Router(true));
  RouterOptions v2;
  v2.abi = std::string(kAbiV2);
  for (const std::string& name : builtinRouterNamesV2()) {
    if (builtinRouterAvailable(name)) routers.push_back(openRouter(name, v2));
  }
  return routers;
}

TEST(FirstLevel, SameVerdictsAsTheLadderOnV2) {
  const std::vector<std::unique_ptr<Router>> routers = v2Routers();
  Tally tally;
  uint64_t seed = test::testSeed() + 1000;
  const int each = 120000 / static_cast<int>(routers.size());
  for (const auto& r : routers) {
    compareOn(*r, each, seed++, smallShapes(), tally);
    if (HasFatalFailure()) return;
  }
  report("v2", tally);
  EXPECT_GT(tally.cases, 100000u);
  EXPECT_GT(tally.firstLevel, tally.tokens / 4);
  EXPECT_GT(tally.violations, 1000u);
  EXPECT_GT(tally.acceptable, 1000u);
}

// DeepSeek-V3's family (sigmoid, bias, 8 groups, the best 4 by top-2 sums, E = 256, k = 8)
// on the fuzzer's whole mix of rows at that shape: planted ties of keys and groups,
// saturated scores, near ties within the budget, model-like rows. Here the first level
// decides near ties by the ladder's own binary64 keys and group scores, and the acceptable
// near ties of keys as the ladder names them; every verdict must still be the ladder's.
TEST(FirstLevel, SameVerdictsAsTheLadderAtDeepSeekV3) {
  const std::vector<std::unique_ptr<Router>> routers = v2Routers();
  ShapeSpace shapes;
  shapes.experts = IntSet::ofValues({256});
  shapes.k = IntSet::ofValues({8});
  shapes.tokens = IntSet::ofValues({16});
  shapes.tokensGiven = true;
  Tally tally;
  uint64_t seed = test::testSeed() + 2000;
  const int each = 6000 / static_cast<int>(routers.size());
  for (const auto& r : routers) {
    Contract contract = r->contract();
    contract.families = familiesOfRecipes("deepseek-v3", "recipe");
    compareOn(*r, each, seed++, shapes, tally, &contract);
    if (HasFatalFailure()) return;
  }
  report("deepseek-v3", tally);
  EXPECT_GT(tally.cases, 5000u);
  EXPECT_GT(tally.firstLevel, tally.tokens * 9 / 10);
  EXPECT_GT(tally.acceptable, tally.tokens / 50);
  EXPECT_GT(tally.violations, 100u);
}

// Two groups at the boundary whose group scores this level computes equal while the ladder's
// binary64 (its own exp) puts the left-out one above: the router keeps the lower index, as
// this level's order does, and the ladder names the token a near tie of groups. The first
// level must leave it to the ladder (it compares the ladder's own scores), not call it exact.
// Found by a search over rows of 2 groups of 2 experts (sigmoid scores, top-2 sums): group 1
// copies group 0's first logit and moves its second, a logit near saturation (25 to 37, where
// a binary32 ulp moves the score by less than a binary64 one), by a few ulps.
TEST(FirstLevel, GroupsTiedHereButOrderedByTheLadder) {
  Family f;
  f.score = ScoreFunction::kSigmoid;
  f.groups = 2;
  f.topkGroups = 1;
  f.groupScore = GroupScoreFunction::kTop2Sum;
  f.renormalize = 1;
  auto ladderSum = [](float a, float b) {
    const double sa = 1.0 / (1.0 + std::exp(-double{a})), sb = 1.0 / (1.0 + std::exp(-double{b}));
    double s = 0;
    s += std::max(sa, sb);
    s += std::min(sa, sb);
    return s;
  };
  std::mt19937_64 rng(test::testSeed());
  std::uniform_real_distribution<float> logit(-4.0f, 4.0f), high(25.0f, 37.0f);
  std::vector<float> row(4);
  bool found = false;
  for (int i = 0; i < 2000000 && !found; ++i) {
    const float a = logit(rng), b = high(rng);
    float b2 = b;
    for (int u = 1 + static_cast<int>(rng() % 64); u > 0; --u) {
      b2 = std::nextafter(b2, rng() % 2 ? INFINITY : -INFINITY);
    }
    row = {a, b, a, b2};
    std::vector<double> s, serr;
    first::familyScores(row, f, s, serr);
    const double here0 = std::max(s[0], s[1]) + std::min(s[0], s[1]);
    const double here1 = std::max(s[2], s[3]) + std::min(s[2], s[3]);
    found = here0 == here1 && ladderSum(a, b) < ladderSum(a, b2);
  }
  ASSERT_TRUE(found) << "no row found where the two levels order the groups differently";
  Case c;
  c.tokens = 1;
  c.experts = 4;
  c.k = 2;
  c.logits = row;
  c.family = f;
  RouteOutput out;
  out.ids = row[0] > row[1] ? std::vector<int32_t>{0, 1} : std::vector<int32_t>{1, 0};
  const double s0 = 1.0 / (1.0 + std::exp(-double{row[out.ids[0]]}));
  const double s1 = 1.0 / (1.0 + std::exp(-double{row[out.ids[1]]}));
  out.gates = {static_cast<float>(s0 / (s0 + s1)), static_cast<float>(s1 / (s0 + s1))};
  RouterOptions v2;
  v2.abi = std::string(kAbiV2);
  const Contract contract = openRouter("scalar-logits", v2)->contract();
  VerdictConfig off;
  off.firstLevel = false;
  LevelCounters levels;
  const Verdict ladder = judgeRecorded(c, out.ids, out.gates, contract, off, levels).tokens[0];
  ASSERT_EQ(ladder.outcome, Outcome::kAcceptable) << ladder.reason << " " << ladder.certificate;
  ASSERT_EQ(ladder.reason, "near-tie-groups");
  Tally tally;
  judgeBothWays(c, out, contract, "groups tied here", tally);
}

}  // namespace
}  // namespace moe::fuzz
