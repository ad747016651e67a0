// Replay of the routing family's vectors (RouteScoresTest, RouteGatesTest,
// SigmoidTest) against oracle/include/moe/oracle/family.hpp. Every value Lean exported is
// reproduced exactly: bit for bit in binary32 and binary64 (the same order of operations;
// Lean's exp values injected, each exp argument checked to be Lean's x_i - m or 0 - x_i),
// exactly over the rationals. Discrete outputs are checked through both the literal
// transliterations (eligible, routeRank, routeKept, routeKeptExpertsLiteral) and the fast
// ones (eligibleMask, routeRanks, routeKeptMask, routeKeptExperts). The theorem
// routeGatesWith_eq_gatesVecSpecWith of Spec.lean is checked on the C++ side too: with
// Mixtral's parameters the family's gates are gatesFromProbs / gatesVecSpecWith.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <moe/oracle/family.hpp>
#include <moe/oracle/softmax.hpp>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "expect_same.hpp"
#include "lean_vectors.hpp"

namespace moe::lean {
namespace {

namespace oracle = moe::oracle;

// The parameters of a test, owning the bias the RouteParams' span points into.
template <class A>
struct Params {
  std::vector<A> bias;
  oracle::RouteParams<A> p;
};

template <class A>
Params<A> readParams(const json& t) {
  Params<A> out;
  if (t.contains("bias")) out.bias = vecFromJson<A>(t.at("bias"));
  out.p.k = t.at("k").get<std::size_t>();
  if (t.contains("score")) {
    out.p.score = t.at("score") == "softmax" ? oracle::ScoreFn::softmax : oracle::ScoreFn::sigmoid;
  }
  out.p.bias = std::span<const A>(out.bias);
  out.p.groups = t.at("groups").get<std::size_t>();
  out.p.topkGroups = t.at("topkGroups").get<std::size_t>();
  out.p.groupScore =
      t.at("groupScore") == "max" ? oracle::GroupScore::max : oracle::GroupScore::top2Sum;
  out.p.renormalize = t.at("renormalize").get<bool>();
  out.p.scale = scalarFromText<A>(t.at("scale").get<std::string>());
  return out;
}

// The text paramsInvalidReason gives for the first rule of Lean's paramsRules that fails
// (the C++ checks the rules in Lean's order).
std::string reasonOfRule(const std::string& rule) {
  static const std::map<std::string, std::string> words = {
      {"biasLength", "bias has"},
      {"groupsPositive", "groups is 0"},
      {"groupsDivideExperts", "does not divide"},
      {"topkGroupsPositive", "topkGroups"},
      {"topkGroupsAtMostGroups", "topkGroups"},
      {"top2SumGroupsOfTwo", "top2Sum needs"}};
  const auto it = words.find(rule);
  return it == words.end() ? "unknown rule " + rule : it->second;
}

// Lean's paramsValid and the rules it names, against paramsValid and paramsInvalidReason.
template <class A>
void expectSameValidity(const json& t, const oracle::RouteParams<A>& p, std::size_t E) {
  const bool valid = t.at("paramsValid").get<bool>();
  const auto broken = t.at("brokenRules").get<std::vector<std::string>>();
  EXPECT_EQ(oracle::paramsValid(E, p), valid)
      << describe(t) << ": " << oracle::paramsInvalidReason(E, p);
  EXPECT_EQ(broken.empty(), valid) << describe(t);
  EXPECT_EQ(t.at("result") == "invalid", !valid) << describe(t);
  if (!broken.empty()) {
    const std::string why = oracle::paramsInvalidReason(E, p);
    EXPECT_NE(why.find(reasonOfRule(broken.front())), std::string::npos)
        << describe(t) << ": Lean breaks " << broken.front() << ", the oracle says: " << why;
  }
}

// The MixtralParams flag, from the fields alone (score, bias, groups, renormalize, scale).
template <class A>
void expectMixtralFlagFromFields(const json& t, const oracle::RouteParams<A>& p) {
  bool scaleOne = false;
  if constexpr (std::is_same_v<A, mpq_class>) {
    scaleOne = p.scale == 1;
  } else {
    scaleOne = sameBits(p.scale, A(1)) && !std::isnan(p.scale);
  }
  const bool mixtral = t.at("score") == "softmax" && !t.contains("bias") && p.groups == 1 &&
                       p.renormalize && scaleOne;
  EXPECT_EQ(hasFlag(t, "MixtralParams"), mixtral) << describe(t);
}

// Mixtral's parameters (softmax, no bias, one group, renormalised, scale 1), same k.
template <class A>
oracle::RouteParams<A> mixtral(std::size_t k) {
  oracle::RouteParams<A> p;
  p.k = k;
  p.score = oracle::ScoreFn::softmax;
  p.groups = 1;
  p.topkGroups = 1;
  p.renormalize = true;
  p.scale = oracle::Context<A>::one();
  return p;
}

// eligible, routeRank and routeKept of every expert, through the literal transliterations
// and, where no key is NaN, the fast ones (which must refuse a NaN key).
template <class A>
void expectSameExperts(const json& t, const oracle::RouteParams<A>& p, const std::vector<A>& c) {
  const std::span<const A> cv(c);
  const std::size_t E = c.size();
  const auto eligible = t.at("eligible").get<std::vector<bool>>();
  const auto ranks = t.at("routeRanks").get<std::vector<std::size_t>>();
  const auto kept = t.at("routeKept").get<std::vector<bool>>();
  ASSERT_EQ(eligible.size(), E) << describe(t);
  ASSERT_EQ(ranks.size(), E) << describe(t);
  ASSERT_EQ(kept.size(), E) << describe(t);
  EXPECT_EQ(oracle::eligibleMask(p, cv), eligible) << describe(t);
  EXPECT_EQ(oracle::routeKeptMaskLiteral(p, cv), kept) << describe(t) << " literal mask";
  if (anyNaN(c)) {
    EXPECT_THROW(oracle::routeRanks(p, cv), oracle::SpecError) << describe(t);
    EXPECT_THROW(oracle::routeKeptMask(p, cv), oracle::SpecError) << describe(t);
  } else {
    EXPECT_EQ(oracle::routeRanks(p, cv), ranks) << describe(t) << " fast routeRanks";
    EXPECT_EQ(oracle::routeKeptMask(p, cv), kept) << describe(t) << " fast routeKeptMask";
  }
  // The literal forms cost O(E^2) each; at the models' sizes every tenth expert is enough.
  const std::size_t step = E > 64 ? 10 : 1;
  for (std::size_t e = 0; e < E; e += step) {
    EXPECT_EQ(oracle::eligible(p, cv, e), eligible[e]) << describe(t) << " eligible " << e;
    EXPECT_EQ(oracle::routeRank(p, cv, e), ranks[e]) << describe(t) << " routeRank " << e;
    EXPECT_EQ(oracle::routeKept(p, cv, e), kept[e]) << describe(t) << " routeKept " << e;
  }
}

// Every discrete and scalar output that both RouteScoresTest and RouteGatesTest carry,
// from the scores s (Lean's, already checked where they came from logits).
template <class A>
void expectSameRouting(const json& t, const oracle::RouteParams<A>& p, const std::vector<A>& s) {
  const std::span<const A> sv(s);
  const std::vector<A> c = oracle::biasedKeys(p.bias, sv);
  expectSame(t, "keys", c, vecFromJson<A>(t.at("keys")));
  const std::span<const A> cv(c);
  expectSameValidity(t, p, c.size());
  expectMixtralFlagFromFields(t, p);
  expectSame(t, "groupScores", oracle::groupScores(p.groupScore, p.groups, cv),
             vecFromJson<A>(t.at("groupScores")));
  EXPECT_EQ(oracle::keptGroups(p, cv), t.at("keptGroups").get<std::vector<std::size_t>>())
      << describe(t);
  const auto expectedKept = t.at("routeKeptExperts").get<std::vector<std::size_t>>();
  if (anyNaN(c)) {
    EXPECT_THROW(oracle::routeKeptExperts(p, cv), oracle::SpecError) << describe(t);
  } else {
    EXPECT_EQ(oracle::routeKeptExperts(p, cv), expectedKept) << describe(t) << " fast";
  }
  EXPECT_EQ(oracle::routeKeptExpertsLiteral(p, cv), expectedKept) << describe(t) << " literal";
  expectSame(t, "gates", oracle::routeGatesFromScores(p, sv, cv), vecFromJson<A>(t.at("gates")));
  expectSameExperts(t, p, c);
  // routeGatesWith_eq_gatesVecSpecWith, from the scores: Mixtral's parameters give
  // gatesFromProbs of the scores, in every context.
  const auto k = p.k;
  expectSame(t, "Mixtral's gates from the scores",
             oracle::routeGatesFromScores(mixtral<A>(k), sv, sv), oracle::gatesFromProbs(k, sv));
}

template <class A>
void replayRouteScores(const json& t) {
  const Params<A> params = readParams<A>(t);
  const auto s = vecFromJson<A>(t.at("scores"));
  expectSameRouting(t, params.p, s);
}

// The exp arguments the oracle passed, against Lean's: x_i - max for softmax (with Lean's
// max), 0 - x_i for the sigmoid. "" when they agree.
template <class A>
std::string scoreExpArgumentMismatch(const json& t, oracle::ScoreFn f, const std::vector<A>& logits,
                                     const std::vector<A>& arguments) {
  if (f == oracle::ScoreFn::softmax) {
    return expArgumentMismatch(logits, scalarFromText<A>(t.at("max").get<std::string>()),
                               arguments);
  }
  if (arguments.size() != logits.size()) {
    return "exp called " + std::to_string(arguments.size()) + " times for " +
           std::to_string(logits.size()) + " logits";
  }
  for (std::size_t i = 0; i < logits.size(); ++i) {
    if (!sameBits(arguments[i], A(0) - logits[i])) {
      return "exp argument " + std::to_string(i) + " is not 0 - x_i";
    }
  }
  return "";
}

template <class A>
void replayRouteGates(const json& t) {
  const Params<A> params = readParams<A>(t);
  const oracle::RouteParams<A>& p = params.p;
  const auto logits = vecFromJson<A>(t.at("logits"));
  const auto leanExps = vecFromJson<A>(t.at("exps"));
  const std::span<const A> lv(logits);
  EXPECT_EQ(t.contains("max"), p.score == oracle::ScoreFn::softmax) << describe(t);
  std::vector<A> arguments;
  const auto s = oracle::scoresSpecWith(p.score, lv, ReplayedExp<A>{leanExps, &arguments});
  EXPECT_EQ(scoreExpArgumentMismatch(t, p.score, logits, arguments), "")
      << describe(t) << " scores";
  expectSame(t, "scores", s, vecFromJson<A>(t.at("scores")));
  expectSameRouting(t, p, s);
  arguments.clear();
  const auto gates = oracle::routeGatesWith(p, lv, ReplayedExp<A>{leanExps, &arguments});
  EXPECT_EQ(scoreExpArgumentMismatch(t, p.score, logits, arguments), "") << describe(t) << " gates";
  const auto leanGates = vecFromJson<A>(t.at("gates"));
  expectSame(t, "routeGatesWith", gates, leanGates);
  // routeGatesWith_eq_gatesVecSpecWith: where the parameters are Mixtral's, Lean's family
  // gates are the oracle's gatesVecSpecWith bit for bit.
  const auto& flags = t.at("flags");
  if (std::find(flags.begin(), flags.end(), "MixtralParams") != flags.end()) {
    arguments.clear();
    expectSame(t, "gatesVecSpecWith",
               oracle::gatesVecSpecWith(p.k, lv, ReplayedExp<A>{leanExps, &arguments}), leanGates);
  }
}

template <class A>
void replaySigmoid(const json& t, std::size_t& hostDiffers, std::size_t& exps) {
  const auto logits = vecFromJson<A>(t.at("logits"));
  const auto leanExps = vecFromJson<A>(t.at("exps"));
  const auto leanSigmoid = vecFromJson<A>(t.at("sigmoid"));
  ASSERT_EQ(leanExps.size(), logits.size()) << describe(t);
  std::vector<A> arguments, out;
  ReplayedExp<A> exp{leanExps, &arguments};
  for (const A& x : logits) out.push_back(oracle::sigmoidSpecWith(x, exp));
  EXPECT_EQ(scoreExpArgumentMismatch(t, oracle::ScoreFn::sigmoid, logits, arguments), "")
      << describe(t);
  expectSame(t, "sigmoid", out, leanSigmoid);
  // How often the host's exp differs from Lean's (musl): counted, not asserted.
  for (std::size_t i = 0; i < logits.size(); ++i, ++exps) {
    hostDiffers += sameBits(oracle::Context<A>::exp(A(0) - logits[i]), leanExps[i]) ? 0 : 1;
  }
}

template <class F>
std::map<std::string, std::size_t> forEachContext(const std::string& type, F&& f) {
  std::map<std::string, std::size_t> seen;
  for (const json& t : testsOfType(vectors(), type)) {
    const std::string context = t.at("context");
    ++seen[context];
    f(t, context);
  }
  return seen;
}

TEST(LeanReplayFamily, RouteScoresTestExactInEveryContext) {
  const auto seen = forEachContext("RouteScoresTest", [](const json& t, const std::string& c) {
    if (c == "binary32") {
      replayRouteScores<float>(t);
    } else if (c == "binary64") {
      replayRouteScores<double>(t);
    } else if (c == "rational") {
      replayRouteScores<mpq_class>(t);
    } else {
      ADD_FAILURE() << describe(t) << ": unknown context " << c;
    }
  });
  for (const char* c : {"binary32", "binary64", "rational"}) {
    EXPECT_GE(seen.count(c) ? seen.at(c) : 0, 90u) << c;
  }
}

TEST(LeanReplayFamily, RouteGatesTestBitExactWithLeanExps) {
  const auto seen = forEachContext("RouteGatesTest", [](const json& t, const std::string& c) {
    if (c == "binary32") {
      replayRouteGates<float>(t);
    } else if (c == "binary64") {
      replayRouteGates<double>(t);
    } else {
      ADD_FAILURE() << describe(t) << ": routeGates needs exp, not context " << c;
    }
  });
  for (const char* c : {"binary32", "binary64"}) {
    EXPECT_GE(seen.count(c) ? seen.at(c) : 0, 100u) << c;
  }
}

TEST(LeanReplayFamily, SigmoidTestBitExactWithLeanExps) {
  std::size_t hostDiffers = 0, exps = 0;
  const auto seen = forEachContext("SigmoidTest", [&](const json& t, const std::string& c) {
    if (c == "binary32") {
      replaySigmoid<float>(t, hostDiffers, exps);
    } else if (c == "binary64") {
      replaySigmoid<double>(t, hostDiffers, exps);
    } else {
      ADD_FAILURE() << describe(t) << ": sigmoid needs exp, not context " << c;
    }
  });
  EXPECT_GE(seen.count("binary32") ? seen.at("binary32") : 0, 20u);
  EXPECT_GE(seen.count("binary64") ? seen.at("binary64") : 0, 20u);
  std::printf("host exp differs from Lean's exp on %zu of %zu sigmoid arguments\n", hostDiffers,
              exps);
}

// The adversarial cases the issue names are all present, so the replays above cover them.
TEST(LeanReplayFamily, AdversarialCasesPresent) {
  std::set<std::string> flags;
  for (const char* type : {"RouteScoresTest", "RouteGatesTest", "SigmoidTest"}) {
    for (const json& t : testsOfType(vectors(), type)) {
      for (const auto& f : t.at("flags")) flags.insert(f.get<std::string>());
    }
  }
  for (const char* flag :
       {"GroupMaxTie", "GroupTop2SumTie", "GroupTieAtKeptBoundary", "BiasCancelsScoreDifference",
        "BiasOverturnsScoreOrder", "GroupsOfOne", "KAboveEligible", "MixtralParams",
        "SigmoidSaturates", "SigmoidExpOverflow", "Llama4TopOne", "DeepSeekV3Shape", "KZero"}) {
    EXPECT_TRUE(flags.count(flag)) << "no family test flagged " << flag;
  }
}

// Whether a binary64 vector holds a subnormal.
bool anySubnormal(const std::vector<double>& v) {
  return std::any_of(v.begin(), v.end(),
                     [](double x) { return std::fpclassify(x) == FP_SUBNORMAL; });
}

// The family's edges, each in the contexts it can be stated in; prints the count per gap
// (docs/lean.md lists them).
TEST(LeanReplayFamily, EdgeCasesPresent) {
  std::map<std::string, std::map<std::string, std::size_t>> byFlag;     // flag, context
  std::map<std::string, std::map<std::string, std::size_t>> aloneRule;  // rule, context
  std::map<std::string, std::map<std::string, std::size_t>> anyRule;
  std::size_t subnormal64 = 0;
  for (const char* type : {"RouteScoresTest", "RouteGatesTest"}) {
    for (const json& t : testsOfType(vectors(), type)) {
      const std::string c = t.at("context");
      for (const auto& f : t.at("flags")) ++byFlag[f.get<std::string>()][c];
      const auto broken = t.at("brokenRules").get<std::vector<std::string>>();
      for (const auto& r : broken) ++anyRule[r][c];
      if (broken.size() == 1) ++aloneRule[broken[0]][c];
      if (c == "binary64") {
        bool sub =
            anySubnormal(vecFromJson<double>(t.at(t.contains("logits") ? "logits" : "scores")));
        if (t.contains("bias")) sub = sub || anySubnormal(vecFromJson<double>(t.at("bias")));
        subnormal64 += hasFlag(t, "NotBinary32") && sub ? 1 : 0;
      }
    }
  }
  const auto count = [&](const std::string& flag, const char* context) {
    const auto it = byFlag.find(flag);
    if (it == byFlag.end() || !it->second.count(context)) return std::size_t{0};
    return it->second.at(context);
  };
  const char* all[] = {"rational", "binary32", "binary64"};
  const char* floats[] = {"binary32", "binary64"};
  for (const char* rule : {"biasLength", "groupsDivideExperts", "topkGroupsPositive",
                           "topkGroupsAtMostGroups", "top2SumGroupsOfTwo"}) {
    for (const char* c : all) {
      EXPECT_GE(aloneRule[rule][c], 1u) << rule << " broken alone, " << c;
    }
  }
  // G = 0 always breaks topkGroups <= G too (topkGroups >= 1), so it never fails alone.
  for (const char* c : all) EXPECT_GE(anyRule["groupsPositive"][c], 1u) << c;
  for (const char* c : all) {
    EXPECT_GE(count("ZeroTotal", c), 1u) << c;
    EXPECT_GE(count("NoExperts", c), 1u) << c;
    EXPECT_GE(count("NonPositiveScale", c), 1u) << c;
  }
  for (const char* flag :
       {"NaNKey", "NaNGroupScore", "NaNBias", "InfiniteBias", "NaNLogit", "InfiniteLogit",
        "Infinity", "NonFiniteScale", "ZeroSignGroupMax", "ZeroSignTop2Sum"}) {
    for (const char* c : floats) EXPECT_GE(count(flag, c), 1u) << flag << ", " << c;
  }
  EXPECT_GE(count("NotBinary32", "binary64"), 50u);
  EXPECT_GE(subnormal64, 5u) << "binary64 vectors with a subnormal input that is no binary32";
  EXPECT_GE(count("DeepSeekV3Size", "binary32") + count("DeepSeekV3Size", "binary64"), 50u);
  EXPECT_GE(count("KimiK2Size", "binary32") + count("KimiK2Size", "binary64"), 50u);
  for (const auto& [flag, contexts] : byFlag) {
    std::printf("%s:", flag.c_str());
    for (const auto& [c, n] : contexts) std::printf(" %s %zu", c.c_str(), n);
    std::printf("\n");
  }
  for (const auto& [rule, contexts] : anyRule) {
    std::printf("rule %s:", rule.c_str());
    for (const auto& [c, n] : contexts) {
      std::printf(" %s %zu (alone %zu)", c.c_str(), n, aloneRule[rule][c]);
    }
    std::printf("\n");
  }
  std::printf("binary64 vectors with a subnormal input, not binary32 values: %zu\n", subnormal64);
}

}  // namespace
}  // namespace moe::lean
